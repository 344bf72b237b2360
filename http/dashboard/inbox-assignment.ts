/**
 * The inbox's auto-assignment controls (issue 68, item 1): owners and admins turn it on with a cap
 * per person; each owner or admin says whether they take new conversations. Shown under the list;
 * the rules are lib/inbox/auto-assign.ts's.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage, type Role } from '../../lib/accounts/roles.js';
import { inboxSettings, isAvailable, MAX_ASSIGN_CAP } from '../../lib/inbox/auto-assign.js';
import { saveAutoAssignAs, setAvailabilityAs } from '../../lib/dashboard/inbox-settings.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { html, type Html } from './html.js';
import { csrfField, projectPath } from './layout.js';
import { field } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;

export async function autoAssignCard(deps: AppDeps, ctx: { project: { id: string }; role: Role; actor: { accountId: string }; csrf: string }): Promise<Html> {
  const settings = await inboxSettings(deps.db.sql, ctx.project.id);
  const manage = canManage(ctx.role);
  const path = projectPath(ctx.project.id, '/conversations');
  const available = manage ? await isAvailable(deps.db.sql, ctx.project.id, ctx.actor.accountId) : false;
  return html`<details class="card auto-assign"><summary>Auto-assignment: ${settings.autoAssign ? `on, at most ${settings.cap} open per person` : 'off'}${manage ? (available ? ' · you take new conversations' : ' · you are not taking new conversations') : ''}</summary>
<p class="muted">When it is on, a customer who writes in an unassigned conversation goes to the available owner or admin with the fewest open conversations, below the cap (the one given a conversation longest ago first). Nobody available: it stays under “Unassigned”, for everyone.</p>
${manage ? html`<form method="post" action="${path}/availability" class="inline">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="available" value="${available ? '0' : '1'}"><button type="submit">${available ? 'Stop taking new conversations' : 'Take new conversations'}</button></form>
<form method="post" action="${path}/auto-assign" class="inline-form">${csrfField(ctx.csrf)}${onceField()}
  <label><input type="checkbox" name="auto_assign" value="on"${settings.autoAssign ? html` checked` : ''}> Assign new waiting conversations automatically</label>
  <label for="assign-cap">Most open conversations per person</label><input id="assign-cap" name="cap" type="number" min="1" max="${String(MAX_ASSIGN_CAP)}" value="${String(settings.cap)}" required>
  <button type="submit">Save auto-assignment</button>
</form>` : html`<p class="muted">Owners and admins change it.</p>`}
</details>`;
}

export const submitAutoAssign = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'change auto-assignment');
  const cap = Number(field(req, 'cap') ?? '');
  if (!Number.isInteger(cap)) throw new DashboardRefusal(400, `The cap is a whole number from 1 to ${MAX_ASSIGN_CAP}; nothing was changed.`);
  await changeOnce(deps, req, res, project.id, async () => {
    await saveAutoAssignAs(deps, actor, project.id, { autoAssign: field(req, 'auto_assign') === 'on', cap });
    return projectPath(project.id, '/conversations?done=auto_assign_saved');
  });
};

export const submitAvailability = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'conversations', MANAGERS, 'take conversations automatically');
  const available = field(req, 'available') === '1';
  await changeOnce(deps, req, res, project.id, async () => {
    await setAvailabilityAs(deps, actor, project.id, available);
    return projectPath(project.id, `/conversations?done=${available ? 'available' : 'unavailable'}`);
  });
};

/** Mounted before the conversation's id (inbox-pages.ts). */
export const autoAssignRoutes: PageRoute[] = [
  { method: 'post', path: '/projects/:projectId/conversations/auto-assign', handler: submitAutoAssign },
  { method: 'post', path: '/projects/:projectId/conversations/availability', handler: submitAvailability },
];
