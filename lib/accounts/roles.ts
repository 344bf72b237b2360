/**
 * Roles per project: an owner does everything and reads the audit trail and invites people; an
 * admin manages keys and approves broadcasts; a member only looks. A project the person has no
 * role in is answered as "not found", so ids of other projects are not confirmed.
 */
import type { Deps } from '../deps.js';
import { DashboardRefusal } from './refusal.js';

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(v: unknown): v is Role {
  return typeof v === 'string' && (ROLES as readonly string[]).includes(v);
}

/** Keys, approvals and cancels. */
export const canManage = (role: Role) => role === 'owner' || role === 'admin';

export async function projectsOf(deps: Pick<Deps, 'db'>, accountId: string) {
  const rows = await deps.db.prisma.dashboardMembership.findMany({
    where: { accountId, project: { status: { not: 'deleted' } } },
    include: { project: { include: { channel: { select: { phoneNumberId: true, displayPhoneNumber: true } } } } },
    orderBy: { projectId: 'asc' },
  });
  return rows.map((m) => ({ role: m.role as Role, project: m.project }));
}

/** The person's role in the project; refuses (404) when there is none. */
export async function roleIn(deps: Pick<Deps, 'db'>, accountId: string, projectId: string): Promise<Role> {
  const m = await deps.db.prisma.dashboardMembership.findFirst({
    where: { accountId, projectId, project: { status: { not: 'deleted' } } },
  });
  if (!m || !isRole(m.role)) throw new DashboardRefusal(404, 'No such project, or you have no role in it.');
  return m.role;
}

/** Refuses (403) unless the person's role in the project is one of `allowed`. */
export async function requireRole(deps: Pick<Deps, 'db'>, accountId: string, projectId: string, allowed: readonly Role[], what: string): Promise<Role> {
  const role = await roleIn(deps, accountId, projectId);
  if (!allowed.includes(role)) throw new DashboardRefusal(403, `Your role in this project (${role}) cannot ${what}; ask an owner.`);
  return role;
}
