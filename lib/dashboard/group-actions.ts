/**
 * A person's group actions in the dashboard (docs/groups.md): create a group, reset its invite
 * link, approve or reject a join request, remove a participant, change the subject or description
 * and delete the group, each through the same function as its API operation (lib/groups/groups.ts),
 * so the same rules hold (an active group, WhatsApp asked first). A refusal, the channel's
 * included, comes back in words with its code; what was done is in the audit trail, written just
 * after it (WhatsApp's call cannot share a transaction with the trail).
 */
import type { Deps } from '../deps.js';
import { recordAuditAfter, type Actor } from '../accounts/audit.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { ApiError } from '../platform/errors.js';
import {
  approveJoinRequests, createGroup, deleteGroup, getGroup, inviteLink, listJoinRequests, listParticipants, rejectJoinRequests,
  removeParticipant, updateGroup, type GroupView,
} from '../groups/groups.js';

export type { GroupView } from '../groups/groups.js';

/**
 * An ApiError as the page says it: its message, what it means for the change (`after`) and its
 * code; the channel's failures (502) included. Anything else is not a refusal.
 */
function groupRefusal(e: unknown, after: string): unknown {
  if (!(e instanceof ApiError) || (e.status >= 500 && e.status !== 502)) return e;
  const status = e.status === 404 ? 404 : e.status === 409 ? 409 : e.status === 502 ? 502 : 400;
  return new DashboardRefusal(status, `${e.message}${after ? ` ${after}` : ''} (${e.code})`);
}

/** A change: its refusal says nothing was changed (WhatsApp refused, or it was refused before WhatsApp was asked). */
async function asked<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw groupRefusal(e, 'Nothing was changed.');
  }
}

const subjectOf = (id: number) => `group ${id}`;

/** The group as a page shows it; 404 in words for another project's or an unknown id. */
export async function groupOf(deps: Deps, projectId: string, id: bigint): Promise<GroupView> {
  try {
    return await getGroup(deps, projectId, id);
  } catch (e) {
    throw groupRefusal(e, '');
  }
}

/** Reads a page shows beside the group: each its value, or the refusal's words (a page still shows the rest). */
export type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

async function read<T>(run: () => Promise<T>): Promise<Read<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (e) {
    const r = groupRefusal(e, '');
    if (r instanceof DashboardRefusal) return { ok: false, problem: r.message };
    throw r;
  }
}

export const readInviteLink = (deps: Deps, projectId: string, id: bigint) => read(async () => (await inviteLink(deps, projectId, id, false)).invite_link);
export const readJoinRequests = (deps: Deps, projectId: string, id: bigint) => read(() => listJoinRequests(deps, projectId, id));
export const readParticipants = (deps: Deps, projectId: string, id: bigint) => listParticipants(deps, projectId, id);

export async function createGroupAs(
  deps: Deps, actor: Actor, projectId: string, input: { subject: string; description?: string; join_approval_mode: 'approval_required' | 'auto_approve' },
): Promise<GroupView> {
  const g = await asked(() => createGroup(deps, projectId, input));
  await recordAuditAfter(deps, actor, {
    projectId, action: 'group.create', subject: subjectOf(g.id),
    after: { subject: g.subject, description: g.description, join_approval_mode: g.join_approval_mode, status: g.status },
  });
  return g;
}

/** A new invite link from WhatsApp: the old one stops working. The link itself is not kept in the trail. */
export async function resetInviteLinkAs(deps: Deps, actor: Actor, projectId: string, id: bigint): Promise<void> {
  await asked(() => inviteLink(deps, projectId, id, true));
  await recordAuditAfter(deps, actor, { projectId, action: 'group.invite_link_reset', subject: subjectOf(Number(id)), after: { invite_link: 'replaced' } });
}

/** Approves or rejects one join request; one WhatsApp did not take is refused in words. */
export async function decideJoinRequestAs(deps: Deps, actor: Actor, projectId: string, id: bigint, requestId: string, decision: 'approve' | 'reject'): Promise<void> {
  const done = decision === 'approve'
    ? (await asked(() => approveJoinRequests(deps, projectId, id, [requestId]))).approved
    : (await asked(() => rejectJoinRequests(deps, projectId, id, [requestId]))).rejected;
  if (!done.includes(requestId)) {
    throw new DashboardRefusal(409, `WhatsApp did not ${decision} this join request (it may have been withdrawn or decided already). Nothing was changed.`);
  }
  await recordAuditAfter(deps, actor, { projectId, action: `group.join_request_${decision === 'approve' ? 'approved' : 'rejected'}`, subject: subjectOf(Number(id)), after: { join_request: requestId } });
}

/** Asks WhatsApp to remove the participant; the list follows WhatsApp's notification. */
export async function removeParticipantAs(deps: Deps, actor: Actor, projectId: string, id: bigint, phone: string): Promise<void> {
  const done = await asked(() => removeParticipant(deps, projectId, id, phone));
  await recordAuditAfter(deps, actor, { projectId, action: 'group.participant_removed', subject: subjectOf(Number(id)), before: { participant: done.phone }, after: { participant: null } });
}

/**
 * Changes what differs from the group's subject and description (an empty description clears
 * it); a form that changes neither is refused before WhatsApp is asked.
 */
export async function updateGroupAs(deps: Deps, actor: Actor, projectId: string, id: bigint, form: { subject: string; description: string }): Promise<void> {
  const before = await groupOf(deps, projectId, id);
  const change = {
    ...(form.subject !== before.subject ? { subject: form.subject } : {}),
    ...(form.description !== (before.description ?? '') ? { description: form.description } : {}),
  };
  if (!Object.keys(change).length) throw new DashboardRefusal(400, 'The subject and description are as they were: nothing was changed.');
  const after = await asked(() => updateGroup(deps, projectId, id, change));
  await recordAuditAfter(deps, actor, {
    projectId, action: 'group.settings', subject: subjectOf(after.id),
    before: { subject: before.subject, description: before.description }, after: { subject: after.subject, description: after.description },
  });
}

export async function deleteGroupAs(deps: Deps, actor: Actor, projectId: string, id: bigint): Promise<void> {
  const before = await groupOf(deps, projectId, id);
  const after = await asked(() => deleteGroup(deps, projectId, id));
  await recordAuditAfter(deps, actor, { projectId, action: 'group.delete', subject: subjectOf(after.id), before: { status: before.status }, after: { status: after.status } });
}
