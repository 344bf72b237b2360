/**
 * Webhook signatures (the spec's scheme, identical to Stripe's): `X-Service-Signature:
 * t=<unix seconds>,v1=<hex HMAC-SHA256>` where the HMAC is keyed with the whole signing secret
 * (`whsec_…`, as UTF-8) over `<t>.<raw body>`. Receivers recompute it over the exact bytes they
 * received, compare in constant time, and reject a timestamp more than 300 seconds away from their
 * clock (a captured delivery cannot be replayed later).
 *
 * This module depends on node:crypto only, so receivers can copy it as is.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Service-Signature';
export const DEFAULT_TOLERANCE_SEC = 300;

export function computeSignature(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${timestamp}.`, 'utf8')
    .update(rawBody)
    .digest('hex');
}

/** The header value for a body signed at `timestamp` (unix seconds). */
export function signatureHeader(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return `t=${timestamp},v1=${computeSignature(secret, timestamp, rawBody)}`;
}

/** A valid header for tests of a receiver (`now` defaults to the current time). */
export function generateTestHeader(rawBody: string | Buffer, secret: string, now: Date = new Date()): string {
  return signatureHeader(secret, Math.floor(now.getTime() / 1000), rawBody);
}

export type VerifyFailure = 'malformed_header' | 'bad_signature' | 'timestamp_out_of_tolerance' | 'parsed_body';

export type VerifyResult = { ok: true; timestamp: number } | { ok: false; reason: VerifyFailure };

export interface VerifyOptions {
  /** Largest accepted distance between `t` and `now`, in seconds (default 300). */
  toleranceSec?: number;
  /** The receiver's clock (default: the current time). */
  now?: Date;
}

/**
 * Checks a delivery: `rawBody` must be the exact received bytes (a string or Buffer, never a parsed
 * object), `header` the X-Service-Signature value. Several `v1=` values are accepted (any match).
 */
export function verifyWebhookSignature(rawBody: string | Buffer, header: string | undefined | null, secret: string, opts: VerifyOptions = {}): VerifyResult {
  if (typeof rawBody !== 'string' && !Buffer.isBuffer(rawBody)) return { ok: false, reason: 'parsed_body' };
  if (typeof header !== 'string' || header.length > 2048) return { ok: false, reason: 'malformed_header' };
  let timestamp: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value)) candidates.push(value);
  }
  if (timestamp === undefined || candidates.length === 0) return { ok: false, reason: 'malformed_header' };
  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody), 'hex');
  const matches = candidates.some((c) => timingSafeEqual(Buffer.from(c, 'hex'), expected));
  if (!matches) return { ok: false, reason: 'bad_signature' };
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSec ?? DEFAULT_TOLERANCE_SEC)) return { ok: false, reason: 'timestamp_out_of_tolerance' };
  return { ok: true, timestamp };
}
