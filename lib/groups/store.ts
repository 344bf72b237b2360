/**
 * The only writer of `groups` and `group_participants` (docs/groups.md). Every change the channel
 * announces is one conditional statement, so a notification delivered twice, or applied by two
 * instances at once, changes a group once: the second confirmation finds the group confirmed, the
 * second insert of a participant finds the row, the second settings change finds nothing to change.
 * The caller raises the change's event only when the statement says something changed.
 */
import { type Tx, execute, queryRows } from '../platform/db/tx.js';

export interface GroupRow {
  id: bigint;
  projectId: string;
  groupId: string | null;
  requestId: string | null;
  status: string;
  subject: string;
  description: string | null;
  joinApprovalMode: string;
  inviteLink: string | null;
  contactId: bigint | null;
  participantCount: number;
  conversationId: bigint | null;
  createdAt: Date;
  updatedAt: Date;
}

const COLUMNS = `g.id, g.project_id AS "projectId", g.group_id AS "groupId", g.request_id AS "requestId", g.status, g.subject, g.description,
  g.join_approval_mode AS "joinApprovalMode", g.invite_link AS "inviteLink", g.contact_id AS "contactId",
  (SELECT count(*)::int FROM group_participants p WHERE p.group_row_id = g.id) AS "participantCount",
  (SELECT cv.id FROM conversations cv WHERE cv.project_id = g.project_id AND cv.contact_id = g.contact_id) AS "conversationId",
  g.created_at AS "createdAt", g.updated_at AS "updatedAt"`;
export const SELECT_GROUPS = `SELECT ${COLUMNS} FROM groups g`;

async function one(tx: Tx, text: string, ...values: unknown[]): Promise<GroupRow | undefined> {
  const rows = await queryRows<GroupRow>(tx, text, ...values);
  return rows[0];
}

/** A group of the project by its numeric id. */
export function groupById(db: Tx, projectId: string, id: bigint): Promise<GroupRow | undefined> {
  return one(db, `${SELECT_GROUPS} WHERE g.project_id = $1 AND g.id = $2::bigint`, projectId, String(id));
}

/** A group of the project by the channel's group id. */
export function groupByChannelId(db: Tx, projectId: string, groupId: string): Promise<GroupRow | undefined> {
  return one(db, `${SELECT_GROUPS} WHERE g.project_id = $1 AND g.group_id = $2`, projectId, groupId);
}

export async function listGroupRows(db: Tx, projectId: string, limit: number, beforeId?: number): Promise<GroupRow[]> {
  return queryRows<GroupRow>(db,
    `${SELECT_GROUPS} WHERE g.project_id = $1 AND ($2::bigint IS NULL OR g.id < $2::bigint) ORDER BY g.id DESC LIMIT $3`,
    projectId, beforeId === undefined ? null : String(beforeId), limit,
  );
}

/** The creation the channel answered with a request id: pending until its notification names the group. */
export async function insertPendingGroup(db: Tx, g: { projectId: string; requestId: string; subject: string; description: string | null; joinApprovalMode: string }, at: Date): Promise<GroupRow> {
  // WhatsApp's notification may come before this insert (a fast channel): then the group it made
  // holds the request id, and takes what only the creation knows (the approval mode, the description).
  const rows = await queryRows<{ id: bigint }>(db,
    `INSERT INTO groups (project_id, request_id, status, subject, description, join_approval_mode, created_at, updated_at)
     VALUES ($1, $2, 'pending', $3, $4, $5, $6, $6)
     ON CONFLICT (project_id, request_id) DO UPDATE SET join_approval_mode = EXCLUDED.join_approval_mode,
       description = COALESCE(groups.description, EXCLUDED.description), updated_at = EXCLUDED.updated_at
     RETURNING id`,
    g.projectId, g.requestId, g.subject, g.description, g.joinApprovalMode, at,
  );
  return (await groupById(db, g.projectId, rows[0].id))!;
}

/**
 * The channel confirmed a creation: the pending group of that request id gets its group id and
 * becomes active; a group created elsewhere (no pending row) is inserted active. The row when this
 * call confirmed it; undefined when it was confirmed before (a repeated notification).
 */
