/**
 * The one composition root: from a configuration and a reachable, migrated database, builds the
 * services (pool, credential cache, counters, channel client, secret box), the HTTP app and the
 * background jobs. server.ts adds what a process needs around it (embedded PostgreSQL, the
 * bundled simulator, listening, signals); the tests build exactly the same thing with their own
 * clock, counters and contract.
 */
import type { HandlerMap } from './http/handler-types.js';
import type { Express } from 'express';
import { createApp } from './app.js';
import type { AppDeps } from './http/app-deps.js';
import type { Contract } from './http/contract.js';
import { loadAdminContract, loadPublicContract, loadRuntimeContract } from './http/contracts.js';
import type { Config } from './lib/platform/config.js';
import { systemClock, type Clock } from './lib/platform/clock.js';
import type { Logger } from './lib/platform/logger.js';
import { openDatabase, type Database } from './lib/platform/db/database.js';
import { writesUnconfirmed } from './lib/platform/db/commit-guard.js';
import { readReplication } from './lib/platform/db/replication-state.js';
import { watchHa, type HaWatch } from './lib/platform/ha-watch.js';
import { readRedisHa } from './lib/platform/redis-ha.js';
import { readEtcd } from './lib/platform/etcd-health.js';
import { whileStarting, type StartDeadline } from './lib/platform/db/wait.js';
import { metricsInstanceId } from './lib/platform/instance.js';
import { closeTenantPools, configureTenantPools } from './lib/tables/tenant-pool.js';
import { createCounterStore, type CounterStore } from './lib/platform/counters.js';
import { redisTargetOf } from './lib/platform/redis-client.js';
import { SecretBox, deriveKey } from './lib/platform/crypto-box.js';
import { CredentialCache } from './lib/access/credential-cache.js';
import { simulatedChannelProvisioner } from './lib/channel-settings/simulated-channel.js';
import { CloudApiClient } from './channel/cloud-api.js';
import type { ChannelPort } from './lib/channel-port/port.js';
import { startJobs, type Jobs, type JobsOptions } from './jobs/index.js';
import { configurePacing } from './lib/broadcasts/pacing.js';
import { createMetrics, type CollectedGauges, type Metrics } from './lib/platform/metrics.js';
import type { BotRuntime } from './lib/bot/runtime.js';
import { readMigrations } from './lib/platform/db/migrate.js';
import type { Readiness } from './http/operational.js';
import type { MergeMoves } from './lib/conversations/identity.js';
import { moveConversationMessages } from './lib/messaging/ledger.js';
import { moveConversationCalls } from './lib/calls/calls.js';
import { moveRecipientsToContact } from './lib/broadcasts/recipients.js';
import { stopBuilds } from './lib/deploy/build.js';
import { graphVersionWarning, graphVersionWatch, type GraphVersionReport } from './channel/graph-versions.js';

/** A contact merge moves each room's rows through that room's owner (lib/conversations/identity.ts). */
const CONTACT_MERGE: MergeMoves = {
  moveMessages: async (tx, to, from) => {
    await moveConversationMessages(tx, to, from);
    await moveConversationCalls(tx, to, from);
  },
  moveContactRows: moveRecipientsToContact,
};

export interface ServicesOptions {
  config: Config;
  logger: Logger;
  /** A reachable database with the migrations applied. */
  databaseUrl: string;
  /** Encrypts channel tokens and signing secrets; signs cursors (a derived key). */
  masterKey: Buffer;
  adminToken: string;
  /** The Graph API (Meta, or the simulator). */
  graphBaseUrl: string;
  /** When the upstream is the simulator: new projects get a simulated number there. */
  simulatorUrl?: string;
  clock?: Clock;
  /** Default: Redis at config.redisUrl or behind config.redisSentinels, else in process. */
  counters?: CounterStore;
  /** Pool size of API requests; default config.databasePoolMax. */
  poolMax?: number;
  /** At start (server.ts): the pools' first connection is tried again until this deadline (lib/platform/db/wait.ts). */
  connectDeadline?: StartDeadline;
  channelVersion?: string;
  channelTimeoutMs?: number;
  /** The channel port's adapter; default the Cloud API client at graphBaseUrl (tests pass one of their own). */
  channel?: ChannelPort;
  /** Adapters of other channel kinds, by kind: a project whose channel settings name one is served by it (docs/channels.md). */
  channels?: Readonly<Record<string, ChannelPort>>;
  /** A contract and handlers of the caller's own (tests of the shared policy mechanism). */
  contract?: Contract;
  /** The operator and runtime contracts, already loaded (tests load the shipped ones once: tests/support/contracts.ts). */
  adminContract?: Contract;
  runtimeContract?: Contract;
  handlers?: HandlerMap;
  validateResponses?: boolean;
  /** See AppDeps.checkContracts (default on). */
  checkContracts?: boolean;
  /** Told of responses that break the contract (tests fail on them; production only logs). */
  onResponseViolation?: AppDeps['onResponseViolation'];
  /** The deployed bots' runtime (lib/bot/runtime.ts); closed with the services. Without it no bot answers. */
  bot?: BotRuntime;
  /** Process metrics (CPU, memory, event loop) in /metrics; default true (tests turn them off). */
  processMetrics?: boolean;
  /** Background jobs: started now with these options, or not at all (false; see `startJobs`). */
  jobs?: JobsOptions | false;
}

