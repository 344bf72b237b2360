/**
 * The API's Idempotency-Key claims and completions, batched per project (issue 62), as the send
 * ledger's statements are (lib/messaging/record-batch.ts): while one claim (or completion)
 * statement of this instance is in flight for a project, the requests that reach theirs meanwhile
 * wait, then go in one statement together. A key costs two statements a request; batched, a keyed
 * send cost 1.2× an unkeyed one's CPU, and the goal is 1.1× (docs/benchmarks.md). Alone, a request
 * pays what it did before: one statement each, right away.
 *
 * A batch holds each key once (one INSERT … ON CONFLICT cannot touch a row twice): a second request
 * with a key already in the batch waits for the next one, where it finds the key held, as it would
 * have one statement later. What a key that was not claimed holds is read as before (claimOnce).
 */
import type { Tx } from './db/tx.js';
import { claimKeys, completeKeys } from './idempotency-store.js';
import { ABANDONED_AFTER_MS, RETENTION_MS } from './idempotency.js';
import { Batcher, newest } from './batcher.js';


interface Claim {
  key: string;
  fingerprint: string;
  now: Date;
}

interface Answer {
  key: string;
  status: number;
  body: unknown;
  headers: Record<string, string> | null;
  /** The body as JSON text when the caller has it already (it is stored as given). */
  bodyJson?: string;
}

// One batcher per handle: `deps.db.sql` is the pool itself, so one per pool as before.
const claimers = new WeakMap<Tx, Batcher<Claim, boolean>>();
const completers = new WeakMap<Tx, Batcher<Answer, void>>();

/**
 * Claims the key (claimKey's rule), batched with the project's other claims in flight: true when
 * this request holds it now. A batch is judged at its newest `now`.
 */
export function claimBatched(db: Tx, projectId: string, key: string, fingerprint: string, now: Date): Promise<boolean> {
  let b = claimers.get(db);
  if (!b) {
    b = new Batcher<Claim, boolean>(async (project, items) => {
      const at = newest(items, (c) => c.now);
      const claimed = await claimKeys(db, project, items, {
        now: at,
        expiresAt: new Date(at.getTime() + RETENTION_MS),
        abandonedBefore: new Date(at.getTime() - ABANDONED_AFTER_MS),
      });
      return items.map((c) => claimed.has(c.key));
    }, (c) => c.key);
    claimers.set(db, b);
  }
  return b.add(projectId, { key, fingerprint, now });
}

/** Stores the key's answer (completeKey's write), batched with the project's other completions in flight. */
export function completeBatched(db: Tx, projectId: string, key: string, status: number, body: unknown, headers: Record<string, string> | null, bodyJson?: string): Promise<void> {
  let b = completers.get(db);
  if (!b) {
    b = new Batcher<Answer, void>(async (project, items) => {
      await completeKeys(db, project, items);
      return items.map(() => undefined);
    }, (a) => a.key);
    completers.set(db, b);
  }
  return b.add(projectId, { key, status, body, headers, bodyJson });
}
