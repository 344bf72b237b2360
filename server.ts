/**
 * Starts the service: storage (embedded PostgreSQL unless DATABASE_URL is set), migrations, the
 * upstream (the bundled simulator unless GRAPH_BASE_URL or SIMULATOR_URL is set), the services
 * and jobs (services.ts, the one composition root), then HTTP. Shutdown runs in reverse,
 * PostgreSQL last.
 */
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { createHttpServer } from './http/http-server.js';
import { applyHttpTimeouts } from './http/timeouts.js';
import { listenOn } from './http/listen.js';
import { startupBanner } from './http/banner.js';
import { loadConfig } from './lib/platform/config.js';
import { createLogger } from './lib/platform/logger.js';
import { tracingOn } from './lib/platform/tracing/spans.js';
import { systemClock } from './lib/platform/clock.js';
import { startEmbeddedPostgres } from './lib/platform/db/embedded.js';
import { applyMigrations } from './lib/platform/db/migrate.js';
import { startDeadline, waitForDatabase, whileStarting } from './lib/platform/db/wait.js';
import { EXIT_CONFIG, productionProblems } from './lib/platform/production.js';
import { loadOrCreateAdminToken } from './lib/platform/admin-token.js';
import { loadOrCreateMasterKey } from './lib/platform/master-key.js';
import { resealLegacySecrets } from './lib/upkeep/secret-reseal.js';
import { createServices } from './services.js';
import { BotRuntime } from './lib/bot/runtime.js';
import { createSimulator } from './simulator/app.js';
import { metaCallbackRetryDelaysMs } from './simulator/state.js';

/** What has started, in the order it stops (the last started first; PostgreSQL last). */
const stops: Array<() => Promise<void>> = [];

/** `node dist/server.js migrate`: apply the migrations and exit (compose's one-shot service). */
const migrateOnly = process.argv[2] === 'migrate';

