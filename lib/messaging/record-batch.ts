/**
 * Records of sends, batched per project (issue 62): while one `record-intent` statement of this
 * instance is in flight for a project, the sends that reach their record meanwhile wait, then go
 * in one statement together (recordIntents takes any number of intents; the broadcast engine
 * records its batches so). Each statement is a round trip whose socket write is the largest single
 * cost of a send on these machines (scripts/bench: pg's query submit was a sixth of the service's
 * busy time); the quota unit is taken in the same statement (issue 69: one round trip fewer a
 * send), and the confirm (confirm-batch.ts) is batched the same way. A send alone pays one
 * statement, right away.
 *
 * Each send keeps its own answer (recorded, the window closed or thread held, or past the quota); a failed
 * statement fails the sends that were in it, and each withdraws its own reference as before. The
 * batch is recorded at the newest `at` of its sends (a waiting send's time moves forward by at most
 * one statement's duration; its window is judged then, never earlier).
 */
import type { Tx } from '../platform/db/tx.js';
import { reserveAndRecord, type Intent, type RecordOutcome } from './ledger.js';
import { Batcher, newest } from '../platform/batcher.js';

interface SendRecord {
  projectId: string;
  intent: Intent;
  at: Date;
  refuseHeld: boolean;
}

/** A send's record: what became of it, and the daily quota that applied. */
export interface SendRecorded {
  outcome: RecordOutcome;
  limit: number;
}

const batchers = new WeakMap<Tx, Batcher<SendRecord, SendRecorded>>();

/**
 * Reserves one send's quota unit and records its intent, in one statement shared with the
 * project's other sends waiting meanwhile (see the module's note and reserveAndRecord).
 */
export function recordSend(db: Tx, projectId: string, intent: Intent, at: Date, opts: { refuseHeld?: boolean } = {}): Promise<SendRecorded> {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new Batcher<SendRecord, SendRecorded>(async (_group, items) => {
      const { outcomes, limit } = await reserveAndRecord(db, items[0].projectId, items.map((r) => r.intent), newest(items, (r) => r.at), { refuseHeld: items[0].refuseHeld });
      return outcomes.map((outcome) => ({ outcome, limit }));
    });
    batchers.set(db, batcher);
  }
  const refuseHeld = opts.refuseHeld === true;
  // Sends that refuse a held thread and those that do not are recorded by different statements.
  return batcher.add(`${refuseHeld ? 'h' : '-'}${projectId}`, { projectId, intent, at, refuseHeld });
}
