/**
 * The job runner: Agenda on PostgreSQL (@agendajs/postgres-backend), sharing a pool we own.
 * Jobs are durable rows (`agenda_jobs`), so a job scheduled before a crash or restart runs after
 * it, on whichever instance is up; LISTEN/NOTIFY picks new jobs up at once. Jobs carry ids only
 * and must be safe to run twice.
 *
 * Pitfalls handled here: `processEvery` is given in milliseconds (a string such as
 * '500 milliseconds' is misparsed); `stop()` does not close our pool; every job run leaves a timer
 * of max(processEvery, lockLifetime) / 2 that outlives `stop()`, so keep `lockLifetimeMs` short
 * where a process must exit promptly (tests) and exit explicitly after a graceful shutdown.
 *
 * Its tables: the backend creates `agenda_jobs` and `agenda_logs` itself (CREATE TABLE/INDEX IF NOT
 * EXISTS, a trigger dropped and created again) on every connect, unguarded: instances starting at
 * once on a fresh database race it and one crashes ("duplicate key value violates unique
 * constraint pg_class_relname_nsp_index", issue 71). Here the backend's own DDL is told off
 * (`ensureSchema: false`) and run at start instead, by ensureJobTables, in one transaction under an
 * advisory lock: the first instance creates, the others wait and find everything there.
 */
import { Agenda } from 'agenda';
import { PostgresBackend, getCreateLogsIndexesSQL, getCreateLogsTableSQL } from '@agendajs/postgres-backend';
import type pg from 'pg';
import type { Logger } from '../lib/platform/logger.js';
import { inTransaction } from '../lib/platform/db/transaction.js';
import { lockForTransaction } from '../lib/platform/db/locks.js';
import { withSpan } from '../lib/platform/tracing/spans.js';
import { guardListenClient } from './listen-client-guard.js';
import { createRequire } from 'node:module';

export interface JobRunnerOptions {
  pool: pg.Pool;
  logger: Logger;
  /** How often the runner scans for due jobs, in ms (new jobs are also noticed through NOTIFY). */
  processEveryMs?: number;
  /** How long a claimed job stays locked before another runner may take it, in ms. */
  lockLifetimeMs?: number;
  maxConcurrency?: number;
  name?: string;
}

export interface JobDefinitionOptions {
  concurrency?: number;
  /** Remove one-time jobs once done (keeps `agenda_jobs` small). */
  removeOnComplete?: boolean;
}

export interface JobRunner {
  define<T>(name: string, handler: (data: T) => Promise<void>, opts?: JobDefinitionOptions): void;
  /** Runs `name` with `data` at `at` (durable). */
  schedule<T>(at: Date, name: string, data: T): Promise<void>;
  /** Runs `name` every `intervalMs` on one runner at a time. */
  every(intervalMs: number, name: string): Promise<void>;
  start(): Promise<void>;
  /** Stops taking jobs; jobs locked but not started are released for other runners. */
  stop(): Promise<void>;
}

/**
 * The backend's LISTEN connection is an EventEmitter that emits 'error' when PostgreSQL restarts or
 * its backend is terminated; unheard, that event ends the process. It reconnects by itself, but
 * gives up for good after 10 attempts (about 50 s): an outage of any length must be survived, so
 * attempts are unbounded (capped at 30 s apart) and a give-up is restarted.
 */
function watchNotifications(backend: PostgresBackend, logger: Logger): void {
  const channel = backend.notificationChannel as unknown as
    | (NodeJS.EventEmitter & { config?: { reconnect?: { maxAttempts: number } }; scheduleReconnect?: () => void; state?: string })
    | undefined;
  if (!channel) return;
  if (channel.config?.reconnect) channel.config.reconnect.maxAttempts = Number.POSITIVE_INFINITY;
  guardListenClient(channel);
  channel.on('error', (e: Error) => {
    logger.warn('job runner: notification channel error (reconnecting)', { error: e.message });
  });
}

/** The advisory lock the job tables' DDL runs under (every instance, every version, the same name). */
export const JOB_TABLES_LOCK = 'agenda:schema';
const LOG_TABLE = 'agenda_logs';

/**
 * The backend's tables, created or brought up to date once at a time: the backend's own DDL (the
 * repository's `createSchema`: table, added columns, indexes, trigger; and the job logger's table and
 * indexes), in one transaction holding JOB_TABLES_LOCK. An upgrade of @agendajs/postgres-backend
 * that drops `createSchema` fails here, at start, naming it (tests/jobs/job-tables.test.ts).
 */
