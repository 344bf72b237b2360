/**
 * Records of sends, batched per project (issue 62): while one `record-intent` statement of this
 * instance is in flight for a project, the sends that reach their record meanwhile wait, then go
 * in one statement together (recordIntents takes any number of intents; the broadcast engine
 * records its batches so). Each statement is a round trip whose socket write is the largest single
 * cost of a send on these machines (scripts/bench: pg's query submit was a sixth of the service's
 * busy time); the confirm (confirm-batch.ts) and the quota reservation (quota.ts) are batched the
 * same way. A send alone pays what it did before: one statement, right away.
 *
 * Each send keeps its own answer (recorded, or the window closed / thread held: false); a failed
 * statement fails the sends that were in it, and each withdraws its own reference as before. The
 * batch is recorded at the newest `at` of its sends (a waiting send's time moves forward by at most
 * one statement's duration; its window is judged then, never earlier).
 */
import type pg from 'pg';
import { recordIntents, type Intent } from './ledger.js';

interface Waiter {
  intent: Intent;
  at: Date;
  resolve: (recorded: boolean) => void;
  reject: (e: unknown) => void;
}

class RecordBatcher {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly draining = new Set<string>();

  constructor(private readonly pool: pg.Pool) {}

  record(projectId: string, intent: Intent, at: Date, refuseHeld: boolean): Promise<boolean> {
    const key = `${refuseHeld ? 'h' : '-'}${projectId}`;
    return new Promise<boolean>((resolve, reject) => {
      const list = this.waiting.get(key);
      if (list) list.push({ intent, at, resolve, reject });
      else this.waiting.set(key, [{ intent, at, resolve, reject }]);
      if (!this.draining.has(key)) void this.drain(key, projectId, refuseHeld);
    });
  }

  private async drain(key: string, projectId: string, refuseHeld: boolean): Promise<void> {
    this.draining.add(key);
    try {
      for (let batch = this.take(key); batch.length > 0; batch = this.take(key)) {
        let at = batch[0].at;
        for (const w of batch) if (w.at > at) at = w.at;
        try {
          const recorded = await recordIntents(this.pool, projectId, batch.map((w) => w.intent), at, { refuseHeld });
          batch.forEach((w, i) => w.resolve(recorded[i]));
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
    } finally {
      this.draining.delete(key);
    }
  }

  private take(key: string): Waiter[] {
    const list = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    return list;
  }
}

const batchers = new WeakMap<pg.Pool, RecordBatcher>();

/** Records one send's intent through this instance's batcher (see the module's note): true when recorded. */
export function recordSend(pool: pg.Pool, projectId: string, intent: Intent, at: Date, opts: { refuseHeld?: boolean } = {}): Promise<boolean> {
  let batcher = batchers.get(pool);
  if (!batcher) batchers.set(pool, (batcher = new RecordBatcher(pool)));
  return batcher.record(projectId, intent, at, opts.refuseHeld === true);
}
