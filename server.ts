/**
 * Starts the service: storage (embedded PostgreSQL unless DATABASE_URL is set), migrations,
 * counters, then HTTP. Shutdown runs in reverse, PostgreSQL last.
 */
import type { Server } from 'node:http';
import path from 'node:path';
import { applyHttpTimeouts } from './lib/http-timeouts.js';
import { loadConfig } from './lib/config.js';
import { createLogger } from './lib/logger.js';
import { systemClock } from './lib/clock.js';
import { startEmbeddedPostgres } from './lib/db/embedded.js';
import { applyMigrations } from './lib/db/migrate.js';
import { checkReachable, openDatabase } from './lib/db/database.js';
import { createCounterStore } from './lib/counters.js';
import { loadAdminContract, loadPublicContract } from './lib/contracts.js';
import { loadOrCreateAdminToken } from './lib/admin-token.js';
import { createApp } from './app.js';
import { CredentialCache } from './lib/credential-cache.js';
import { loadOrCreateMasterKey } from './lib/master-key.js';
import { SecretBox, deriveKey } from './lib/crypto-box.js';
import { resealLegacySecrets } from './lib/secret-reseal.js';
import { CloudApiClient } from './channel/cloud-api.js';
import { createSimulator } from './simulator/app.js';
import { metaCallbackRetryDelaysMs } from './simulator/state.js';
import { simulatedChannelProvisioner } from './lib/simulated-channel.js';
import { startWebhookDelivery } from './jobs/webhook-delivery.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, json: config.nodeEnv === 'production' });
  const stops: Array<() => Promise<void>> = [];

  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    const pg = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
    stops.unshift(pg.stop);
    databaseUrl = pg.url;
  }
  await checkReachable(databaseUrl);
  const { applied } = await applyMigrations(databaseUrl, { logger });
  if (applied.length) logger.info(`applied migrations: ${applied.join(', ')}`);

  const db = await openDatabase(databaseUrl, {
    max: config.databasePoolMax,
    logger,
    acquireTimeoutMs: config.databaseAcquireTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  stops.unshift(() => db.close());
  const credentialCache = new CredentialCache(db.pool, { ttlMs: config.credentialCacheTtlMs, enabled: config.credentialCacheTtlMs > 0, logger });
  await credentialCache.start();
  stops.unshift(() => credentialCache.stop());
  const counters = createCounterStore({ redisUrl: config.redisUrl, timeoutMs: config.redisTimeoutMs, logger });
  stops.unshift(() => counters.close());

  const admin = config.adminToken ? { token: config.adminToken, created: false } : await loadOrCreateAdminToken(config.dataDir);
  const masterKey = await loadOrCreateMasterKey(config.dataDir, config.encryptionKey);

  // Without GRAPH_BASE_URL the simulator is the upstream: a standalone one at SIMULATOR_URL, else
  // the bundled one in this process (the embedded default).
  let simulatorUrl = config.simulatorUrl;
  let graphBaseUrl = config.graphBaseUrl ?? simulatorUrl;
  let stopSimulator: (() => Promise<void>) | undefined;
  if (!graphBaseUrl) {
    const sim = createSimulator({ logger, dataDir: path.join(config.dataDir, 'simulator'), limits: { callbackRetryDelaysMs: metaCallbackRetryDelaysMs(config.simulatorCallbackRetryScale) } });
    const simServer: Server = await new Promise((resolve, reject) => {
      const s = sim.app.listen(config.simulatorPort, '127.0.0.1', () => resolve(s));
      s.once('error', (e) => reject(new Error(`Cloud API simulator: cannot listen on 127.0.0.1:${config.simulatorPort} (${e.message}); set SIMULATOR_PORT`)));
    });
    stopSimulator = async () => {
      await sim.close();
      await closeServer(simServer, config.shutdownGraceMs);
    };
    simulatorUrl = graphBaseUrl = `http://127.0.0.1:${(simServer.address() as { port: number }).port}`;
  }
  const channel = new CloudApiClient({ baseUrl: graphBaseUrl, version: config.graphApiVersion, timeoutMs: config.graphTimeoutMs, logger });
  const secretBox = new SecretBox(masterKey);
  const sealing = await resealLegacySecrets(db.pool, secretBox);
  if (sealing.resealed) logger.info(`re-sealed ${sealing.resealed} stored secrets bound to their rows`);
  if (sealing.failed) logger.warn(`${sealing.failed} stored secrets do not open with this ENCRYPTION_KEY; left unchanged`);
  // Webhook delivery (fan-out, attempts, retries on the Agenda job runner) starts after the
  // migrations and stops before the pool closes (stops run in reverse order).
  const webhooks = await startWebhookDelivery({ config, db, clock: systemClock, logger, secretBox });
  stops.unshift(() => webhooks.stop());
  let callbackBaseUrl = '';
  const contract = loadPublicContract();
  const adminContract = loadAdminContract();
  const app = createApp({
    config, db, clock: systemClock, logger, counters, contract, adminContract,
    channel, secretBox, credentialCache, cursorSecret: deriveKey(masterKey, 'cursor'),
    provisionChannel: simulatorUrl
      ? (projectId: string) => simulatedChannelProvisioner({ db, secretBox, logger }, simulatorUrl, callbackBaseUrl)(projectId)
      : undefined,
    validateResponses: false, adminToken: admin.token,
  });

  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.port, config.host, () => resolve(s));
    s.once('error', reject);
  });
  applyHttpTimeouts(server, {
    requestTimeoutMs: config.httpRequestTimeoutMs,
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs,
  });
  stops.unshift(() => closeServer(server, config.shutdownGraceMs));
  const port = (server.address() as { port: number }).port;
  const base = `http://localhost:${port}`;
  callbackBaseUrl = `http://127.0.0.1:${port}`;

  // The validator compiles the contract on first use: warm it before the first caller waits.
  await Promise.all([fetch(`${base}/v1/openapi.json`), fetch(`${base}/admin/openapi.json`)]).catch(() => undefined);

  console.log(`\nService API listening on ${base}  (description: ${base}/v1/openapi.json)`);
  // The operator token is shown once, when it is generated; afterwards only where it is kept.
  if (admin.created) console.log(`ADMIN_TOKEN=${admin.token}  (generated now; kept in ${path.join(config.dataDir, 'admin-token')})`);
  else if (!config.adminToken) console.log(`Operator token: in ${path.join(config.dataDir, 'admin-token')} (ADMIN_TOKEN=$(cat …))`);
  if (simulatorUrl) console.log(`WhatsApp Cloud API simulator on ${simulatorUrl} (new projects get a simulated number; control API: ${simulatorUrl}/_sim)`);
  console.log(`Operator CLI: ADMIN_TOKEN=… npm run ops -- --help\n`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal}: shutting down`);
    // The bundled simulator stops first: its callback backlog would keep the server busy.
    if (stopSimulator) await stopSimulator().catch((e) => logger.warn(`shutdown step failed: ${e}`));
    for (const stop of stops) await stop().catch((e) => logger.warn(`shutdown step failed: ${e}`));
    process.exit(0);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => void shutdown(sig));
  // `npm start` under a supervisor: a SIGTERM to npm ends npm but is not passed on, and the service
  // would keep serving (and holding its PostgreSQL) with no parent. When the parent goes, so do we.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown('parent process exited');
  }, 500).unref();
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

main().catch((e) => {
  console.error(`Failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