export interface Services {
  deps: AppDeps;
  db: Database;
  app: Express;
  /** The running background jobs, if started. */
  readonly jobs: Jobs | undefined;
  /** Starts the background jobs (again, after `stopJobs`: a restart as a deploy would do). */
  startJobs(opts?: JobsOptions): Promise<Jobs>;
  stopJobs(): Promise<void>;
  /** Where the simulator sends this instance's callbacks, once it listens. */
  setCallbackBase(url: string): void;
  /** What /readyz reports; false from the moment `drain()` is called. */
  readiness(): Promise<Readiness>;
  /** A shutdown begins: /readyz answers 503 from now on, so load balancers stop sending. */
  drain(): void;
  metrics: Metrics;
  /** Stops jobs, caches, counters and the pool (the HTTP server is the caller's). */
  close(): Promise<void>;
}

export async function createServices(opts: ServicesOptions): Promise<Services> {
  const { config, logger } = opts;
  const clock = opts.clock ?? systemClock;
  configurePacing(config);
  const db = await openDatabases(opts);
  const stops: Array<() => Promise<void>> = [async () => {
    await closeTenantPools(db.pool);
    await db.close();
  }];
  try {
    // Isolates stop after requests and jobs, before the pool.
    if (opts.bot) stops.unshift(() => opts.bot!.close());
    // The build process stops with the service (a build in flight fails with a diagnostic).
    stops.unshift(() => stopBuilds());
    const credentialCache = new CredentialCache(db.pool, { ttlMs: config.credentialCacheTtlMs, enabled: config.credentialCacheTtlMs > 0, logger });
    await credentialCache.start();
    stops.unshift(() => credentialCache.stop());
    const counters = opts.counters ?? createCounterStore({ redis: redisTargetOf(config), timeoutMs: config.redisTimeoutMs, logger });
    stops.unshift(() => counters.close());
    const metrics = createMetrics({ defaultMetrics: opts.processMetrics ?? true, instanceId: metricsInstanceId() });
    const channel = opts.channel ?? createChannel(opts, metrics);
    stops.unshift(async () => channel.close?.());
    const channels = opts.channels;
    const secretBox = new SecretBox(opts.masterKey);
    let callbackBase = '';
    const deps = appDeps(opts, { db, clock, counters, channel, channels, secretBox, credentialCache, metrics }, () => callbackBase);
    let draining = false;
    const jobs = jobsControl((jobOpts) => startJobs({ db, clock, logger, secretBox, config, channel, channels, bot: opts.bot }, withDeliveryMetrics(jobOpts, metrics, clock)));
    // The configured Graph version against Meta's end dates: in /readyz, and a warning a day in the log.
    const graphVersion = graphVersionWatch({ version: opts.channelVersion ?? config.graphApiVersion, now: () => clock.now(), warn: (m, f) => logger.warn(m, f) });
    graphVersion.check();
    const versionTimer = setInterval(() => graphVersion.check(), 3_600_000);
    versionTimer.unref();
    stops.unshift(async () => clearInterval(versionTimer));
    const ha = haWatch(db, config, logger, clock);
    stops.unshift(async () => ha.stop());
    const readiness = readinessCheck({ db, config, counters, jobsRunning: () => jobs.current !== undefined, draining: () => draining, graphVersion, ha });
    collectGauges(metrics, db, readiness, ha);
    const app = createApp({ ...deps, handlers: opts.handlers, adminToken: opts.adminToken, readiness, simulatorUrl: opts.simulatorUrl });
    opts.bot?.attach(deps);
    if (opts.jobs !== false) await jobs.start(opts.jobs);
    stops.unshift(jobs.stop);

    return {
      deps, db, app,
      get jobs() {
        return jobs.current;
      },
      startJobs: jobs.start,
      stopJobs: jobs.stop,
      setCallbackBase: (url) => {
        callbackBase = url;
      },
      readiness,
      drain: () => {
        draining = true;
      },
      metrics,
      close: async () => {
        for (const stop of stops) await stop().catch((e) => logger.warn(`shutdown step failed: ${e}`));
      },
    };
  } catch (e) {
    for (const stop of stops) await stop().catch(() => undefined);
    throw e;
  }
}

