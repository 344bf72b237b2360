/**
 * Encryption at rest for channel tokens, app secrets and webhook signing secrets: AES-256-GCM
 * with a random 96-bit nonce per value, stored as `v1.<nonce>.<tag>.<ciphertext>` (base64url).
 * The key is derived from the service's master key, so rotating it is one setting.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export class SecretBox {
  private readonly key: Buffer;
  constructor(masterKey: Buffer, purpose = 'secret-box') {
    this.key = deriveKey(masterKey, purpose);
  }

  seal(plaintext: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', nonce, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(sealed: string): string {
    const [version, nonce, tag, data] = sealed.split('.');
    if (version !== 'v1' || !nonce || !tag || data === undefined) throw new Error('SecretBox: not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A purpose-bound subkey, so one master key never serves two uses directly. */
export function deriveKey(masterKey: Buffer, purpose: string): Buffer {
  return createHmac('sha256', masterKey).update(purpose).digest();
}
