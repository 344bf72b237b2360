/**
 * Meta's webhook notifications (POST to our channel webhook), read into the port's events
 * (lib/channel-port/events.ts): the inbound messages (with what the payload says about the sender),
 * the statuses of sent messages, the users' marketing preferences, a template's status update, the
 * messaging limit and throughput announcements. Malformed parts are skipped here; what the events
 * mean to storage is lib/messaging/inbound.ts.
 *
 * Identity (since April 2026, Meta's "Business-scoped user IDs"): `contacts[]` carries `user_id`
 * (the BSUID), `parent_user_id` when linked portfolios are on, `profile.username` for a user with
 * a username, and `wa_id` (the phone) only under Meta's phone-number rules; messages carry
 * `from_user_id` (and `from` only with a phone); statuses `recipient_user_id` (and `recipient_id`).
 */
import type { CallEvent, CallPermissionEvent, ChannelEvent, Customer, MessageEvent, StatusEvent, UserPreferenceEvent } from '../lib/channel-port/events.js';
import { coexistenceEvents, COEXISTENCE_FIELDS } from './coexistence-notifications.js';
import { groupEvents, GROUP_FIELDS } from './group-notifications.js';
import { parseMessagingLimit } from './phone-numbers.js';
import { contactEntry, digits, findEntry, merged, str, when, messageEvent } from './notification-parts.js';
export type { MetaMessage } from './notification-parts.js';

/** A status object of a notification, as Meta sends it. */
export interface MetaStatus {
  id: string;
  status: string;
  timestamp?: string;
  recipient_id?: string;
  recipient_user_id?: string;
  recipient_parent_user_id?: string;
  errors?: unknown[];
  /** Echo of what the send carried: our reference of the send (lib/messaging/send-message.ts). */
  biz_opaque_callback_data?: string;
  pricing?: unknown;
  /** A message sent to a group: the group's id (docs/groups.md). */
  group_id?: string;
}

/** Meta's error for a user who stopped marketing messages. */
const STOPPED_MARKETING = 131050;

/** Webhooks give the limit as a number; we keep the tier by the name the phone number's field uses. */
const TIER_NAMES: Record<string, string> = { '250': 'TIER_250', '2000': 'TIER_2K', '10000': 'TIER_10K', '100000': 'TIER_100K', null: 'TIER_UNLIMITED' };


function statusEvent(s: MetaStatus, entries: Customer[]): StatusEvent {
  // A malformed status is kept (acknowledged, counted) with nothing the domain could apply.
  if (typeof s !== 'object' || s === null) return { kind: 'status', channelMessageId: '', status: '' };
  const out: StatusEvent = {
    kind: 'status',
    channelMessageId: typeof s.id === 'string' ? s.id : '',
    status: typeof s.status === 'string' ? s.status : '',
  };
  const timestamp = when(s.timestamp);
  if (timestamp !== undefined) out.timestamp = timestamp;
  if (typeof s.group_id === 'string' && s.group_id) {
    // A message sent to a group: its recipient is the group, not a customer (docs/groups.md).
    out.groupId = s.group_id;
  } else if (typeof s.id === 'string') {
    const own: Customer = { phone: digits(s.recipient_id), userId: str(s.recipient_user_id), parentUserId: str(s.recipient_parent_user_id) };
    out.customer = merged(findEntry(entries, own.userId, own.phone), own);
  }
  if (Array.isArray(s.errors)) {
    out.errors = s.errors;
    if (s.errors.some((e) => Number((e as { code?: unknown })?.code) === STOPPED_MARKETING)) out.recipientOptedOut = true;
  }
  if (typeof s.biz_opaque_callback_data === 'string') out.reference = s.biz_opaque_callback_data;
  if (s.pricing !== undefined) out.pricing = s.pricing;
  return out;
}

