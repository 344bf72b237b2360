/**
 * Per-message pricing in status notifications and the portfolio messaging limit, as Meta documents
 * them (see README, "Pricing and messaging limits").
 *
 * Pricing (since 1 July 2025, `pricing_model: "PMP"`): a template is charged (`regular`) by its
 * category (marketing, utility, authentication), except a utility template sent while the
 * customer's 24-hour service window is open (`free_customer_service`); a free-form reply inside the
 * window is category `service`, type `free_customer_service`. Within a free entry point (72 hours
 * after the customer came from a click-to-WhatsApp ad or a Page call-to-action; set here by the
 * control API) every message is `free_entry_point`. `billable` is deprecated at Meta but still sent
 * by some versions: kept, true for `regular` only.
 *
 * The messaging limit: `whatsapp_business_manager_messaging_limit` on the phone number node, one of
 * TIER_250, TIER_2K, TIER_10K, TIER_100K, TIER_UNLIMITED (default unlimited here, so the
 * simulator limits nobody unless asked).
 */
import type { MessageMeta, PhoneNumber, SimState } from './state.js';

export const WINDOW_MS = 24 * 3600 * 1000;
export const ENTRY_POINT_MS = 72 * 3600 * 1000;

export const MESSAGING_LIMITS: Record<string, number | null> = {
  TIER_250: 250, TIER_2K: 2000, TIER_10K: 10_000, TIER_100K: 100_000, TIER_UNLIMITED: null,
};
export const DEFAULT_MESSAGING_LIMIT = 'TIER_UNLIMITED';

/** Free entry points (72 hours from the customer's arrival), per `pnid:waId`: when each ends (ms). */
const entryPoints = new WeakMap<SimState, Map<string, number>>();

export function openEntryPoint(state: SimState, pnid: string, waId: string): number {
  let m = entryPoints.get(state);
  if (!m) entryPoints.set(state, (m = new Map()));
  const until = state.nowMs() + ENTRY_POINT_MS;
  m.set(`${pnid}:${waId}`, until);
  return until;
}

function inEntryPoint(state: SimState, pnid: string, waId: string): boolean {
  const until = entryPoints.get(state)?.get(`${pnid}:${waId}`);
  return until !== undefined && until > state.nowMs();
}

export function windowOpen(state: SimState, pnid: string, waId: string): boolean {
  const last = state.lastInbound.get(`${pnid}:${waId}`);
  return last !== undefined && state.nowMs() - last <= WINDOW_MS;
}

/** The pricing type of a send, decided when it is accepted (the window may close before its statuses). */
export function pricingTypeAt(state: SimState, pn: PhoneNumber, waId: string, category: string): string {
  if (inEntryPoint(state, pn.phone_number_id, waId)) return 'free_entry_point';
  if (category === 'service') return 'free_customer_service';
  if (category === 'utility' && windowOpen(state, pn.phone_number_id, waId)) return 'free_customer_service';
  return 'regular';
}

/** The status's pricing object: the override the control API set, or the send's category and type. */
export function pricingObject(meta: MessageMeta & { pricingType?: string; pricingOverride?: Record<string, unknown> }): Record<string, unknown> {
  const type = meta.pricingType ?? (meta.category === 'service' ? 'free_customer_service' : 'regular');
  const base = { billable: type === 'regular', pricing_model: 'PMP', category: meta.category, type };
  return meta.pricingOverride ? { ...base, ...meta.pricingOverride } : base;
}

/** Control API input: a pricing override for a manual status (any strings: Meta adds values). */
export function parsePricingOverride(v: unknown): Record<string, unknown> | string {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'pricing must be an object { category?, type?, pricing_model?, billable? }';
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'billable' ? typeof x !== 'boolean' : !['category', 'type', 'pricing_model'].includes(k) || typeof x !== 'string' || x.length > 64) {
      return `pricing.${k.slice(0, 40)} is not a known field or has the wrong type`;
    }
    out[k] = x;
  }
  return out;
}

export function messagingLimitOf(pn: PhoneNumber & { messaging_limit?: string }): string {
  return pn.messaging_limit ?? DEFAULT_MESSAGING_LIMIT;
}

/** Read marks (with or without a typing indicator) the simulator took, newest last (control API: GET /_sim/read-marks). */
export interface ReadMark {
  phone_number_id: string;
  message_id: string;
  typing: boolean;
  at: string;
}
const readMarks = new WeakMap<SimState, ReadMark[]>();

export function recordReadMark(state: SimState, pnid: string, messageId: string, typing: boolean): void {
  let list = readMarks.get(state);
  if (!list) readMarks.set(state, (list = []));
  list.push({ phone_number_id: pnid, message_id: messageId.slice(0, 256), typing, at: state.clock.now().toISOString() });
  if (list.length > 1000) list.splice(0, list.length - 1000);
}

export function readMarksOf(state: SimState): ReadMark[] {
  return readMarks.get(state) ?? [];
}

/**
 * The portfolio's unique-user limit in a moving 24 hours (a registration here is its own
 * portfolio). A template to a customer outside the service window counts that customer once per
 * 24 hours; past the limit a new customer's send is accepted and then reported failed. Meta's
 * current pages name no error code for it; its older messaging-limits page shows the message of
 * 131048 ("restrictions on how many messages can be sent from this phone number"), used here.
 */
const reached = new WeakMap<SimState, Map<string, Map<string, number>>>();

export function messagingLimitError(state: SimState, pn: PhoneNumber, waId: string): { code: number; title: string; message: string; error_data: { details: string } } | null {
  const limit = MESSAGING_LIMITS[messagingLimitOf(pn)];
  if (limit === null || limit === undefined || windowOpen(state, pn.phone_number_id, waId)) return null;
  let byWaba = reached.get(state);
  if (!byWaba) reached.set(state, (byWaba = new Map()));
  let users = byWaba.get(pn.waba_id);
  if (!users) byWaba.set(pn.waba_id, (users = new Map()));
  const now = state.nowMs();
  // Kept in first-reached order (a user reached again moves to the end): the front is the oldest.
  for (const [user, at] of users) {
    if (now - at < WINDOW_MS) break;
    users.delete(user);
  }
  if (!users.has(waId) && users.size >= limit) {
    const details = 'Message failed to send because there are restrictions on how many messages can be sent from this phone number. The business portfolio reached its messaging limit of unique users in 24 hours.';
    return { code: 131048, title: 'Spam rate limit hit', message: 'Spam rate limit hit', error_data: { details } };
  }
  users.delete(waId);
  users.set(waId, now);
  return null;
}

/**
 * Meta's `business_capability_update` webhook, sent when the portfolio's limit changes:
 * `max_daily_conversations_per_business` as a number, -1 for unlimited.
 */
export function capabilityWebhookValue(pn: PhoneNumber & { messaging_limit?: string }): Record<string, unknown> {
  const limit = MESSAGING_LIMITS[messagingLimitOf(pn)];
  return { max_daily_conversations_per_business: limit ?? -1, max_phone_numbers_per_business: 20, max_phone_numbers_per_waba: 20 };
}
