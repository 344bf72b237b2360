/**
 * The database's small shared vocabulary: what a statement runs on (tx.ts), one transaction on pg
 * or on Prisma (with its isolation, access mode, settings and retries), and one retry of a
 * deadlocked statement. Every module uses these; none keeps a copy of its own
 * (scripts/check-transactions.ts).
 */
import type pg from 'pg';
import type { Prisma, PrismaClient } from '../../../generated/prisma/client.js';
import { pgTx, prismaTx, type Queryable, type Tx } from './tx.js';

export type { Queryable, RawTx } from './tx.js';

/** Prisma's transaction (its typed client) that is also the one handle stores take. */
export type PrismaTx = Prisma.TransactionClient & Tx;

/** How a transaction runs (inTransaction, transactionOn, inPrismaTransaction). */
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
  /** SQLSTATEs that run the whole transaction again (40P01 deadlock, 40001 serialization failure). */
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
 * error; the connection always given back (destroyed when it could not roll back). The one way the
 * service runs a transaction on pg (scripts/check-transactions.ts fails on a BEGIN written anywhere
 * else). The connection is also the handle stores take (Tx).
 */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient & Tx) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
  return retrying(opts, async () => {
    const client = await pool.connect();
    const state: { broken?: boolean } = {};
    try {
      return await transactionOn(client, (c) => work(pgTx(c)), opts, state);
    } finally {
      client.release(state.broken);
    }
  });
}

const PRISMA_ISOLATION = {
  'READ COMMITTED': 'ReadCommitted',
  'REPEATABLE READ': 'RepeatableRead',
  SERIALIZABLE: 'Serializable',
} as const satisfies Record<NonNullable<TransactionOptions['isolation']>, Prisma.TransactionIsolationLevel>;

/**
 * One interactive transaction of Prisma's (its typed client inside), with the same options as
 * inTransaction: for the rooms that write through Prisma's models (docs/storage.md). The one way
 * the service runs a Prisma transaction (scripts/check-transactions.ts fails on a `$transaction`
 * anywhere else). Its client is also the handle stores take (Tx).
 */
export async function inPrismaTransaction<T>(prisma: PrismaClient, work: (tx: PrismaTx) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
  return retrying(opts, () => prisma.$transaction(async (tx) => {
    if (opts.readOnly !== undefined) await tx.$executeRawUnsafe(opts.readOnly ? 'SET TRANSACTION READ ONLY' : 'SET TRANSACTION READ WRITE');
    for (const [name, value] of Object.entries(opts.local ?? {})) await tx.$executeRawUnsafe(settingSql(name, value));
    return work(prismaTx(tx));
  }, opts.isolation ? { isolationLevel: PRISMA_ISOLATION[opts.isolation] } : undefined));
}

/**
 * With `retryOn`, a transaction that failed with one of those SQLSTATEs runs again from the start,
 * with a short growing pause, up to `attempts` in all.
 */
async function retrying<T>(opts: TransactionOptions, once: () => Promise<T>): Promise<T> {
  const attempts = opts.retryOn?.length ? Math.max(1, opts.attempts ?? 5) : 1;
  for (let i = 1; ; i++) {
    try {
      return await once();
    } catch (e) {
      if (i >= attempts || !opts.retryOn!.includes(sqlState(e))) throw e;
    }
    await new Promise((r) => setTimeout(r, 10 * i));
  }
}

/** The SQLSTATE of a failed statement, from pg or from Prisma (which keeps the driver's under `meta`). */
function sqlState(e: unknown): string {
  const err = e as { code?: string; meta?: { code?: string; driverAdapterError?: { cause?: { originalCode?: string } } } };
  return err.meta?.driverAdapterError?.cause?.originalCode ?? err.meta?.code ?? err.code ?? '';
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
