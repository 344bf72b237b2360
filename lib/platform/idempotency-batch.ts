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
import type pg from 'pg';
import { claimKeys, completeKeys } from './idempotency-store.js';
import { ABANDONED_AFTER_MS, RETENTION_MS } from './idempotency.js';

interface Batch<T, R> {
  items: Array<{ item: T; resolve: (r: R) => void; reject: (e: unknown) => void }>;
}

/** Per-project batches of one kind of statement; `key` makes an item unique within a batch. */
class Batcher<T, R> {
  private readonly waiting = new Map<string, Batch<T, R>['items']>();
  private readonly draining = new Set<string>();

  constructor(
    private readonly run: (projectId: string, items: T[]) => Promise<R[]>,
    private readonly key: (item: T) => string,
  ) {}

  add(projectId: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const list = this.waiting.get(projectId);
      if (list) list.push({ item, resolve, reject });
      else this.waiting.set(projectId, [{ item, resolve, reject }]);
      if (!this.draining.has(projectId)) void this.drain(projectId);
    });
  }

  private async drain(projectId: string): Promise<void> {
    this.draining.add(projectId);
    try {
      for (let batch = this.take(projectId); batch.length > 0; batch = this.take(projectId)) {
        try {
          const results = await this.run(projectId, batch.map((b) => b.item));
          batch.forEach((b, i) => b.resolve(results[i]));
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      this.draining.delete(projectId);
    }
  }

  /** The waiting items, each key once; a repeated key stays for the next batch. */
  private take(projectId: string): Batch<T, R>['items'] {
    const list = this.waiting.get(projectId) ?? [];
    this.waiting.delete(projectId);
    const seen = new Set<string>();
    const now: typeof list = [];
    const later: typeof list = [];
    for (const w of list) {
      const k = this.key(w.item);
      if (seen.has(k)) later.push(w);
      else {
        seen.add(k);
        now.push(w);
      }
    }
    if (later.length) this.waiting.set(projectId, later);
    return now;
  }
}

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

const claimers = new WeakMap<pg.Pool, Batcher<Claim, boolean>>();
const completers = new WeakMap<pg.Pool, Batcher<Answer, void>>();

/**
 * Claims the key (claimKey's rule), batched with the project's other claims in flight: true when
 * this request holds it now. A batch is judged at its newest `now`.
 */
export function claimBatched(pool: pg.Pool, projectId: string, key: string, fingerprint: string, now: Date): Promise<boolean> {
  let b = claimers.get(pool);
  if (!b) {
    b = new Batcher<Claim, boolean>(async (project, items) => {
      let at = items[0].now;
      for (const c of items) if (c.now > at) at = c.now;
      const claimed = await claimKeys(pool, project, items, {
        now: at,
        expiresAt: new Date(at.getTime() + RETENTION_MS),
        abandonedBefore: new Date(at.getTime() - ABANDONED_AFTER_MS),
      });
      return items.map((c) => claimed.has(c.key));
    }, (c) => c.key);
    claimers.set(pool, b);
  }
  return b.add(projectId, { key, fingerprint, now });
}

/** Stores the key's answer (completeKey's write), batched with the project's other completions in flight. */
export function completeBatched(pool: pg.Pool, projectId: string, key: string, status: number, body: unknown, headers: Record<string, string> | null, bodyJson?: string): Promise<void> {
  let b = completers.get(pool);
  if (!b) {
    b = new Batcher<Answer, void>(async (project, items) => {
      await completeKeys(pool, project, items);
      return items.map(() => undefined);
    }, (a) => a.key);
    completers.set(pool, b);
  }
  return b.add(projectId, { key, status, body, headers, bodyJson });
}
