/**
 * Groups (Meta's Groups API, v23.0 contract; docs/groups.md): the business creates a group with
 * POST /:phoneNumberId/groups (answered with a `request_id`; the `group_lifecycle_update`
 * notification `group_create` then names the group), gets a new invite link (POST
 * /:groupId/invite_link), removes participants (DELETE /:groupId/participants), lists, approves and
 * rejects join requests (GET, POST and DELETE /:groupId/join_requests), changes the subject or
 * description (POST /:groupId, then `group_settings_update`), deletes the group (DELETE /:groupId,
 * then `group_lifecycle_update` `group_delete`), and sends to the group (POST
 * /:phoneNumberId/messages with `recipient_type: group`, no interactive messages; statuses name
 * the group and stop at delivered). Every Graph body is checked against Meta's schema first.
 *
 * The control API plays the users: POST /_sim/groups/:id/join (by the invite link: joined at once,
 * or a join request with approval_required), /leave, /inbound (a participant writes), /settings,
 * /suspend, /delete, /created (the creation's notification again). Each takes `deliveries` (1 to
 * 5): the same notification delivered that many times at once.
 */
import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { postedNode, requireAnyToken, requireToken, type SimContext } from './context.js';
import { paramError, unsupportedRequest } from './errors.js';
import { ControlError } from './inbound.js';
import { wamid as newWamid } from './ids.js';
import { fieldName, mainIssue } from './meta-check.js';
import { metaSchemas } from './meta/validator.js';
import type { PhoneNumber, SimState } from './state.js';
import { isObj, type Obj } from './validate.js';
import { envelopeOf, messagesValueOf } from './webhooks.js';
import { contactEntry, senderFields } from './user-model.js';

export interface SimGroup {
  id: string;
  pnid: string;
  requestId: string;
  subject: string;
  description?: string;
  joinApprovalMode: 'approval_required' | 'auto_approve';
  inviteLink: string | null;
  participants: Set<string>;
  joinRequests: Map<string, { waId: string; createdSec: number }>;
  suspended: boolean;
  deleted: boolean;
  createdSec: number;
  /** The notifications sent about the group, as sent (the last 100; GET /_sim/groups/:id/notifications). */
  notifications: Array<{ field: string; body: unknown }>;
}

const byState = new WeakMap<SimState, Map<string, SimGroup>>();
export function groupsOf(state: SimState): Map<string, SimGroup> {
  let g = byState.get(state);
  if (!g) byState.set(state, (g = new Map()));
  return g;
}

/** A group id shaped like Meta's (base64 of `capi_group:…`). */
const newGroupId = (pnid: string) => Buffer.from(`capi_group:${pnid}:${BigInt('0x' + randomBytes(7).toString('hex'))}`).toString('base64').replace(/=+$/, '');
const newLink = () => `https://chat.whatsapp.com/${randomBytes(11).toString('base64url')}`;

/** Meta's schema of the operation: the body refused with code 100 naming the field. */
function checked(op: string, body: unknown): void {
  const issues = metaSchemas().request(op as never, body, 'application/json');
  if (!issues.length) return;
  const i = mainIssue(issues);
  const field = i.keyword === 'required' ? fieldName(i.instancePath, String(i.params.missingProperty)) : fieldName(i.instancePath);
  throw paramError('Invalid parameter', `Param ${field} ${i.message}.`);
}

/** The group a Graph call names as `:node`, its number's token checked. */
function groupNode(ctx: SimContext, req: Request): SimGroup {
  const node = String(req.params.node);
  const g = groupsOf(ctx.state).get(node);
  if (!g || g.deleted) {
    requireAnyToken(ctx.state, req);
    throw unsupportedRequest(req.method, node);
  }
  requireToken(req, ctx.state.phones.get(g.pnid)!);
  return g;
}

/** One group notification, delivered `deliveries` times at once (Meta delivers at least once). */
async function deliver(ctx: SimContext, g: SimGroup, field: string, entry: Obj, deliveries = 1): Promise<void> {
  const pn = ctx.state.phones.get(g.pnid)!;
  const value = messagesValueOf(pn, { groups: [{ timestamp: ctx.state.nowSec(), group_id: g.id, request_id: g.requestId, ...entry }] });
  const body = JSON.stringify(envelopeOf(pn, field, value));
  logNotification(g, field, body);
  await Promise.all(Array.from({ length: deliveries }, () => ctx.dispatcher.deliverNow({ pnid: pn.phone_number_id, field, kind: `group:${field}`, ref: g.id, body, attempt: 0 })));
}

