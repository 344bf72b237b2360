/**
 * One pg.Pool per process and a PrismaClient on top of it (driver adapter, Prisma 7).
 *
 * Policy and why: the pool is ours, not Prisma's, so code that needs plain SQL (advisory locks, the job
 * backend, health checks) shares the same connections and limits. Opening checks the connection at
 * once, so a wrong DATABASE_URL fails at start with a clear message instead of at the first request.
 * The pool has an 'error' listener: an idle connection dropped by the server (restart, shutdown) must
 * not crash the process. `close()` is idempotent and must run before the embedded server stops.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { createLogThrottle } from '../counters.js';
import { guardCommits, type CommitGuard } from './commit-guard.js';
import { pgTx, type Tx } from './tx.js';
import { PrismaClient } from '../../../generated/prisma/client.js';

export interface Database {
  pool: pg.Pool;
  prisma: PrismaClient;
  /** The pool as the one handle stores take (tx.ts), for a statement outside a transaction. */
  sql: Tx;
  /** The connections that plan GENERIC_PLAN_STATEMENTS once (pool.query routes them here). */
  plansOnce?: pg.Pool;
  /** The bound on commits waiting for a synchronous standby (commit-guard.ts), when set. */
  commits?: CommitGuard;
  close(): Promise<void>;
}

/**
 * Named statements PostgreSQL should plan once per connection, and that it would otherwise plan
 * on every call: with plan_cache_mode auto it keeps custom plans when they look cheaper, which
 * they always do for the ledger's record and its confirm (a custom plan sees the project id and
 * the input's length), and for the statuses' statement (its custom plan took 3 ms to make, more
 * than its run, 150 times a second at 50 replies a second: docs/benchmarks.md, Issue 66). Their
 * generic plans were checked to be as good (docs/benchmarks.md, Issues 49 and 66), so they run
 * on a few connections of their own with plan_cache_mode=force_generic_plan: a setting that would
 * also apply to every unnamed statement (Prisma's among them) on the main pool. `pool.query`
 * routes them by name, so anything that wraps the pool still sees them.
 */
export const GENERIC_PLAN_STATEMENTS: ReadonlySet<string> = new Set([
  'record-intent', 'confirm-sent-many', 'apply-statuses',
  // The Idempotency-Key's batched claim and answer: an `unnest` join by primary key, custom-planned
  // on every call before (150 to 210 µs of planning a call: docs/benchmarks.md, Issue 62).
  'idempotency-claim-many', 'idempotency-complete-many',
  // An event on its own (a custom event, a note, an assignment; inside a transaction it is planned
  // as PostgreSQL chooses), and the check before every webhook retry batch: each was planned on
  // every call (118 to 180 µs a plan, thousands a run: docs/benchmarks.md, Issue 69).
  'insert-event', 'webhook-cancel-orphaned',
  // The delivery engine's claim: custom-planned on every call at 660 to 930 µs a plan; its generic
  // plan walks the same due index per registration (execution per call unchanged in the bench).
  'webhook-claim-due',
]);

/**
 * Gives `pool` a few connections of its own with plan_cache_mode=force_generic_plan, and routes
 * `pool.query` of a GENERIC_PLAN_STATEMENTS name there. The API pool and the background pools
 * (jobs/context.ts) are routed alike. The caller ends the returned pool with its own.
 */
export function routeGenericPlans(pool: pg.Pool, settings: pg.PoolConfig): pg.Pool {
  const plansOnce = new pg.Pool({ ...settings, options: '-c plan_cache_mode=force_generic_plan' });
  const queryMain = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  const queryOnce = plansOnce.query.bind(plansOnce) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
    const name = typeof config === 'object' && config !== null ? (config as { name?: unknown }).name : undefined;
    return typeof name === 'string' && GENERIC_PLAN_STATEMENTS.has(name) ? queryOnce(config, ...rest) : queryMain(config, ...rest);
  };
  return plansOnce;
}

