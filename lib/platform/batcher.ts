/**
 * Statements batched per group (a project, usually): while one statement of this instance is in
 * flight for a group, the requests that reach theirs meanwhile wait, then go in one statement
 * together. Each statement is a round trip, whose socket write is the largest single cost of a
 * send on these machines (docs/benchmarks.md, issues 49 and 62). Alone, a request pays what it did
 * before: one statement, right away.
 *
 * Each item keeps its own answer (`run` answers one result per item, in order); a failed statement
 * fails every item that was in it. With `unique`, a batch holds each key once (one INSERT … ON
 * CONFLICT cannot touch a row twice): a repeated key waits for the next batch.
 *
 * Used by the send ledger's record and confirm (lib/messaging) and the Idempotency-Key's claims
 * and completions (idempotency-batch.ts). The quota reservation (lib/messaging/quota.ts) grants a
 * part of its batch and refuses the rest, so it keeps a loop of its own.
 */
interface Waiter<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

export class Batcher<T, R> {
  private readonly waiting = new Map<string, Waiter<T, R>[]>();
  private readonly draining = new Set<string>();

  constructor(
    private readonly run: (group: string, items: T[]) => Promise<R[]>,
    private readonly unique?: (item: T) => string,
  ) {}

  add(group: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const list = this.waiting.get(group);
      if (list) list.push({ item, resolve, reject });
      else this.waiting.set(group, [{ item, resolve, reject }]);
      if (!this.draining.has(group)) void this.drain(group);
    });
  }

  private async drain(group: string): Promise<void> {
    this.draining.add(group);
    try {
      for (let batch = this.take(group); batch.length > 0; batch = this.take(group)) {
        try {
          const results = await this.run(group, batch.map((w) => w.item));
          batch.forEach((w, i) => w.resolve(results[i]));
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
    } finally {
      this.draining.delete(group);
    }
  }

  /** The waiting items (with `unique`, each key once: a repeated key stays for the next batch). */
  private take(group: string): Waiter<T, R>[] {
    const list = this.waiting.get(group) ?? [];
    this.waiting.delete(group);
    if (!this.unique) return list;
    const seen = new Set<string>();
    const now: typeof list = [];
    const later: typeof list = [];
    for (const w of list) {
      const k = this.unique(w.item);
      if (seen.has(k)) later.push(w);
      else {
        seen.add(k);
        now.push(w);
      }
    }
    if (later.length) this.waiting.set(group, later);
    return now;
  }
}

/** The newest of the items' times: a batch is judged at it (an item's time moves forward by at most one statement's duration). */
export function newest<T>(items: T[], at: (item: T) => Date): Date {
  let latest = at(items[0]);
  for (const item of items) if (at(item) > latest) latest = at(item);
  return latest;
}
