/** The audit trail: who did what to which thing, when, with the state before and after. Owners read it. */
import type { Deps } from '../deps.js';

export interface Actor {
  accountId: string;
  email: string;
}

export interface AuditEntry {
  projectId: string;
  action: string;
  subject: string;
  before?: unknown;
  after?: unknown;
}

const json = (v: unknown) => (v === undefined || v === null ? undefined : JSON.parse(JSON.stringify(v)));

export async function recordAudit(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, entry: AuditEntry): Promise<void> {
  await deps.db.prisma.dashboardAudit.create({
    data: {
      projectId: entry.projectId,
      accountId: actor.accountId,
      actor: actor.email,
      action: entry.action,
      subject: entry.subject,
      before: json(entry.before),
      after: json(entry.after),
      at: deps.clock.now(),
    },
  });
}

export function listAudit(deps: Pick<Deps, 'db'>, projectId: string, limit = 100) {
  return deps.db.prisma.dashboardAudit.findMany({ where: { projectId }, orderBy: { id: 'desc' }, take: limit });
}
