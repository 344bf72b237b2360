/**
 * PostgreSQL notifications for the delivery engine, on a connection of its own (not one of the
 * pool's) that reconnects with backoff:
 * - new events (`recordEvent` notifies inside the writer's transaction, delivered on commit) wake
 *   the fan-out at once;
 * - changed registrations (PATCH, DELETE, auto-disable) make queued deliveries of that
 *   registration re-read it before they are sent.
 * After every (re)connect each handler is called once with no payload, since notifications sent
 * while the listener was away are lost: the fan-out looks for events, and every queued delivery is
 * re-checked. The sweep covers anything missed in between.
 */
import pg from 'pg';
import type { Logger } from '../platform/logger.js';

export interface Listener {
  close(): Promise<void>;
}

/** Handlers by channel; `payload` is undefined after a (re)connect. */
export type Channels = Record<string, (payload: string | undefined) => void>;

/** Resolves once the first LISTEN is in place (or failed and a retry is scheduled). */
export async function listen(pool: pg.Pool, channels: Channels, logger: Logger): Promise<Listener> {
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = 250;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client((pool as unknown as { options: pg.ClientConfig }).options);
    c.on('error', (e) => {
      logger.warn('webhook listener: connection error', { error: e.message });
      c.end().catch(() => undefined);
      if (client === c) client = undefined;
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
      retryMs = 250;
      for (const handler of Object.values(channels)) handler(undefined);
    } catch (e) {
      await c.end().catch(() => undefined);
      logger.warn('webhook listener: cannot listen, retrying', { error: e instanceof Error ? e.message : String(e) });
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
