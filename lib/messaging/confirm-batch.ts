/**
 * Confirms of accepted sends, batched per project: while one confirm statement of this instance is
 * in flight, the sends that finish meanwhile wait and then go in one statement together. Each
 * statement is a round trip, and on this kind of machine the socket write of a round trip is the
 * largest single cost of a send (scripts/bench: a CPU profile put a third of the service's busy
 * time in writev, most of it under pg's query submit). A send still answers only once its own
 * confirm (ledger.ts) has committed, so a read of the message right after the answer finds its wamid; alone,
 * a send pays what it did before (one statement).
 */
import type { Tx } from '../platform/db/tx.js';
import { confirmIntents } from './ledger.js';
import { Batcher } from '../platform/batcher.js';

interface Accepted {
  ref: string;
  wamid: string;
  at: Date;
  /** The send's Idempotency-Key and the answer stored for it (JSON), written by the confirm. */
  key?: string;
  answer?: string;
}

const batchers = new WeakMap<Tx, Batcher<Accepted, void>>();

/**
 * Confirms one accepted send through this instance's batcher (see the module's note); with `keyed`,
 * the send's Idempotency-Key is answered in the same statement.
 */
export function confirmSends(db: Tx, projectId: string, ref: string, wamid: string, at: Date, keyed?: { key: string; answer: string }): Promise<void> {
  let batcher = batchers.get(db);
  if (!batcher) {
    batcher = new Batcher<Accepted, void>(async (project, items) => {
      await confirmIntents(db, project, items);
      return items.map(() => undefined);
    });
    batchers.set(db, batcher);
  }
  return batcher.add(projectId, { ref, wamid, at, key: keyed?.key, answer: keyed?.answer });
}
