/**
 * Secrets and identifiers. API keys and access tokens are high-entropy random strings, so a
 * SHA-256 digest is a sufficient one-way hash: only the digest is stored, and a presented
 * secret is found by its digest and then compared in constant time.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A random string over [a-z0-9] of the given length, without modulo bias. */
export function randomToken(length: number, draw: (n: number) => Uint8Array = randomBytes): string {
  let out = '';
  while (out.length < length) {
    for (const b of draw(length * 2)) {
      if (b < 252 && out.length < length) out += ALPHABET[b % 36];
    }
  }
  return out;
}

/**
 * Random bytes for identifiers, drawn from the CSPRNG 4 KB at a time (as randomUUID caches its
 * entropy): every send and message takes an id, and a draw per id was a call into OpenSSL each
 * (issue 62: 1.1% of a send's CPU). Secrets (newSecret) keep a fresh draw of their own.
 */
let idBytes = Buffer.alloc(0);
let idOffset = 0;
function idDraw(n: number): Uint8Array {
  if (idOffset + n > idBytes.length) {
    idBytes = randomBytes(Math.max(4096, n));
    idOffset = 0;
  }
  const out = idBytes.subarray(idOffset, idOffset + n);
  idOffset += n;
  return out;
}

/** A public identifier such as `prj_k3x9…`. */
export function newId(prefix: string, length = 16): string {
  return `${prefix}_${randomToken(length, idDraw)}`;
}

/** A new secret such as `pk_live_…` (40 random characters, about 206 bits). */
export function newSecret(prefix: string): string {
  return `${prefix}${randomToken(40)}`;
}

export function hashSecret(secret: string): string {
  // The one-shot hash: a third of createHash's cost, and every authenticated request pays it.
  return hash('sha256', secret, 'hex');
}

/** Constant-time equality of two strings (false when lengths differ). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The first characters of a secret, safe to show in listings. */
export function secretHint(secret: string): string {
  return secret.slice(0, secret.lastIndexOf('_') + 5) + '…';
}
