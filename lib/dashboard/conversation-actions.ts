/**
 * A person takes over a conversation in the dashboard (issue 47, item 9): a reply through the one
 * send path of `POST /v1/messages` (lib/messaging/send-message.ts: quota, the 24-hour window,
 * consent, template variables; the form's one-time token is the send's reference, so the same form
 * sent twice is one message even past the form's own once-store), and the hand-over between the
 * bot and a person as the conversation's state (`handover`, the spec's platform state; back to the
 * bot is `unstructured`), through `setConversationState` as `PATCH /v1/conversations/{id}`. While a
 * conversation is `handover` the bot is not handed its messages (lib/bot/runtime.ts). Each is in
 * the audit trail.
 */
import { mentionedIn } from '../inbox/mentions.js';
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import { recordAuditAfter, recordAuditOn, type Actor } from '../accounts/audit.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { sendMessage } from '../messaging/send-message.js';
import { bodyPlaceholderCount } from '../messaging/compose.js';
import { BOT_STATE, HUMAN_STATE, setConversationState } from '../conversations/conversations.js';
import { inTransaction } from '../platform/db/transaction.js';
import type { ContactView } from '../conversations/views.js';
import { personAuthor } from '../conversations/authors.js';
import { ApiError } from '../platform/errors.js';
import { assign, changeLabels, listMembers, relabel } from '../inbox/team.js';
import { checkResolution, setResolution, type Resolution } from '../inbox/resolution.js';
import { addNote } from '../inbox/notes.js';
import { controlThread, parseThreadControl } from '../messaging/thread-control.js';

export type Reply =
  | { kind: 'text'; text: string }
  | { kind: 'template'; name: string; language: string; variables: string[] }
  /** A media asset of the project (made by the API's media upload, lib/media/assets.ts), sent by its slug. */
  | { kind: 'media'; type: 'image' | 'document'; slug: string; filename?: string; caption?: string };

/** Longest text a reply takes (WhatsApp's limit for a text message's body). */
export const MAX_REPLY_CHARS = 4096;

export interface OfferedTemplate {
  name: string;
  language: string;
  category: string;
  /** The body's text with its `{{n}}` placeholders. */
  body: string;
  variables: number;
}

/**
 * The approved templates a person may send from the dashboard: those without a media header (a
 * header sample is chosen through the API). Name order.
 */
export async function offeredTemplates(deps: Pick<Deps, 'db'>, projectId: string): Promise<OfferedTemplate[]> {
  const rows = await deps.db.prisma.template.findMany({ where: { projectId, status: 'APPROVED' }, orderBy: [{ name: 'asc' }, { language: 'asc' }] });
  const out: OfferedTemplate[] = [];
  for (const t of rows) {
    const parts = Array.isArray(t.components) ? (t.components as Array<Record<string, unknown>>) : [];
    const header = parts.find((c) => String(c?.type).toUpperCase() === 'HEADER');
    if (header && ['IMAGE', 'VIDEO', 'DOCUMENT'].includes(String(header.format ?? '').toUpperCase())) continue;
    const body = parts.find((c) => String(c?.type).toUpperCase() === 'BODY');
    out.push({ name: t.name, language: t.language, category: t.category, body: typeof body?.text === 'string' ? body.text : '', variables: bodyPlaceholderCount(t.components) });
  }
  return out;
}

/** The recipient of a reply: the contact's phone when known, else its business-scoped user id. */
function recipientOf(contact: ContactView): { phone: string } | { user_id: string } {
  if (contact.phone) return { phone: contact.phone };
  if (contact.user_id) return { user_id: contact.user_id };
  throw new DashboardRefusal(409, 'This customer has neither a phone number nor a user id yet; nothing was sent.');
}

/**
 * Sends the reply through the API's send path under the reference `ref` (one message per form,
 * however often it is posted) and writes the audit row after it (a send cannot share a
 * transaction with the trail). Refusals are the API's errors (ApiError), e.g. 409
 * `outside_24h_window`.
 */
