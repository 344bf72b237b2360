/**
 * The only writer of `calls` (docs/calls.md). Every change is one conditional statement keyed by
 * the channel's call id, so a notification sent twice, or applied by two instances at once,
 * changes a call once: the second insert finds the row, the second move finds it moved.
 */
import { type Tx, execute, queryRows } from '../platform/db/tx.js';

export interface CallRow {
  id: bigint;
  projectId: string;
  conversationId: bigint;
  callId: string;
  direction: string;
  status: string;
  offerSdp: string | null;
  startedAt: Date;
  answeredAt: Date | null;
  endedAt: Date | null;
  durationSeconds: number | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The columns of a CallRow, of the table as `t` (e.g. `c.`) or unqualified. */
export const callColumns = (t = '') => `${t}id, ${t}project_id AS "projectId", ${t}conversation_id AS "conversationId", ${t}call_id AS "callId",
  ${t}direction, ${t}status, ${t}offer_sdp AS "offerSdp", ${t}started_at AS "startedAt", ${t}answered_at AS "answeredAt",
  ${t}ended_at AS "endedAt", ${t}duration_seconds AS "durationSeconds", ${t}created_at AS "createdAt", ${t}updated_at AS "updatedAt"`;
const CALL_COLUMNS = callColumns();

export interface NewCall {
  projectId: string;
  conversationId: bigint;
  callId: string;
  direction: 'user_initiated' | 'business_initiated';
  status: string;
  offerSdp?: string | null;
  startedAt: Date;
  endedAt?: Date | null;
  durationSeconds?: number | null;
}

/** Inserts a call unless its call id is known; the row when it was new. */
export async function insertCall(tx: Tx, c: NewCall, at: Date): Promise<CallRow | undefined> {
  const rows = await queryRows<CallRow>(tx,
    `INSERT INTO calls (project_id, conversation_id, call_id, direction, status, offer_sdp, started_at, ended_at, duration_seconds, created_at, updated_at)
     VALUES ($1, $2::bigint, $3, $4, $5, $6, $7, $8, $9, $10, $10)
     ON CONFLICT (project_id, call_id) DO NOTHING RETURNING ${CALL_COLUMNS}`,
    c.projectId, String(c.conversationId), c.callId, c.direction, c.status, c.offerSdp ?? null, c.startedAt, c.endedAt ?? null, c.durationSeconds ?? null, at,
  );
  return rows[0];
}

/** Moves a live call (not ended) from one of `from` to `to`; the row when it moved. */
export async function moveCall(tx: Tx, projectId: string, callId: string, from: string[], to: string, at: Date): Promise<CallRow | undefined> {
  const rows = await queryRows<CallRow>(tx,
    `UPDATE calls SET status = $4, answered_at = CASE WHEN $4 = 'accepted' THEN $5 ELSE answered_at END, updated_at = $5
     WHERE project_id = $1 AND call_id = $2 AND ended_at IS NULL AND status = ANY ($3::text[]) RETURNING ${CALL_COLUMNS}`,
    projectId, callId, from, to, at,
  );
  return rows[0];
}

/**
 * Ends a call once: a rejected call stays `rejected`, `failed` when the channel says so, `completed` when it was
 * answered (or lasted), else `missed`. The row when it ended now.
 */
export async function endCall(tx: Tx, projectId: string, callId: string, failed: boolean, endedAt: Date, durationSeconds: number | null, at: Date): Promise<CallRow | undefined> {
  const rows = await queryRows<CallRow>(tx,
    `UPDATE calls SET status = CASE WHEN status = 'rejected' THEN 'rejected' WHEN $3 THEN 'failed'
                                    WHEN status = 'accepted' OR COALESCE($5, 0) > 0 THEN 'completed' ELSE 'missed' END,
                      ended_at = $4, duration_seconds = $5, updated_at = $6
     WHERE project_id = $1 AND call_id = $2 AND ended_at IS NULL RETURNING ${CALL_COLUMNS}`,
    projectId, callId, failed, endedAt, durationSeconds, at,
  );
  return rows[0];
}

/** A contact merge: the calls of conversation `from` now belong to `to`. */
export async function moveConversationCalls(tx: Tx, to: bigint, from: bigint): Promise<void> {
  await execute(tx, 'UPDATE calls SET conversation_id = $1::bigint WHERE conversation_id = $2::bigint', String(to), String(from));
}