/** The domain's and the edge's dependencies, from what createServices made. */
function appDeps(
  opts: ServicesOptions,
  made: Pick<AppDeps, 'db' | 'clock' | 'counters' | 'channel' | 'channels' | 'secretBox' | 'credentialCache' | 'metrics'>,
  callbackBase: () => string,
): AppDeps {
  const { db, secretBox } = made;
  const { simulatorUrl, logger } = opts;
  return {
    ...made, config: opts.config, logger, bot: opts.bot,
    contactMerge: CONTACT_MERGE,
    contract: opts.contract ?? loadPublicContract(),
    adminContract: opts.adminContract ?? loadAdminContract(),
    runtimeContract: opts.runtimeContract ?? loadRuntimeContract(),
    cursorSecret: deriveKey(opts.masterKey, 'cursor'),
    provisionChannel: simulatorUrl
      ? (projectId: string) => simulatedChannelProvisioner({ db, secretBox, logger }, simulatorUrl, callbackBase())(projectId)
      : undefined,
    validateResponses: opts.validateResponses ?? false,
    checkContracts: opts.checkContracts ?? true,
    onResponseViolation: opts.onResponseViolation,
  };
}

/** The service's pool, and the tenant pools beside it: project tables log in as each project's role. */
async function openDatabases(opts: ServicesOptions): Promise<Database> {
  const { config } = opts;
  const db = await whileStarting('open the pools', () => openDatabase(opts.databaseUrl, {
    max: opts.poolMax ?? config.databasePoolMax,
    logger: opts.logger,
    acquireTimeoutMs: config.databaseAcquireTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
    commitTimeoutMs: config.databaseCommitTimeoutMs,
  }), opts.connectDeadline);
  configureTenantPools(db.pool, opts.databaseUrl, {
    total: config.tablesPoolMax,
    perProject: config.tablesProjectConcurrency,
    acquireTimeoutMs: config.tablesAcquireTimeoutMs,
    secret: deriveKey(opts.masterKey, 'tenant-login'),
    commits: db.commits,
  });
  return db;
}

/** The Cloud API client (Meta's Graph API or the simulator), its calls counted in the metrics. */
function createChannel(opts: ServicesOptions, metrics: Metrics): CloudApiClient {
  return new CloudApiClient({
    baseUrl: opts.graphBaseUrl,
    version: opts.channelVersion ?? opts.config.graphApiVersion,
    timeoutMs: opts.channelTimeoutMs ?? opts.config.graphTimeoutMs,
    logger: opts.logger,
    onCall: (op, outcome, ms) => metrics.graphCall(op, outcome, ms / 1000),
  });
}

/** The one job runner of this instance: starting again stops the running one first. */
function jobsControl(launch: (opts: JobsOptions) => Promise<Jobs>) {
  let current: Jobs | undefined;
  const stop = async () => {
    const running = current;
    current = undefined;
    await running?.stop();
  };
  const start = async (opts: JobsOptions = {}) => {
    await stop();
    return (current = await launch(opts));
  };
  return {
    get current() {
      return current;
    },
    start,
    stop,
  };
}

/** A commit was cancelled for want of a synchronous standby a moment ago: unready for writes meanwhile. */
const recentlyUnconfirmed = (db: Database) => writesUnconfirmed(db.commits);

/** What the HA topology lacks (lib/platform/ha-watch.ts), checked every 10 s, logged on change. */
function haWatch(db: Database, config: ServicesOptions['config'], logger: ServicesOptions['logger'], clock: Clock): HaWatch {
  const target = redisTargetOf(config);
  const bound = <T>(p: Promise<T>) => Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), 2000).unref())]);
  return watchHa({
    readDatabase: () => bound(readReplication(db.pool, recentlyUnconfirmed(db))),
    readRedis: target?.kind === 'sentinel' ? () => readRedisHa(target, Math.max(1000, config.redisTimeoutMs)) : undefined,
    readEtcd: config.haEtcdEndpoints?.length ? () => readEtcd(config.haEtcdEndpoints!) : undefined,
    logger,
    now: () => clock.now(),
    everyMs: 10_000,
  });
}

/**
 * What /readyz reports: the database answers and takes writes (not in recovery, not read-only),
 * every migration is applied (checked until it is once true), the jobs run, Redis (when
 * configured) is reachable, and no shutdown has begun.
 */
