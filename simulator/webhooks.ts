/** Builders for Meta's webhook envelopes (`object: whatsapp_business_account`, `entry[].changes[]`). */
import { conversationId } from './ids.js';
import type { MessageMeta, PhoneNumber, SimState, Template } from './state.js';
import { pricingObject } from './pricing.js';
import { contactEntry, shownPhone } from './user-model.js';

export interface StatusError {
  code: number;
  title?: string;
  message?: string;
  error_data?: { details?: string };
  href?: string;
}

export function envelopeOf(pn: PhoneNumber, field: string, value: Record<string, unknown>, time?: number): Record<string, unknown> {
  return envelope(pn, field, value, time);
}

export function messagesValueOf(pn: PhoneNumber, rest: Record<string, unknown>): Record<string, unknown> {
  return messagesValue(pn, rest);
}

function envelope(pn: PhoneNumber, field: string, value: Record<string, unknown>, time?: number): Record<string, unknown> {
  const entry: Record<string, unknown> = { id: pn.waba_id, changes: [{ value, field }] };
  if (time !== undefined) entry.time = time;
  return { object: 'whatsapp_business_account', entry: [entry] };
}

function messagesValue(pn: PhoneNumber, rest: Record<string, unknown>): Record<string, unknown> {
  return {
    messaging_product: 'whatsapp',
    metadata: { display_phone_number: pn.display_phone_number, phone_number_id: pn.phone_number_id },
    ...rest,
  };
}

/**
 * Conversation and pricing objects as Meta sends them with `sent` (conversation with its expiration)
 * and `delivered` (conversation without it); `read` carries neither. Per-message pricing (PMP):
 * the category and type decided at the send (pricing.ts).
 */
function conversationAndPricing(state: SimState, meta: MessageMeta, withExpiry: boolean): Record<string, unknown> {
  const now = state.nowSec();
  const key = `${meta.pnid}:${meta.to}:${meta.category}`;
  let conv = state.conversations.get(key);
  if (!meta.convId) {
    if (!conv || conv.expiresSec <= now) {
      conv = { id: conversationId(), expiresSec: now + 24 * 3600 };
      state.conversations.set(key, conv);
    }
    meta.convId = conv.id;
  }
  const expiresSec = conv && conv.id === meta.convId ? conv.expiresSec : now + 24 * 3600;
  return {
    conversation: {
      id: meta.convId,
      ...(withExpiry ? { expiration_timestamp: String(expiresSec) } : {}),
      origin: { type: meta.category },
    },
    pricing: pricingObject(meta),
  };
}

/** One notification carrying several statuses of one number, as Meta sends them under load. */
export function statusesWebhook(pn: PhoneNumber, statuses: Record<string, unknown>[], state?: SimState): Record<string, unknown> {
  // Delivered and read statuses name the user's username in `contacts` (Meta, since 2026).
  const contacts: Record<string, unknown>[] = [];
  if (state) {
    const seen = new Set<string>();
    for (const s of statuses) {
      const uid = s.recipient_user_id;
      if (typeof uid !== 'string' || seen.has(uid) || (s.status !== 'delivered' && s.status !== 'read')) continue;
      const u = state.users.get(pn.phone_number_id, uid);
      if (u?.username) {
        seen.add(uid);
        contacts.push(contactEntry(u));
      }
    }
  }
  return envelope(pn, 'messages', messagesValue(pn, { ...(contacts.length ? { contacts } : {}), statuses }));
}

/**
 * One notification for several numbers of one app, as Meta batches them: an entry per WhatsApp
 * Business Account, a change per number (its own metadata), several statuses in each change.
 */
export function statusesNotification(groups: Array<{ pn: PhoneNumber; statuses: Record<string, unknown>[] }>, state?: SimState): Record<string, unknown> {
  if (groups.length === 1) return statusesWebhook(groups[0].pn, groups[0].statuses, state);
  const entries = new Map<string, { id: string; changes: unknown[] }>();
  for (const g of groups) {
    const one = statusesWebhook(g.pn, g.statuses, state) as { entry: Array<{ changes: unknown[] }> };
    let entry = entries.get(g.pn.waba_id);
    if (!entry) entries.set(g.pn.waba_id, (entry = { id: g.pn.waba_id, changes: [] }));
    entry.changes.push(...one.entry[0].changes);
  }
  return { object: 'whatsapp_business_account', entry: [...entries.values()] };
}

export function statusObject(
  state: SimState,
  wamid: string,
  meta: MessageMeta,
  status: 'sent' | 'delivered' | 'read' | 'failed',
  errors?: StatusError[],
): Record<string, unknown> {
  const s: Record<string, unknown> = { id: wamid, status, timestamp: String(state.nowSec()) };
  if (meta.groupId) {
    // A message sent to a group: its statuses name the group (Meta's StatusObject `group_id`).
    s.group_id = meta.groupId;
    if (meta.opaque !== undefined) s.biz_opaque_callback_data = meta.opaque;
    if (status === 'sent' || status === 'delivered') Object.assign(s, conversationAndPricing(state, meta, status === 'sent'));
    if (status === 'failed') s.errors = (errors && errors.length ? errors : [{ code: 131026, title: 'Message undeliverable' }]).map((e) => ({ code: e.code, title: e.title ?? e.message ?? 'Error', message: e.message ?? e.title ?? 'Error' }));
    return s;
  }
  // Since April 2026 statuses carry the BSUID (recipient_user_id, and the parent's); the phone
  // (recipient_id) only when known. A failed status to a phone omits recipient_user_id (Meta).
  const user = meta.userId ? state.users.get(meta.pnid, meta.userId) : meta.to ? state.users.getByPhone(meta.pnid, meta.to) : undefined;
  const phone = meta.to || (user ? shownPhone(user) : undefined);
  if (phone) s.recipient_id = phone;
  if (user && !(status === 'failed' && meta.to)) {
    s.recipient_user_id = user.user_id;
    if (user.parent_user_id) s.recipient_parent_user_id = user.parent_user_id;
  }
  if (meta.opaque !== undefined) s.biz_opaque_callback_data = meta.opaque;
  if (status === 'sent' || status === 'delivered') Object.assign(s, conversationAndPricing(state, meta, status === 'sent'));
  if (status === 'failed') {
    s.errors = (errors && errors.length ? errors : [{ code: 131026, title: 'Message undeliverable' }]).map((e) => {
      const title = e.title ?? e.message ?? 'Error';
      return {
        code: e.code,
        title,
        message: e.message ?? title,
        error_data: { details: e.error_data?.details ?? title },
        href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
      };
    });
  }
  return s;
}

export function inboundWebhook(
  pn: PhoneNumber,
  contact: Record<string, unknown>,
  message: Record<string, unknown>,
  field: 'messages' | 'standby' = 'messages',
): Record<string, unknown> {
  return envelope(pn, field, messagesValue(pn, { contacts: [contact], messages: [message] }));
}

export function templateWebhook(state: SimState, pn: PhoneNumber, t: Template, event: string, reason: string): Record<string, unknown> {
  return envelope(
    pn,
    'message_template_status_update',
    {
      event,
      message_template_id: Number(t.id),
      message_template_name: t.name,
      message_template_language: t.language,
      reason,
      message_template_category: t.category,
    },
    state.nowSec(),
  );
}
