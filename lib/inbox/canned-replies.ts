/**
 * Canned replies (issue 60): a project's saved texts, by a short name, that a person (the inbox)
 * or an agent (the API) sends as a text message through the one send path (the window, the quota
 * and consent apply as to any text). This module is the only writer of `canned_replies`.
 */
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { isUniqueViolation } from '../platform/db/errors.js';

export type CannedReplyView = components['schemas']['CannedReply'];

/** Most canned replies a project keeps (the inbox lists them all). */
export const MAX_CANNED_REPLIES = 200;
export const SHORTCUT = /^[a-z0-9_-]{1,40}$/;

interface Row {
  id: string;
  shortcut: string;
  text: string;
  createdAt: Date;
}

const COLUMNS = `id::text AS "id", shortcut, text, created_at AS "createdAt"`;

function view(r: Row): CannedReplyView {
  return { id: Number(r.id), shortcut: r.shortcut, text: r.text, created_at: r.createdAt.toISOString() };
}

export async function listCannedReplies(tx: Tx, projectId: string): Promise<CannedReplyView[]> {
  const rows = await queryRows<Row>(tx, `SELECT ${COLUMNS} FROM canned_replies WHERE project_id = $1 ORDER BY shortcut LIMIT ${MAX_CANNED_REPLIES}`, projectId);
  return rows.map(view);
}

/**
 * Adds one; `canned_reply_exists` when the shortcut is taken, `canned_reply_limit_reached` past
 * the limit. One statement: the count and the insert see the same rows, and the unique index
 * answers a race on the shortcut.
 */
export async function createCannedReply(tx: Tx, projectId: string, shortcut: string, text: string, now: Date): Promise<CannedReplyView> {
  try {
    const rows = await queryRows<Row>(tx,
      `INSERT INTO canned_replies (project_id, shortcut, text, created_at, updated_at)
       SELECT $1, $2, $3, $4, $4 WHERE (SELECT count(*) FROM canned_replies WHERE project_id = $1) < ${MAX_CANNED_REPLIES}
       RETURNING ${COLUMNS}`,
      projectId, shortcut, text, now,
    );
    if (!rows[0]) {
      throw new ApiError('canned_reply_limit_reached', `This project already has ${MAX_CANNED_REPLIES} canned replies; delete one to make room.`, { limit: MAX_CANNED_REPLIES });
    }
    return view(rows[0]);
  } catch (e) {
    if (isUniqueViolation(e)) {
      throw new ApiError('canned_reply_exists', `A canned reply "${shortcut}" already exists in this project.`, { shortcut });
    }
    throw e;
  }
}

/** Deletes one; false when the project has no such canned reply. */
export async function deleteCannedReply(tx: Tx, projectId: string, id: bigint): Promise<boolean> {
  return (await execute(tx, 'DELETE FROM canned_replies WHERE project_id = $1 AND id = $2::bigint', projectId, id.toString())) === 1;
}
