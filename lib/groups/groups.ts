/**
 * WhatsApp groups (docs/groups.md): what the business asks of a group (create, the invite link,
 * remove a participant, approve or reject join requests, change its subject or description, delete
 * it), and what the channel tells of it (created, deleted, participants, settings, suspension), each
 * change applied once with its event (`group.created`, `group.deleted`, `group.participants_changed`,
 * `group.settings_changed`, `group.status_changed`) in one transaction. A settings change or a
 * deletion the channel took is applied at once by the same step its notification takes, so
 * whichever comes first changes the group and the other finds nothing to change. A confirmed group
 * gets its own contact record (kind `group`) and its conversation, which takes the group's messages
 * like any other (lib/messaging/group-messages.ts).
 */
import { ApiError } from '../platform/errors.js';
import type { Deps } from '../deps.js';
import type { GroupLifecycleEvent, GroupParticipantsEvent, GroupSettingsEvent, GroupStatusEvent } from '../channel-port/events.js';
import { asApiError } from '../channel-port/api-errors.js';
import { requireChannel, type OpenChannel } from '../channel-settings/settings.js';
import { insertGroupContact, renameGroupContact } from '../conversations/contact-store.js';
import { touchConversation } from '../conversations/conversations.js';
import { phoneView } from '../conversations/views.js';
import { recordEvent } from '../webhooks/events.js';
import { inTransaction } from '../platform/db/transaction.js';
import type { Tx } from '../platform/db/tx.js';
import {
  addParticipants, confirmGroup, groupByChannelId, groupById, insertPendingGroup, listGroupRows, participantsOf, removeParticipants,
  setGroupContact, setGroupSettings, setGroupStatus, setInviteLink, type GroupRow,
} from './store.js';
import { capability } from '../channel-port/capabilities.js';

export { groupByChannelId, groupById } from './store.js';
export type { GroupRow } from './store.js';

export interface GroupView {
  id: number;
  group_id: string | null;
  status: 'pending' | 'active' | 'suspended' | 'deleted';
  subject: string;
  description: string | null;
  join_approval_mode: 'approval_required' | 'auto_approve';
  invite_link: string | null;
  participant_count: number;
  conversation_id: number | null;
  created_at: string;
  updated_at: string;
}

export function groupView(g: GroupRow): GroupView {
  return {
    id: Number(g.id),
    group_id: g.groupId,
    status: g.status as GroupView['status'],
    subject: g.subject,
    description: g.description,
    join_approval_mode: g.joinApprovalMode === 'approval_required' ? 'approval_required' : 'auto_approve',
    invite_link: g.inviteLink,
    participant_count: Number(g.participantCount),
    conversation_id: g.conversationId === null ? null : Number(g.conversationId),
    created_at: g.createdAt.toISOString(),
    updated_at: g.updatedAt.toISOString(),
  };
}

/** The conversation's `group` (the contract's GroupSummary). */
export function groupSummaryView(g: GroupRow): { id: number; group_id: string | null; subject: string; status: GroupView['status']; participant_count: number } {
  return { id: Number(g.id), group_id: g.groupId, subject: g.subject, status: g.status as GroupView['status'], participant_count: Number(g.participantCount) };
}

// ------------------------------------------------------------------ the business's operations

export async function createGroup(deps: Deps, projectId: string, input: { subject: string; description?: string; join_approval_mode?: string }): Promise<GroupView> {
  const subject = input.subject.trim();
  if (!subject) throw new ApiError('invalid_request', 'subject must not be blank.', { fields: [{ field: 'subject', message: 'is blank' }] });
  const joinApprovalMode = input.join_approval_mode === 'approval_required' ? 'approval_required' : 'auto_approve';
  const channel = await requireChannel(deps, projectId);
  let requestId: string;
  try {
    ({ requestId } = await capability(deps, channel, 'groups').createGroup(channel, { subject, description: input.description, joinApprovalMode }));
  } catch (e) {
    throw asApiError(e);
  }
  const row = await insertPendingGroup(deps.db.sql, { projectId, requestId, subject, description: input.description ?? null, joinApprovalMode }, deps.clock.now());
  return groupView(row);
}

export async function listGroups(deps: Deps, projectId: string, opts: { limit: number; beforeId?: number }): Promise<GroupView[]> {
  return (await listGroupRows(deps.db.sql, projectId, opts.limit, opts.beforeId)).map(groupView);
}

async function requireGroup(deps: Deps, projectId: string, id: bigint): Promise<GroupRow> {
  const g = await groupById(deps.db.sql, projectId, id);
  if (!g) throw new ApiError('not_found', `No group ${id} in this project.`);
  return g;
}