/** The events of one notification addressed to `phoneNumberId` (another number of the same business account is not ours). */
export function notificationEvents(payload: any, phoneNumberId: string): ChannelEvent[] {
  const out: ChannelEvent[] = [];
  for (const entry of Array.isArray(payload?.entry) ? payload.entry : []) {
    for (const change of Array.isArray(entry?.changes) ? entry.changes : []) {
      const value = change?.value ?? {};
      const ours = !(value.metadata?.phone_number_id && String(value.metadata.phone_number_id) !== phoneNumberId);
      const entries = (Array.isArray(value.contacts) ? value.contacts : []).map(contactEntry);
      if (change?.field === 'messages') {
        if (!ours) continue;
        for (const m of Array.isArray(value.messages) ? value.messages : []) {
          const event = typeof m === 'object' && m !== null ? messageEvent(m, entries) : undefined;
          if (event) out.push(event);
          const permission = event ? callPermissionEvent(event) : undefined;
          if (permission) out.push(permission);
        }
        for (const s of Array.isArray(value.statuses) ? value.statuses : []) out.push(statusEvent(s, entries));
      } else if (GROUP_FIELDS.has(change?.field)) {
        // A group's creation, deletion, participants, settings or suspension (group-notifications.ts).
        if (!ours) continue;
        out.push(...groupEvents(change.field, value));
      } else if (COEXISTENCE_FIELDS.has(change?.field)) {
        // The Business app beside the API, and thread control (coexistence-notifications.ts).
        if (!ours) continue;
        out.push(...coexistenceEvents(change.field, value, entries));
      } else if (change?.field === 'user_preferences') {
        if (!ours) continue;
        for (const p of Array.isArray(value.user_preferences) ? value.user_preferences : []) {
          if (typeof p !== 'object' || p === null) continue;
          const own: Customer = { phone: digits(p.wa_id), userId: str(p.user_id), parentUserId: str(p.parent_user_id) };
          const event: UserPreferenceEvent = {
            kind: 'user_preference', customer: merged(findEntry(entries, own.userId, own.phone), own), category: String(p.category ?? ''), value: String(p.value ?? ''), timestamp: Number(p.timestamp) || undefined,
          };
          out.push(event);
        }
      } else if (change?.field === 'calls') {
        if (!ours) continue;
        for (const c of Array.isArray(value.calls) ? value.calls : []) {
          const event = typeof c === 'object' && c !== null ? callEvent(c, entries) : undefined;
          if (event) out.push(event);
        }
        // A business-initiated call's progress comes as statuses of type `call` (RINGING, ACCEPTED, REJECTED).
        for (const st of Array.isArray(value.statuses) ? value.statuses : []) {
          const event = typeof st === 'object' && st !== null ? callStatusEvent(st, entries) : undefined;
          if (event) out.push(event);
        }
      } else if (change?.field === 'message_template_status_update') {
        out.push({
          kind: 'template_status',
          templateId: value.message_template_id !== undefined ? String(value.message_template_id) : undefined,
          name: String(value.message_template_name),
          language: String(value.message_template_language),
          status: String(value.event ?? '').toUpperCase(),
          reason: typeof value.reason === 'string' ? value.reason : undefined,
        });
      } else if (change?.field === 'business_capability_update' || change?.field === 'phone_number_quality_update') {
        // The limit is the portfolio's, shared by all its numbers: whichever number the change names.
        const limit = parseMessagingLimit(value.max_daily_conversations_per_business);
        if (limit) out.push({ kind: 'messaging_limit', limit: { ...limit, tier: TIER_NAMES[String(limit.limit)] ?? limit.tier } });
        // Meta announces an upgrade with `event: THROUGHPUT_UPGRADE`; the level is read from the number.
        if (change.field === 'phone_number_quality_update') out.push({ kind: 'throughput', why: throughputWhy(change.field, value.event) });
      } else if (change?.field === 'account_update') {
        // Coexistence on or off changes the number's throughput.
        out.push({ kind: 'throughput', why: throughputWhy(change.field, value.event) });
      }
    }
  }
  return out;
}

function throughputWhy(field: string, event: unknown): string {
  const e = str(event, 64);
  return e ? `${field} ${e}` : field;
}

/** A `calls` entry: `connect` (a customer calls, with the SDP offer) or `terminate` (COMPLETED or FAILED, with its duration). */
function callEvent(c: any, entries: Customer[]): CallEvent | undefined {
  const callId = str(c.id);
  if (!callId || (c.event !== 'connect' && c.event !== 'terminate')) return undefined;
  const business = String(c.direction ?? '').toUpperCase() === 'BUSINESS_INITIATED';
  // The customer is the caller of a user-initiated call and the callee of a business-initiated one.
  const own: Customer = { phone: digits(business ? c.to : c.from), userId: str(business ? c.to_user_id : c.from_user_id) };
  const out: CallEvent = {
    kind: 'call', callId, event: c.event, direction: business ? 'business_initiated' : 'user_initiated',
    customer: merged(findEntry(entries, own.userId, own.phone), own), timestamp: when(c.timestamp),
  };
  if (typeof c.session?.sdp === 'string') out.sdp = { type: String(c.session.sdp_type ?? 'offer'), sdp: c.session.sdp };
  if (typeof c.status === 'string') out.status = c.status.toUpperCase();
  if (c.start_time !== undefined) out.startTime = when(c.start_time);
  if (c.end_time !== undefined) out.endTime = when(c.end_time);
  const duration = Number(c.duration);
  if (c.duration !== undefined && Number.isFinite(duration) && duration >= 0) out.durationSeconds = Math.floor(duration);
  if (typeof c.biz_opaque_callback_data === 'string') out.reference = c.biz_opaque_callback_data;
  return out;
}

function callStatusEvent(s: any, entries: Customer[]): CallEvent | undefined {
  const callId = str(s.id);
  if (!callId || s.type !== 'call' || typeof s.status !== 'string') return undefined;
  const own: Customer = { phone: digits(s.recipient_id), userId: str(s.recipient_user_id) };
  const out: CallEvent = {
    kind: 'call', callId, event: 'status', direction: 'business_initiated', status: s.status.toUpperCase(),
    customer: merged(findEntry(entries, own.userId, own.phone), own), timestamp: when(s.timestamp),
  };
  if (typeof s.biz_opaque_callback_data === 'string') out.reference = s.biz_opaque_callback_data;
  return out;
}

/** The customer's answer to a call permission request: an interactive `call_permission_reply` message. */
function callPermissionEvent(m: MessageEvent): CallPermissionEvent | undefined {
  const i = m.content.interactive as { type?: unknown; call_permission_reply?: any } | undefined;
  const reply = i?.type === 'call_permission_reply' ? i.call_permission_reply : undefined;
  if (!reply || (reply.response !== 'accept' && reply.response !== 'reject')) return undefined;
  const expiresAt = Number(reply.expiration_timestamp);
  return {
    kind: 'call_permission', customer: m.customer, status: reply.response === 'accept' ? 'granted' : 'denied',
    permanent: reply.is_permanent === true, expiresAt: Number.isFinite(expiresAt) && expiresAt > 0 ? expiresAt : undefined,
  };
}
