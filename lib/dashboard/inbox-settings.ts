/** The inbox's auto-assignment from the dashboard (lib/inbox/auto-assign.ts), each change in the audit trail. */
import type { Deps } from '../deps.js';
import { recordAuditAfter, type Actor } from '../accounts/audit.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { ApiError } from '../platform/errors.js';
import { inboxSettings, saveInboxSettings, setAvailable, type InboxSettingsView } from '../inbox/auto-assign.js';

/** An owner or admin turns auto-assignment on or off, with the cap per person. */
export async function saveAutoAssignAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, next: InboxSettingsView): Promise<void> {
  const before = await inboxSettings(deps.db.sql, projectId);
  try {
    await saveInboxSettings(deps.db.sql, projectId, next, deps.clock.now());
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) throw new DashboardRefusal(400, `${e.message} Nothing was changed.`);
    throw e;
  }
  await recordAuditAfter(deps, actor, { projectId, action: 'inbox.auto_assign', subject: 'inbox', before: { ...before }, after: { ...next } });
}

/** A person says whether they take new conversations automatically. */
export async function setAvailabilityAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, available: boolean): Promise<void> {
  await setAvailable(deps.db.sql, projectId, actor.accountId, available);
  await recordAuditAfter(deps, actor, { projectId, action: 'inbox.availability', subject: actor.email, after: { available } });
}