async function main(): Promise<void> {
  // .env in the working directory (as .env.example says), under the process environment: a variable
  // already set wins. The image has none: its configuration is the environment alone.
  try {
    process.loadEnvFile('.env');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw configError(`.env: ${(e as Error).message}`);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (e) {
    throw configError((e as Error).message);
  }
  const logger = createLogger({ level: config.logLevel, json: config.nodeEnv === 'production' });
  const problems = migrateOnly ? (config.databaseUrl ? [] : ['DATABASE_URL is required to run the migrations']) : productionProblems(config);
  if (problems.length) throw configError(`Configuration: ${problems.join('; ')}`);
  if (config.otelEndpoint && !tracingOn()) {
    logger.warn('OTEL_EXPORTER_OTLP_ENDPOINT is set, but the process was not started with the tracing bootstrap (node --import …/lib/platform/tracing/preload.js, as npm start does): no traces (docs/traces.md)');
  }
  let drainServices: (() => void) | undefined;
  let stopSimulator: (() => Promise<void>) | undefined;

  // Signals are heard from the first moment: a SIGTERM during start-up (a supervisor that gives
  // up, a test that stops at the first answer) must still stop what has started, PostgreSQL
  // included, never leave it running with no parent. During start-up the stop waits for the
  // step under way, then runs.
  let started = false;
  let stopRequested = '';
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: shutting down`);
    // Readiness first (503), so a load balancer stops sending; then in-flight requests drain.
    drainServices?.();
    if (started && config.shutdownReadyDelayMs > 0) await new Promise((r) => setTimeout(r, config.shutdownReadyDelayMs));
    // The bundled simulator stops first: its callback backlog would keep the server busy.
    if (stopSimulator) await stopSimulator().catch((e) => logger.warn(`shutdown step failed: ${e}`));
    for (const stop of stops) await stop().catch((e) => logger.warn(`shutdown step failed: ${e}`));
    process.exit(0);
  };
  const requestStop = (reason: string) => {
    if (started) void shutdown(reason);
    else stopRequested ||= reason;
  };
  /** Between start-up steps: a stop asked for meanwhile runs now (and never returns). */
  const checkpoint = async () => {
    if (stopRequested) await shutdown(stopRequested).then(() => new Promise(() => undefined));
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => requestStop(sig));
  // `npm start` under a supervisor: a SIGTERM to npm ends npm but is not passed on, and the service
  // would keep serving (and holding its PostgreSQL) with no parent. So when that npm goes, so do we,
  // saying so. Only then: npm's start scripts set STOP_WITH_PARENT=1 (package.json). A service
  // started any other way (node dist/server.js directly, by a script that then exits, nohup … &,
  // PID 1 of a container) keeps running when its starter exits (issue 71: it used to stop within
  // half a second, exit 0, nothing logged above info). docs/deploy.md, "Start-up and stop".
  const stopWithParent = process.env.STOP_WITH_PARENT === '1';
  delete process.env.STOP_WITH_PARENT; // not passed on to anything this process starts
  if (stopWithParent) {
    const parent = process.ppid;
    const watch = setInterval(() => {
      if (process.ppid === parent) return;
      clearInterval(watch);
      logger.warn(`the parent process (pid ${parent}) exited: stopping with it (STOP_WITH_PARENT=1, which npm start sets; 0 keeps the service running)`);
      requestStop('parent process exited');
    }, 500);
    watch.unref();
  }

  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
    stops.unshift(pg.stop);
    databaseUrl = pg.url;
    await checkpoint();
  }
  // Every step that connects (this check, the migrations, the pools) is tried again while it fails to
  // connect, until DATABASE_WAIT_SECONDS after this point (lib/platform/db/wait.ts).
  const connectDeadline = startDeadline(config.databaseUrl ? config.databaseWaitSeconds : 0, logger);
  await waitForDatabase(databaseUrl, { waitSeconds: connectDeadline.waitSeconds, logger, deadline: connectDeadline });
  // Two instances starting at once: the runner holds Prisma's advisory lock, so one applies and the
  // other then finds nothing left to apply (lib/platform/db/migrate.ts).
  const { applied } = await whileStarting('apply the migrations', () => applyMigrations(databaseUrl!, { logger }), connectDeadline);
  if (applied.length) logger.info(`applied migrations: ${applied.join(', ')}`);
  if (migrateOnly) {
    logger.info(`migrations: ${applied.length ? `${applied.length} applied` : 'nothing to apply'}`);
    for (const stop of stops) await stop().catch(() => undefined);
    process.exit(0);
  }

  const admin = config.adminToken ? { token: config.adminToken, created: false } : await loadOrCreateAdminToken(config.dataDir);
  const masterKey = await loadOrCreateMasterKey(config.dataDir, config.encryptionKey);

  // Without GRAPH_BASE_URL the simulator is the upstream: a standalone one at SIMULATOR_URL, else
  // the bundled one in this process (the embedded default).
  let simulatorUrl = config.simulatorUrl;
  let graphBaseUrl = config.graphBaseUrl ?? simulatorUrl;
  if (!graphBaseUrl) {
    const sim = createSimulator({ logger, dataDir: path.join(config.dataDir, 'simulator'), templateAutoDecisionMs: config.simulatorTemplateAutoApproveMs, limits: { callbackRetryDelaysMs: metaCallbackRetryDelaysMs(config.simulatorCallbackRetryScale) } });
    const simServer = await listenOn(createServer(sim.app), config.simulatorPort, '127.0.0.1', 'Cloud API simulator', 'SIMULATOR_PORT');
    stopSimulator = async () => {
      await sim.close();
      await closeServer(simServer, config.shutdownGraceMs);
    };
    simulatorUrl = graphBaseUrl = `http://127.0.0.1:${(simServer.address() as { port: number }).port}`;
  }
  await checkpoint();
  const services = await createServices({
    config, logger, databaseUrl, masterKey, adminToken: admin.token, graphBaseUrl, simulatorUrl, clock: systemClock,
    jobs: false,
    bot: new BotRuntime(),
    connectDeadline,
  });
  drainServices = () => services.drain();
  stops.unshift(() => services.close());
  // Re-sealing skips what is sealed already, so a try cut off by a connect failure is simply run again.
  const sealing = await whileStarting('re-seal stored secrets', () => resealLegacySecrets(services.db, services.deps.secretBox), connectDeadline);
  if (sealing.resealed) logger.info(`re-sealed ${sealing.resealed} stored secrets bound to their rows`);
  if (sealing.failed) logger.warn(`${sealing.failed} stored secrets do not open with this ENCRYPTION_KEY; left unchanged`);
  // Background jobs (webhook delivery) start once stored secrets are sealed as they should be.
  await checkpoint();
  // The job runner opens connections of its own; a failed start stops what it began (jobs/index.ts).
  await whileStarting('start the background jobs', () => services.startJobs(), connectDeadline);
  const { app } = services;

  const server = await listenOn(createHttpServer(app), config.port, config.host, 'Service API', 'PORT');
  applyHttpTimeouts(server, {
    requestTimeoutMs: config.httpRequestTimeoutMs,
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs,
  });
  stops.unshift(() => closeServer(server, config.shutdownGraceMs));
  const port = (server.address() as { port: number }).port;
  const base = `http://localhost:${port}`;
  services.setCallbackBase(config.simulatorCallbackBaseUrl ?? `http://127.0.0.1:${port}`);

  // The validator compiles the contract on first use: warm it before the first caller waits.
  await Promise.all([fetch(`${base}/v1/openapi.json`), fetch(`${base}/admin/openapi.json`)]).catch(() => undefined);

  console.log(startupBanner({ base, port, config, simulatorUrl, admin, tokenFile: path.join(config.dataDir, 'admin-token') }));

  started = true;
  await checkpoint();
}

/** Stops accepting connections, lets requests in flight finish for up to `graceMs`, then cuts the rest. */
function closeServer(server: Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
    deadline.unref();
    server.close(() => {
      clearTimeout(deadline);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** A setting is missing or wrong: named, and the exit status says so (EX_CONFIG, no retry helps). */
function configError(message: string): Error {
  return Object.assign(new Error(message), { exitCode: EXIT_CONFIG });
}

main().catch(async (e) => {
  console.error(`Failed to start: ${e instanceof Error ? e.message : String(e)}`);
  if ((e as { exitCode?: number })?.exitCode === EXIT_CONFIG) process.exit(EXIT_CONFIG);
  if (process.env.DEBUG_START) console.error(e?.stack);
  // What did start (the embedded PostgreSQL above all) stops too, rather than outliving us.
  for (const stop of stops) await stop().catch(() => undefined);
  process.exit(1);
});
