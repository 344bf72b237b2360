/** Identifier helpers (managed by the platform). */
const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/** A random id such as `ord_k3j9x0q2m1z8`; not for secrets. */
export function newId(prefix: string, length = 12): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[Math.floor(Math.random() * ALPHABET.length)];
  return prefix ? `${prefix}_${out}` : out;
}