export async function confirmGroup(tx: Tx, projectId: string, e: { groupId: string; requestId?: string; subject?: string; description?: string }, at: Date): Promise<bigint | undefined> {
  const confirmPending = async (): Promise<bigint | undefined> => {
    if (!e.requestId) return undefined;
    const moved = await queryRows<{ id: bigint }>(tx,
      `UPDATE groups SET group_id = $3, status = 'active', subject = COALESCE($4, subject), description = COALESCE($5, description), updated_at = $6
       WHERE project_id = $1 AND request_id = $2 AND group_id IS NULL
         AND NOT EXISTS (SELECT 1 FROM groups o WHERE o.project_id = $1 AND o.group_id = $3) RETURNING id`,
      projectId, e.requestId, e.groupId, e.subject ?? null, e.description ?? null, at,
    );
    return moved[0]?.id;
  };
  const moved = await confirmPending();
  if (moved !== undefined) return moved;
  // No pending creation (yet): a group made elsewhere on the number, or a notification faster than
  // our record of the creation (insertPendingGroup then finds it by the request id).
  const inserted = await queryRows<{ id: bigint }>(tx,
    `INSERT INTO groups (project_id, group_id, request_id, status, subject, description, join_approval_mode, created_at, updated_at)
     VALUES ($1, $2, $3, 'active', $4, $5, 'auto_approve', $6, $6) ON CONFLICT DO NOTHING RETURNING id`,
    projectId, e.groupId, e.requestId ?? null, e.subject ?? e.groupId.slice(0, 128), e.description ?? null, at,
  );
  if (inserted[0]) return inserted[0].id;
  // The creation's record committed between the two statements above (the insert waited for it and
  // met its request id): confirm it now, in a statement that sees it, or the group stays pending.
  return confirmPending();
}

/** Links the group to its own contact record (once). */
export async function setGroupContact(tx: Tx, id: bigint, contactId: bigint): Promise<void> {
  await execute(tx, 'UPDATE groups SET contact_id = $2::bigint WHERE id = $1::bigint AND contact_id IS NULL', String(id), String(contactId));
}

/** Moves the group's status (not from `deleted`); true when it changed. */
export async function setGroupStatus(tx: Tx, projectId: string, groupId: string, status: 'active' | 'suspended' | 'deleted', at: Date): Promise<boolean> {
  const n = await execute(tx,
    `UPDATE groups SET status = $3, updated_at = $4 WHERE project_id = $1 AND group_id = $2 AND status <> $3 AND status <> 'deleted'`,
    projectId, groupId, status, at,
  );
  return n > 0;
}

/** The subject and description the channel announced; true when either changed. */
export async function setGroupSettings(tx: Tx, projectId: string, groupId: string, s: { subject?: string; description?: string }, at: Date): Promise<boolean> {
  const n = await execute(tx,
    `UPDATE groups SET subject = COALESCE($3, subject), description = COALESCE($4, description), updated_at = $5
     WHERE project_id = $1 AND group_id = $2 AND (subject IS DISTINCT FROM COALESCE($3, subject) OR description IS DISTINCT FROM COALESCE($4, description))`,
    projectId, groupId, s.subject ?? null, s.description ?? null, at,
  );
  return n > 0;
}

export async function setInviteLink(db: Tx, projectId: string, id: bigint, link: string, at: Date): Promise<void> {
  await execute(db, 'UPDATE groups SET invite_link = $3, updated_at = $4 WHERE project_id = $1 AND id = $2::bigint', projectId, String(id), link, at);
}

/** Adds participants; the WhatsApp ids that were not in the group before. */
export async function addParticipants(tx: Tx, projectId: string, id: bigint, waIds: string[], at: Date): Promise<string[]> {
  if (!waIds.length) return [];
  const rows = await queryRows<{ wa_id: string }>(tx,
    `INSERT INTO group_participants (group_row_id, project_id, wa_id, joined_at)
     SELECT $1::bigint, $2, w, $4 FROM unnest($3::text[]) AS w ON CONFLICT DO NOTHING RETURNING wa_id`,
    String(id), projectId, waIds, at,
  );
  return rows.map((r) => r.wa_id);
}

/** Removes participants; the WhatsApp ids that were in the group. */
export async function removeParticipants(tx: Tx, id: bigint, waIds: string[]): Promise<string[]> {
  if (!waIds.length) return [];
  const rows = await queryRows<{ wa_id: string }>(tx,
    'DELETE FROM group_participants WHERE group_row_id = $1::bigint AND wa_id = ANY ($2::text[]) RETURNING wa_id', String(id), waIds,
  );
  return rows.map((r) => r.wa_id);
}

export async function participantsOf(db: Tx, id: bigint): Promise<Array<{ waId: string; joinedAt: Date }>> {
  return queryRows(db,
    'SELECT wa_id AS "waId", joined_at AS "joinedAt" FROM group_participants WHERE group_row_id = $1::bigint ORDER BY joined_at, wa_id LIMIT 1024', String(id),
  );
}
