/**
 * The database's small shared vocabulary: what a statement runs on, one transaction (with its
 * isolation, access mode, settings and retries), and one retry of a deadlocked statement. Every
 * module uses these; none keeps a copy of its own (scripts/check-transactions.ts).
 */
import type pg from 'pg';
import type { Prisma } from '../../../generated/prisma/client.js';

/** Anything a statement can run on: the pool, a checked-out client, a transaction's client. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** A Prisma client or transaction client, for the raw statements a store makes inside a Prisma transaction. */
export type RawTx = Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>;

/** How a transaction runs (inTransaction, transactionOn). */
export interface TransactionOptions {
  /** Default READ COMMITTED. */
  isolation?: 'READ COMMITTED' | 'REPEATABLE READ' | 'SERIALIZABLE';
  /** READ ONLY (else READ WRITE, PostgreSQL's default). */
  readOnly?: boolean;
  /**
   * Settings for this transaction only (SET LOCAL), sent with BEGIN in one round trip: numbers as
   * they are, strings as SQL (the caller quotes identifiers and literals). Names are checked.
   */
  local?: Record<string, string | number>;
  /** SQLSTATEs that run the whole transaction again (40P01 deadlock, 40001 serialization failure); inTransaction only. */
  retryOn?: string[];
  /** Tries in all when `retryOn` matches (default 5). */
  attempts?: number;
}

const SETTING = /^[a-z_]+$/;

function settingSql(name: string, value: string | number): string {
  if (!SETTING.test(name)) throw new Error(`not a setting name: ${name}`);
  return `SET LOCAL ${name} = ${typeof value === 'number' ? String(Math.floor(value)) : value}`;
}

/** BEGIN with the options' isolation, access mode and SET LOCAL settings, as one statement string. */
export function beginStatement(opts: TransactionOptions = {}): string {
  let sql = 'BEGIN';
  if (opts.isolation) sql += ` ISOLATION LEVEL ${opts.isolation}`;
  if (opts.readOnly !== undefined) sql += opts.readOnly ? ' READ ONLY' : ' READ WRITE';
  for (const [name, value] of Object.entries(opts.local ?? {})) sql += `; ${settingSql(name, value)}`;
  return sql;
}

/** Sets `name` for the rest of the transaction `tx` (SET LOCAL); `value` is SQL (quoted by the caller). */
export async function setLocal(tx: Queryable, name: string, value: string | number): Promise<void> {
  await tx.query(settingSql(name, value));
}

/**
 * One transaction on a connection the caller holds (and releases): BEGIN (with `opts`), the work,
 * COMMIT; ROLLBACK on any error, which is thrown. Sets `state.broken` when the ROLLBACK itself
 * failed (the connection should be destroyed, not reused).
 */
export async function transactionOn<T>(client: pg.PoolClient, work: (client: pg.PoolClient) => Promise<T>, opts: TransactionOptions = {}, state: { broken?: boolean } = {}): Promise<T> {
  try {
    await client.query(beginStatement(opts));
    const out = await work(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {
      state.broken = true;
    });
    throw e;
  }
}

/**
 * One transaction on a pooled connection: BEGIN (with `opts`), the work, COMMIT; ROLLBACK on any
 * error; the connection always given back (destroyed when it could not roll back). With `retryOn`,
 * a transaction that failed with one of those SQLSTATEs runs again from the start, with a short
 * growing pause, up to `attempts` in all. The one way the service runs a transaction on pg
 * (scripts/check-transactions.ts fails on a BEGIN written anywhere else).
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
  const attempts = opts.retryOn?.length ? Math.max(1, opts.attempts ?? 5) : 1;
  for (let i = 1; ; i++) {
    const client = await pool.connect();
    const state: { broken?: boolean } = {};
    try {
      return await transactionOn(client, work, opts, state);
    } catch (e) {
      if (i >= attempts || !opts.retryOn!.includes((e as { code?: string }).code ?? '')) throw e;
    } finally {
      client.release(state.broken);
    }
    await new Promise((r) => setTimeout(r, 10 * i));
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
