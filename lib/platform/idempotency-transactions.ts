/**
 * Exactly once for a keyed write done in one transaction, whatever becomes of its COMMIT (issue 71).
 *
 * A COMMIT whose wait for a synchronous standby was cancelled (db/commit-guard.ts), or whose
 * connection was lost, has an unknown outcome: answered 503, the key would be released as after
 * any 5xx and a retry would do the work a second time (a keyed table insert inserted its rows
 * twice). So, as its last statement before COMMIT, the work's transaction (on any connection: a
 * tenant login cannot write the key itself) names its transaction id, and the key is linked to it
 * with the answer its commit gives. The key is then never released blindly: PostgreSQL's own
 * record of that transaction decides (pg_xact_status): committed, the stored answer is replayed;
 * aborted (or never reached this server, after a failover), the key is free; in progress, 409.
 * The link's own commit does not wait for a standby (idempotency-store.ts, linkKeyToWork).
 */
import { queryRows, queryRowsNamed, type Tx } from './db/tx.js';
import { linkKeyToWork } from './idempotency-store.js';

/** A key's link to a transaction: `tx:` and its full transaction id (xid8). */
const PREFIX = 'tx:';

export function isTransactionRef(ref: string): boolean {
  return ref.startsWith(PREFIX);
}

/**
 * In the work's transaction `tx`, after its last write: links the key to this transaction with
 * the answer its commit gives (`body` as the client receives it).
 */
export async function linkKeyToTransaction(db: Tx, tx: Tx, key: { projectId: string; key: string }, answer: { status: number; body: unknown }): Promise<void> {
  const rows = await queryRows<{ xid: string }>(tx, 'SELECT pg_catalog.pg_current_xact_id()::text AS xid');
  // `db` (the pool, not `tx`): the link is its own transaction, committed before the work's.
  await linkKeyToWork(db, key.projectId, key.key, PREFIX + rows[0].xid, answer.status, answer.body);
}

/** What became of the linked transaction, by PostgreSQL's record of it. */
export async function transactionOutcome(db: Tx, ref: string): Promise<'committed' | 'aborted' | 'in progress' | 'unknown'> {
  try {
    const rows = await queryRowsNamed<{ status: string | null }>(db, 'idempotency-xact-status', 'SELECT pg_catalog.pg_xact_status($1::xid8) AS status', ref.slice(PREFIX.length));
    const status = rows[0]?.status;
    return status === 'committed' || status === 'aborted' || status === 'in progress' ? status : 'unknown';
  } catch (e) {
    // A transaction id this server never assigned (a standby promoted before it saw it): it never committed here.
    if ((e as { code?: string }).code === '22023' && /in the future/.test(String((e as Error).message))) return 'aborted';
    throw e;
  }
}
