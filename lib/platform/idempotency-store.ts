/**
 * The only writer of `idempotency_records`: keys, fingerprints and stored answers, nothing of any
 * operation. The claim both idempotency keys and the dashboard's one-time forms go through is
 * lib/platform/idempotency.ts; the API's state machine lives at the edge (middleware/idempotency.ts). The
 * send ledger links a key to its message's reference inside its batch statement, through
 * linkKeysSql, so that link costs no statement of its own. Every function takes the one handle (db/tx.ts): callers
 * pass the pool as `deps.db.sql`; each statement keeps its prepared statement's name (executeNamed, queryRowsNamed).
 */
import { executeNamed, queryRowsNamed, type Tx } from './db/tx.js';

export interface StoredKey {
  fingerprint: string;
  state: string;
  status_code: number | null;
  body: unknown;
  headers: Record<string, string> | null;
  send_ref: string | null;
  claimed: boolean;
}

/** Claims a key: inserted, or taken over when expired or abandoned (claimed before `abandonedBefore`, nothing linked). */
export async function claimKey(
  db: Tx,
  projectId: string,
  key: string,
  fingerprint: string,
  at: { now: Date; expiresAt: Date; abandonedBefore: Date },
): Promise<StoredKey | undefined> {
  const rows = await queryRowsNamed<StoredKey>(
    db,
    'idempotency-claim',
    `INSERT INTO idempotency_records AS r (project_id, key, fingerprint, state, created_at, expires_at)
           VALUES ($1, $2, $3, 'in_progress', $4, $5)
           ON CONFLICT (project_id, key) DO UPDATE
             SET fingerprint = EXCLUDED.fingerprint, state = 'in_progress', status_code = NULL, body = NULL,
                 created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
             WHERE r.expires_at <= $4 OR (r.state = 'in_progress' AND r.created_at <= $6 AND r.send_ref IS NULL)
           RETURNING fingerprint, state, status_code, body, headers, send_ref, true AS claimed`,
    projectId, key, fingerprint, at.now, at.expiresAt, at.abandonedBefore,
  );
  return rows[0];
}

/**
 * A data-modifying CTE body that links keys to the references of what they started: `source` is a
 * SELECT yielding (project_id, ikey, ref) rows. A key already linked to that reference is left alone.
 */
export function linkKeysSql(source: string): string {
  return `UPDATE idempotency_records r SET send_ref = s.ref FROM (${source}) s
           WHERE r.project_id = s.project_id AND r.key = s.ikey AND r.send_ref IS DISTINCT FROM s.ref`;
}

export async function readKey(db: Tx, projectId: string, key: string): Promise<StoredKey | undefined> {
  const rows = await queryRowsNamed<StoredKey>(
    db,
    'idempotency-read',
    'SELECT fingerprint, state, status_code, body, headers, send_ref, false AS claimed FROM idempotency_records WHERE project_id = $1 AND key = $2',
    projectId, key,
  );
  return rows[0];
}

/** Stores the answer to replay. */
export async function completeKey(db: Tx, projectId: string, key: string, status: number, body: unknown, headers: Record<string, string> | null): Promise<void> {
  await executeNamed(
    db,
    'idempotency-complete',
    `UPDATE idempotency_records SET state = 'completed', status_code = $3, body = $4, headers = $5 WHERE project_id = $1 AND key = $2`,
    projectId, key, status, JSON.stringify(body), headers ? JSON.stringify(headers) : null,
  );
}

/** Deletes the key unless work is linked to it; returns the linked reference when there is one. */
export async function releaseKey(db: Tx, projectId: string, key: string): Promise<string | undefined> {
  const rows = await queryRowsNamed<{ send_ref: string | null }>(
    db,
    'idempotency-release',
    `WITH gone AS (DELETE FROM idempotency_records WHERE project_id = $1 AND key = $2 AND send_ref IS NULL RETURNING 1)
           SELECT send_ref FROM idempotency_records WHERE project_id = $1 AND key = $2 AND NOT EXISTS (SELECT 1 FROM gone)`,
    projectId, key,
  );
  return rows[0]?.send_ref ?? undefined;
}

/**
 * Deletes a claim whose own statement failed as unavailable (its commit may have happened all the
 * same, see db/commit-guard.ts): this key and fingerprint, in progress, nothing linked, claimed at
 * `from` or up to a batch's spread after it (a takeover after ABANDONED_AFTER_MS is never in it).
 */
export async function releaseFailedClaim(db: Tx, projectId: string, key: string, fingerprint: string, from: Date, to: Date): Promise<void> {
  await executeNamed(
    db,
    'idempotency-release-failed-claim',
    `DELETE FROM idempotency_records WHERE project_id = $1 AND key = $2 AND fingerprint = $3 AND state = 'in_progress'
             AND send_ref IS NULL AND created_at >= $4 AND created_at < $5`,
    projectId, key, fingerprint, from, to,
  );
}

