/** A stable 32-bit hash of a string (FNV-1a): the same key lands in the same place on every instance and restart. */
export function stableHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
