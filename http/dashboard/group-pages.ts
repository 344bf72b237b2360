/**
 * WhatsApp groups (docs/groups.md): the project's groups, each with its page, and the business's
 * group actions, through the API's own group functions (lib/dashboard/group-actions.ts). Every
 * role reads the groups, their invite links, join requests and participants; owners and admins
 * (the roles that reply and hand conversations over) create a group, reset its invite link,
 * approve or reject a join request, remove a participant, change the subject or description and
 * delete it, after a confirmation page. Each form is one-time; a refusal (a group not active,
 * WhatsApp's error) is said on the group's page, in words. The forms' limits are the contract's
 * (http/contract-limits.ts), as the API's validator has them.
 */
import { namesByPhone } from '../../lib/conversations/contacts.js';
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { listGroups } from '../../lib/groups/groups.js';
import {
  createGroupAs, decideJoinRequestAs, deleteGroupAs, groupOf, readInviteLink, readJoinRequests, readParticipants, removeParticipantAs,
  resetInviteLinkAs, updateGroupAs, type GroupView,
} from '../../lib/dashboard/group-actions.js';
import { groupLimitsOf, type GroupLimits } from '../contract-limits.js';
import { html, plural, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { changeOnce, onceField } from './console-kit.js';
import { readForm, type FormSchema, type FormValues } from './form-schema.js';
import { projectPages } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;
/** Groups a page of the list shows, newest first. */
const PAGE_SIZE = 50;

type Ctx = Awaited<ReturnType<typeof projectContext>>;

/** What a page shows again after a refusal: the words, the status and what the person typed. */
interface Kept {
  error?: string;
  status?: number;
  subject?: string;
  description?: string;
  mode?: string;
}

const MODES: Array<[GroupView['join_approval_mode'], string]> = [
  ['auto_approve', 'Anyone with the invite link joins at once'],
  ['approval_required', 'A person approves each request to join'],
];

function groupStatusWords(status: GroupView['status']): string {
  if (status === 'pending') return 'pending: WhatsApp has not confirmed its creation yet';
  if (status === 'suspended') return 'suspended by WhatsApp: it takes no change, send or join request until WhatsApp lifts it';
  if (status === 'deleted') return 'deleted: its conversation and messages are kept';
  return 'active';
}

const groupsPath = (projectId: string, rest = '') => projectPath(projectId, `/groups${rest}`);

function groupIdOf(req: Request): bigint {
  const id = String(req.params.groupId);
  if (!/^[1-9][0-9]{0,17}$/.test(id)) throw new DashboardRefusal(404, 'There is no such group.');
  return BigInt(id);
}

// ------------------------------------------------------------------ the list and the creation

function createForm(ctx: Ctx, limits: GroupLimits, kept: Kept): Html {
  const mode = kept.mode ?? 'auto_approve';
  return html`<section class="card" aria-labelledby="create-title"><h2 id="create-title">Create a group</h2>
<p class="muted">WhatsApp is asked to create it on this project's number (as <code>POST /v1/groups</code>): it is pending until WhatsApp confirms it, then it has its invite link and its conversation.</p>
<form method="post" action="${groupsPath(ctx.project.id)}">${csrfField(ctx.csrf)}${onceField()}
  <label for="group-subject">Subject</label><input id="group-subject" name="subject" type="text" maxlength="${limits.subject}" required value="${kept.subject ?? ''}">
  <label for="group-description">Description (optional)</label><textarea id="group-description" name="description" rows="2" maxlength="${limits.description}">${kept.description ?? ''}</textarea>
  <label for="group-mode">Who joins</label>
  <select id="group-mode" name="join_approval_mode">${MODES.map(([v, l]) => html`<option value="${v}"${v === mode ? html` selected` : ''}>${l}</option>`)}</select>
  <div class="actions"><button type="submit" class="primary">Create group</button></div>
</form></section>`;
}

async function renderGroups(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'groups');
  const before = typeof req.query.before === 'string' && /^[1-9][0-9]{0,15}$/.test(req.query.before) ? Number(req.query.before) : undefined;
  const groups = await listGroups(deps, ctx.project.id, { limit: PAGE_SIZE + 1, beforeId: before });
  const more = groups.length > PAGE_SIZE;
  const shown = groups.slice(0, PAGE_SIZE);
  const body = html`<p>WhatsApp groups on this project's number. Users join a group by its invite link; its messages are a conversation of the <a href="${projectPath(ctx.project.id, '/conversations')}">Inbox</a>.</p>
${shown.length ? html`<div class="table-wrap"><table class="stack" id="groups"><thead><tr><th scope="col">Subject</th><th scope="col">Status</th><th scope="col">Participants</th><th scope="col">Conversation</th><th scope="col">Created</th></tr></thead><tbody>
${shown.map((g) => html`<tr data-group="${g.id}"><td data-label="Subject"><a href="${groupsPath(ctx.project.id, `/${g.id}`)}">${g.subject}</a></td><td data-label="Status" class="status">${g.status}</td><td data-label="Participants">${String(g.participant_count)}</td><td data-label="Conversation">${g.conversation_id ? html`<a href="${projectPath(ctx.project.id, `/conversations/${g.conversation_id}`)}" aria-label="Messages of ${g.subject}">Messages</a>` : html`<span class="muted">once confirmed</span>`}</td><td data-label="Created">${when(g.created_at)}</td></tr>`)}
</tbody></table></div>` : html`<p class="muted" id="no-groups">${before ? 'No older groups.' : 'No groups yet.'}</p>`}
${before || more ? html`<p class="paging">${before ? html`<a href="${groupsPath(ctx.project.id)}">Newest groups</a> ` : ''}${more ? html`<a href="${`${groupsPath(ctx.project.id)}?before=${shown[shown.length - 1].id}`}" rel="next">Older groups</a>` : ''}</p>` : ''}
${canManage(ctx.role) ? createForm(ctx, groupLimitsOf(deps.contract), kept) : html`<p class="muted">Your role (${ctx.role}) reads the groups; owners and admins create and change them.</p>`}`;
  send(res, kept.status ?? 200, layout(ctx.shell('Groups', { error: kept.error }), body));
}

