/**
 * The one handle a store receives to run SQL, whichever client runs it: a pg connection
 * (inTransaction), Prisma's transaction (inPrismaTransaction), or the pool outside a transaction
 * (`Database.sql`). Opaque: a store runs a statement on it through `queryRows` or `execute` only, so it is
 * written once and works inside either kind of transaction (docs/storage.md says which room opens
 * which). Rows decode alike on both: int8 as bigint, timestamp and date as UTC Dates (Prisma's raw
 * SQL decodes so); cast a numeric to text or float8 in the statement (Prisma would give a Decimal).
 */
import pg from 'pg';
import type { Prisma } from '../../../generated/prisma/client.js';

/** Anything a statement can run on: the pool, a checked-out client, a transaction's client. */
export type Queryable = Pick<pg.Pool, 'query'>;

/** What Prisma runs raw SQL on (a client or a transaction); stores take the handle (Tx) instead. */
export type RawTx = Pick<Prisma.TransactionClient, '$queryRawUnsafe' | '$executeRawUnsafe'>;

declare const TX: unique symbol;

/** A transaction (or the pool) as a store sees it: pass it on, or run a statement with `queryRows`/`execute`. */
export interface Tx {
  readonly [TX]: true;
}

/** The rows a statement returns (`$1`… are `values`). */
export function queryRows<R>(tx: Tx, text: string, ...values: unknown[]): Promise<R[]> {
  const prisma = asPrisma(tx);
  if (prisma) return prisma.$queryRawUnsafe<R[]>(text, ...values);
  return (tx as unknown as Queryable).query({ text, values: values.map(utc), types: SAME_AS_PRISMA }).then((r) => r.rows as R[]);
}

/** Runs a statement; how many rows it changed. */
export async function execute(tx: Tx, text: string, ...values: unknown[]): Promise<number> {
  const prisma = asPrisma(tx);
  if (prisma) return prisma.$executeRawUnsafe(text, ...values);
  return (await (tx as unknown as Queryable).query({ text, values: values.map(utc), types: SAME_AS_PRISMA })).rowCount ?? 0;
}

/**
 * `execute` of a statement run often enough to be prepared once per connection under `name`
 * (parsed once, and planned once when PostgreSQL's generic plan is as good). Prisma runs it unnamed.
 */
export async function executeNamed(tx: Tx, name: string, text: string, ...values: unknown[]): Promise<number> {
  const prisma = asPrisma(tx);
  if (prisma) return prisma.$executeRawUnsafe(text, ...values);
  return (await (tx as unknown as Queryable).query({ name, text, values: values.map(utc), types: SAME_AS_PRISMA })).rowCount ?? 0;
}

/** `queryRows` of a statement prepared once per connection under `name` (see executeNamed). */
export function queryRowsNamed<R>(tx: Tx, name: string, text: string, ...values: unknown[]): Promise<R[]> {
  const prisma = asPrisma(tx);
  if (prisma) return prisma.$queryRawUnsafe<R[]>(text, ...values);
  return (tx as unknown as Queryable).query({ name, text, values: values.map(utc), types: SAME_AS_PRISMA }).then((r) => r.rows as R[]);
}

/** A pg pool or connection as the handle (inTransaction and Database.sql make them so). */
export function pgTx<Q extends Queryable>(q: Q): Q & Tx {
  return q as Q & Tx;
}

/** A Prisma client or transaction as the handle (inPrismaTransaction makes them so). */
export function prismaTx<P extends RawTx>(p: P): P & Tx {
  return p as P & Tx;
}

/** A Date as Prisma sends it (UTC, also into a timestamp without time zone); pg would send local time. */
const utc = (v: unknown): unknown => (v instanceof Date ? v.toISOString() : v);

function asPrisma(tx: Tx): RawTx | undefined {
  return '$queryRawUnsafe' in (tx as object) ? (tx as unknown as RawTx) : undefined;
}

const INT8 = 20;
const INT8_ARRAY = 1016;
const TIMESTAMP = 1114;
const DATE = 1082;
const bigints = (pg.types.getTypeParser as (oid: number) => (v: string) => Array<string | null>)(INT8_ARRAY);

/** pg's parsers, but for the types it decodes otherwise than Prisma's raw SQL. */
const SAME_AS_PRISMA = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8) return (v: string) => BigInt(v);
    if (oid === INT8_ARRAY) return (v: string) => bigints(v).map((x) => (x === null ? null : BigInt(x)));
    if (oid === TIMESTAMP) return (v: string) => new Date(`${v.replace(' ', 'T')}Z`);
    if (oid === DATE) return (v: string) => new Date(`${v}T00:00:00Z`);
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;