function logNotification(g: SimGroup, field: string, body: string): void {
  g.notifications.push({ field, body: JSON.parse(body) });
  if (g.notifications.length > 100) g.notifications.shift();
}

const member = (waId: string) => ({ input: waId, wa_id: waId });

/** The group_participants_update notification: who joined (`add`) or left (`remove`). */
function participantsChanged(ctx: SimContext, g: SimGroup, change: 'add' | 'remove', waIds: string[], deliveries = 1): Promise<void> {
  const entry = change === 'add'
    ? { type: 'group_add_participants', added_participants: waIds.map(member) }
    : { type: 'group_remove_participants', removed_participants: waIds.map(member) };
  return deliver(ctx, g, 'group_participants_update', entry, deliveries);
}

// ------------------------------------------------------------------ Graph

/** POST /:phoneNumberId/groups: answered with the request id; `group_create` follows. */
export function createGroup(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const pn = postedNode(ctx.state, req);
    checked('POST /{Version}/{Phone-Number-ID}/groups', req.body);
    const b = req.body as Obj;
    const g: SimGroup = {
      id: newGroupId(pn.phone_number_id), pnid: pn.phone_number_id, requestId: randomBytes(16).toString('hex').toUpperCase(),
      subject: String(b.subject).trim(), ...(typeof b.description === 'string' ? { description: b.description } : {}),
      joinApprovalMode: b.join_approval_mode === 'approval_required' ? 'approval_required' : 'auto_approve',
      inviteLink: null, participants: new Set(), joinRequests: new Map(), suspended: false, deleted: false, createdSec: ctx.state.nowSec(), notifications: [],
    };
    groupsOf(ctx.state).set(g.id, g);
    res.json({ messaging_product: 'whatsapp', request_id: g.requestId });
    // WhatsApp confirms the creation by its notification, after the answer.
    setImmediate(() => void announceCreated(ctx, g).catch(() => undefined));
  };
}

function announceCreated(ctx: SimContext, g: SimGroup, deliveries = 1): Promise<void> {
  return deliver(ctx, g, 'group_lifecycle_update', { type: 'group_create', subject: g.subject, ...(g.description !== undefined ? { description: g.description } : {}) }, deliveries);
}

/** POST /:groupId/invite_link: a new link (the old one stops working). */
export function createInviteLink(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    checked('POST /{Version}/{group_id}/invite_link', req.body);
    g.inviteLink = newLink();
    res.json({ messaging_product: 'whatsapp', invite_link: g.inviteLink });
  };
}

/** DELETE /:groupId/participants: the removed ones leave, with their notification. */
export function removeParticipants(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    checked('DELETE /{Version}/{group_id}/participants', req.body);
    const users = ((req.body as Obj).participants as Obj[]).map((p) => String(p.user).replace(/\D/g, ''));
    const removed = users.filter((u) => g.participants.delete(u));
    res.json({ success: true });
    if (removed.length) setImmediate(() => void participantsChanged(ctx, g, 'remove', removed).catch(() => undefined));
  };
}

/** GET /:groupId/join_requests. */
export function listJoinRequests(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    res.json({ data: [...g.joinRequests].map(([id, r]) => ({ join_request_id: id, wa_id: r.waId, creation_timestamp: r.createdSec })) });
  };
}

/** A failed_join_requests entry, as Graph answers an id that is no open request of the group. */
const notAJoinRequest = (id: string): Obj => ({ join_request_id: id, errors: [{ code: 131009, title: 'Parameter value is not valid', message: 'Parameter value is not valid' }] });

/** POST /:groupId/join_requests: approved users join, with their notification. */
export function approveJoinRequests(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    checked('POST /{Version}/{group_id}/join_requests', req.body);
    const ids = (req.body as Obj).join_requests as string[];
    const approved: string[] = [];
    const failed: Obj[] = [];
    const joined: string[] = [];
    for (const id of ids) {
      const r = g.joinRequests.get(id);
      if (!r) {
        failed.push(notAJoinRequest(id));
        continue;
      }
      g.joinRequests.delete(id);
      approved.push(id);
      if (!g.participants.has(r.waId)) {
        g.participants.add(r.waId);
        joined.push(r.waId);
      }
    }
    res.json({ messaging_product: 'whatsapp', approved_join_requests: approved, failed_join_requests: failed });
    if (joined.length) setImmediate(() => void participantsChanged(ctx, g, 'add', joined).catch(() => undefined));
  };
}

