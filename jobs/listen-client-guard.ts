/**
 * The Agenda PostgreSQL backend's notification channel checks a client out of our pool for its
 * LISTEN and keeps it in `listenClient`. Two ways it kept that client for good (the pool shrinks,
 * and `pool.end()` at shutdown waits for ever), both closed here:
 * - When its connection dies while it connects (a backend terminated, or PostgreSQL restarting,
 *   between the checkout and the LISTEN), `connect()` fails and schedules a reconnect but never
 *   gives that client back. Found by tests/proofs/terminate-during-sends.test.ts: a failed attempt
 *   now destroys the client it checked out.
 * - When the channel is disconnected (the runner stops) while a reconnect is under way (its
 *   connection was cut a moment before), `disconnect()` finds no client yet, and the reconnect then
 *   checks one out and LISTENs on it, or fails and schedules another. Found by
 *   tests/proofs/read-only-database.test.ts (a shutdown that waited past 90 s): an attempt that
 *   began before a disconnect now gives back what it took and schedules nothing.
 */
import type pg from 'pg';

interface ListenChannel {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  clearReconnect?(): void;
  listenClient?: pg.PoolClient;
}

function destroyListenClient(c: ListenChannel): void {
  const client = c.listenClient;
  c.listenClient = undefined;
  try {
    client?.release(true);
  } catch {
    // already released
  }
}

export function guardListenClient(channel: object): void {
  const c = channel as ListenChannel;
  if (typeof c.connect !== 'function' || typeof c.disconnect !== 'function') return;
  const connect = c.connect.bind(c);
  const disconnect = c.disconnect.bind(c);
  // Each disconnect starts a new generation: an attempt of an earlier one is stale when it ends.
  let generation = 0;
  c.connect = async () => {
    const mine = generation;
    try {
      await connect();
    } catch (e) {
      destroyListenClient(c);
      if (mine !== generation) c.clearReconnect?.();
      throw e;
    }
    if (mine !== generation) destroyListenClient(c);
  };
  c.disconnect = async () => {
    generation++;
    await disconnect();
  };
}