export const showGroups = (deps: AppDeps) => (req: Request, res: Response) => renderGroups(deps, req, res);

const createGroupForm = (l: GroupLimits) => ({
  subject: { trim: true, required: 'Give the group a subject; nothing was created.', maxChars: { max: l.subject, message: `A subject has at most ${l.subject} characters; nothing was created.` } },
  description: { maxChars: { max: l.description, message: `A description has at most ${l.description} characters; nothing was created.` } },
  join_approval_mode: { required: 'Say who joins the group; nothing was created.', oneOf: { values: MODES.map(([v]) => v), message: 'Say who joins the group; nothing was created.' } },
}) satisfies FormSchema;

// The limits are read from the contract at the request, not at mount: an app built on another
// contract (the tests' fixtures) mounts these pages without the group schemas.
export const submitCreateGroup = (deps: AppDeps) => {
  return async (req: Request, res: Response) => {
    const { actor, project } = await projectContext(deps, req, 'groups', MANAGERS, 'create groups');
    try {
      const form = readForm(req, createGroupForm(groupLimitsOf(deps.contract)));
      await changeOnce(deps, req, res, project.id, async () => {
        const g = await createGroupAs(deps, actor, project.id, { subject: form.subject, ...(form.description ? { description: form.description } : {}), join_approval_mode: form.join_approval_mode as GroupView['join_approval_mode'] });
        return groupsPath(project.id, `/${g.id}?done=group_created`);
      });
    } catch (e) {
      if (!(e instanceof DashboardRefusal)) throw e;
      await renderGroups(deps, req, res, { error: `Not created: ${e.message}`, status: e.status, subject: field(req, 'subject'), description: field(req, 'description'), mode: field(req, 'join_approval_mode') });
    }
  };
};

// ------------------------------------------------------------------ a group's page

function inviteCard(ctx: Ctx, g: GroupView, link: Awaited<ReturnType<typeof readInviteLink>>): Html {
  const path = groupsPath(ctx.project.id, `/${g.id}`);
  return html`<section class="card" aria-labelledby="invite-title"><h2 id="invite-title">Invite link</h2>
${link.ok
    ? html`<p>Users join by this link${g.join_approval_mode === 'approval_required' ? ' (each asks first; approve or reject them below)' : ''}.</p>
<div class="secret"><code id="invite-link">${link.value}</code> <button type="button" data-copy="invite-link" aria-label="Copy the invite link">Copy</button></div>`
    : html`<p class="error-text" id="invite-problem">The invite link could not be read: ${link.problem}</p>`}
${canManage(ctx.role) ? html`<form method="post" action="${path}/invite-link" class="inline" data-confirm="Reset the invite link of “${g.subject}”? The current link stops working at once.">${csrfField(ctx.csrf)}${onceField()}<button type="submit">Reset the invite link</button></form>` : ''}
</section>`;
}