/** DELETE /:groupId/join_requests: the rejected requests are gone (the user may ask again); no notification. */
export function rejectJoinRequests(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    checked('DELETE /{Version}/{group_id}/join_requests', req.body);
    const ids = (req.body as Obj).join_requests as string[];
    const rejected: string[] = [];
    const failed: Obj[] = [];
    for (const id of ids) {
      if (g.joinRequests.delete(id)) rejected.push(id);
      else failed.push(notAJoinRequest(id));
    }
    res.json({ messaging_product: 'whatsapp', rejected_join_requests: rejected, failed_join_requests: failed });
  };
}

/** The group takes a settings change; the `group_settings_update` entry names what changed. */
function newSettings(g: SimGroup, s: { subject?: string; description?: string }): Obj {
  if (s.subject !== undefined) g.subject = s.subject.trim();
  if (s.description !== undefined) g.description = s.description;
  return { type: 'group_settings_update', ...(s.subject !== undefined ? { subject: g.subject } : {}), ...(s.description !== undefined ? { description: g.description } : {}) };
}

/** POST /:groupId: the subject and/or description change (no picture here), then `group_settings_update`. */
export function updateGroupSettings(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    checked('POST /{Version}/{group_id}', req.body);
    const b = req.body as Obj;
    const subject = typeof b.subject === 'string' ? b.subject : undefined;
    const description = typeof b.description === 'string' ? b.description : undefined;
    if (subject === undefined && description === undefined) throw paramError('Invalid parameter', 'Param subject or description is required (the simulator changes no picture).');
    if (subject !== undefined && !subject.trim()) throw paramError('Invalid parameter', 'Param subject must not be blank.');
    const entry = newSettings(g, { subject, description });
    res.json({ success: true });
    setImmediate(() => void deliver(ctx, g, 'group_settings_update', entry).catch(() => undefined));
  };
}

/** The group ends: it takes no call nor send from now on; `group_delete` tells the business. */
function endGroup(ctx: SimContext, g: SimGroup, deliveries = 1): Promise<void> {
  g.deleted = true;
  return deliver(ctx, g, 'group_lifecycle_update', { type: 'group_delete' }, deliveries);
}

/** DELETE /:groupId (no body): the group is deleted, then `group_delete`. */
export function deleteGroupNode(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const g = groupNode(ctx, req);
    g.deleted = true; // at once: a send or a call after the answer is refused
    res.json({ success: true });
    setImmediate(() => void endGroup(ctx, g).catch(() => undefined));
  };
}

/**
 * A send's group (messages.ts): `to` names a group of this number. WhatsApp takes no interactive
 * messages in groups: 131009 before anything is sent.
 */
export function groupSendTarget(state: SimState, pn: PhoneNumber, b: Obj): SimGroup {
  const g = typeof b.to === 'string' ? groupsOf(state).get(b.to) : undefined;
  if (!g || g.pnid !== pn.phone_number_id || g.deleted) throw paramError('Invalid parameter', `Param to must be a group id of this phone number - got "${String(b.to).slice(0, 140)}".`);
  if (g.suspended) throw paramError('Invalid parameter', 'The group is suspended.');
  if (b.type === 'interactive') throw paramError('Invalid parameter', 'Interactive messages are not supported in groups.');
  return g;
}

// ------------------------------------------------------------------ control API

function groupOr404(ctx: SimContext, id: string): SimGroup {
  const g = groupsOf(ctx.state).get(id);
  if (!g) throw new ControlError(404, `unknown group ${id.slice(0, 140)}`);
  return g;
}

function deliveriesOf(b: Obj): number {
  if (b.deliveries === undefined) return 1;
  if (!Number.isInteger(b.deliveries) || (b.deliveries as number) < 1 || (b.deliveries as number) > 5) throw new ControlError(400, 'deliveries: 1 to 5');
  return b.deliveries as number;
}

function phoneOf(b: Obj): string {
  if (typeof b.from !== 'string' || !/^\+?\d{8,15}$/.test(b.from)) throw new ControlError(400, 'from must be a phone number (8 to 15 digits, optional +)');
  return b.from.replace(/\D/g, '');
}

/** POST /_sim/groups/:id/join `{ from, deliveries? }`: a user opens the invite link. */
export async function userJoins(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  if (g.deleted) throw new ControlError(409, 'the group was deleted');
  if (!g.inviteLink) throw new ControlError(409, 'the group has no invite link yet');
  const waId = phoneOf(b);
  if (g.participants.has(waId)) return { group_id: g.id, joined: true };
  if (g.joinApprovalMode === 'approval_required') {
    const existing = [...g.joinRequests].find(([, r]) => r.waId === waId);
    const requestId = existing?.[0] ?? Buffer.from(`${g.id}:${waId}:${randomBytes(4).toString('hex')}`).toString('base64url');
    if (!existing) g.joinRequests.set(requestId, { waId, createdSec: ctx.state.nowSec() });
    return { group_id: g.id, joined: false, join_request_id: requestId };
  }
  g.participants.add(waId);
  await participantsChanged(ctx, g, 'add', [waId], deliveriesOf(b));
  return { group_id: g.id, joined: true };
}

