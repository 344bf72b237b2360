/**
 * A bound on commits that wait for a synchronous standby (issue 71).
 *
 * Under synchronous replication (Patroni's `synchronous_mode_strict`), a commit is written on the
 * primary and then waits until a standby confirms it; with no synchronous standby connected it waits
 * for ever, and so would the request. Past `boundMs`, the guard asks PostgreSQL which of the pool's
 * statements wait on `SyncRep` and cancels those (pg_cancel_backend, allowed on the service's own
 * sessions). PostgreSQL then ends the wait with a WARNING ("canceling wait for synchronous
 * replication … The transaction has already committed locally") and reports the COMMIT as done.
 * The guard turns that into an error with SQLSTATE 57014, which errors.ts counts as unavailability:
 * the request answers 503 with Retry-After. Its effect is unknown to the client: committed on the
 * primary, replicated once a standby returns (then visible to a retry), as after a connection lost
 * during COMMIT.
 *
 * Only statements that wait on SyncRep are cancelled: a long query is left to statement_timeout.
 * The guard's own session only reads pg_stat_activity, and reads never wait for a standby.
 *
 * A stalled primary (its processes stopped, a machine frozen) answers nothing, not even the
 * guard, and a cancel would not reach it: when the guard's own statement gets no answer within
 * half of `boundMs` (at least 1 s), the connections of the statements past their bound are closed
 * from this side. Those statements fail as a lost connection (503, outcome unknown as for any
 * connection lost during COMMIT) and the pool opens new connections once the server answers. A refusal (too many
 * connections, say) is an answer: nothing is closed then.
 */
import pg from 'pg';
import { createLogThrottle } from '../log-throttle.js';

const SYNC_CANCELLED = /canceling (the )?wait for synchronous replication/i;
const FLAG = Symbol('syncWaitCancelled');
const IN_FLIGHT = Symbol('statementsInFlight');
const STATEMENT = Symbol('statementText');
const BY_KEY = Symbol('cancelByBackendKey');
/** No answer at all, as opposed to a refusal. */
const NO_ANSWER = /timeout|timed out|Connection terminated/i;

export interface CommitGuardLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
}

export interface CommitGuard {
  /** When a commit was last cancelled for want of a synchronous standby (epoch ms), else 0. */
  lastUnconfirmedAt(): number;
  /**
   * Bounds the commits of another pool too (the tenant pools of lib/tables/tenant-pool.ts). Its
   * sessions are logins the service may neither see waiting nor signal: a COMMIT of theirs past the
   * bound is cancelled with the protocol's own cancel request (its backend key), which needs no privilege.
   */
  watch(pool: pg.Pool): void;
  close(): Promise<void>;
}

type Guarded = pg.PoolClient & { [FLAG]?: boolean; [IN_FLIGHT]?: number; [STATEMENT]?: string; [BY_KEY]?: boolean; processID?: number | null; host?: string; port?: number; _activeQuery?: unknown; connection?: { stream?: { destroy(err?: Error): void } } };

/** The error a COMMIT answers when its wait for a synchronous standby was cancelled. */
/** A commit cancelled for want of a synchronous standby keeps writes counted as unconfirmed this long (ms). */
export const RECENT_UNCONFIRMED_MS = 5000;

/** Whether a commit was cancelled for want of a synchronous standby a moment ago (writes cannot be confirmed now). */
export function writesUnconfirmed(guard: CommitGuard | undefined, now = Date.now()): boolean {
  const at = guard?.lastUnconfirmedAt() ?? 0;
  return at > 0 && now - at < RECENT_UNCONFIRMED_MS;
}

/** Whether `e` is a commit whose wait for a synchronous standby was cancelled: committed on the primary, outcome unknown. */
export function isUnconfirmedCommit(e: unknown): boolean {
  return (e as { code?: string } | null)?.code === '57014' && /not confirmed by a synchronous standby/.test(String((e as Error).message));
}

export function unconfirmedCommitError(boundMs: number): Error {
  return Object.assign(
    new Error(`commit not confirmed by a synchronous standby within ${boundMs} ms (no synchronous standby connected?): committed on the primary only; the outcome is unknown until replication resumes`),
    // The shape of a pg error, so Prisma's adapter passes the SQLSTATE on (errors.ts reads it there).
    { code: '57014', severity: 'ERROR', detail: 'The wait for synchronous replication was cancelled after the commit bound.' },
  );
}

