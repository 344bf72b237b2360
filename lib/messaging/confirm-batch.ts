/**
 * Confirms of accepted sends, batched per project: while one confirm statement of this instance is
 * in flight, the sends that finish meanwhile wait and then go in one statement together. Each
 * statement is a round trip, and on this kind of machine the socket write of a round trip is the
 * largest single cost of a send (scripts/bench: a CPU profile put a third of the service's busy
 * time in writev, most of it under pg's query submit). A send still answers only once its own
 * confirm (ledger.ts) has committed, so a read of the message right after the answer finds its wamid; alone,
 * a send pays what it did before (one statement).
 */
import type pg from 'pg';
import { confirmIntents } from './ledger.js';

interface Waiter {
  ref: string;
  wamid: string;
  at: Date;
  resolve: () => void;
  reject: (e: unknown) => void;
}

class ConfirmBatcher {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly draining = new Set<string>();

  constructor(private readonly pool: pg.Pool) {}

  confirm(projectId: string, ref: string, wamid: string, at: Date): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const list = this.waiting.get(projectId);
      if (list) list.push({ ref, wamid, at, resolve, reject });
      else this.waiting.set(projectId, [{ ref, wamid, at, resolve, reject }]);
      if (!this.draining.has(projectId)) void this.drain(projectId);
    });
  }

  private async drain(projectId: string): Promise<void> {
    this.draining.add(projectId);
    try {
      for (let batch = this.take(projectId); batch.length > 0; batch = this.take(projectId)) {
        try {
          await confirmIntents(this.pool, projectId, batch);
          for (const w of batch) w.resolve();
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
    } finally {
      this.draining.delete(projectId);
    }
  }

  private take(projectId: string): Waiter[] {
    const list = this.waiting.get(projectId) ?? [];
    this.waiting.delete(projectId);
    return list;
  }
}

const batchers = new WeakMap<pg.Pool, ConfirmBatcher>();

/** Confirms one accepted send through this instance's batcher (see the module's note). */
export function confirmSends(pool: pg.Pool, projectId: string, ref: string, wamid: string, at: Date): Promise<void> {
  let batcher = batchers.get(pool);
  if (!batcher) batchers.set(pool, (batcher = new ConfirmBatcher(pool)));
  return batcher.confirm(projectId, ref, wamid, at);
}
