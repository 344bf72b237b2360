/** The control API of simulated WhatsApp users (simulator/user-model.ts): create, update, preferences, BSUID change. */
import type { SimContext } from './context.js';
import { ControlError } from './inbound.js';
import { wamid as newWamid } from './ids.js';
import type { PhoneNumber } from './state.js';
import type { Obj } from './validate.js';
import { envelopeOf, messagesValueOf } from './webhooks.js';
import { BSUID, contactEntry, digits, newBsuid, senderFields, shownPhone, type SimUser } from './user-model.js';

// ------------------------------------------------------------------ control API

function pnOf(ctx: SimContext, v: unknown): PhoneNumber {
  if (typeof v !== 'string') throw new ControlError(400, 'phone_number_id (string) is required');
  const pn = ctx.state.phones.get(v);
  if (!pn) throw new ControlError(404, `unknown phone_number_id ${v}`);
  return pn;
}

export function userView(u: SimUser): Obj {
  return {
    phone_number_id: u.pnid, user_id: u.user_id, parent_user_id: u.parent_user_id, phone: u.phone, phone_shared: u.phone_shared,
    username: u.username, name: u.name, marketing_stopped: u.marketing_stopped,
  };
}

/**
 * POST /_sim/users: `{ phone_number_id, phone?, username?, name?, share_phone?, user_id?, parent_user_id? }`.
 * A username user without `share_phone: true` is one whose phone webhooks withhold.
 */
export function createUser(ctx: SimContext, b: Obj): Obj {
  const pn = pnOf(ctx, b.phone_number_id);
  const phone = b.phone === undefined || b.phone === null ? null : String(b.phone).replace(/\D/g, '');
  if (phone !== null && !/^[1-9]\d{7,14}$/.test(phone)) throw new ControlError(400, 'phone must be a phone number in international form');
  if (b.username !== undefined && (typeof b.username !== 'string' || !/^[A-Za-z0-9._]{3,35}$/.test(b.username))) throw new ControlError(400, 'username: 3 to 35 letters, digits, dots or underscores');
  if (b.user_id !== undefined && (typeof b.user_id !== 'string' || !BSUID.test(b.user_id))) throw new ControlError(400, 'user_id must be a BSUID (e.g. US.13491208655302741918)');
  if (phone === null && b.username === undefined) throw new ControlError(400, 'give phone, username or both');
  if (phone && ctx.state.users.getByPhone(pn.phone_number_id, phone)) throw new ControlError(409, 'a user with this phone exists');
  const userId = (b.user_id as string | undefined) ?? newBsuid();
  if (ctx.state.users.get(pn.phone_number_id, userId)) throw new ControlError(409, 'a user with this user_id exists');
  const u = ctx.state.users.add({
    pnid: pn.phone_number_id,
    user_id: userId,
    parent_user_id: typeof b.parent_user_id === 'string' ? b.parent_user_id : ctx.state.users.parents ? `US.ENT.${digits(20)}` : null,
    phone,
    phone_shared: b.username === undefined ? true : b.share_phone === true,
    username: typeof b.username === 'string' ? b.username : null,
    name: typeof b.name === 'string' ? b.name : typeof b.username === 'string' ? b.username : `User ${phone?.slice(-4)}`,
    marketing_stopped: false,
  });
  return userView(u);
}

export function userOr404(ctx: SimContext, pnid: unknown, userId: string): SimUser {
  const pn = pnOf(ctx, pnid);
  const u = ctx.state.users.get(pn.phone_number_id, userId);
  if (!u) throw new ControlError(404, `unknown user ${userId}`);
  return u;
}

/** PATCH /_sim/users/{user_id}: `{ phone_number_id, share_phone?, phone?, username? }` (e.g. the user shares the number). */
export function updateUser(ctx: SimContext, userId: string, b: Obj): Obj {
  const u = userOr404(ctx, b.phone_number_id, userId);
  if (b.phone !== undefined) {
    const phone = String(b.phone).replace(/\D/g, '');
    if (!/^[1-9]\d{7,14}$/.test(phone)) throw new ControlError(400, 'phone must be a phone number in international form');
    u.phone = phone;
    ctx.state.users.add(u);
  }
  if (b.share_phone !== undefined) u.phone_shared = b.share_phone === true;
  if (b.username !== undefined) u.username = typeof b.username === 'string' ? b.username : null;
  return userView(u);
}