function readinessCheck(o: {
  db: Database; config: ServicesOptions['config']; counters: unknown; jobsRunning: () => boolean; draining: () => boolean;
  graphVersion: { check(): GraphVersionReport };
  ha: HaWatch;
}): () => Promise<Readiness> {
  const { db, config } = o;
  let migrationsApplied = false;
  return async (): Promise<Readiness> => {
    const checks: Record<string, string> = {};
    const bounded = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timed out')), 2000).unref())]);
    // Beside it, on its own connection: can the primary confirm commits (a synchronous standby)?
    const replication = bounded(readReplication(db.pool, recentlyUnconfirmed(db)));
    replication.catch(() => undefined);
    try {
      // Reachable is not enough: a primary restarted read-only, or demoted to a standby (Patroni),
      // answers reads and refuses every write. One round trip says both.
      const { rows } = await bounded(db.pool.query<{ recovery: boolean; read_only: string }>(
        "SELECT pg_catalog.pg_is_in_recovery() AS recovery, pg_catalog.current_setting('transaction_read_only') AS read_only",
      ));
      checks.database = rows[0]?.recovery
        ? 'read-only (in recovery: a standby or a demoted primary; writes are refused)'
        : rows[0]?.read_only === 'on'
          ? 'read-only (default_transaction_read_only is on; writes are refused)'
          : 'ok';
    } catch (e) {
      checks.database = `unreachable (${e instanceof Error ? e.message : String(e)})`;
    }
    if (checks.database === 'ok') {
      try {
        checks.replication = (await replication).check;
      } catch (e) {
        checks.replication = `unknown (${e instanceof Error ? e.message : String(e)})`;
      }
    }
    if (!migrationsApplied && !checks.database.startsWith('unreachable')) {
      try {
        const local = (await readMigrations()).map((m) => m.name);
        const { rows } = await bounded(db.pool.query<{ migration_name: string }>('SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL'));
        const applied = new Set(rows.map((r) => r.migration_name));
        const missing = local.filter((n) => !applied.has(n));
        migrationsApplied = missing.length === 0;
        if (!migrationsApplied) checks.migrations = `not applied: ${missing.join(', ')}`;
      } catch (e) {
        checks.migrations = `unknown (${e instanceof Error ? e.message : String(e)})`;
      }
    }
    if (migrationsApplied) checks.migrations = 'ok';
    else checks.migrations ??= 'unknown';
    checks.jobs = o.jobsRunning() ? 'ok' : 'not running';
    const redis = o.counters as { isReady?: boolean };
    // Informational: without Redis the rate limits fail open and every request is served, so an
    // unreachable Redis (a Sentinel failover, an outage) must not take every instance out of the balancer.
    checks.redis = !redisTargetOf(config) ? 'not configured' : redis.isReady === false ? 'unreachable (rate limits fail open)' : 'ok';
    if (o.draining()) checks.shutdown = 'draining';
    const ready = !o.draining() && Object.entries(checks).every(([name, v]) => name === 'redis' || v === 'ok' || v === 'not configured');
    // Informational: an ending Graph version never makes the instance unready (sends still work until Meta's date).
    const graph = o.graphVersion.check();
    // Informational too: what the HA topology lacks, as last checked (never makes the instance unready).
    return { ready, checks, graph_api: { ...graph, warning: graphVersionWarning(graph) }, ha: o.ha.report() };
  };
}

/** Gauges read when /metrics is scraped: readiness, the outbox's backlog, jobs overdue, what HA lacks. */
function collectGauges(metrics: Metrics, db: Database, readiness: () => Promise<Readiness>, ha: HaWatch): void {
  metrics.onCollect(async () => {
    const report = ha.report();
    const out: CollectedGauges = {
      ready: (await readiness()).ready,
      ...(report.checked_at ? { haMissing: report.missing.length } : {}),
      ...(report.database?.lag_seconds != null ? { replicationLagSeconds: report.database.lag_seconds } : {}),
    };
    const count = async (sql: string) => Number((await db.pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
    out.outboxPending = await count('SELECT count(*) AS n FROM events WHERE dispatched_at IS NULL').catch(() => undefined);
    out.jobsDue = await count(`SELECT count(*) AS n FROM agenda_jobs WHERE next_run_at <= now() AND locked_at IS NULL AND NOT coalesce(disabled, false)`).catch(() => undefined);
    return out;
  });
}

/** Every webhook delivery attempt is counted in the metrics (and still reaches the caller's observer). */
function withDeliveryMetrics(jobOpts: JobsOptions, metrics: Metrics, clock: Clock): JobsOptions {
  const observe = jobOpts.webhooks?.onAttempt;
  return {
    ...jobOpts,
    webhooks: {
      ...jobOpts.webhooks,
      onAttempt: (info: Parameters<NonNullable<typeof observe>>[0]) => {
        metrics.delivery(info.kind === 'success' ? 'success' : info.kind === 'retry' ? 'failed_will_retry' : 'dropped', (clock.now().getTime() - info.eventCreatedAt.getTime()) / 1000);
        observe?.(info);
      },
    },
  };
}