/** A phone with its known name: "Ada Lovelace (+15551234567)". */
function whoWords(phone: string, names: Map<string, string>): string {
  const name = names.get(phone.replace(/[^0-9]/g, ''));
  return name ? `${name} (${phone})` : phone;
}

function joinRequestsCard(ctx: Ctx, g: GroupView, requests: Awaited<ReturnType<typeof readJoinRequests>> | undefined, names: Map<string, string>): Html {
  const path = groupsPath(ctx.project.id, `/${g.id}/join-requests`);
  const decide = (id: string, phone: string, decision: 'approve' | 'reject', label: string) => html`<form method="post" action="${path}" class="inline">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="join_request_id" value="${id}"><input type="hidden" name="decision" value="${decision}"><button type="submit"${decision === 'approve' ? html` class="primary"` : ''} aria-label="${label} ${phone}">${label}</button></form>`;
  return html`<section class="card" aria-labelledby="requests-title"><h2 id="requests-title">Join requests</h2>
${!requests
    ? html`<p class="muted">Anyone who opens the invite link joins at once: there is nothing to approve.</p>`
    : !requests.ok
      ? html`<p class="error-text" id="requests-problem">The join requests could not be read: ${requests.problem}</p>`
      : requests.value.length
        ? html`<div class="table-wrap"><table class="stack" id="join-requests"><thead><tr><th scope="col">Who asks</th><th scope="col">Asked</th>${canManage(ctx.role) ? html`<th scope="col">Decision</th>` : ''}</tr></thead><tbody>
${requests.value.map((r) => html`<tr data-join-request="${r.id}"><td data-label="Who asks">${whoWords(r.phone, names)}</td><td data-label="Asked">${when(r.created_at)}</td>${canManage(ctx.role) ? html`<td data-label="Decision">${decide(r.id, whoWords(r.phone, names), 'approve', 'Approve')} ${decide(r.id, whoWords(r.phone, names), 'reject', 'Reject')}</td>` : ''}</tr>`)}
</tbody></table></div>`
        : html`<p class="muted" id="no-join-requests">No open join requests.</p>`}
</section>`;
}

