/**
 * What a signed-in person does, checked against their role in the project and recorded in the
 * audit trail: key actions (the rules are lib/access/keys.ts), approving or cancelling a broadcast
 * (lib/broadcasts/approval.ts) and inviting people (lib/accounts/invites.ts). Every id a form names must belong to the
 * project of the page (404 otherwise), so a forged id cannot reach another project.
 * The audit row is written in the same transaction as the change it records: if it cannot be
 * written, the change is undone and the action fails (nothing happens unrecorded).
 */
import type { Deps } from '../deps.js';
import * as keys from '../access/keys.js';
import { credentialsChanged, type CredentialCache } from '../access/credential-cache.js';
import { approveBroadcast, cancelBroadcast } from '../broadcasts/approval.js';
import { findBroadcast } from '../broadcasts/store.js';
import { UUID } from '../platform/ids.js';
import { recordAudit, recordAuditOn, type Actor, type AuditEntry } from '../accounts/audit.js';
import type { PrismaClient } from '../../generated/prisma/client.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { parseScopes } from '../access/scope-catalogue.js';
import { changeRole, leaveProject, normaliseEmail } from '../accounts/accounts.js';
import { createInvite } from '../accounts/invites.js';
import { isRole, requireRole, type Role } from '../accounts/roles.js';
import { unassignAccount } from '../conversations/conversations.js';
import { personAuthor } from '../conversations/authors.js';
import { recordEvent } from '../webhooks/events.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

type ActionDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'credentialCache'>;

const MANAGERS = ['owner', 'admin'] as const;

type KeyRow = Awaited<ReturnType<typeof keys.findKey>>;
const keyState = (k: KeyRow) => ({ name: k.name, mode: k.mode, scopes: k.scopes, hint: k.hint, rotated_at: k.rotatedAt, revoked_at: k.revokedAt });

/**
 * Runs a change made through Prisma and its audit row in one transaction. `change` gets deps whose
 * `db.prisma` and `db.sql` are the transaction's, and returns its result and the entry to record. The
 * domain's "credentials changed" (lib/access/credential-cache.ts) is held back until the
 * transaction has committed: announced earlier, a request could cache the old row again.
 */
async function audited<T>(deps: ActionDeps, actor: Actor, change: (tx: ActionDeps) => Promise<{ result: T; entry: AuditEntry }>): Promise<T> {
  let credentials = false;
  const heldBack = { invalidate: async () => void (credentials = true) } as unknown as CredentialCache;
  const result = await inPrismaTransaction(deps.db.prisma, async (tx) => {
    const { result, entry } = await change({ ...deps, credentialCache: heldBack, db: { ...deps.db, prisma: tx as unknown as PrismaClient, sql: tx } });
    await recordAudit(tx, deps.clock.now(), actor, entry);
    return result;
  });
  if (credentials) await credentialsChanged(deps);
  return result;
}

async function keyOfProject(deps: ActionDeps, projectId: string, keyId: string): Promise<KeyRow> {
  const key = await deps.db.prisma.apiKey.findFirst({ where: { id: String(keyId).slice(0, 100), projectId } });
  if (!key) throw new DashboardRefusal(404, 'No such key in this project.');
  return key;
}

export async function createKeyAs(deps: ActionDeps, actor: Actor, projectId: string, form: { name?: unknown; scopes?: unknown; mode?: unknown }) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'create keys');
  const name = typeof form.name === 'string' ? form.name.trim() : '';
  if (name.length < 1 || name.length > 200) throw new DashboardRefusal(400, 'Give the key a name (1 to 200 characters).');
  const parsed = parseScopes(form.scopes);
  if ('problem' in parsed) throw new DashboardRefusal(400, parsed.problem);
  const mode = form.mode === 'test' ? 'test' : 'live';
  const { key, secret } = await audited(deps, actor, async (tx) => {
    const created = await keys.createKey(tx, projectId, { name, scopes: parsed.scopes, mode });
    return { result: created, entry: { projectId, action: 'key.create', subject: created.key.id, after: keyState(created.key) } };
  });
  return { key, secret };
}

export async function rotateKeyAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'rotate keys');
  const before = await keyOfProject(deps, projectId, keyId);
  const { key, secret } = await audited(deps, actor, async (tx) => {
    const rotated = await keys.rotateKey(tx, before.id);
    return { result: rotated, entry: { projectId, action: 'key.rotate', subject: rotated.key.id, before: keyState(before), after: keyState(rotated.key) } };
  });
  return { key, secret };
}

export async function revokeKeyAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'revoke keys');
  const before = await keyOfProject(deps, projectId, keyId);
  const key = await audited(deps, actor, async (tx) => {
    const revoked = await keys.revokeKey(tx, before.id);
    return { result: revoked, entry: { projectId, action: 'key.revoke', subject: revoked.id, before: keyState(before), after: keyState(revoked) } };
  });
  return key;
}

export async function updateKeyScopesAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string, rawScopes: unknown) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'edit key scopes');
  const before = await keyOfProject(deps, projectId, keyId);
  const parsed = parseScopes(rawScopes);
  if ('problem' in parsed) throw new DashboardRefusal(400, parsed.problem);
  const key = await audited(deps, actor, async (tx) => {
    const updated = await keys.updateKey(tx, before.id, { scopes: parsed.scopes });
    return { result: updated, entry: { projectId, action: 'key.update_scopes', subject: updated.id, before: keyState(before), after: keyState(updated) } };
  });
  return key;
}

