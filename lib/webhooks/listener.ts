/**
 * Wakes the dispatcher as soon as an event commits: `recordEvent` raises a PostgreSQL
 * notification inside the writer's transaction, delivered on commit. The listener holds its own
 * connection (not one of the pool's) and reconnects with backoff; after a (re)connect it wakes
 * the dispatcher once, since notifications sent while it was away are lost. The sweep covers
 * anything missed in between.
 */
import pg from 'pg';
import type { Logger } from '../logger.js';

export interface Listener {
  close(): Promise<void>;
}

/** Resolves once the first LISTEN is in place (or failed and a retry is scheduled). */
export async function listen(pool: pg.Pool, channel: string, onNotify: () => void, logger: Logger): Promise<Listener> {
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = 250;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client((pool as unknown as { options: pg.ClientConfig }).options);
    c.on('error', (e) => {
      logger.warn('webhook event listener: connection error', { error: e.message });
      c.end().catch(() => undefined);
      if (client === c) client = undefined;
      schedule();
    });
    c.on('notification', () => onNotify());
    try {
      await c.connect();
      await c.query(`LISTEN ${c.escapeIdentifier(channel)}`);
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      retryMs = 250;
      onNotify();
    } catch (e) {
      await c.end().catch(() => undefined);
      logger.warn('webhook event listener: cannot listen, retrying', { error: e instanceof Error ? e.message : String(e) });
      schedule();
    }
  };
  const schedule = () => {
    if (closed || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, retryMs);
    retryMs = Math.min(retryMs * 2, 10_000);
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