export function guardCommits(pools: pg.Pool[], opts: { url: string; boundMs: number; logger?: CommitGuardLogger }): CommitGuard {
  let lastUnconfirmed = 0;
  let watchdog: pg.Client | undefined;
  let closed = false;
  const due = new Map<number, Guarded>();
  let flushing: Promise<void> | undefined;
  const throttle = createLogThrottle(10_000);
  const warn = (message: string) => throttle((n) => (opts.logger ? opts.logger.warn(message + (n ? ` (${n} more since last report)` : '')) : console.warn(message)));

  const connectWatchdog = async (): Promise<pg.Client> => {
    if (watchdog) return watchdog;
    // Reading pg_stat_activity takes milliseconds: half the bound without an answer is a stall.
    const answerMs = Math.max(1000, Math.round(opts.boundMs / 2));
    const c = new pg.Client({ connectionString: opts.url, connectionTimeoutMillis: answerMs, query_timeout: answerMs, application_name: 'commit-guard' });
    c.on('error', () => {
      if (watchdog === c) watchdog = undefined;
    });
    await c.connect();
    watchdog = c;
    return c;
  };

  // One statement for every commit past its bound at that moment.
  const flush = async (): Promise<void> => {
    while (due.size && !closed) {
      const overdue = [...due];
      const pids = overdue.map(([pid]) => pid);
      due.clear();
      try {
        const c = await connectWatchdog();
        const { rows } = await c.query<{ pid: number }>(
          // OFFSET 0 keeps the filter ahead of the cancel (a cancel of anything but a SyncRep wait would fail a statement);
          // only sessions whose role's privileges we have (a tenant login we may not signal would fail the whole statement).
          "SELECT pid FROM (SELECT pid FROM pg_catalog.pg_stat_activity WHERE pid = ANY($1::int[]) AND wait_event = 'SyncRep' AND pg_catalog.pg_has_role(usesysid, 'USAGE') OFFSET 0) w WHERE pg_catalog.pg_cancel_backend(pid)",
          [pids],
        );
        if (rows.length) warn(`database: ${rows.length} commit(s) waited ${opts.boundMs} ms for a synchronous standby and were cancelled (answered 503); writes cannot be confirmed until a synchronous standby is connected`);
      } catch (e) {
        watchdog?.end().catch(() => undefined);
        watchdog = undefined;
        const reason = e instanceof Error ? e.message : String(e);
        const stuck = NO_ANSWER.test(reason) ? overdue.filter(([, c]) => (c[IN_FLIGHT] ?? 0) > 0) : [];
        for (const [, c] of stuck) c.connection?.stream?.destroy(new Error(`Connection terminated: the database did not answer a statement within ${opts.boundMs} ms, nor the check after it (stalled)`));
        warn(`database: could not check statements past ${opts.boundMs} ms (${reason})` + (stuck.length ? `; closed ${stuck.length} connection(s) to a database that does not answer (answered 503)` : ''));
      }
    }
  };
  // The protocol's cancel request, on a connection of its own (pg's Client.cancel); the server closes it.
  const cancelByKey = (client: Guarded) => {
    const canceller = new pg.Client({ host: client.host, port: client.port }) as unknown as { connection: { on(e: string, f: () => void): void }; cancel(c: unknown, q: unknown): void };
    canceller.connection.on('error', () => undefined);
    canceller.cancel(client, client._activeQuery);
  };
  const overdue = (client: Guarded) => {
    if (!client.processID) return;
    if (client[BY_KEY] && /^\s*COMMIT\b/i.test(client[STATEMENT] ?? '')) cancelByKey(client);
    due.set(client.processID, client);
    flushing ??= flush().finally(() => (flushing = undefined));
  };

  const instrument = (client: Guarded, byKey: boolean) => {
    client[BY_KEY] = byKey;
    client.on('notice', (msg: { message?: string }) => {
      if (SYNC_CANCELLED.test(msg.message ?? '')) client[FLAG] = true;
    });
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    // The notice arrives before the statement's completion: the completion it belongs to is the next one.
    const settle = (err: unknown): unknown => {
      if (!client[FLAG]) return err;
      client[FLAG] = false;
      lastUnconfirmed = Date.now();
      return err ?? unconfirmedCommitError(opts.boundMs);
    };
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const config = args[0] as { submit?: unknown } | undefined;
      // Cursors and streams (objects with submit) complete on their own schedule: passed through.
      if (config && typeof config === 'object' && typeof config.submit === 'function') return original(...args);
      client[STATEMENT] = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
      const timer = setTimeout(() => overdue(client), opts.boundMs);
      timer.unref();
      client[IN_FLIGHT] = (client[IN_FLIGHT] ?? 0) + 1;
      const done = () => {
        clearTimeout(timer);
        client[IN_FLIGHT] = (client[IN_FLIGHT] ?? 1) - 1;
      };
      const cbIndex = args.findIndex((a) => typeof a === 'function');
      if (cbIndex >= 0) {
        const cb = args[cbIndex] as (err: unknown, res?: unknown) => void;
        args[cbIndex] = (err: unknown, res: unknown) => {
          done();
          const e = settle(err);
          return e ? cb(e) : cb(undefined, res);
        };
        return original(...args);
      }
      return (original(...args) as Promise<unknown>).then(
        (res) => {
          done();
          const e = settle(undefined);
          if (e) throw e;
          return res;
        },
        (err: unknown) => {
          done();
          throw settle(err);
        },
      );
    };
  };
  for (const pool of pools) pool.on('connect', (client) => instrument(client as Guarded, false));

  return {
    lastUnconfirmedAt: () => lastUnconfirmed,
    watch: (pool: pg.Pool) => pool.on('connect', (client) => instrument(client as Guarded, true)),

    async close() {
      closed = true;
      await flushing?.catch(() => undefined);
      await watchdog?.end().catch(() => undefined);
      watchdog = undefined;
    },
  };
}
