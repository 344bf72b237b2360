/**
 * The audit trail: who did what to which thing, when, with the state before and after. Owners read it.
 * An audit row is written in the same transaction as the change it records (lib/dashboard/actions.ts),
 * so either both are kept or neither: a failure of the audit write undoes the action.
 */
import type { Deps } from '../deps.js';
import { type Tx, execute } from '../platform/db/tx.js';
import type { Prisma } from '../../generated/prisma/client.js';

export interface Actor {
  accountId: string;
  email: string;
}

/** Whoever a row names: a person of the dashboard, or the operator API (no account). */
export type AuditActor = Actor | { accountId: null; email: string };

/** Who acts through the operator API (`ADMIN_TOKEN`): no account, named as such in the trail. */
export const OPERATOR_ACTOR: AuditActor = { accountId: null, email: 'operator (admin API)' };

export interface AuditEntry {
  projectId: string;
  action: string;
  subject: string;
  before?: unknown;
  after?: unknown;
}

const json = (v: unknown) => (v === undefined || v === null ? undefined : JSON.parse(JSON.stringify(v)));

/** The audit row as Prisma writes it. */
const auditRow = (at: Date, actor: AuditActor, entry: AuditEntry) => ({
  projectId: entry.projectId,
  accountId: actor.accountId,
  actor: actor.email,
  action: entry.action,
  subject: entry.subject,
  before: json(entry.before),
  after: json(entry.after),
  at,
});

/** Writes the row through a Prisma transaction's client. */
export async function recordAudit(tx: Pick<Prisma.TransactionClient, 'dashboardAudit'>, now: Date, actor: Actor, entry: AuditEntry): Promise<void> {
  await tx.dashboardAudit.create({ data: auditRow(now, actor, entry) });
}

/** Writes the row on a pg connection inside its transaction (changes made with SQL, e.g. broadcasts). */
export async function recordAuditOn(tx: Tx, now: Date, actor: AuditActor, entry: AuditEntry): Promise<void> {
  const text = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
  await execute(
    tx,
    'INSERT INTO dashboard_audit (project_id, account_id, actor, action, subject, before, after, at) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8)',
    entry.projectId, actor.accountId, actor.email, entry.action, entry.subject, text(entry.before), text(entry.after), now,
  );
}

/**
 * Writes the row on its own, right after a change that could not share its transaction: a project
 * table's rows and DDL run on a login of the project's own role (lib/tables/isolation.ts), which
 * cannot reach the audit table. The change has committed by then; if this write fails, the person
 * is told so (an error page) and the change stands.
 */
export async function recordAuditAfter(deps: Pick<Deps, 'db' | 'clock'>, actor: AuditActor, entry: AuditEntry): Promise<void> {
  await deps.db.prisma.dashboardAudit.create({ data: auditRow(deps.clock.now(), actor, entry) });
}

export function listAudit(deps: Pick<Deps, 'db'>, projectId: string, limit = 100) {
  return deps.db.prisma.dashboardAudit.findMany({ where: { projectId }, orderBy: { id: 'desc' }, take: limit });
}