export async function sendReply(
  deps: Deps,
  actor: Actor,
  project: ProjectRef,
  conversation: { id: number; contact: ContactView; group?: { id: number } | null },
  reply: Reply,
  ref: string,
): Promise<string> {
  // A WhatsApp group's conversation is answered in the group (docs/groups.md).
  const to = conversation.group ? { group_id: conversation.group.id } : recipientOf(conversation.contact);
  const body = reply.kind === 'text'
    ? { type: 'text', ...to, content: reply.text }
    : reply.kind === 'media'
      ? { type: reply.type, ...to, media: { slug: reply.slug, ...(reply.caption ? { caption: reply.caption } : {}), ...(reply.type === 'document' && reply.filename ? { filename: reply.filename } : {}) } }
      : { type: 'template', ...to, template: { name: reply.name, language: reply.language, variables: reply.variables } };
  const sent = await sendMessage(deps, project, body as Parameters<typeof sendMessage>[2], { ref, author: personAuthor(actor) });
  await recordAuditAfter(deps, actor, {
    projectId: project.id,
    action: 'conversation.reply',
    subject: `conversation ${conversation.id}`,
    after: reply.kind === 'text' ? { wamid: sent.id, type: 'text', characters: [...reply.text].length }
      : reply.kind === 'media' ? { wamid: sent.id, type: reply.type, media: reply.slug }
        : { wamid: sent.id, type: 'template', template: reply.name, language: reply.language },
  });
  return sent.id;
}

/** Hands the conversation to a person (`handover`) or back to the bot (`unstructured`), audited in the same transaction. */
export async function handConversation(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, to: 'human' | 'bot'): Promise<{ state: string; previousState: string }> {
  const state = to === 'human' ? HUMAN_STATE : BOT_STATE;
  const now = deps.clock.now();
  return inTransaction(deps.db.pool, async (client) => {
    const changed = await setConversationState(client, projectId, BigInt(id), state, now);
    if (!changed) throw new DashboardRefusal(404, 'No such conversation in this project.');
    await recordAuditOn(client, now, actor, { projectId, action: 'conversation.state', subject: `conversation ${id}`, before: { state: changed.previousState }, after: { state } });
    return { state: changed.state, previousState: changed.previousState };
  });
}

/**
 * The inbox's team actions (issue 60), open to every role of the project (a member takes and
 * hands on conversations, writes notes and labels; replies stay with owners and admins): the same
 * functions as the API's (lib/inbox/team.ts, notes.ts), named by the person, each in the audit trail.
 */
export async function assignAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, email: string | null): Promise<void> {
  let changed;
  try {
    changed = await assign(deps.db, projectId, BigInt(id), email, personAuthor(actor), deps.clock.now());
  } catch (e) {
    if (e instanceof ApiError && e.code === 'unknown_member') throw new DashboardRefusal(400, 'That person is not in this project’s team; nothing was changed.');
    throw e;
  }
  if (!changed) throw new DashboardRefusal(404, 'No such conversation in this project.');
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.assign', subject: `conversation ${id}`, before: { assignee: changed.previous_assignee?.email ?? null }, after: { assignee: changed.assignee?.email ?? null } });
}

export async function labelAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, labels: string[]): Promise<void> {
  let changed;
  try {
    changed = await relabel(deps.db, projectId, BigInt(id), labels, personAuthor(actor), deps.clock.now());
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) throw new DashboardRefusal(400, `${e.message} Nothing was changed.`);
    throw e;
  }
  if (!changed) throw new DashboardRefusal(404, 'No such conversation in this project.');
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.labels', subject: `conversation ${id}`, before: { labels: changed.previous_labels }, after: { labels: changed.labels } });
}

/**
 * The inbox's labels form (issue 68, item 3): what the person added and removed against the labels
 * the form was drawn from, applied to the labels as they are now, so a colleague's label saved
 * meanwhile is kept. Returns the labels after, and whether someone else had changed them meanwhile.
 */