/** A group the channel knows and that takes changes now: confirmed, neither suspended nor deleted. */
async function requireActive(deps: Deps, projectId: string, id: bigint): Promise<GroupRow & { groupId: string }> {
  const g = await requireGroup(deps, projectId, id);
  if (g.status !== 'active' || !g.groupId) throw notActive(g);
  return g as GroupRow & { groupId: string };
}

export function notActive(g: { id: bigint | number; status: string }): ApiError {
  const why = g.status === 'pending' ? 'WhatsApp has not confirmed its creation yet' : `it is ${g.status}`;
  return new ApiError('group_not_active', `Group ${g.id} is not active: ${why}.`, { status: g.status });
}

export async function getGroup(deps: Deps, projectId: string, id: bigint): Promise<GroupView> {
  return groupView(await requireGroup(deps, projectId, id));
}

async function channelCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    throw asApiError(e);
  }
}

/** The link WhatsApp last gave, or a new one (`reset`, or none yet). */
export async function inviteLink(deps: Deps, projectId: string, id: bigint, reset: boolean): Promise<{ group_id: number; invite_link: string }> {
  const g = await requireActive(deps, projectId, id);
  if (!reset && g.inviteLink) return { group_id: Number(g.id), invite_link: g.inviteLink };
  const channel = await requireChannel(deps, projectId);
  const { inviteLink: link } = await channelCall(() => capability(deps, channel, 'groups').createGroupInviteLink(channel, g.groupId));
  await setInviteLink(deps.db.sql, projectId, g.id, link, deps.clock.now());
  return { group_id: Number(g.id), invite_link: link };
}

export async function listParticipants(deps: Deps, projectId: string, id: bigint): Promise<Array<{ phone: string; joined_at: string }>> {
  const g = await requireGroup(deps, projectId, id);
  return (await participantsOf(deps.db.sql, g.id)).map((p) => ({ phone: phoneView(p.waId), joined_at: p.joinedAt.toISOString() }));
}

/** Asks WhatsApp to remove a participant; the list changes with WhatsApp's notification. */
export async function removeParticipant(deps: Deps, projectId: string, id: bigint, phone: string): Promise<{ group_id: number; phone: string; requested: true }> {
  const g = await requireGroup(deps, projectId, id);
  const waId = phone.replace(/\D/g, '');
  if (!(await participantsOf(deps.db.sql, g.id)).some((p) => p.waId === waId)) {
    throw new ApiError('not_found', `${phoneView(waId)} is not a participant of group ${g.id}.`);
  }
  if (g.status !== 'active' || !g.groupId) throw notActive(g);
  const channel = await requireChannel(deps, projectId);
  await channelCall(() => capability(deps, channel, 'groups').removeGroupParticipants(channel, g.groupId!, [waId]));
  return { group_id: Number(g.id), phone: phoneView(waId), requested: true };
}

export async function listJoinRequests(deps: Deps, projectId: string, id: bigint): Promise<Array<{ id: string; phone: string; created_at: string | null }>> {
  const g = await requireActive(deps, projectId, id);
  const channel = await requireChannel(deps, projectId);
  const open = await channelCall(() => capability(deps, channel, 'groups').listGroupJoinRequests(channel, g.groupId));
  return open.map((r) => ({ id: r.id, phone: phoneView(r.waId), created_at: r.createdAt ? new Date(r.createdAt * 1000).toISOString() : null }));
}

export async function approveJoinRequests(deps: Deps, projectId: string, id: bigint, ids: string[]): Promise<{ approved: string[]; failed: string[] }> {
  const g = await requireActive(deps, projectId, id);
  const channel = await requireChannel(deps, projectId);
  return channelCall(() => capability(deps, channel, 'groups').approveGroupJoinRequests(channel, g.groupId, ids));
}

export async function rejectJoinRequests(deps: Deps, projectId: string, id: bigint, ids: string[]): Promise<{ rejected: string[]; failed: string[] }> {
  const g = await requireActive(deps, projectId, id);
  const channel = await requireChannel(deps, projectId);
  return channelCall(() => capability(deps, channel, 'groups').rejectGroupJoinRequests(channel, g.groupId, ids));
}

/**
 * Asks WhatsApp to change the subject and/or the description. Once WhatsApp took it, the group
 * takes the change as its group_settings_update would give it (applySettings): the notification
 * that follows finds it applied and raises no second event.
 */
export async function updateGroup(deps: Deps, projectId: string, id: bigint, input: { subject?: string; description?: string }): Promise<GroupView> {
  const subject = input.subject?.trim();
  if (subject === '') throw new ApiError('invalid_request', 'subject must not be blank.', { fields: [{ field: 'subject', message: 'is blank' }] });
  if (subject === undefined && input.description === undefined) {
    throw new ApiError('invalid_request', 'Give a subject or a description to change.', { fields: [{ field: 'subject', message: 'or description is required' }] });
  }
  const settings = { ...(subject !== undefined ? { subject } : {}), ...(input.description !== undefined ? { description: input.description } : {}) };
  const g = await requireActive(deps, projectId, id);
  const channel = await requireChannel(deps, projectId);
  await channelCall(() => capability(deps, channel, 'groups').updateGroupSettings(channel, g.groupId, settings));
  const now = deps.clock.now();
  await inTransaction(deps.db.pool, (tx) => applySettings(tx, projectId, g, settings, now));
  return groupView(await requireGroup(deps, projectId, g.id));
}

