/**
 * PostgreSQL's LISTEN/NOTIFY, in one place (with transactions and locks, what a move to another
 * PostgreSQL-compatible engine would have to replace; scripts/check-transactions.ts keeps it here).
 *
 * `listen` holds a connection of its own (not one of the pool's, so a busy pool never starves it)
 * that reconnects with backoff. After every (re)connect each handler is called once with no payload,
 * since notifications sent while the listener was away are lost: a handler re-reads what it caches.
 * `onLost` says the connection went away, so a cache can stop trusting itself until it is back.
 *
 * `notify` sends one notification outside a statement of the caller's; a writer that notifies inside
 * its own statement (a CTE's `pg_notify`) keeps doing so, delivered on commit.
 */
import pg from 'pg';
import type { Logger } from '../logger.js';

export interface Listener {
  close(): Promise<void>;
}

/** Handlers by channel; `payload` is undefined after a (re)connect. */
export type Channels = Record<string, (payload: string | undefined) => void>;

export interface ListenOptions {
  /** Named in the log lines ("webhook listener", "credential cache"). */
  name: string;
  /** The connection went away; handlers are called with no payload once it is back. */
  onLost?: () => void;
  /** First delay before reconnecting (250 ms); doubles up to `maxRetryMs` (10 s). */
  retryMs?: number;
  maxRetryMs?: number;
}

/** Resolves once the first LISTEN is in place (or failed and a retry is scheduled). */
export async function listen(pool: pg.Pool, channels: Channels, logger: Pick<Logger, 'warn'> | undefined, opts: ListenOptions): Promise<Listener> {
  const firstRetryMs = opts.retryMs ?? 250;
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = firstRetryMs;
  let timer: NodeJS.Timeout | undefined;

  const lost = (c: pg.Client) => {
    c.end().catch(() => undefined);
    if (client !== c) return;
    client = undefined;
    opts.onLost?.();
  };
  const connect = async () => {
    if (closed) return;
    const c = new pg.Client((pool as unknown as { options: pg.ClientConfig }).options);
    c.on('error', (e) => {
      logger?.warn(`${opts.name}: connection error`, { error: e.message });
      lost(c);
      schedule();
    });
    c.on('notification', (n) => channels[n.channel]?.(n.payload ?? ''));
    try {
      await c.connect();
      for (const channel of Object.keys(channels)) await c.query(`LISTEN ${c.escapeIdentifier(channel)}`);
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      retryMs = firstRetryMs;
      for (const handler of Object.values(channels)) handler(undefined);
    } catch (e) {
      await c.end().catch(() => undefined);
      logger?.warn(`${opts.name}: cannot listen, retrying`, { error: e instanceof Error ? e.message : String(e) });
      schedule();
    }
  };
  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, retryMs);
    timer.unref();
    retryMs = Math.min(retryMs * 2, opts.maxRetryMs ?? 10_000);
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

/** One notification (delivered when the caller's transaction, if any, commits). */
export async function notify(db: Pick<pg.Pool | pg.PoolClient, 'query'>, channel: string, payload = ''): Promise<void> {
  await db.query('SELECT pg_notify($1, $2)', [channel, payload]);
}
