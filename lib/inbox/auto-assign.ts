/**
 * Auto-assignment (issue 68, item 1): a project setting, off by default. When a customer writes in
 * an unassigned conversation, it goes to one of the people who said they are available (owners and
 * admins: the roles that reply), as a balanced round robin: the person with the fewest open
 * (unresolved) conversations, below the project's cap, the one given a conversation longest ago
 * first. Nobody below the cap: it stays unassigned, in everyone's "Unassigned".
 *
 * Policy and why: one transaction under a per-project advisory lock, so two customers writing at
 * once are not both counted against the same person's last free place; the conversation is taken
 * only while still unassigned (a person's own choice is never overridden); `conversation.assigned`
 * fires, by `automation` (auto_assignment).
 */
import type { Prisma } from '../../generated/prisma/client.js';
import type { components } from '../../generated/api.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import type { Database } from '../platform/db/database.js';
import { lockForTransaction } from '../platform/db/locks.js';
import { ApiError } from '../platform/errors.js';
import { recordEvent } from '../webhooks/events.js';
import { assignIfUnassigned } from '../conversations/conversations.js';
import { automationAuthor } from '../conversations/authors.js';

type Member = components['schemas']['Member'];

/** The roles a conversation is given to automatically: those that may reply (lib/accounts/roles.ts canManage). */
const REPLYING_ROLES = ['owner', 'admin'];
export const MAX_ASSIGN_CAP = 1000;

export interface InboxSettingsView {
  autoAssign: boolean;
  cap: number;
}

export async function inboxSettings(tx: Tx, projectId: string): Promise<InboxSettingsView> {
  const rows = await queryRows<{ auto_assign: boolean; assign_cap: number }>(tx, 'SELECT auto_assign, assign_cap FROM inbox_settings WHERE project_id = $1', projectId);
  return { autoAssign: rows[0]?.auto_assign ?? false, cap: rows[0]?.assign_cap ?? 10 };
}

export async function saveInboxSettings(tx: Tx, projectId: string, settings: InboxSettingsView, now: Date): Promise<void> {
  if (!Number.isInteger(settings.cap) || settings.cap < 1 || settings.cap > MAX_ASSIGN_CAP) {
    throw new ApiError('invalid_request', `The cap is a whole number from 1 to ${MAX_ASSIGN_CAP}.`, { fields: [{ field: 'cap', message: `1 to ${MAX_ASSIGN_CAP}` }] });
  }
  await execute(tx,
    `INSERT INTO inbox_settings (project_id, auto_assign, assign_cap, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id) DO UPDATE SET auto_assign = EXCLUDED.auto_assign, assign_cap = EXCLUDED.assign_cap, updated_at = EXCLUDED.updated_at`,
    projectId, settings.autoAssign, settings.cap, now,
  );
}

/** Whether the project assigns automatically, read inside an inbound message's transaction. */
export async function autoAssignOn(tx: Pick<Prisma.TransactionClient, 'inboxSettings'>, projectId: string): Promise<boolean> {
  return (await tx.inboxSettings.findUnique({ where: { projectId }, select: { autoAssign: true } }))?.autoAssign === true;
}

/** Whether the person takes new conversations automatically (their own switch). */
export async function isAvailable(tx: Tx, projectId: string, accountId: string): Promise<boolean> {
  const rows = await queryRows<{ available: boolean }>(tx, 'SELECT available FROM inbox_members WHERE project_id = $1 AND account_id = $2', projectId, accountId);
  return rows[0]?.available ?? false;
}

export async function setAvailable(tx: Tx, projectId: string, accountId: string, available: boolean): Promise<void> {
  await execute(tx,
    `INSERT INTO inbox_members (project_id, account_id, available) VALUES ($1, $2, $3)
     ON CONFLICT (project_id, account_id) DO UPDATE SET available = EXCLUDED.available`,
    projectId, accountId, available,
  );
}

/** Gives the unassigned conversation to the next available person; the person, or undefined (off, nobody free, already held). */
export async function autoAssign(db: Pick<Database, 'pool' | 'sql'>, projectId: string, conversationId: bigint, now: Date): Promise<Member | undefined> {
  const settings = await inboxSettings(db.sql, projectId);
  if (!settings.autoAssign) return undefined;
  return inTransaction(db.pool, async (tx) => {
    await lockForTransaction(tx, `inbox-assign:${projectId}`);
    const rows = await queryRows<Member>(tx,
      `SELECT a.id, a.email FROM inbox_members im
         JOIN dashboard_memberships dm ON dm.project_id = im.project_id AND dm.account_id = im.account_id AND dm.role = ANY($3::text[])
         JOIN dashboard_accounts a ON a.id = im.account_id
         CROSS JOIN LATERAL (SELECT count(*) AS open FROM conversations v
           WHERE v.project_id = im.project_id AND v.assignee_id = im.account_id AND v.resolution <> 'resolved') o
        WHERE im.project_id = $1 AND im.available AND o.open < $2
        ORDER BY o.open, im.last_assigned_at NULLS FIRST, a.email
        LIMIT 1`,
      projectId, settings.cap, REPLYING_ROLES,
    );
    const member = rows[0];
    if (!member || !(await assignIfUnassigned(tx, projectId, conversationId, member.id, now))) return undefined;
    await execute(tx, 'UPDATE inbox_members SET last_assigned_at = $3 WHERE project_id = $1 AND account_id = $2', projectId, member.id, now);
    await recordEvent(tx, projectId, 'conversation.assigned', { conversation_id: Number(conversationId), assignee: member, previous_assignee: null, by: automationAuthor('auto_assignment') }, now);
    return member;
  });
}
