/**
 * The daily send quota: messages accepted per project per UTC calendar day. A send reserves one
 * unit before calling the channel and releases it when the channel fails, so a failed send does
 * not count. The units live in the send ledger (ledger.ts), whose reservation is one atomic
 * statement for any number of units, which keeps the count exact under any concurrency (1,200
 * concurrent sends against a quota of 1,000 accept exactly 1,000). Here, the reservations of one
 * instance are batched (see `reserveSends`) so that they do not queue on the counter row commit
 * by commit.
 */
import type { Tx } from '../platform/db/tx.js';
import { nextUtcMidnight, quotaExceeded, releaseUnits, reserveUnits, utcDay } from './ledger.js';

export { nextUtcMidnight, quotaExceeded, utcDay };

/**
 * Reserves one send for today, or throws 429 quota_exceeded. `limit` null: the project's own
 * daily quota, read in the same statement.
 */
export async function reserveSend(db: Tx, projectId: string, limit: number | null, now: Date): Promise<void> {
  const r = await reserveUnits(db, projectId, 1, now, limit);
  if (r.granted < 1) throw quotaExceeded(r.limit, now);
}

/** Gives back a reservation whose send did not happen. */
export async function releaseSend(db: Tx, projectId: string, reservedAt: Date): Promise<void> {
  await releaseUnits(db, projectId, 1, reservedAt);
}

interface Waiter {
  now: Date;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * The counter row of a project's day is one row: sends updating it one by one queue on its lock,
 * each holding it until its commit is on disk. So while one reservation statement of this
 * instance is in flight, the next sends of the same project, day and limit wait, and then go in
 * one statement that takes their units at once; when only some fit (the quota is nearly used),
 * the first ones get them and the rest are refused, so the count stays exact. Nothing here
 * outlives a request: the database holds the count.
 */
class ReservationBatcher {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly draining = new Set<string>();

  constructor(private readonly db: Tx) {}

  reserve(projectId: string, limit: number | null, now: Date): Promise<void> {
    if (limit !== null && limit <= 0) return Promise.reject(quotaExceeded(limit, now));
    const key = `${projectId}|${utcDay(now)}|${limit ?? ''}`;
    return new Promise<void>((resolve, reject) => {
      const list = this.waiting.get(key);
      if (list) list.push({ now, resolve, reject });
      else this.waiting.set(key, [{ now, resolve, reject }]);
      if (!this.draining.has(key)) void this.drain(key, projectId, limit);
    });
  }

  private async drain(key: string, projectId: string, limit: number | null): Promise<void> {
    this.draining.add(key);
    try {
      for (let batch = this.take(key); batch.length > 0; batch = this.take(key)) await this.grant(projectId, limit, batch);
    } finally {
      this.draining.delete(key);
    }
  }

  private take(key: string): Waiter[] {
    const list = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    return list;
  }

  private async grant(projectId: string, limit: number | null, batch: Waiter[]): Promise<void> {
    try {
      const { granted, limit: applied } = await reserveUnits(this.db, projectId, batch.length, batch[0].now, limit);
      batch.forEach((w, i) => (i < granted ? w.resolve() : w.reject(quotaExceeded(applied, w.now))));
    } catch (e) {
      for (const w of batch) w.reject(e);
    }
  }
}

const batchers = new WeakMap<Tx, ReservationBatcher>();

/**
 * Reserves one send for today through this instance's batcher, or throws 429 quota_exceeded;
 * `limit` null: the project's own daily quota, read in the reserving statement.
 */
export function reserveSends(db: Tx, projectId: string, limit: number | null, now: Date): Promise<void> {
  let batcher = batchers.get(db);
  if (!batcher) batchers.set(db, (batcher = new ReservationBatcher(db)));
  return batcher.reserve(projectId, limit, now);
}
