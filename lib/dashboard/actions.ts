/**
 * What a signed-in person does, checked against their role in the project and recorded in the
 * audit trail: key actions (the rules are lib/access/keys.ts), approving or cancelling a broadcast
 * (lib/broadcasts/approval.ts) and inviting people. Every id a form names must belong to the
 * project of the page (404 otherwise), so a forged id cannot reach another project.
 * The audit row is written after the change it records; a failure between the two is logged.
 */
import type { Deps } from '../deps.js';
import * as keys from '../access/keys.js';
import { approveBroadcast, cancelBroadcast } from '../broadcasts/approval.js';
import { findBroadcast } from '../broadcasts/store.js';
import { UUID } from '../broadcasts/audience.js';
import { recordAudit, type Actor, type AuditEntry } from './audit.js';
import { DashboardRefusal } from './refusal.js';
import { requireRole } from './roles.js';
import { parseScopes } from './scopes.js';
import { grantRole } from './accounts.js';

type ActionDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'credentialCache'>;

const MANAGERS = ['owner', 'admin'] as const;

type KeyRow = Awaited<ReturnType<typeof keys.findKey>>;
const keyState = (k: KeyRow) => ({ name: k.name, mode: k.mode, scopes: k.scopes, hint: k.hint, rotated_at: k.rotatedAt, revoked_at: k.revokedAt });

async function audited(deps: ActionDeps, actor: Actor, entry: AuditEntry): Promise<void> {
  await recordAudit(deps, actor, entry).catch((e) => deps.logger.error('dashboard audit: not recorded', { error: String(e), action: entry.action, subject: entry.subject }));
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
  const { key, secret } = await keys.createKey(deps, projectId, { name, scopes: parsed.scopes, mode });
  await audited(deps, actor, { projectId, action: 'key.create', subject: key.id, after: keyState(key) });
  return { key, secret };
}

export async function rotateKeyAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'rotate keys');
  const before = await keyOfProject(deps, projectId, keyId);
  const { key, secret } = await keys.rotateKey(deps, before.id);
  await audited(deps, actor, { projectId, action: 'key.rotate', subject: key.id, before: keyState(before), after: keyState(key) });
  return { key, secret };
}

export async function revokeKeyAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'revoke keys');
  const before = await keyOfProject(deps, projectId, keyId);
  const key = await keys.revokeKey(deps, before.id);
  await audited(deps, actor, { projectId, action: 'key.revoke', subject: key.id, before: keyState(before), after: keyState(key) });
  return key;
}

export async function updateKeyScopesAs(deps: ActionDeps, actor: Actor, projectId: string, keyId: string, rawScopes: unknown) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'edit key scopes');
  const before = await keyOfProject(deps, projectId, keyId);
  const parsed = parseScopes(rawScopes);
  if ('problem' in parsed) throw new DashboardRefusal(400, parsed.problem);
  const key = await keys.updateKey(deps, before.id, { scopes: parsed.scopes });
  await audited(deps, actor, { projectId, action: 'key.update_scopes', subject: key.id, before: keyState(before), after: keyState(key) });
  return key;
}

async function broadcastOfProject(deps: ActionDeps, projectId: string, id: string) {
  const row = UUID.test(id) ? await findBroadcast(deps.db.pool, id.toLowerCase(), projectId) : undefined;
  if (!row) throw new DashboardRefusal(404, 'No such broadcast in this project.');
  return row;
}

const broadcastState = (b: { status: string; approved_at: Date | null; scheduled_at: Date | null; status_reason: string | null }) => ({
  status: b.status, approved_at: b.approved_at, scheduled_at: b.scheduled_at, status_reason: b.status_reason,
});

export async function approveBroadcastAs(deps: ActionDeps, actor: Actor, projectId: string, id: string) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'approve broadcasts');
  const before = await broadcastOfProject(deps, projectId, id);
  const after = await approveBroadcast(deps.db.pool, before.id, { approvedBy: actor.email }, deps.clock.now());
  await audited(deps, actor, { projectId, action: 'broadcast.approve', subject: before.id, before: broadcastState(before), after: { ...broadcastState(after), approved_by: actor.email, preflight: after.preflight } });
  return after;
}

export async function cancelBroadcastAs(deps: ActionDeps, actor: Actor, projectId: string, id: string, reason: unknown) {
  await requireRole(deps, actor.accountId, projectId, MANAGERS, 'cancel broadcasts');
  const before = await broadcastOfProject(deps, projectId, id);
  const why = typeof reason === 'string' && reason.trim() ? reason.trim().slice(0, 500) : `canceled by ${actor.email}`;
  const after = await cancelBroadcast(deps.db.pool, before.id, why, deps.clock.now());
  await audited(deps, actor, { projectId, action: 'broadcast.cancel', subject: before.id, before: broadcastState(before), after: broadcastState(after) });
  return after;
}

export async function inviteAs(deps: ActionDeps, actor: Actor, projectId: string, email: unknown, role: unknown) {
  await requireRole(deps, actor.accountId, projectId, ['owner'], 'invite people');
  const granted = await grantRole(deps, projectId, email, role);
  await audited(deps, actor, { projectId, action: 'member.grant', subject: granted.account.email, after: { role: granted.role } });
  return granted;
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
  await deps.db.prisma.dashboardMembership.delete({ where: { accountId_projectId: { accountId: member.accountId, projectId } } });
  await audited(deps, actor, { projectId, action: 'member.remove', subject: email, before: { role: member.role } });
}