/** POST /_sim/groups/:id/leave `{ from, deliveries? }`. */
export async function userLeaves(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  const waId = phoneOf(b);
  if (!g.participants.delete(waId)) throw new ControlError(409, 'not a participant');
  await participantsChanged(ctx, g, 'remove', [waId], deliveriesOf(b));
  return { group_id: g.id, left: true };
}

/** POST /_sim/groups/:id/inbound `{ from, text, name?, deliveries? }`: a participant writes in the group. */
export async function participantWrites(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  const waId = phoneOf(b);
  if (!g.participants.has(waId)) throw new ControlError(409, 'only a participant writes in the group');
  if (typeof b.text !== 'string' || !b.text) throw new ControlError(400, 'text (string) is required');
  const pn = ctx.state.phones.get(g.pnid)!;
  const user = ctx.state.users.ofPhone(pn.phone_number_id, waId, typeof b.name === 'string' ? b.name : undefined);
  if (typeof b.name === 'string') user.name = b.name;
  const wamid = newWamid(waId, true);
  const message = { ...senderFields(user), id: wamid, timestamp: String(ctx.state.nowSec()), type: 'text', text: { body: b.text }, group_id: g.id };
  const body = JSON.stringify(envelopeOf(pn, 'messages', messagesValueOf(pn, { contacts: [contactEntry(user)], messages: [message] })));
  logNotification(g, 'messages', body);
  const deliveries = deliveriesOf(b);
  await Promise.all(Array.from({ length: deliveries }, () => ctx.dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'messages', kind: 'group:message', ref: wamid, body, attempt: 0 })));
  return { group_id: g.id, wamid };
}

/** POST /_sim/groups/:id/settings `{ subject?, description?, deliveries? }`. */
export async function changeSettings(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  if (b.subject !== undefined && (typeof b.subject !== 'string' || !b.subject.trim() || b.subject.length > 128)) throw new ControlError(400, 'subject: 1 to 128 characters');
  if (b.description !== undefined && (typeof b.description !== 'string' || b.description.length > 2048)) throw new ControlError(400, 'description: at most 2048 characters');
  const entry = newSettings(g, { subject: b.subject as string | undefined, description: b.description as string | undefined });
  await deliver(ctx, g, 'group_settings_update', entry, deliveriesOf(b));
  return { group_id: g.id, subject: g.subject };
}

/** POST /_sim/groups/:id/suspend `{ suspended: boolean, deliveries? }`: WhatsApp suspends the group or lifts it. */
export async function suspendGroup(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  if (typeof b.suspended !== 'boolean') throw new ControlError(400, 'suspended (boolean) is required');
  g.suspended = b.suspended;
  await deliver(ctx, g, 'group_status_update', { type: b.suspended ? 'group_suspend' : 'group_suspend_cleared' }, deliveriesOf(b));
  return { group_id: g.id, suspended: g.suspended };
}

/** POST /_sim/groups/:id/delete `{ deliveries? }`: the group is deleted. */
export async function deleteGroup(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  await endGroup(ctx, g, deliveriesOf(b));
  return { group_id: g.id, deleted: true };
}

/** POST /_sim/groups/:id/created `{ deliveries? }`: the creation's notification again (Meta delivers at least once). */
export async function createdAgain(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const g = groupOr404(ctx, id);
  await announceCreated(ctx, g, deliveriesOf(b));
  return { group_id: g.id };
}

/** GET /_sim/groups: the groups, newest last (for tests and the README). */
export function listSimGroups(ctx: SimContext): Obj {
  return {
    data: [...groupsOf(ctx.state).values()].map((g) => ({
      id: g.id, phone_number_id: g.pnid, request_id: g.requestId, subject: g.subject, description: g.description ?? null, invite_link: g.inviteLink,
      participants: [...g.participants], join_requests: [...g.joinRequests.keys()], suspended: g.suspended, deleted: g.deleted,
    })),
  };
}

/** GET /_sim/groups/:id/notifications: what was sent about the group, as sent. */
export function groupNotifications(ctx: SimContext, id: string): Obj {
  return { data: groupOr404(ctx, id).notifications };
}
