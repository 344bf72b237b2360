/**
 * The business phone number node (GET /{phone-number-id}): its portfolio's messaging limit.
 *
 * Since October 2025 the limit of unique users reached with business-initiated messages in a
 * moving 24 hours is set per business portfolio and read from the number's
 * `whatsapp_business_manager_messaging_limit` field; `messaging_limit_tier` is deprecated (Meta,
 * "Messaging limits"). Meta documents the tiers (250, 2,000, 10,000, 100,000, unlimited); the
 * value is a tier name such as `TIER_2K` (as partner pages show it), read tolerantly here.
 *
 * Its throughput level (`throughput.level`): `STANDARD` is 80 messages per second, `HIGH` up to
 * 1,000 (Meta upgrades a number automatically and announces it with a `phone_number_quality_update`
 * whose `event` is `THROUGHPUT_UPGRADE`); a number also on the WhatsApp Business app (coexistence,
 * `is_on_biz_app`) is held at 20 whatever its level (Meta, "Throughput", updated 21 May 2026).
 */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';
import type { MessagingLimit, Throughput } from '../lib/channel-port/port.js';

export const MESSAGING_LIMIT_FIELD = 'whatsapp_business_manager_messaging_limit';

export type { MessagingLimit, Throughput };

/** `TIER_250`, `TIER_2K`, `TIER_10K`, `TIER_100K`, `TIER_UNLIMITED` (or a bare number, -1 unlimited); undefined when unrecognised. */
export function parseMessagingLimit(value: unknown): MessagingLimit | undefined {
  // Webhooks give the limit as a number, -1 for unlimited (business_capability_update).
  if (value === -1 || value === '-1') return { tier: String(value), limit: null };
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return { tier: String(value), limit: value };
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const v = value.trim().toUpperCase();
  if (v === 'UNLIMITED' || v === 'TIER_UNLIMITED') return { tier: value, limit: null };
  const m = /^(?:TIER_)?(\d{1,9})(K|M)?$/.exec(v);
  if (!m) return undefined;
  const n = Number(m[1]) * (m[2] === 'K' ? 1000 : m[2] === 'M' ? 1_000_000 : 1);
  return n > 0 ? { tier: value, limit: n } : undefined;
}

/** GET /{version}/{phoneNumberId}?fields=whatsapp_business_manager_messaging_limit */
export async function getMessagingLimit(this: GraphTransport, creds: ChannelCredentials): Promise<MessagingLimit> {
  const body = await this.call(creds, { op: 'getMessagingLimit', method: 'GET', segments: [creds.phoneNumberId], params: { fields: MESSAGING_LIMIT_FIELD } });
  const raw = (body as Record<string, unknown> | null)?.[MESSAGING_LIMIT_FIELD];
  const parsed = parseMessagingLimit(raw);
  if (!parsed) throw this.unexpected('getMessagingLimit', raw === undefined ? `no ${MESSAGING_LIMIT_FIELD} in the answer` : `unrecognised ${MESSAGING_LIMIT_FIELD} "${String(raw).slice(0, 64)}"`);
  return parsed;
}

export const THROUGHPUT_FIELDS = 'throughput,is_on_biz_app';
/** Messages per second of each level Meta names; a coexistence number is held at COEXISTENCE_MPS. */
export const THROUGHPUT_LEVELS: Record<string, number> = { STANDARD: 80, HIGH: 1000 };
export const COEXISTENCE_MPS = 20;

/** The rate of a level (and coexistence); null when unknown. */
export function throughputOf(level: string, coexistence: boolean): number | null {
  if (coexistence) return COEXISTENCE_MPS;
  return THROUGHPUT_LEVELS[level.toUpperCase()] ?? null;
}

/** GET /{version}/{phoneNumberId}?fields=throughput,is_on_biz_app */
export async function getThroughput(this: GraphTransport, creds: ChannelCredentials): Promise<Throughput> {
  const body = await this.call(creds, { op: 'getThroughput', method: 'GET', segments: [creds.phoneNumberId], params: { fields: THROUGHPUT_FIELDS } });
  const b = (body ?? {}) as { throughput?: { level?: unknown }; is_on_biz_app?: unknown };
  const level = b.throughput?.level;
  if (typeof level !== 'string' || !/^[A-Z_]{1,32}$/i.test(level)) {
    throw this.unexpected('getThroughput', level === undefined ? 'no throughput.level in the answer' : `unrecognised throughput.level "${String(level).slice(0, 64)}"`);
  }
  const coexistence = b.is_on_biz_app === true;
  return { level: level.toUpperCase(), coexistence, messagesPerSecond: throughputOf(level, coexistence) };
}