export async function ensureJobTables(pool: pg.Pool, backend: PostgresBackend): Promise<void> {
  const repository = backend.repository as unknown as { createSchema?: (client: pg.PoolClient) => Promise<void> };
  if (typeof repository.createSchema !== 'function') {
    throw new Error('@agendajs/postgres-backend: PostgresJobRepository.createSchema is gone; jobs/runner.ts runs it under a lock (issue 71) and must be adapted');
  }
  await inTransaction(pool, async (client) => {
    await lockForTransaction(client, JOB_TABLES_LOCK);
    await repository.createSchema!.call(repository, client);
    await client.query(getCreateLogsTableSQL(LOG_TABLE));
    for (const sql of getCreateLogsIndexesSQL(LOG_TABLE)) await client.query(sql);
  });
}

export function createJobRunner(opts: JobRunnerOptions): JobRunner {
  const lockLifetime = opts.lockLifetimeMs ?? 15_000;
  // By default each instance polls every 0.9 to 1.1 s, chosen at start: instances polling at one
  // period stay in one phase, and the first to poll after a job falls due locks it, so jobs due on
  // whole seconds (the bots' schedule timers) would all go to the same instance. Drifting periods
  // share them out.
  const processEvery = opts.processEveryMs ?? Math.round(900 + Math.random() * 200);
  // No DDL of its own on connect (see ensureJobTables); logTableName is the logger's default, named.
  const backend = new PostgresBackend({ pool: opts.pool, ensureSchema: false, logTableName: LOG_TABLE });
  watchNotifications(backend, opts.logger);
  // Agenda's constructor calls backend.connect() and never handles its rejection: a database out of
  // reach at that moment was an unhandled rejection (the process ends) and a start() that waited for
  // ever. The failure is kept instead, and start() connects again, throwing what that meets.
  const connect = backend.connect.bind(backend);
  let connecting: Promise<void> = Promise.resolve();
  let connectFailure: { error: unknown } | undefined;
  backend.connect = () =>
    (connecting = connect().then(
      () => void (connectFailure = undefined),
      (error: unknown) => {
        connectFailure = { error };
        opts.logger.warn('job runner: first connection failed (start() tries again)', { error: error instanceof Error ? error.message : String(error) });
      },
    ));
  quietDebugColors();
  const agenda = new Agenda({
    backend,
    name: opts.name ?? `service-${process.pid}`,
    processEvery,
    maxConcurrency: opts.maxConcurrency ?? 50,
    defaultLockLifetime: lockLifetime,
  });
  agenda.on('error', (e: Error) => opts.logger.warn('job runner error', { error: e.message }));
  let started = false;

  return {
    define(name, handler, defOpts = {}) {
      agenda.define(name, async (job) => withSpan(`job ${name}`, { 'job.name': name }, () => handler(job.attrs.data as never)), {
        concurrency: defOpts.concurrency ?? 10,
        lockLifetime,
        removeOnComplete: defOpts.removeOnComplete ?? true,
      });
    },
    async schedule(at, name, data) {
      await agenda.schedule(at, name, data as never);
    },
    async every(intervalMs, name) {
      await agenda.every(intervalMs, name);
    },
    async start() {
      await connecting;
      if (connectFailure) {
        connectFailure = undefined;
        await connect();
      }
      await ensureJobTables(opts.pool, backend);
      await agenda.start();
      started = true;
    },
    async stop() {
      if (!started) return;
      started = false;
      await agenda.stop(false);
      // Agenda releases jobs it had queued for the near future a moment after stop() returns;
      // give it that moment before the caller closes the pool.
      await new Promise((r) => setTimeout(r, Math.min(processEvery, 2000) + 50));
    },
  };
}

/**
 * Agenda makes a `debug` logger for every job it runs, and `debug` asks whether stderr is a
 * terminal each time (an isatty system call: 3% of the service's CPU under the webhooks bench,
 * docs/benchmarks.md). Unless DEBUG is set nobody reads those loggers: their colours are decided
 * once here instead (`DEBUG_COLORS` still decides when it is set).
 */
function quietDebugColors(): void {
  if (process.env.DEBUG) return;
  try {
    const debug = createRequire(import.meta.url)('debug') as { inspectOpts?: Record<string, unknown> };
    if (debug.inspectOpts && !('colors' in debug.inspectOpts)) debug.inspectOpts.colors = false;
  } catch {
    // Agenda's `debug` is not where it was: nothing to quiet.
  }
}
