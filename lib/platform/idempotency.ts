/**
 * "This takes effect once": the one mechanism behind the API's Idempotency-Key
 * (middleware/idempotency.ts) and the dashboard's one-time forms (lib/dashboard/once.ts), over the
 * one store of keys (idempotency-store.ts). A key, scoped to a project, is claimed by one atomic
 * upsert, so concurrent submissions with it cause one execution; it is kept 24 hours; a claim whose
 * request never finished (a crash) is taken over after a grace period. A key already held says
 * whether it was held for another request (its fingerprint differs), is still running, or is done
 * (its stored answer is replayed by the caller, each in its own words).
 */
import { createHash } from 'node:crypto';
import type { Tx } from './db/tx.js';
import { claimKey, readKey, type StoredKey } from './idempotency-store.js';

export const RETENTION_MS = 24 * 60 * 60 * 1000;
/** Longer than any request can run (upstream timeout included). */
export const ABANDONED_AFTER_MS = 2 * 60 * 1000;

/** JSON with object keys sorted at every depth; arrays keep their order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** What a key is held for: the method, the path and the body (object keys sorted, array order kept). */
export function fingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method.toUpperCase()} ${path}\n${canonicalJson(body)}`).digest('hex');
}

export type Held =
  /** This request holds the key now: it runs, then completes or releases it. */
  | { state: 'claimed' }
  /** Held for another request: the key is not for this one. */
  | { state: 'mismatch'; record: StoredKey }
  /** Held for this request, still running (record absent: it was released the moment it was read). */
  | { state: 'running'; record?: StoredKey }
  /** Done: its stored answer is what this request gets. */
  | { state: 'completed'; record: StoredKey };

/** Claims the key for the request with this fingerprint, or says what already holds it. */
export async function claimOnce(db: Tx, projectId: string, key: string, print: string, now: Date, claim?: () => Promise<boolean>): Promise<Held> {
  // `claim`: the same claim made another way (the API's requests batch theirs: idempotency-batch.ts).
  const claimed = claim
    ? await claim()
    : await claimKey(db, projectId, key, print, {
        now,
        expiresAt: new Date(now.getTime() + RETENTION_MS),
        abandonedBefore: new Date(now.getTime() - ABANDONED_AFTER_MS),
      });
  if (claimed) return { state: 'claimed' };
  const record = await readKey(db, projectId, key);
  if (!record) return { state: 'running' };
  if (record.fingerprint !== print) return { state: 'mismatch', record };
  return record.state === 'completed' ? { state: 'completed', record } : { state: 'running', record };
}
