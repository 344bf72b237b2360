/**
 * Encryption at rest for channel tokens, app secrets and webhook signing secrets: AES-256-GCM
 * with a random 96-bit nonce per value and a full 16-byte tag, stored as
 * `v2.<nonce>.<tag>.<ciphertext>` (base64url). A v2 value is bound to where it is stored (table,
 * row id and column as additional authenticated data), so a value copied to another row or column
 * does not open. `v1.` values (sealed before that binding) still open and are re-sealed as v2 at
 * start-up (`resealLegacySecrets`). The key is derived from the service's master key.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const TAG_BYTES = 16;

export class SecretBox {
  private readonly key: Buffer;
  constructor(masterKey: Buffer, purpose = 'secret-box') {
    this.key = deriveKey(masterKey, purpose);
  }

  /** Seals `plaintext` for the place `where` (e.g. `webhook_endpoints:<id>:secret`). */
  seal(plaintext: string, where: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(where, 'utf8'));
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v2', nonce, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  /** Opens a value sealed for `where`; throws on any tampering, a truncated tag or another place. */
  open(sealed: string, where: string): string {
    const [version, nonce, tag, data] = sealed.split('.');
    if ((version !== 'v1' && version !== 'v2') || !nonce || !tag || data === undefined) throw new Error('SecretBox: not a sealed value');
    const tagBytes = Buffer.from(tag, 'base64url');
    // Node accepts shorter GCM tags unless told the length: a 4-byte tag would be guessable.
    if (tagBytes.length !== TAG_BYTES) throw new Error('SecretBox: bad authentication tag');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64url'), { authTagLength: TAG_BYTES });
    if (version === 'v2') decipher.setAAD(Buffer.from(where, 'utf8'));
    decipher.setAuthTag(tagBytes);
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }

  /**
   * A short keyed fingerprint of a value (the first 8 hex characters of an HMAC-SHA256 under a
   * subkey of this box's key, one per `purpose`): it tells two values apart in a listing without
   * revealing them, and unlike a plain hash it cannot be used to test guesses without the key.
   */
  fingerprint(value: string, purpose: string): string {
    return createHmac('sha256', deriveKey(this.key, `fingerprint:${purpose}`)).update(value, 'utf8').digest('hex').slice(0, 8);
  }

  /** Whether a stored value predates the binding to its place (re-seal it). */
  static isLegacy(sealed: string): boolean {
    return sealed.startsWith('v1.');
  }
}

/** A purpose-bound subkey, so one master key never serves two uses directly. */
export function deriveKey(masterKey: Buffer, purpose: string): Buffer {
  return createHmac('sha256', masterKey).update(purpose).digest();
}
