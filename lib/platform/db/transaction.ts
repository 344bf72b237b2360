/**
 * The database's small shared vocabulary: what a statement runs on, one transaction, and one retry
 * of a deadlocked statement. Every module uses these; none keeps a copy of its own.
 */
import type pg from 'pg';
import type { Prisma } from '../../../generated/prisma/client.js';

/** Anything a statement can run on: the pool, a checked-out client, a transaction's client. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** A Prisma client or transaction client, for the raw statements a store makes inside a Prisma transaction. */
export type RawTx = Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>;

/** One transaction on a pooled connection: BEGIN, the work, COMMIT; ROLLBACK on any error; the connection always given back. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const out = await work(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    client.release();
  }
}

/**
 * Runs a statement again when PostgreSQL chose it as a deadlock's victim (40P01): writers that lock
 * the same rows in different orders (status notifications, confirms) can meet so. Up to
 * `attempts` tries, with a short growing pause; any other error is thrown at once.
 */
export async function retryDeadlock<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (e) {
      if ((e as { code?: string }).code !== '40P01' || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 10 * i));
    }
  }
}
