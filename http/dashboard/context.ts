/** The signed-in person and, on a project's pages, the project and their role in it (404 without one). */
import type { Request } from 'express';
import type { AppDeps } from '../app-deps.js';
import { findProject } from '../../lib/access/projects.js';
import { requireRole, roleIn, type Role } from '../../lib/accounts/roles.js';
import type { Actor } from '../../lib/accounts/audit.js';
import type { Shell } from './layout.js';

/** Notices after a redirect: a fixed list, so nothing from the URL is echoed as a message. */
const NOTICES: Record<string, string> = {
  approved: 'Broadcast approved: it is scheduled and will be released by the engine.',
  test_sent: 'Test sent to the number you typed, through the same send path as the campaign.',
  canceled: 'Broadcast canceled.',
  revoked: 'Key revoked: it no longer works.',
  scopes: 'Scopes saved: they apply from the key’s next request.',
  removed: 'Removed from the project.',
  template_approved: 'Template approved (by the simulator, as Meta’s review would).',
  template_rejected: 'Template rejected (by the simulator, as Meta’s review would).',
  table_created: 'Table created.',
  ddl_ran: 'Statement run.',
  copied: 'Preview’s structure copied to public.',
  row_inserted: 'Row added.',
  rows_updated: 'Rows changed.',
  rows_deleted: 'Rows deleted.',
  secret_set: 'Secret saved. Its value is not shown again.',
  secret_replaced: 'Secret replaced: the bot reads the new value from its next event.',
  secret_deleted: 'Secret deleted: the bot reads null from its next event.',
  redelivered: 'Delivery queued again: it is attempted within the next sweep (about 15 s).',
  reply_sent: 'Reply sent through the same send path as the API (quota, window, consent).',
  attachment_sent: 'Attachment sent: uploaded as the API’s media upload does, then sent through its send path (quota, window, consent).',
  handed_to_human: 'You hold the conversation now: the bot is not handed the customer’s messages until it is given back.',
  handed_to_bot: 'Given back to the bot: it answers the customer’s next message.',
  thread_pass: 'Thread passed: the other app answers the customer now; their messages are stored here, not answered.',
  thread_take: 'Thread taken back: this app answers the customer again.',
  thread_release: 'Thread released.',
  group_created: 'WhatsApp was asked to create the group: it is pending until WhatsApp confirms it, then it has its invite link and its conversation.',
  invite_link_reset: 'New invite link from WhatsApp: the old one no longer works.',
  join_approved: 'Join request approved: the user joins the group (the participants follow WhatsApp’s notification).',
  join_rejected: 'Join request rejected: the user does not join (they may ask again by the invite link).',
  participant_removal: 'WhatsApp was asked to remove the participant: the list changes when WhatsApp confirms it.',
  group_changed: 'Subject and description changed at WhatsApp.',
  group_deleted: 'Group deleted at WhatsApp: its conversation and messages are kept.',
  assigned: 'Assignment saved: the conversation shows under that person’s “Assigned to me”.',
  unassigned: 'The conversation is unassigned: it shows under “Unassigned”.',
  labels_saved: 'Labels saved.',
  labels_merged: 'Labels saved, together with a colleague’s change made while your page was open: both are kept (shown below).',
  resolved: 'Resolved: the conversation leaves the queue until the customer writes again.',
  snoozed: 'Snoozed: it comes back by itself at the time shown, or when the customer writes.',
  reopened: 'Reopened: the conversation is open again.',
  auto_assign_saved: 'Auto-assignment saved.',
  available: 'You take new conversations: auto-assignment may give you one when a customer writes.',
  unavailable: 'You no longer take new conversations automatically.',
  note_added: 'Private note added: the team sees it; it was not sent to the customer.',
  canned_saved: 'Canned reply saved: choose it in the reply form.',
  file_uploaded: 'File uploaded.',
  file_replaced: 'File replaced: the bot reads the new content from its next event.',
  file_deleted: 'File deleted.',
  file_media: 'Media asset made: it is listed under Media assets.',
  header_sample: 'Header sample made: its handle is listed under Template header samples.',
  media_deleted: 'Media asset deleted.',
  flow_checked: 'Checked at the channel: nothing was published. The channel’s findings are below.',
  flow_published: 'Flow published at the channel: it can be sent now.',
  rolled_back: 'Rolled back: production runs that deployment again from the next event.',
  schedule_paused: 'Schedule paused: it does not run until it is resumed.',
  schedule_resumed: 'Schedule resumed: it runs from its next due time.',
  schedule_run: 'Run queued: the bot runs the schedule now, once (a manual run).',
};

export function person(req: Request) {
  const s = req.dashboardSession!;
  return { session: s, actor: { accountId: s.account.id, email: s.account.email } as Actor };
}

export async function projectContext(deps: AppDeps, req: Request, tab: string, allowed?: readonly Role[], what = 'see this page') {
  const { session, actor } = person(req);
  const projectId = String(req.params.projectId);
  const role = allowed ? await requireRole(deps, actor.accountId, projectId, allowed, what) : await roleIn(deps, actor.accountId, projectId);
  const project = await findProject(deps, projectId);
  const done = typeof req.query.done === 'string' ? NOTICES[req.query.done] : undefined;
  const shell = (title: string, extra: Partial<Shell> = {}): Shell => ({
    title,
    person: { email: actor.email, csrf: session.csrfToken },
    project: { id: project.id, name: project.name, role, tab },
    notice: done,
    ...extra,
  });
  return { project, role, actor, csrf: session.csrfToken, shell };
}
