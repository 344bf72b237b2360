/**
 * Identifier generators shaped like Meta's: numeric Graph ids (kept below 2^53 so they survive JSON
 * numbers, as Meta's template ids are sent as numbers in webhooks), wamids (base64 of the same binary
 * layout Meta uses: recipient digits + hex message key), tokens, upload sessions and file handles.
 */
import { randomBytes, randomInt } from 'node:crypto';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Random bytes from a refilled pool: one syscall per 4 KB instead of one per id (hot path under load). */
let pool = randomBytes(4096);
let poolPos = 0;
function poolBytes(n: number): Buffer {
  if (n > pool.length) return randomBytes(n);
  if (poolPos + n > pool.length) {
    pool = randomBytes(4096);
    poolPos = 0;
  }
  const out = pool.subarray(poolPos, poolPos + n);
  poolPos += n;
  return out;
}

function randomString(len: number, alphabet = ALNUM): string {
  const bytes = poolBytes(len);
  let out = '';
  for (let i = 0; i < len; i++) out += alphabet[bytes[i] % alphabet.length];
  return out;
}

/** A numeric id string of `digits` digits (15 or 16, like Meta's), never starting with 0, < 2^53. */
export function numericId(digits = 15): string {
  const first = digits >= 16 ? String(randomInt(1, 9)) : String(randomInt(1, 10));
  let rest = '';
  while (rest.length < digits - 1) rest += String(randomInt(0, 1_000_000_000)).padStart(9, '0');
  return first + rest.slice(0, digits - 1);
}

function hexKey(len: number): string {
  return poolBytes(Math.ceil(len / 2)).toString('hex').toUpperCase().slice(0, len);
}

/**
 * `wamid.` + standard base64 of: 0x1c 0x18 <len> <wa_id digits> 0x15 0x02 0x00 <dir> 0x18 <keylen>
 * <hex key> 0x00. Outbound messages use dir 0x11 and an 18-char key, inbound 0x12 and a 20-char key,
 * as observed in real ids (e.g. wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJCOTY3NDc0NDFDRUI3NTA0Q0UA).
 */
export function wamid(waId: string, inbound = false): string {
  const digits = Buffer.from(waId.replace(/\D/g, '').slice(0, 20), 'ascii');
  const key = Buffer.from(hexKey(inbound ? 20 : 18), 'ascii');
  const buf = Buffer.concat([
    Buffer.from([0x1c, 0x18, digits.length]),
    digits,
    Buffer.from([0x15, 0x02, 0x00, inbound ? 0x12 : 0x11, 0x18, key.length]),
    key,
    Buffer.from([0x00]),
  ]);
  return 'wamid.' + buf.toString('base64');
}

/** A long-lived system-user style token: "EAA" + 180 alphanumerics. */
export function accessToken(): string {
  return 'EAA' + randomString(180);
}

/** Like Meta's fbtrace_id: 23 base64-ish characters. */
export function fbtraceId(): string {
  return 'A' + randomString(22, ALNUM + '_-');
}

/** A display number in the 1 555 test range Meta uses for test numbers. */
export function displayPhoneNumber(): string {
  return '1555' + String(randomInt(0, 10_000_000)).padStart(7, '0');
}

/** Base64 without '/' and '+' (they would split or alter a URL path), '=' padding kept. */
function pathSafeBase64(s: string | Buffer): string {
  return Buffer.from(s).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** Upload session id: `upload:<base64("1:attachment:<uuid-ish>")>?sig=<sig>` like Meta's. */
export function uploadSessionId(): { id: string; key: string } {
  const key = pathSafeBase64(`1:attachment:${randomBytes(16).toString('hex')}`);
  return { id: `upload:${key}?sig=${randomString(22, ALNUM + '_-')}`, key };
}

/** File handle like Meta's `4::<base64 mime>:<opaque>:e:<expiry>:<opaque>`. */
export function fileHandle(mime: string, expiresAtSec: number): string {
  return `4::${Buffer.from(mime).toString('base64')}:AR${randomString(40, ALNUM + '_-')}:e:${expiresAtSec}:AR${randomString(22, ALNUM + '_-')}`;
}

/** Numeric challenge for the hub.challenge handshake. */
export function hubChallenge(): string {
  return String(randomInt(100_000_000, 2_000_000_000));
}

/** 32-hex conversation id like Meta's. */
export function conversationId(): string {
  return randomBytes(16).toString('hex');
}