export async function labelDeltaAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, drawnFrom: string[], wanted: string[]): Promise<{ labels: string[]; merged: boolean }> {
  const lower = (l: string[]) => [...new Set(l.map((x) => x.trim().toLowerCase()).filter(Boolean))];
  const before = lower(drawnFrom);
  const after = lower(wanted);
  let changed;
  try {
    changed = await changeLabels(deps.db, projectId, BigInt(id), { add: after.filter((l) => !before.includes(l)), remove: before.filter((l) => !after.includes(l)) }, personAuthor(actor), deps.clock.now());
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) throw new DashboardRefusal(400, `${e.message.replace(/^(add|remove)\[\d+\] /, 'A label ')} Nothing was changed.`);
    throw e;
  }
  if (!changed) throw new DashboardRefusal(404, 'No such conversation in this project.');
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.labels', subject: `conversation ${id}`, before: { labels: changed.previous_labels }, after: { labels: changed.labels } });
  return { labels: changed.labels, merged: changed.previous_labels.join('\n') !== [...before].sort().join('\n') };
}

/** Resolve, snooze (until a time) or reopen, from the inbox (lib/inbox/resolution.ts); every role may. */
export async function resolveAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, resolution: Resolution, snoozedUntil?: Date): Promise<void> {
  const now = deps.clock.now();
  let input;
  try {
    input = checkResolution({ resolution, snoozed_until: snoozedUntil?.toISOString() }, now);
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) throw new DashboardRefusal(400, `${e.message} Nothing was changed.`);
    throw e;
  }
  const changed = await setResolution(deps.db.sql, projectId, BigInt(id), input, now);
  if (!changed) throw new DashboardRefusal(404, 'No such conversation in this project.');
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.resolution', subject: `conversation ${id}`, before: { resolution: changed.previous_resolution }, after: { resolution: changed.resolution, snoozed_until: changed.snoozed_until } });
}

/** Writes a person's note; the colleagues it @mentions are notified in the inbox until they open the conversation. */
export async function noteAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, id: number, body: string): Promise<void> {
  let note;
  try {
    // Colleagues named with @ are told in their inbox (lib/inbox/mentions.ts).
    const mentions = mentionedIn(body, await listMembers(deps.db.sql, projectId), actor.accountId);
    note = await addNote(deps.db, projectId, BigInt(id), body, personAuthor(actor), deps.clock.now(), mentions);
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) throw new DashboardRefusal(e.status === 409 ? 409 : 400, `${e.message} The note was not saved.`);
    throw e;
  }
  if (!note) throw new DashboardRefusal(404, 'No such conversation in this project.');
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.note', subject: `conversation ${id}`, after: { note: note.id, characters: [...body].length } });
}

/**
 * Thread control from the dashboard (docs/coexistence.md): an owner or admin passes the thread to
 * another app, takes it back or releases it, as the API does; a refusal (held elsewhere, a bad
 * app id, the channel's) is said in words, and the change is in the audit trail.
 */
export async function threadControlAs(
  deps: Pick<Deps, 'db' | 'clock' | 'channel' | 'config' | 'logger'>, actor: Actor, projectId: string, id: number, action: string, targetAppId: string | undefined,
): Promise<void> {
  let done;
  try {
    done = await controlThread(deps, projectId, BigInt(id), parseThreadControl({ action, ...(action === 'pass' ? { target_app_id: targetAppId } : {}) }), 'dashboard');
  } catch (e) {
    if (e instanceof ApiError && e.status < 500) throw new DashboardRefusal(e.status === 404 ? 404 : e.status === 409 ? 409 : 400, `${e.message} Nothing was changed. (${e.code})`);
    throw e;
  }
  await recordAuditAfter(deps, actor, { projectId, action: 'conversation.thread_control', subject: `conversation ${id}`, before: { holder: done.previous_holder_app_id }, after: { action, holder: done.thread.app_id } });
}