async function broadcastOfProject(deps: ActionDeps, projectId: string, id: string) {
  const row = UUID.test(id) ? await findBroadcast(deps.db.sql, id.toLowerCase(), projectId) : undefined;
  if (!row) throw new DashboardRefusal(404, 'No such broadcast in this project.');
  return row;
}

const broadcastState = (b: { status: string; approved_at: Date | null; scheduled_at: Date | null; status_reason: string | null }) => ({
  status: b.status, approved_at: b.approved_at, scheduled_at: b.scheduled_at, status_reason: b.status_reason,
});

export async function approveBroadcastAs(deps: ActionDeps, actor: Actor, projectId: string, id: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'approve broadcasts');
  const before = await broadcastOfProject(deps, projectId, id);
  const now = deps.clock.now();
  return approveBroadcast(deps.db, before.id, { approvedBy: actor.email }, now, (client, after, locked) =>
    recordAuditOn(client, now, actor, { projectId, action: 'broadcast.approve', subject: before.id, before: broadcastState(locked), after: { ...broadcastState(after), approved_by: actor.email, preflight: after.preflight } }),
  );
}

export async function cancelBroadcastAs(deps: ActionDeps, actor: Actor, projectId: string, id: string, reason: unknown) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'cancel broadcasts');
  const before = await broadcastOfProject(deps, projectId, id);
  const why = typeof reason === 'string' && reason.trim() ? reason.trim().slice(0, 500) : `canceled by ${actor.email}`;
  const now = deps.clock.now();
  return cancelBroadcast(deps.db, before.id, why, now, (client, after, locked) =>
    recordAuditOn(client, now, actor, { projectId, action: 'broadcast.cancel', subject: before.id, before: broadcastState(locked), after: broadcastState(after) }),
  );
}

export interface Invited {
  email: string;
  role: Role;
  /** The invitation link's one-time token; absent when the email was already a member (its role changed). */
  token?: string;
}

/**
 * Invites an email (owners only): an invitation the person accepts through its link (lib/accounts/invites.ts),
 * the same answer whether the email has an account or not. A person already in the project has their
 * role changed instead (the People page lists them anyway); the last owner keeps theirs.
 */
export async function inviteAs(deps: ActionDeps, actor: Actor, projectId: string, rawEmail: unknown, role: unknown): Promise<Invited> {
  await requireRole(deps, actor.accountId, projectId, ['owner'], 'invite people');
  const email = normaliseEmail(rawEmail);
  if (!isRole(role)) throw new DashboardRefusal(400, 'Choose a role: owner, admin or member.');
  return audited<Invited>(deps, actor, async (tx) => {
    const member = await tx.db.prisma.dashboardMembership.findFirst({ where: { projectId, account: { email } } });
    if (member) {
      if (member.role === 'owner' && role !== 'owner' && (await tx.db.prisma.dashboardMembership.count({ where: { projectId, role: 'owner' } })) <= 1) {
        throw new DashboardRefusal(409, 'This is the project’s last owner: make someone else owner first.');
      }
      await changeRole(tx.db.prisma, member.accountId, projectId, role);
      return { result: { email, role }, entry: { projectId, action: 'member.role', subject: email, before: { role: member.role }, after: { role } } };
    }
    const { token } = await createInvite(tx, projectId, email, role, actor.accountId);
    return { result: { email, role, token }, entry: { projectId, action: 'member.invite', subject: email, after: { role } } };
  });
}

/** Takes a person's role in the project away (owners only); the last owner stays, so a project is never left without one. */
export async function removeMemberAs(deps: ActionDeps, actor: Actor, projectId: string, rawEmail: unknown) {
  await requireRole(deps, actor.accountId, projectId, ['owner'], 'remove people');
  const email = typeof rawEmail === 'string' ? rawEmail.trim().toLowerCase() : '';
  const member = await deps.db.prisma.dashboardMembership.findFirst({ where: { projectId, account: { email } } });
  if (!member) throw new DashboardRefusal(404, 'No such person in this project.');
  if (member.role === 'owner') {
    const owners = await deps.db.prisma.dashboardMembership.count({ where: { projectId, role: 'owner' } });
    if (owners <= 1) throw new DashboardRefusal(409, 'This is the project’s last owner: make someone else owner first.');
  }
  await audited(deps, actor, async (tx) => {
    await leaveProject(tx.db.prisma, member.accountId, projectId);
    // The conversations they handled are nobody's now (the inbox's "Unassigned"), each with its event.
    const now = deps.clock.now();
    const held = await unassignAccount(tx.db.sql, projectId, member.accountId, now);
    for (const id of held) {
      await recordEvent(tx.db.sql, projectId, 'conversation.assigned', { conversation_id: Number(id), assignee: null, previous_assignee: { id: member.accountId, email }, by: personAuthor(actor) }, now);
    }
    return { result: undefined, entry: { projectId, action: 'member.remove', subject: email, before: { role: member.role, ...(held.length ? { conversations: held.length } : {}) } } };
  });
}