/** POST /_sim/users/{user_id}/preferences `{ phone_number_id, value: stop|resume }`: the user_preferences webhook. */
export async function userPreference(ctx: SimContext, userId: string, b: Obj): Promise<Obj> {
  const u = userOr404(ctx, b.phone_number_id, userId);
  if (b.value !== 'stop' && b.value !== 'resume') throw new ControlError(400, 'value must be stop or resume');
  u.marketing_stopped = b.value === 'stop';
  const pn = ctx.state.phones.get(u.pnid)!;
  const phone = shownPhone(u);
  const value = messagesValueOf(pn, {
    contacts: [contactEntry(u)],
    user_preferences: [{
      ...(phone ? { wa_id: phone } : {}),
      user_id: u.user_id,
      ...(u.parent_user_id ? { parent_user_id: u.parent_user_id } : {}),
      detail: b.value === 'stop' ? 'User requested to stop marketing messages' : 'User requested to resume marketing messages',
      category: 'marketing_messages',
      value: b.value,
      timestamp: ctx.state.nowSec(),
    }],
  });
  const r = await ctx.dispatcher.deliverNow({ pnid: u.pnid, field: 'user_preferences', kind: `user_preferences:${b.value}`, ref: u.user_id, body: JSON.stringify(envelopeOf(pn, 'user_preferences', value)), attempt: 0 });
  return { ...userView(u), ...r };
}

/**
 * POST /_sim/users/{user_id}/change-id `{ phone_number_id, new_user_id? }`: the user's BSUID
 * changes (e.g. a new phone number); a system message from the old id announces the new one
 * (`system.type: user_changed_user_id`, modelled on Meta's `user_changed_number`).
 */
export async function changeUserId(ctx: SimContext, userId: string, b: Obj): Promise<Obj> {
  const u = userOr404(ctx, b.phone_number_id, userId);
  const next = typeof b.new_user_id === 'string' ? b.new_user_id : newBsuid();
  if (!BSUID.test(next)) throw new ControlError(400, 'new_user_id must be a BSUID');
  const pn = ctx.state.phones.get(u.pnid)!;
  const old = u.user_id;
  const id = newWamid(u.phone ?? old.replace(/\D/g, '').slice(0, 15), true);
  const message: Obj = {
    ...senderFields(u),
    id,
    timestamp: String(ctx.state.nowSec()),
    type: 'system',
    system: { body: `User ${u.username ?? u.name} changed to a new user id`, type: 'user_changed_user_id', user_id: next },
  };
  ctx.state.users.rekey(u, next);
  const body = JSON.stringify(envelopeOf(pn, 'messages', messagesValueOf(pn, { contacts: [{ ...contactEntry(u), user_id: old }], messages: [message] })));
  const r = await ctx.dispatcher.deliverNow({ pnid: u.pnid, field: 'messages', kind: 'system:user_changed_user_id', ref: id, body, attempt: 0 });
  return { ...userView(u), previous_user_id: old, wamid: id, ...r };
}

/**
 * POST /_sim/users/{user_id}/share-contact-info `{ phone_number_id, context? }`: the user answers a
 * template's REQUEST_CONTACT_INFO button by sharing their number. From then on webhooks carry the
 * phone (`wa_id`, `from`) beside the BSUID; the answer itself is a `contacts` message with the
 * user's own card (their phone and `wa_id`), replying to the template (`context.id`, the template
 * message's wamid). Meta documents the button, not this payload: the shape is the simulator's
 * reading (a contact card is how WhatsApp shares a number).
 */
export async function shareContactInfo(ctx: SimContext, userId: string, b: Obj): Promise<Obj> {
  const u = userOr404(ctx, b.phone_number_id, userId);
  if (!u.phone) throw new ControlError(400, 'this user has no phone to share (give one with PATCH /_sim/users/{user_id})');
  if (b.context !== undefined && (typeof b.context !== 'string' || !b.context)) throw new ControlError(400, 'context must be the wamid of the template message');
  u.phone_shared = true;
  const pn = ctx.state.phones.get(u.pnid)!;
  const id = newWamid(u.phone, true);
  const message: Obj = {
    ...senderFields(u),
    id,
    timestamp: String(ctx.state.nowSec()),
    type: 'contacts',
    contacts: [{ name: { formatted_name: u.name, first_name: u.name }, phones: [{ phone: `+${u.phone}`, wa_id: u.phone, type: 'MOBILE' }] }],
    ...(typeof b.context === 'string' ? { context: { from: pn.display_phone_number, id: b.context } } : {}),
  };
  const body = JSON.stringify(envelopeOf(pn, 'messages', messagesValueOf(pn, { contacts: [contactEntry(u)], messages: [message] })));
  const r = await ctx.dispatcher.deliverNow({ pnid: u.pnid, field: 'messages', kind: 'contacts:share_contact_info', ref: id, body, attempt: 0 });
  return { ...userView(u), wamid: id, ...r };
}