export interface DatabaseLogger {
  warn(message: string): void;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable database URL)';
  }
}

function describeError(e: unknown): string {
  const err = e as { message?: string; code?: string; errors?: { message: string }[] };
  return err?.message || err?.errors?.map((x) => x.message).join('; ') || err?.code || String(e);
}

export interface OpenDatabaseOptions {
  max?: number;
  logger?: DatabaseLogger;
  /** Longest wait for a free connection; past it the request answers 503 (never hangs). */
  acquireTimeoutMs?: number;
  /** Server-side bound on every statement (PostgreSQL `statement_timeout`); 0 = none. */
  statementTimeoutMs?: number;
  /** Longest wait of a commit for a synchronous standby before it is cancelled and answered 503; 0 = none. */
  commitTimeoutMs?: number;
}

export async function openDatabase(url: string, opts: OpenDatabaseOptions = {}): Promise<Database> {
  const settings = {
    connectionString: url,
    connectionTimeoutMillis: opts.acquireTimeoutMs ?? 5000,
    ...(opts.statementTimeoutMs ? { statement_timeout: opts.statementTimeoutMs } : {}),
  };
  const pool = new pg.Pool({ ...settings, max: opts.max ?? 10 });
  const plansOnce = routeGenericPlans(pool, { ...settings, max: Math.max(2, Math.ceil((opts.max ?? 10) / 3)) });
  // Idle connections dropped by a restart all fail at once: one line per interval with a count.
  const throttle = createLogThrottle(10_000);
  // A client checked out of the pool has no pool listener: a connection reset while it is held
  // (between two queries of a transaction, say) would be an unheard 'error' event and end the
  // process. The query in flight, if any, fails on its own; this only keeps the event heard.
  for (const p of [pool, plansOnce]) {
    p.on('connect', (client) => client.on('error', (err) => throttle((suppressed) => {
      const message = `database: connection lost while in use (${err.message})` + (suppressed ? ` (${suppressed} more since last report)` : '');
      if (opts.logger) opts.logger.warn(message);
      else console.warn(message);
    })));
    p.on('error', (err) => {
      throttle((suppressed) => {
        const message = `database: idle connection lost (${err.message}); the pool reconnects on next use` + (suppressed ? ` (${suppressed} more since last report)` : '');
        if (opts.logger) opts.logger.warn(message);
        else console.warn(message);
      });
    });
  }
  // Before the first connection, so that every connection is guarded.
  const commits = opts.commitTimeoutMs ? guardCommits([pool, plansOnce], { url, boundMs: opts.commitTimeoutMs, logger: opts.logger }) : undefined;
  try {
    await pool.query('SELECT 1');
  } catch (e) {
    await commits?.close();
    await pool.end().catch(() => undefined);
    await plansOnce.end().catch(() => undefined);
    throw new Error(`Cannot connect to PostgreSQL at ${redactUrl(url)}: ${describeError(e)}`);
  }
  const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
  let closing: Promise<void> | undefined;
  return {
    pool,
    prisma,
    sql: pgTx(pool),
    plansOnce,
    commits,
    close() {
      closing ??= (async () => {
        await commits?.close();
        await prisma.$disconnect().catch(() => undefined);
        await pool.end().catch(() => undefined);
        await plansOnce.end().catch(() => undefined);
      })();
      return closing;
    },
  };
}

/**
 * Fails with "cannot reach PostgreSQL at host:port (DATABASE_URL)" when nothing answers there, so
 * start-up says what to fix instead of a bare ECONNREFUSED from the migration runner.
 */
export async function checkReachable(url: string, timeoutMs = 5000): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (e) {
    let where = '(unparsable DATABASE_URL)';
    try {
      const u = new URL(url);
      where = `${u.hostname}:${u.port || 5432}`;
    } catch { /* keep the placeholder */ }
    throw new Error(`cannot reach PostgreSQL at ${where} (DATABASE_URL): ${describeError(e)}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