function participantsCard(ctx: Ctx, g: GroupView, participants: Array<{ phone: string; joined_at: string }>, names: Map<string, string>): Html {
  const remove = canManage(ctx.role) && g.status === 'active';
  const path = groupsPath(ctx.project.id, `/${g.id}/participants/remove`);
  return html`<section class="card" aria-labelledby="members-title"><h2 id="members-title">Participants (${String(participants.length)})</h2>
${participants.length
    ? html`<div class="table-wrap"><table class="stack" id="participants"><thead><tr><th scope="col">Who</th><th scope="col">Since</th>${remove ? html`<th scope="col">Remove</th>` : ''}</tr></thead><tbody>
${participants.map((p) => html`<tr><td data-label="Who">${whoWords(p.phone, names)}</td><td data-label="Since">${when(p.joined_at)}</td>${remove ? html`<td data-label="Remove"><form method="post" action="${path}" class="inline" data-confirm="Remove ${p.phone} from “${g.subject}”?">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="phone" value="${p.phone}"><button type="submit" class="danger" aria-label="Remove ${p.phone}">Remove</button></form></td>` : ''}</tr>`)}
</tbody></table></div>`
    : html`<p class="muted">Nobody has joined yet: users join by the group's invite link.</p>`}
${remove && participants.length ? html`<p class="muted">WhatsApp is asked to remove a participant; the list changes when WhatsApp confirms it.</p>` : ''}
</section>`;
}

function settingsCard(ctx: Ctx, g: GroupView, limits: GroupLimits, kept: Kept): Html {
  return html`<section class="card" aria-labelledby="settings-title"><h2 id="settings-title">Subject and description</h2>
<form method="post" action="${groupsPath(ctx.project.id, `/${g.id}/settings`)}">${csrfField(ctx.csrf)}${onceField()}
  <label for="settings-subject">Subject</label><input id="settings-subject" name="subject" type="text" maxlength="${limits.subject}" required value="${kept.subject ?? g.subject}">
  <label for="settings-description">Description (empty clears it)</label><textarea id="settings-description" name="description" rows="3" maxlength="${limits.description}">${kept.description ?? g.description ?? ''}</textarea>
  <div class="actions"><button type="submit">Save subject and description</button></div>
</form></section>`;
}

async function renderGroup(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'groups');
  const g = await groupOf(deps, ctx.project.id, groupIdOf(req));
  const active = g.status === 'active';
  const manage = canManage(ctx.role);
  const link = active ? await readInviteLink(deps, ctx.project.id, BigInt(g.id)) : undefined;
  const requests = active && g.join_approval_mode === 'approval_required' ? await readJoinRequests(deps, ctx.project.id, BigInt(g.id)) : undefined;
  const participants = await readParticipants(deps, ctx.project.id, BigInt(g.id));
  const names = await namesByPhone(deps.db.sql, ctx.project.id, [...(requests?.ok ? requests.value.map((r) => r.phone) : []), ...participants.map((p) => p.phone)]);
  const body = html`<dl class="facts" id="group-facts">
  <dt>Status</dt><dd><span class="status" id="group-status">${g.status}</span>${active ? '' : html` <span class="muted">(${groupStatusWords(g.status)})</span>`}</dd>
  <dt>Description</dt><dd id="group-description-text">${g.description || '—'}</dd>
  <dt>Who joins</dt><dd>${MODES.find(([v]) => v === g.join_approval_mode)![1]}</dd>
  <dt>Participants</dt><dd>${String(g.participant_count)}</dd>
  <dt>Created</dt><dd>${when(g.created_at)}</dd>
  <dt>Conversation</dt><dd>${g.conversation_id ? html`<a href="${projectPath(ctx.project.id, `/conversations/${g.conversation_id}`)}">Open the group's messages</a>` : html`<span class="muted">once WhatsApp confirms the group</span>`}</dd>
</dl>
${active ? '' : html`<p id="group-inactive">This group is ${groupStatusWords(g.status)}: its invite link, join requests, subject and participants cannot be changed now.</p>`}
${link ? inviteCard(ctx, g, link) : ''}
${active ? joinRequestsCard(ctx, g, requests, names) : ''}
${participantsCard(ctx, g, participants, names)}
${active && manage ? settingsCard(ctx, g, groupLimitsOf(deps.contract), kept) : ''}
${active && manage ? html`<section class="card" aria-labelledby="delete-title"><h2 id="delete-title">Delete the group</h2>
<p>WhatsApp removes every participant and the invite link stops working; the conversation and its messages stay here.</p>
<p><a href="${groupsPath(ctx.project.id, `/${g.id}/delete`)}">Delete this group…</a></p></section>` : ''}
${manage ? '' : html`<p class="muted">Your role (${ctx.role}) reads the group; owners and admins change it.</p>`}
<p><a href="${groupsPath(ctx.project.id)}">All groups</a></p>`;
  send(res, kept.status ?? 200, layout(ctx.shell(`Group: ${g.subject}`, { error: kept.error }), body));
}

export const showGroup = (deps: AppDeps) => (req: Request, res: Response) => renderGroup(deps, req, res);

/**
 * A group action's POST: the role, the form's fields, then the action once; it sends the person
 * to the group's page with `done`, or shows the page again with the refusal in words (and what
 * the person typed, for the settings form).
 */
function groupAction<S extends FormSchema>(
  what: string, schemaOf: (l: GroupLimits) => S,
  act: (deps: AppDeps, ctx: Ctx, id: bigint, form: FormValues<S>) => Promise<string>,
  keep: (req: Request) => Kept = () => ({}),
) {
  return (deps: AppDeps) => {
    return async (req: Request, res: Response) => {
      const ctx = await projectContext(deps, req, 'groups', MANAGERS, what);
      const id = groupIdOf(req);
      try {
        const form = readForm(req, schemaOf(groupLimitsOf(deps.contract)));
        await changeOnce(deps, req, res, ctx.project.id, async () => groupsPath(ctx.project.id, `/${id}?done=${await act(deps, ctx, id, form)}`));
      } catch (e) {
        // An unknown group's page is refused again by renderGroup (404, on the error page).
        if (!(e instanceof DashboardRefusal)) throw e;
        await renderGroup(deps, req, res, { error: `Not done: ${e.message}`, status: e.status, ...keep(req) });
      }
    };
  };
}

export const submitResetInviteLink = groupAction('reset invite links', () => ({}), async (deps, ctx, id) => {
  await resetInviteLinkAs(deps, ctx.actor, ctx.project.id, id);
  return 'invite_link_reset';
});

const DECISION = 'Say whether to approve or reject the join request; nothing was changed.';
export const submitJoinRequest = groupAction('approve or reject join requests', (l) => ({
  join_request_id: { required: 'Name the join request; nothing was changed.', maxChars: { max: l.joinRequestId, message: 'That is not a join request of this group; nothing was changed.' } },
  decision: { required: DECISION, oneOf: { values: ['approve', 'reject'], message: DECISION } },
}), async (deps, ctx, id, form) => {
  const decision = form.decision as 'approve' | 'reject';
  await decideJoinRequestAs(deps, ctx.actor, ctx.project.id, id, form.join_request_id, decision);
  return decision === 'approve' ? 'join_approved' : 'join_rejected';
});

export const submitRemoveParticipant = groupAction('remove participants', (l) => ({
  phone: { trim: true, required: 'Name the participant to remove; nothing was changed.', pattern: { re: l.phone, message: 'A participant is named by a phone number (8 to 15 digits); nothing was changed.' } },
}), async (deps, ctx, id, form) => {
  await removeParticipantAs(deps, ctx.actor, ctx.project.id, id, form.phone);
  return 'participant_removal';
});

export const submitGroupSettings = groupAction('change groups', (l) => ({
  subject: { trim: true, required: 'A group keeps a subject; nothing was changed.', maxChars: { max: l.subject, message: `A subject has at most ${l.subject} characters; nothing was changed.` } },
  description: { maxChars: { max: l.description, message: `A description has at most ${l.description} characters; nothing was changed.` } },
}), async (deps, ctx, id, form) => {
  await updateGroupAs(deps, ctx.actor, ctx.project.id, id, { subject: form.subject, description: form.description ?? '' });
  return 'group_changed';
}, (req) => ({ subject: field(req, 'subject'), description: field(req, 'description') }));

/** The confirmation step before a deletion: what it does, the button, and the way back. */
export const showDeleteGroup = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'groups', MANAGERS, 'delete groups');
  const g = await groupOf(deps, ctx.project.id, groupIdOf(req));
  const path = groupsPath(ctx.project.id, `/${g.id}`);
  if (g.status !== 'active') return res.redirect(303, path);
  const body = html`<p>Deleting <strong>${g.subject}</strong> asks WhatsApp to delete the group: its ${plural(g.participant_count, 'participant')} are removed and its invite link stops working. Its conversation and messages stay here. This cannot be undone.</p>
<div class="actions">
  <form method="post" action="${path}/delete" class="inline">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="confirm" value="delete"><button type="submit" class="danger">Delete the group</button></form>
  <a href="${path}">Back without deleting</a>
</div>`;
  send(res, 200, layout(ctx.shell(`Delete the group: ${g.subject}`), body));
};

const CONFIRM = 'Confirm the deletion on its page first; nothing was deleted.';
export const submitDeleteGroup = groupAction('delete groups', () => ({
  confirm: { required: CONFIRM, oneOf: { values: ['delete'], message: CONFIRM } },
}), async (deps, ctx, id) => {
  await deleteGroupAs(deps, ctx.actor, ctx.project.id, id);
  return 'group_deleted';
});

/** This module's pages under /dashboard (router.ts mounts them); each POST reads its form's fields with readForm, limits from the contract. */
export const groupRoutes = projectPages('groups', {
  '': { get: showGroups, post: submitCreateGroup },
  '/:groupId': { get: showGroup },
  '/:groupId/invite-link': { post: submitResetInviteLink },
  '/:groupId/join-requests': { post: submitJoinRequest },
  '/:groupId/participants/remove': { post: submitRemoveParticipant },
  '/:groupId/settings': { post: submitGroupSettings },
  '/:groupId/delete': { get: showDeleteGroup, post: submitDeleteGroup },
});
