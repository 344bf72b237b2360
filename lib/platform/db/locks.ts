/**
 * PostgreSQL's advisory locks, named: the one place that spells them (scripts/check-transactions.ts
 * fails on an advisory-lock call written anywhere else), so a move to a database without them has
 * one file to change.
 *
 * A lock is named by a string (`namespace:id`), hashed by PostgreSQL to its 64-bit key. Two hash
 * forms are in use and kept as they were, so instances of two versions during a rolling upgrade
 * take the same locks: `hashtextextended(name, 0)` (the default) and `hashtext(name)` (older
 * locks: tables, the portfolio's reach).
 */
import type { Queryable } from './transaction.js';

export type LockHash = 'extended' | 'text';

const keyOf = (hash: LockHash, param: string) => (hash === 'text' ? `pg_catalog.hashtext(${param})` : `pg_catalog.hashtextextended(${param}, 0)`);

/**
 * Waits for the lock named `name`, held until the transaction `tx` ends (pg_advisory_xact_lock).
 * `prepared`: a named statement, parsed once per connection (a hot path on the service's own pool);
 * never on connections whose session is reset between uses (the tables' tenant pools discard
 * prepared statements).
 */
export async function lockForTransaction(tx: Queryable, name: string, hash: LockHash = 'extended', opts: { prepared?: boolean } = {}): Promise<void> {
  const text = `SELECT pg_catalog.pg_advisory_xact_lock(${keyOf(hash, '$1::text')})`;
  await tx.query(opts.prepared ? { name: `advisory-xact-lock-${hash}`, text, values: [name] } : { text, values: [name] });
}

/**
 * Takes the session lock named `name` on the connection `client` if it is free (true), else false
 * at once; held until unlockSession or the connection ends. `seed` is the hash's seed (14 for the
 * flows' publish lock, kept as it was).
 */
export async function tryLockSession(client: Queryable, name: string, seed = 0): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>('SELECT pg_catalog.pg_try_advisory_lock(pg_catalog.hashtextextended($1::text, $2::bigint)) AS ok', [name, seed]);
  return rows[0]?.ok === true;
}

/** Gives back a session lock taken with tryLockSession. */
export async function unlockSession(client: Queryable, name: string, seed = 0): Promise<void> {
  await client.query('SELECT pg_catalog.pg_advisory_unlock(pg_catalog.hashtextextended($1::text, $2::bigint))', [name, seed]);
}
