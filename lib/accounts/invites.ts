/**
 * Invitations that reveal nothing and join nobody without consent.
 *
 * An owner's invite never looks at or changes accounts: it records an invitation (email, role, the
 * SHA-256 of a one-time token, 72 hours) and the owner gets the same answer, the same link and the
 * same People row ("invited, not yet accepted") whether the email has an account or not. The person
 * joins only by accepting through the link:
 * - with an account that has a password: by entering that password (the sign-in throttle counts
 *   wrong ones, like the sign-in form);
 * - without one: by choosing a password, which creates the account.
 * An account waiting for its own setup (no password yet) is not set up through someone else's
 * invitation: that would let the link's holder choose the password of an account with roles in
 * other projects; its setup link comes first. Accepting spends the invitation, adds the role and
 * writes the audit row in one transaction. Re-inviting the same email replaces the pending link.
 */
import type { Deps } from '../deps.js';
import { hashSecret, newId, randomToken } from '../platform/secrets.js';
import { findProject } from '../access/projects.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { DashboardRefusal } from './refusal.js';
import { type Role } from './roles.js';
import { checkLoginAllowed, recordLoginFailure } from './login-throttle.js';
import { recordAudit } from './audit.js';
import { createAccount, joinProject } from './accounts.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

export const INVITE_TTL_MS = 72 * 3600_000;

type InviteDeps = Pick<Deps, 'db' | 'clock'>;

/** The link the invited person opens (the token rides in the query string, never the logged path). */
export function inviteLink(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/dashboard/invite?token=${token}`;
}

/** Records (or renews) the invitation; returns the one-time token for the link. */
export async function createInvite(deps: InviteDeps, projectId: string, email: string, role: Role, invitedBy: string) {
  const project = await findProject(deps, projectId);
  const now = deps.clock.now();
  const token = randomToken(40);
  const expiresAt = new Date(now.getTime() + INVITE_TTL_MS);
  const data = { role, tokenHash: hashSecret(token), invitedBy, expiresAt, createdAt: now };
  await deps.db.prisma.dashboardInvite.upsert({
    where: { projectId_email: { projectId: project.id, email } },
    create: { id: newId('inv', 16), projectId: project.id, email, ...data },
    update: data,
  });
  return { token, expiresAt };
}

export async function pendingInvites(deps: Pick<Deps, 'db' | 'clock'>, projectId: string) {
  return deps.db.prisma.dashboardInvite.findMany({ where: { projectId, expiresAt: { gt: deps.clock.now() } }, orderBy: { createdAt: 'asc' } });
}

/** The live invitation of a link token, with its project's name. */
export async function inviteForToken(deps: InviteDeps, token: string) {
  if (!token || token.length > 100) return undefined;
  const invite = await deps.db.prisma.dashboardInvite.findUnique({ where: { tokenHash: hashSecret(token) }, include: { project: { select: { name: true, status: true } } } });
  if (!invite || invite.expiresAt.getTime() <= deps.clock.now().getTime() || invite.project.status === 'deleted') return undefined;
  return { id: invite.id, projectId: invite.projectId, projectName: invite.project.name, email: invite.email, role: invite.role as Role };
}

export const INVALID_INVITE = 'This invitation link is invalid, used or expired. Ask an owner for a new one.';
/** One answer for a wrong password and for an account still waiting for its own setup. */
const CANNOT_ACCEPT = 'That password does not open the dashboard account of this email. Enter the account’s password, or finish its own setup link first.';

/**
 * Accepts the invitation: checks the password of the email's account, or creates the account with the
 * chosen one; then joins, spends the invitation and audits, in one transaction. Returns the account.
 */
export async function acceptInvite(deps: Pick<Deps, 'db' | 'clock' | 'counters' | 'logger'>, token: string, password: unknown, confirm: unknown, address: string) {
  const invite = await inviteForToken(deps, token);
  if (!invite) throw new DashboardRefusal(404, INVALID_INVITE);
  const pw = typeof password === 'string' ? password.slice(0, 1000) : '';
  const existing = await deps.db.prisma.dashboardAccount.findUnique({ where: { email: invite.email } });
  let newAccount: { passwordHash: string } | undefined;
  if (existing) {
    await checkLoginAllowed(deps, invite.email, address);
    if (!(await verifyPassword(pw, existing.passwordHash))) {
      await recordLoginFailure(deps, { email: invite.email, address, account: existing, reason: existing.passwordHash === null ? 'no_password_set' : 'wrong_password', via: 'invitation' });
      throw new DashboardRefusal(401, CANNOT_ACCEPT);
    }
  } else {
    if (pw !== confirm) throw new DashboardRefusal(400, 'The two passwords differ.');
    const problem = passwordProblem(pw);
    if (problem) throw new DashboardRefusal(400, problem);
    newAccount = { passwordHash: await hashPassword(pw) };
  }
  const now = deps.clock.now();
  return inPrismaTransaction(deps.db.prisma, async (tx) => {
    // Spent only if still the same link (two tabs: one wins).
    const { count } = await tx.dashboardInvite.deleteMany({ where: { id: invite.id, tokenHash: hashSecret(token) } });
    if (count !== 1) throw new DashboardRefusal(404, INVALID_INVITE);
    const account = existing ?? (await createAccount(tx, invite.email, newAccount!.passwordHash, now));
    await joinProject(tx, account.id, invite.projectId, invite.role, now);
    await recordAudit(tx, now, { accountId: account.id, email: account.email }, { projectId: invite.projectId, action: 'member.accept', subject: account.email, after: { role: invite.role } });
    return { id: account.id, email: account.email };
  });
}
