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
import { Batcher, newest } from '../platform/batcher.js';

interface SendRecord {
  projectId: string;
  intent: Intent;
  at: Date;
  refuseHeld: boolean;
}

const batchers = new WeakMap<pg.Pool, Batcher<SendRecord, boolean>>();

/** Records one send's intent through this instance's batcher (see the module's note): true when recorded. */
export function recordSend(pool: pg.Pool, projectId: string, intent: Intent, at: Date, opts: { refuseHeld?: boolean } = {}): Promise<boolean> {
  let batcher = batchers.get(pool);
  if (!batcher) {
    batcher = new Batcher<SendRecord, boolean>((_group, items) =>
      recordIntents(pool, items[0].projectId, items.map((r) => r.intent), newest(items, (r) => r.at), { refuseHeld: items[0].refuseHeld }));
    batchers.set(pool, batcher);
  }
  const refuseHeld = opts.refuseHeld === true;
  // Sends that refuse a held thread and those that do not are recorded by different statements.
  return batcher.add(`${refuseHeld ? 'h' : '-'}${projectId}`, { projectId, intent, at, refuseHeld });
}
