/**
 * Fan-out: each event of the outbox not yet dispatched becomes one delivery per active
 * registration of its project subscribed to exactly that name, each with its own id (the id the
 * receiver sees; retries reuse it). The deliveries are written in the transaction that marks the
 * events dispatched, so an event is fanned out exactly once even with several instances
 * (`FOR UPDATE SKIP LOCKED`) or a crash halfway. Registrations made or re-enabled after the event
 * do not receive it. A delivery is born claimed by the caller when `admit` says its registration
 * has room there, else parked (due, unclaimed) for claimDue (delivery-engine.ts).
 */
import { inTransaction } from '../platform/db/transaction.js';
import type { Database } from '../platform/db/database.js';
import { newId } from '../platform/secrets.js';
import { takeEventsForFanOut } from './events.js';
import { insertClaimedDeliveries, type ClaimedDelivery } from './store.js';

export interface FanOutResult {
  events: number;
  /** The new deliveries, already claimed by the caller until `leaseUntil` (ready for their first attempt). */
  deliveries: ClaimedDelivery[];
  /** Registrations given parked deliveries (written due, unclaimed: claimDue takes them when there is room). */
  parked: Set<string>;
}

export interface FanOutOptions {
  /** Whether a new delivery of this registration is born claimed (true) or parked; all are claimed when absent. */
  admit?: (webhookId: string) => boolean;
  /** When parked deliveries are due (wall-clock time, as leases): now. */
  dueAt?: Date;
}

/**
 * Fans out up to `limit` events, oldest first. `now` stamps `dispatched_at` and the deliveries'
 * `created_at`. The deliveries are born claimed by the caller until `leaseUntil`, their first
 * attempt already counted (attempts = 1), so it needs no claim of its own; if the caller dies, the
 * sweep retakes them after the lease (for their second attempt). `db` names its pool only to open
 * the transaction; both statements run on its handle.
 */
export async function fanOutBatch(db: Pick<Database, 'pool'>, limit: number, now: Date, leaseUntil: Date, opts: FanOutOptions = {}): Promise<FanOutResult> {
  return inTransaction(db.pool, async (client) => {
    const rows = await takeEventsForFanOut(client, limit, now);
    const events = rows[0]?.events ?? 0;
    // Oldest events first, so a registration's claimed deliveries precede its parked ones.
    const pairs = rows
      .filter((r) => r.event_id !== null)
      .sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.event_id! < b.event_id! ? -1 : a.event_id! > b.event_id! ? 1 : 0));
    const parked = new Set<string>();
    if (pairs.length === 0) return { events, deliveries: [], parked };
    const ids = pairs.map(() => newId('dlv', 24));
    const claimed = pairs.map((p) => (opts.admit ? opts.admit(p.webhook_id) : true));
    const written = await insertClaimedDeliveries(
      client,
      pairs.map((p, i) => ({ id: ids[i], projectId: p.project_id, webhookId: p.webhook_id, eventId: p.event_id!, event: p.name, claimed: claimed[i] })),
      leaseUntil,
      now,
      opts.dueAt ?? now,
    );
    const deliveries = pairs.flatMap((p, i) => {
      if (!written.has(ids[i])) return [];
      if (!claimed[i]) {
        parked.add(p.webhook_id);
        return [];
      }
      return [{ id: ids[i], webhookId: p.webhook_id, attempt: 1, event: p.name, url: p.url, secretEnc: p.secret_enc, dataJson: p.data_json, eventCreatedAt: p.created_at, leaseUntil }];
    });
    return { events, deliveries, parked };
  });
}
