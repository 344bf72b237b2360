/**
 * Meta's webhook notifications (POST to our channel webhook), read into what they say: per change,
 * the inbound messages (with what the payload says about the sender), the statuses of sent
 * messages, the users' marketing preferences, or a template's status update. Malformed parts are
 * skipped here; what they mean to storage is lib/messaging/inbound.ts.
 *
 * Identity (since April 2026, Meta's "Business-scoped user IDs"): `contacts[]` carries `user_id`
 * (the BSUID), `parent_user_id` when linked portfolios are on, `profile.username` for a user with
 * a username, and `wa_id` (the phone) only under Meta's phone-number rules; messages carry
 * `from_user_id` (and `from` only with a phone); statuses `recipient_user_id` (and `recipient_id`).
 */
import { parseMessagingLimit, type MessagingLimit } from './phone-numbers.js';

export interface MetaMessage {
  id: string;
  /** The sender's phone (digits); absent for a user whose number Meta withholds. */
  from?: string;
  from_user_id?: string;
  from_parent_user_id?: string;
  timestamp?: string;
  type: string;
  [k: string]: unknown;
}

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
}

export interface TemplateUpdate {
  event?: string;
  message_template_id?: string | number;
  message_template_name?: string;
  message_template_language?: string;
  reason?: string;
}

/** What a payload says about a customer: each field only when given (phone digits only). */
export interface Customer {
  phone?: string;
  userId?: string;
  parentUserId?: string;
  username?: string;
  profileName?: string;
}

export interface UserPreference {
  customer: Customer;
  category: string;
  /** `stop` or `resume`. */
  value: string;
  timestamp?: number;
}

export type NotificationChange =
  | { kind: 'messages'; messages: Array<{ message: MetaMessage; customer: Customer; profileName?: string }>; statuses: Array<MetaStatus & { customer?: Customer }> }
  | { kind: 'template_status'; update: TemplateUpdate }
  | { kind: 'user_preferences'; preferences: UserPreference[] }
  /** The portfolio's messaging limit changed (business_capability_update, phone_number_quality_update). */
  | { kind: 'messaging_limit'; limit: MessagingLimit }
  /**
   * The number's throughput level may have changed: a `phone_number_quality_update` (Meta announces
   * an upgrade with `event: THROUGHPUT_UPGRADE`) or an `account_update` (coexistence on or off).
   * The level itself is read from the channel (`GET /{phone-number-id}?fields=throughput`).
   */
  | { kind: 'throughput'; field: string; event: string | null };

/** Webhooks give the limit as a number; we keep the tier by the name the phone number's field uses. */
const TIER_NAMES: Record<string, string> = { '250': 'TIER_250', '2000': 'TIER_2K', '10000': 'TIER_10K', '100000': 'TIER_100K', null: 'TIER_UNLIMITED' };

const str = (v: unknown, max = 256): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : typeof v === 'number' ? String(v) : undefined);
const digits = (v: unknown): string | undefined => {
  const d = str(v)?.replace(/\D/g, '');
  return d ? d : undefined;
};

function contactEntry(c: any): Customer {
  return {
    phone: digits(c?.wa_id),
    userId: str(c?.user_id),
    parentUserId: str(c?.parent_user_id),
    username: str(c?.profile?.username, 200),
    profileName: str(c?.profile?.name, 1000)?.slice(0, 200),
  };
}

/** The contacts entry for a message or status: by BSUID, else by phone, else the only one. */
function findEntry(entries: Customer[], userId: string | undefined, phone: string | undefined): Customer | undefined {
  return (userId ? entries.find((e) => e.userId === userId) : undefined)
    ?? (phone ? entries.find((e) => e.phone === phone) : undefined)
    ?? (entries.length === 1 && !userId && !phone ? entries[0] : undefined);
}

function merged(entry: Customer | undefined, own: Customer): Customer {
  const out: Customer = { ...(entry ?? {}) };
  for (const [k, v] of Object.entries(own) as Array<[keyof Customer, string | undefined]>) if (v !== undefined) out[k] = v;
  return out;
}

/** The changes of one notification addressed to `phoneNumberId` (another number of the same business account is not ours). */
export function notificationChanges(payload: any, phoneNumberId: string): NotificationChange[] {
  const out: NotificationChange[] = [];
  for (const entry of Array.isArray(payload?.entry) ? payload.entry : []) {
    for (const change of Array.isArray(entry?.changes) ? entry.changes : []) {
      const value = change?.value ?? {};
      const ours = !(value.metadata?.phone_number_id && String(value.metadata.phone_number_id) !== phoneNumberId);
      const entries = (Array.isArray(value.contacts) ? value.contacts : []).map(contactEntry);
      if (change?.field === 'messages') {
        if (!ours) continue;
        const messages = (Array.isArray(value.messages) ? value.messages : [])
          .filter((m: unknown) => typeof m === 'object' && m !== null)
          .map((m: MetaMessage) => {
            const own: Customer = { phone: digits(m.from), userId: str(m.from_user_id), parentUserId: str(m.from_parent_user_id) };
            const customer = merged(findEntry(entries, own.userId, own.phone), own);
            return { message: m, customer, profileName: customer.profileName };
          });
        const statuses = (Array.isArray(value.statuses) ? value.statuses : []).map((s: MetaStatus) => {
          if (typeof s !== 'object' || s === null) return s;
          const own: Customer = { phone: digits(s.recipient_id), userId: str(s.recipient_user_id), parentUserId: str(s.recipient_parent_user_id) };
          return { ...s, customer: merged(findEntry(entries, own.userId, own.phone), own) };
        });
        out.push({ kind: 'messages', messages, statuses });
      } else if (change?.field === 'user_preferences') {
        if (!ours) continue;
        const preferences = (Array.isArray(value.user_preferences) ? value.user_preferences : [])
          .filter((p: unknown) => typeof p === 'object' && p !== null)
          .map((p: any): UserPreference => {
            const own: Customer = { phone: digits(p.wa_id), userId: str(p.user_id), parentUserId: str(p.parent_user_id) };
            return { customer: merged(findEntry(entries, own.userId, own.phone), own), category: String(p.category ?? ''), value: String(p.value ?? ''), timestamp: Number(p.timestamp) || undefined };
          });
        out.push({ kind: 'user_preferences', preferences });
      } else if (change?.field === 'message_template_status_update') {
        out.push({ kind: 'template_status', update: value });
      } else if (change?.field === 'business_capability_update' || change?.field === 'phone_number_quality_update') {
        // The limit is the portfolio's, shared by all its numbers: whichever number the change names.
        const limit = parseMessagingLimit(value.max_daily_conversations_per_business);
        if (limit) out.push({ kind: 'messaging_limit', limit: { ...limit, tier: TIER_NAMES[String(limit.limit)] ?? limit.tier } });
        if (change.field === 'phone_number_quality_update') out.push({ kind: 'throughput', field: change.field, event: str(value.event, 64) ?? null });
      } else if (change?.field === 'account_update') {
        out.push({ kind: 'throughput', field: change.field, event: str(value.event, 64) ?? null });
      }
    }
  }
  return out;
}