/**
 * Links a key still in progress to the transaction doing its work (`ref`) with the answer that
 * transaction's commit gives: a retry finds the answer if it committed, the key free if not
 * (idempotency-transactions.ts).
 */
export async function linkKeyToWork(db: Tx, projectId: string, key: string, ref: string, status: number, body: unknown): Promise<void> {
  // Its commit does not wait for a standby (synchronous_commit local, for this statement's transaction only): the
  // work's COMMIT follows it in the WAL, so once that is confirmed this is too, and without it this matters to no one.
  await executeNamed(
    db,
    'idempotency-link-work',
    `WITH s AS (SELECT pg_catalog.set_config('synchronous_commit', 'local', true))
           UPDATE idempotency_records SET send_ref = $3, status_code = $4, body = $5
           WHERE project_id = $1 AND key = $2 AND state = 'in_progress' AND EXISTS (SELECT 1 FROM s)`,
    projectId, key, ref, status, JSON.stringify(body),
  );
}

/** The linked work certainly did not happen: the key is free for a new attempt. */
export async function releaseLinkedKey(db: Tx, projectId: string, key: string, ref: string): Promise<void> {
  await executeNamed(
    db,
    'idempotency-release-linked',
    `DELETE FROM idempotency_records WHERE project_id = $1 AND key = $2 AND state = 'in_progress' AND send_ref = $3`,
    projectId, key, ref,
  );
}

/**
 * The answers of keys whose work finished in the caller's statement (a send's confirm: issue 69,
 * one statement fewer a keyed send): `source` yields project_id, ikey, ref and body (jsonb); a key
 * is answered 200 with its body only while still linked to that ref and not yet answered.
 */
export function completeLinkedKeysSql(source: string): string {
  return `UPDATE idempotency_records r SET state = 'completed', status_code = 200, body = s.body, headers = NULL FROM (${source}) s
           WHERE r.project_id = s.project_id AND r.key = s.ikey AND r.send_ref = s.ref AND r.state <> 'completed'`;
}

/** The linked work has a final answer: stored, and replayed from now on. */
export async function completeLinkedKey(db: Tx, projectId: string, key: string, ref: string, status: number, body: unknown): Promise<void> {
  await executeNamed(
    db,
    'idempotency-complete-linked',
    `UPDATE idempotency_records SET state = 'completed', status_code = $4, body = $5 WHERE project_id = $1 AND key = $2 AND send_ref = $3`,
    projectId, key, ref, status, JSON.stringify(body),
  );
}

/**
 * Claims several keys of one project in one statement (claimKey's rule for each; the keys must be
 * distinct): the keys claimed. Used by claimBatched below.
 */
export async function claimKeys(
  db: Tx,
  projectId: string,
  claims: Array<{ key: string; fingerprint: string }>,
  at: { now: Date; expiresAt: Date; abandonedBefore: Date },
): Promise<Set<string>> {
  const rows = await queryRowsNamed<{ key: string }>(
    db,
    'idempotency-claim-many',
    `INSERT INTO idempotency_records AS r (project_id, key, fingerprint, state, created_at, expires_at)
           SELECT $1, c.key, c.fingerprint, 'in_progress', $4, $5 FROM unnest($2::text[], $3::text[]) AS c(key, fingerprint)
           ON CONFLICT (project_id, key) DO UPDATE
             SET fingerprint = EXCLUDED.fingerprint, state = 'in_progress', status_code = NULL, body = NULL,
                 created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
             WHERE r.expires_at <= $4 OR (r.state = 'in_progress' AND r.created_at <= $6 AND r.send_ref IS NULL)
           RETURNING key`,
    projectId, claims.map((c) => c.key), claims.map((c) => c.fingerprint), at.now, at.expiresAt, at.abandonedBefore,
  );
  return new Set(rows.map((r) => r.key));
}

/** Stores the answers of several keys of one project in one statement (completeKey's write for each). */
export async function completeKeys(
  db: Tx,
  projectId: string,
  answers: Array<{ key: string; status: number; body: unknown; headers: Record<string, string> | null; bodyJson?: string }>,
): Promise<void> {
  await executeNamed(
    db,
    'idempotency-complete-many',
    `UPDATE idempotency_records r SET state = 'completed', status_code = a.status, body = a.body, headers = a.headers
           FROM unnest($2::text[], $3::int[], $4::jsonb[], $5::jsonb[]) AS a(key, status, body, headers)
           WHERE r.project_id = $1 AND r.key = a.key`,
    projectId,
    answers.map((a) => a.key),
    answers.map((a) => a.status),
    answers.map((a) => a.bodyJson ?? JSON.stringify(a.body)),
    answers.map((a) => (a.headers ? JSON.stringify(a.headers) : null)),
  );
}