/**
 * Asks WhatsApp to delete the group. Once WhatsApp took it, the group is deleted as its
 * group_lifecycle_update `group_delete` makes it (applyDeleted): the notification that follows
 * finds it deleted and raises no second `group.deleted`.
 */
export async function deleteGroup(deps: Deps, projectId: string, id: bigint): Promise<GroupView> {
  const g = await requireActive(deps, projectId, id);
  const channel = await requireChannel(deps, projectId);
  await channelCall(() => capability(deps, channel, 'groups').deleteGroup(channel, g.groupId));
  const now = deps.clock.now();
  await inTransaction(deps.db.pool, (tx) => applyDeleted(tx, projectId, g, now));
  return groupView(await requireGroup(deps, projectId, g.id));
}

// ------------------------------------------------------------------ what the channel tells

type GroupEvent = GroupLifecycleEvent | GroupParticipantsEvent | GroupSettingsEvent | GroupStatusEvent;

async function raise(tx: Tx, projectId: string, name: string, id: bigint, at: Date, extra: Record<string, unknown> = {}): Promise<void> {
  const g = (await groupById(tx, projectId, id))!;
  await recordEvent(tx, projectId, name, { group: groupView(g), ...extra }, at);
}

type KnownGroup = Pick<GroupRow, 'id' | 'contactId'> & { groupId: string };

/** The group ended: `deleted` (from any status but deleted) with `group.deleted`, once. */
async function applyDeleted(tx: Tx, projectId: string, g: KnownGroup, now: Date): Promise<void> {
  if (await setGroupStatus(tx, projectId, g.groupId, 'deleted', now)) await raise(tx, projectId, 'group.deleted', g.id, now);
}

/** The subject and/or description, once, with `group.settings_changed`; the group's own record follows the subject. */
async function applySettings(tx: Tx, projectId: string, g: KnownGroup, s: { subject?: string; description?: string }, now: Date): Promise<void> {
  if (await setGroupSettings(tx, projectId, g.groupId, s, now)) {
    if (s.subject && g.contactId !== null) await renameGroupContact(tx, projectId, g.contactId, s.subject, now);
    await raise(tx, projectId, 'group.settings_changed', g.id, now);
  }
}

/**
 * One group notification, applied once (docs/groups.md), with its event in the same transaction.
 * A notification about a group this project never saw confirmed (and no creation) changes nothing.
 */
export async function applyGroupEvent(deps: Deps, channel: OpenChannel, e: GroupEvent, now: Date): Promise<void> {
  const projectId = channel.projectId;
  if (!e.groupId || e.groupId.length > 256) return;
  await inTransaction(deps.db.pool, async (tx) => {
    if (e.kind === 'group_lifecycle' && e.change === 'created') {
      const id = await confirmGroup(tx, projectId, e, now);
      if (id === undefined) return;
      const g = (await groupById(tx, projectId, id))!;
      // The group's own record and its conversation: its messages are stored there.
      const contactId = await insertGroupContact(tx, projectId, g.subject, now);
      await setGroupContact(tx, id, contactId);
      await touchConversation(tx, projectId, contactId, now);
      const added = await addParticipants(tx, projectId, id, (e.added ?? []).map((m) => m.waId), now);
      await raise(tx, projectId, 'group.created', id, now, added.length ? { added_participants: added.map((w) => phoneView(w)) } : {});
      return;
    }
    const found = await groupByChannelId(tx, projectId, e.groupId);
    if (!found) return;
    const g = { ...found, groupId: e.groupId };
    if (e.kind === 'group_lifecycle') {
      await applyDeleted(tx, projectId, g, now);
    } else if (e.kind === 'group_participants') {
      const added = await addParticipants(tx, projectId, g.id, e.added.map((m) => m.waId), now);
      const removed = await removeParticipants(tx, g.id, e.removed.map((m) => m.waId));
      if (added.length || removed.length) {
        await raise(tx, projectId, 'group.participants_changed', g.id, now, {
          added_participants: added.map((w) => phoneView(w)), removed_participants: removed.map((w) => phoneView(w)),
        });
      }
    } else if (e.kind === 'group_settings') {
      await applySettings(tx, projectId, g, e, now);
    } else if (e.kind === 'group_status') {
      if (await setGroupStatus(tx, projectId, e.groupId, e.status, now)) await raise(tx, projectId, 'group.status_changed', g.id, now);
    }
  });
}
