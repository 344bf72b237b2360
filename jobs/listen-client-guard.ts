/**
 * The Agenda PostgreSQL backend's notification channel checks a client out of our pool for its
 * LISTEN and keeps it in `listenClient`. When its connection dies while it connects (a backend
 * terminated, or PostgreSQL restarting, between the checkout and the LISTEN), `connect()` fails
 * and schedules a reconnect but never gives that client back: each such failure leaks one pool
 * connection for good (the pool shrinks, and `pool.end()` at shutdown waits for ever). Found by
 * tests/proofs/terminate-during-sends.test.ts. This wraps `connect()` so a failed attempt destroys the
 * client it checked out.
 */
import type pg from 'pg';

interface ListenChannel {
  connect(): Promise<void>;
  listenClient?: pg.PoolClient;
}

export function releaseListenClientOnFailedConnect(channel: object): void {
  const c = channel as ListenChannel;
  if (typeof c.connect !== 'function') return;
  const connect = c.connect.bind(c);
  c.connect = async () => {
    try {
      await connect();
    } catch (e) {
      const client = c.listenClient;
      c.listenClient = undefined;
      try {
        client?.release(true);
      } catch {
        // already released
      }
      throw e;
    }
  };
}
