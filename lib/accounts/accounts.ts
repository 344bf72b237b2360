/**
 * Dashboard accounts. The operator grants a role (`grantRole`, POST /admin/projects/{id}/dashboard-members):
 * an account is created with the role, never with a password, and the operator receives a one-time
 * setup link valid SETUP_TTL_MS where the person chooses their password. Only the link token's SHA-256
 * is stored; using the link clears it. Granting an email that already has an account only adds the
 * role (and a fresh link if that account never finished setting up). An owner's invitation in the
 * dashboard does not come here: it is an invitation the person accepts (./invites.ts).
 * This module is the only writer of `dashboard_accounts` and `dashboard_memberships` (they change
 * together): invitations and the owners' actions join, re-role and remove through it.
 */
import type { Deps } from '../deps.js';
import type { Prisma } from '../../generated/prisma/client.js';
import { hashSecret, newId, randomToken } from '../platform/secrets.js';
import { findProject } from '../access/projects.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { DashboardRefusal } from './refusal.js';
import { endAccountSessions } from './sessions.js';
import { isRole, type Role } from './roles.js';
import { checkLoginAllowed, recordLoginFailure } from './login-throttle.js';

export const SETUP_TTL_MS = 72 * 3600_000;
const EMAIL = /^[^\s@<>"']{1,64}@[^\s@<>"']{1,190}\.[^\s@<>"']{1,63}$/;

type AccountDeps = Pick<Deps, 'db' | 'clock'>;

/** The link a new person opens to choose their password. */
export function setupLink(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/dashboard/setup?token=${token}`;
}

export function normaliseEmail(raw: unknown): string {
  const email = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
  if (!EMAIL.test(email)) throw new DashboardRefusal(400, 'Enter a valid email address.');
  return email;
}

export interface Granted {
  account: { id: string; email: string };
  role: Role;
  /** The one-time setup token (put it in the link), when the account has no password yet. */
  setupToken?: string;
  setupExpiresAt?: Date;
}

/** Gives `email` the role in the project, creating the account when it does not exist. */
export async function grantRole(deps: AccountDeps, projectId: string, rawEmail: unknown, role: unknown, opts: { resetPassword?: boolean } = {}): Promise<Granted> {
  const email = normaliseEmail(rawEmail);
  if (!isRole(role)) throw new DashboardRefusal(400, 'Choose a role: owner, admin or member.');
  const project = await findProject(deps, projectId);
  const now = deps.clock.now();
  const existing = await deps.db.prisma.dashboardAccount.findUnique({ where: { email } });
  if (existing && opts.resetPassword) {
    // A lost password: the old one and every session of the account stop working now.
    await deps.db.prisma.dashboardAccount.update({ where: { id: existing.id }, data: { passwordHash: null } });
    await endAccountSessions(deps, existing.id);
    existing.passwordHash = null;
  }
  let setupToken: string | undefined;
  let setupExpiresAt: Date | undefined;
  if (!existing || existing.passwordHash === null) {
    setupToken = randomToken(40);
    setupExpiresAt = new Date(now.getTime() + SETUP_TTL_MS);
  }
  const setup = setupToken ? { setupTokenHash: hashSecret(setupToken), setupExpiresAt } : {};
  const account = await deps.db.prisma.dashboardAccount.upsert({
    where: { email },
    create: { id: newId('acc', 16), email, createdAt: now, ...setup },
    update: setup,
  });
  await joinProject(deps.db.prisma, account.id, project.id, role, now);
  return { account: { id: account.id, email: account.email }, role, setupToken, setupExpiresAt };
}

/** A Prisma client or transaction client: memberships change inside the callers' transactions (audited actions, an accepted invitation). */
type AccountTx = Pick<Prisma.TransactionClient, 'dashboardAccount' | 'dashboardMembership'>;

/** An account made with the password its person chose (an accepted invitation). */
export async function createAccount(tx: AccountTx, email: string, passwordHash: string, now: Date) {
  return tx.dashboardAccount.create({ data: { id: newId('acc', 16), email, createdAt: now, passwordHash } });
}

/** The account holds `role` in the project: a new membership, or the role of the one it has. */
export async function joinProject(tx: AccountTx, accountId: string, projectId: string, role: Role, now: Date): Promise<void> {
  await tx.dashboardMembership.upsert({
    where: { accountId_projectId: { accountId, projectId } },
    create: { accountId, projectId, role, createdAt: now },
    update: { role },
  });
}

/** A member's new role (the member exists: the caller found it in the same transaction). */
export async function changeRole(tx: AccountTx, accountId: string, projectId: string, role: Role): Promise<void> {
  await tx.dashboardMembership.update({ where: { accountId_projectId: { accountId, projectId } }, data: { role } });
}

/** The member leaves the project; the account stays (it may belong to others). */
export async function leaveProject(tx: AccountTx, accountId: string, projectId: string): Promise<void> {
  await tx.dashboardMembership.delete({ where: { accountId_projectId: { accountId, projectId } } });
}

/** The account a setup token opens, if it is valid and unused. */
export async function accountForSetup(deps: AccountDeps, token: string) {
  if (!token || token.length > 100) return undefined;
  const account = await deps.db.prisma.dashboardAccount.findUnique({ where: { setupTokenHash: hashSecret(token) } });
  if (!account || !account.setupExpiresAt || account.setupExpiresAt.getTime() <= deps.clock.now().getTime()) return undefined;
  return { id: account.id, email: account.email };
}

/** Sets the password through a setup link and spends the link. */
export async function completeSetup(deps: AccountDeps, token: string, password: unknown, confirm: unknown) {
  const account = await accountForSetup(deps, token);
  if (!account) throw new DashboardRefusal(404, 'This setup link is invalid, used or expired. Ask an owner for a new invitation.');
  if (typeof password !== 'string' || password !== confirm) throw new DashboardRefusal(400, 'The two passwords differ.');
  const problem = passwordProblem(password);
  if (problem) throw new DashboardRefusal(400, problem);
  const passwordHash = await hashPassword(password);
  // Spent only if still the same link (two tabs: one wins).
  const { count } = await deps.db.prisma.dashboardAccount.updateMany({
    where: { id: account.id, setupTokenHash: hashSecret(token) },
    data: { passwordHash, setupTokenHash: null, setupExpiresAt: null },
  });
  if (count !== 1) throw new DashboardRefusal(404, 'This setup link was used already.');
  return account;
}

/**
 * Email and password to an account, or a refusal that does not say which of the two was wrong. The
 * throttle (./login-throttle.ts) is asked first: it refuses only an address that failed too often
 * (on this account, or in all), never the account as such.
 */
export async function signIn(deps: Pick<Deps, 'db' | 'clock' | 'counters' | 'logger'>, rawEmail: unknown, password: unknown, address: string) {
  const email = typeof rawEmail === 'string' ? rawEmail.trim().toLowerCase().slice(0, 320) : '';
  const pw = typeof password === 'string' ? password.slice(0, 1000) : '';
  await checkLoginAllowed(deps, email, address);
  const account = email ? await deps.db.prisma.dashboardAccount.findUnique({ where: { email } }) : null;
  const ok = await verifyPassword(pw, account?.passwordHash ?? null);
  if (!account || !ok) {
    const reason = !account ? 'unknown_email' : account.passwordHash === null ? 'no_password_set' : 'wrong_password';
    await recordLoginFailure(deps, { email, address, account, reason, via: 'sign-in' });
    throw new DashboardRefusal(401, 'Wrong email or password.');
  }
  return { id: account.id, email: account.email };
}
