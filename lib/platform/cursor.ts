/**
 * Opaque keyset cursors: `<base64url(JSON payload)>.<base64url(truncated HMAC-SHA256)>`.
 *
 * Policy and why:
 * - The payload is the keyset position only (e.g. `[lastMessageAtMs, "id"]`), so a cursor stays
 *   short (well under the contract's 512 characters) whatever the filters are.
 * - The MAC covers a *scope* string as well as the payload: operation, filters and project. The
 *   scope is not stored in the cursor, it is recomputed from the request, so a cursor taken from
 *   another list, another filter or another project fails verification exactly like a tampered
 *   or garbage one: 400 `invalid_cursor` ("cursor not issued by the service" for this list).
 * - Everything that is not a cursor we issued (bad base64, bad JSON, wrong MAC, wrong length)
 *   is the same error; the message never says which check failed.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors.js';

/** Bytes of the HMAC kept in the cursor (128 bits). */
const MAC_BYTES = 16;
/** Upper bound of the contract's `cursor` parameter. */
export const MAX_CURSOR_LENGTH = 512;

const B64URL = /^[A-Za-z0-9_-]+$/;

function mac(payloadPart: string, scope: string, secret: Buffer): Buffer {
  // Length-prefixed, so no (scope, payload) pair can collide with another.
  return createHmac('sha256', secret)
    .update(`cursor.v1\n${scope.length}:${scope}\n${payloadPart}`, 'utf8')
    .digest()
    .subarray(0, MAC_BYTES);
}

/** A cursor for `payload` (a small JSON array) bound to `scope`. */
export function encodeCursor(payload: unknown[], scope: string, secret: Buffer, maxLength = MAX_CURSOR_LENGTH): string {
  const cursor = encodeCursorUnchecked(payload, scope, secret);
  if (cursor.length > maxLength) throw new Error(`cursor too long (${cursor.length} characters)`);
  return cursor;
}

/** The cursor whatever its length (for callers that fall back to a shorter form when it is too long). */
export function encodeCursorUnchecked(payload: unknown[], scope: string, secret: Buffer): string {
  const payloadPart = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  return `${payloadPart}.${mac(payloadPart, scope, secret).toString('base64url')}`;
}

export function invalidCursor(): ApiError {
  return new ApiError('invalid_cursor', 'The cursor was not issued by the service for this list: pass the nextCursor of the previous page unchanged, with the same filters.');
}

/** The payload of a cursor issued for `scope`; anything else is 400 `invalid_cursor`. */
export function decodeCursor(cursor: string, scope: string, secret: Buffer, maxLength = MAX_CURSOR_LENGTH): unknown[] {
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > maxLength) throw invalidCursor();
  const parts = cursor.split('.');
  if (parts.length !== 2 || !B64URL.test(parts[0]) || !B64URL.test(parts[1])) throw invalidCursor();
  const [payloadPart, macPart] = parts;
  // Compared as text: base64url decoding ignores a last character's spare bits, so comparing
  // decoded bytes would accept several spellings of one MAC.
  const given = Buffer.from(macPart, 'utf8');
  const expected = Buffer.from(mac(payloadPart, scope, secret).toString('base64url'), 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidCursor();
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8'));
  } catch {
    throw invalidCursor();
  }
  if (!Array.isArray(payload)) throw invalidCursor();
  return payload;
}

/**
 * The scope string of a list: operation, project and the filters that shape it. Values are
 * JSON-encoded so no filter value can imitate another's boundary. Pass normalised filter values
 * (e.g. phone digits, `since` as epoch milliseconds) so equivalent spellings share cursors.
 */
export function cursorScope(operation: string, projectId: string, filters: Record<string, unknown> = {}): string {
  const keys = Object.keys(filters).sort();
  return JSON.stringify([operation, projectId, keys.map((k) => [k, filters[k] ?? null])]);
}

// ------------------------------------------------------------------ secret

/** The cursor signing secret of the app (`Deps.cursorSecret`); refuses to sign with none. */
export function cursorSecretOf(deps: { cursorSecret: Buffer }): Buffer {
  const secret = deps.cursorSecret;
  if (!Buffer.isBuffer(secret) || secret.length < 16) throw new Error('Deps.cursorSecret is missing or shorter than 16 bytes');
  return secret;
}

// ------------------------------------------------------------------ paging helpers

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

/** A list's page sizes: from 1 to `max`, `default` when the request names none. */
export interface PageBounds {
  default: number;
  max: number;
}

/**
 * The page size of a request. The contract already bounds it; this is the second line for a
 * validator that did not coerce or apply the default.
 */
export function pageSize(raw: unknown, bounds: PageBounds = { default: DEFAULT_PAGE_SIZE, max: MAX_PAGE_SIZE }): number {
  if (raw === undefined || raw === null || raw === '') return bounds.default;
  const n = typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > bounds.max) {
    throw new ApiError('invalid_request', `limit must be an integer from 1 to ${bounds.max}.`, {
      fields: [{ field: 'query.limit', message: `must be an integer from 1 to ${bounds.max}` }],
    });
  }
  return n;
}

/** A keyset id carried in a cursor: a decimal string of a positive bigint. */
export function cursorId(v: unknown): bigint {
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,18}$/.test(v)) throw invalidCursor();
  const id = BigInt(v);
  if (id > 9223372036854775807n) throw invalidCursor();
  return id;
}

/** A keyset timestamp carried in a cursor: integer epoch milliseconds. */
export function cursorTime(v: unknown): Date {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw invalidCursor();
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) throw invalidCursor();
  return d;
}
