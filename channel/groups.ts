/**
 * Groups (Meta's Groups API, v23.0 contract: POST /{phone-number-id}/groups, POST /{group-id}/invite_link,
 * DELETE /{group-id}/participants, GET, POST and DELETE /{group-id}/join_requests, POST and DELETE
 * /{group-id}; docs/groups.md). The group's
 * id is not in the creation's answer: it comes with the group_lifecycle_update notification, which
 * names the creation's `request_id` (notifications.ts reads it).
 */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';
import type { CreateGroupInput, GroupJoinRequest, GroupSettingsInput } from '../lib/channel-port/port.js';

/** A group id as Graph takes it in a path: base64-like, as Meta issues them. */
function groupNode(groupId: string): string {
  if (typeof groupId !== 'string' || !/^[A-Za-z0-9_=+.-]{1,256}$/.test(groupId)) throw new TypeError('CloudApiClient: invalid group id');
  return groupId;
}

export async function createGroup(this: GraphTransport, creds: ChannelCredentials, input: CreateGroupInput): Promise<{ requestId: string }> {
  const data: Record<string, unknown> = { messaging_product: 'whatsapp', subject: input.subject, join_approval_mode: input.joinApprovalMode };
  if (input.description !== undefined) data.description = input.description;
  const answer = (await this.call(creds, { op: 'createGroup', method: 'POST', segments: [creds.phoneNumberId, 'groups'], data })) as { request_id?: unknown } | null;
  const requestId = answer?.request_id;
  if (typeof requestId !== 'string' || !requestId) throw this.unexpected('createGroup', 'no request_id in the answer');
  return { requestId };
}

export async function createGroupInviteLink(this: GraphTransport, creds: ChannelCredentials, groupId: string): Promise<{ inviteLink: string }> {
  const answer = (await this.call(creds, {
    op: 'createGroupInviteLink', method: 'POST', segments: [groupNode(groupId), 'invite_link'], data: { messaging_product: 'whatsapp' },
  })) as { invite_link?: unknown } | null;
  if (typeof answer?.invite_link !== 'string' || !answer.invite_link) throw this.unexpected('createGroupInviteLink', 'no invite_link in the answer');
  return { inviteLink: answer.invite_link };
}

export async function removeGroupParticipants(this: GraphTransport, creds: ChannelCredentials, groupId: string, participants: string[]): Promise<void> {
  if (!participants.length || participants.length > 8) throw new TypeError('CloudApiClient: 1 to 8 participants');
  await this.call(creds, {
    op: 'removeGroupParticipants', method: 'DELETE', segments: [groupNode(groupId), 'participants'],
    data: { messaging_product: 'whatsapp', participants: participants.map((user) => ({ user })) },
  });
}

export async function listGroupJoinRequests(this: GraphTransport, creds: ChannelCredentials, groupId: string): Promise<GroupJoinRequest[]> {
  const answer = (await this.call(creds, { op: 'listGroupJoinRequests', method: 'GET', segments: [groupNode(groupId), 'join_requests'] })) as { data?: unknown } | null;
  if (!Array.isArray(answer?.data)) throw this.unexpected('listGroupJoinRequests', 'no data in the answer');
  const out: GroupJoinRequest[] = [];
  for (const r of answer.data as Array<Record<string, unknown>>) {
    if (typeof r?.join_request_id !== 'string' || typeof r.wa_id !== 'string') continue;
    const created = Number(r.creation_timestamp);
    out.push({ id: r.join_request_id, waId: r.wa_id, ...(Number.isFinite(created) && created > 0 ? { createdAt: created } : {}) });
  }
  return out;
}

/** Graph's `failed_join_requests` (`[{ join_request_id, errors }]`): the ids. */
function failedIds(v: unknown): string[] {
  return Array.isArray(v) ? (v as Array<{ join_request_id?: unknown }>).map((f) => f?.join_request_id).filter((x): x is string => typeof x === 'string') : [];
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export async function approveGroupJoinRequests(this: GraphTransport, creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ approved: string[]; failed: string[] }> {
  const answer = (await this.call(creds, {
    op: 'approveGroupJoinRequests', method: 'POST', segments: [groupNode(groupId), 'join_requests'], data: { messaging_product: 'whatsapp', join_requests: ids },
  })) as { approved_join_requests?: unknown; failed_join_requests?: unknown } | null;
  return { approved: strings(answer?.approved_join_requests), failed: failedIds(answer?.failed_join_requests) };
}

/** DELETE /{group-id}/join_requests: Meta's counterpart of approving, the same body. */
export async function rejectGroupJoinRequests(this: GraphTransport, creds: ChannelCredentials, groupId: string, ids: string[]): Promise<{ rejected: string[]; failed: string[] }> {
  const answer = (await this.call(creds, {
    op: 'rejectGroupJoinRequests', method: 'DELETE', segments: [groupNode(groupId), 'join_requests'], data: { messaging_product: 'whatsapp', join_requests: ids },
  })) as { rejected_join_requests?: unknown; failed_join_requests?: unknown } | null;
  return { rejected: strings(answer?.rejected_join_requests), failed: failedIds(answer?.failed_join_requests) };
}

/** POST /{group-id}: the subject and/or description (Meta's updateGroupSettings; the picture is not sent here). */
export async function updateGroupSettings(this: GraphTransport, creds: ChannelCredentials, groupId: string, input: GroupSettingsInput): Promise<void> {
  if (input.subject === undefined && input.description === undefined) throw new TypeError('CloudApiClient: a subject or a description');
  const data: Record<string, unknown> = { messaging_product: 'whatsapp' };
  if (input.subject !== undefined) data.subject = input.subject;
  if (input.description !== undefined) data.description = input.description;
  await this.call(creds, { op: 'updateGroupSettings', method: 'POST', segments: [groupNode(groupId)], data });
}

/** DELETE /{group-id}: no body (Meta's deleteGroup takes none). */
export async function deleteGroup(this: GraphTransport, creds: ChannelCredentials, groupId: string): Promise<void> {
  await this.call(creds, { op: 'deleteGroup', method: 'DELETE', segments: [groupNode(groupId)] });
}
