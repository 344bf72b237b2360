/**
 * An owner or admin decides a template from the dashboard's Templates page, outside production,
 * on the simulator (lib/templates/simulator-decision.ts: the same path as `ops templates
 * approve|reject`); recorded in the audit trail with the status before and after.
 */
import type { Deps } from '../deps.js';
import { recordAudit, type Actor } from '../accounts/audit.js';
import { decideOnSimulator } from '../templates/simulator-decision.js';
import { DashboardRefusal } from '../accounts/refusal.js';

export async function decideTemplateAs(
  deps: Deps, actor: Actor, projectId: string, simulatorUrl: string | undefined,
  input: { name: string; language: string; decision: string },
) {
  if (input.decision !== 'APPROVED' && input.decision !== 'REJECTED') throw new DashboardRefusal(400, 'The decision is Approve or Reject.');
  const before = await deps.db.prisma.template.findFirst({ where: { projectId, name: input.name.slice(0, 512), language: input.language.slice(0, 15) } });
  if (!before) throw new DashboardRefusal(404, 'No such template in this project.');
  const after = await decideOnSimulator(deps, simulatorUrl, projectId, before.name, { decision: input.decision, language: before.language });
  // The decision is the simulator's (another process, as Meta's would be): no transaction spans it,
  // so its audit row follows it.
  await recordAudit(deps.db.prisma, deps.clock.now(), actor, {
    projectId, action: 'template.decide', subject: `${before.name} (${before.language})`,
    before: { status: before.status }, after: { status: after.status, rejected_reason: after.rejected_reason },
  }).catch((e) => deps.logger.error('dashboard audit: not recorded', { error: String(e), action: 'template.decide' }));
  return after;
}
