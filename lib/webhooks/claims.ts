/**
 * Exact attempt counting across crashes. An attempt is counted in the database when its delivery
 * is claimed, before the POST (store.ts: a claim sets `attempts = attempts + 1` and refuses a
 * sixth), so an attempt cut off by a crash, after the POST or before it, still counts and a
 * failing receiver never gets more than the spec's 5 attempts. The two ways a count is settled
 * without an answer from the receiver:
 *
 * - A graceful stop gives back the claims it holds but has not posted (queued, or taken by a job
 *   after the queue stopped): their attempt was never made, so it is uncounted and the delivery is
 *   due again at once, for whichever instance runs next.
 * - A delivery whose fifth attempt was claimed and whose claim lapsed without an outcome (a crash)
 *   is dropped by the sweep like a fifth failure: failed, one more failed event for its
 *   registration, its last attempt logged as interrupted.
 *
 * A claim that waits long in the queue (a slow receiver's backlog) is kept alive by the sweep, and
 * the sweep never retakes an id its own instance holds, so a live instance never counts an attempt
 * twice. What stays conservative: a claim lost to a crash before its POST counts (the receiver then
 * gets 4), as does one that lapses on a stalled instance and is retaken by another.
 */
import type { Queryable } from '../platform/db/transaction.js';
import type { Outcome } from './store.js';


export const INTERRUPTED = 'attempt interrupted before its outcome was recorded (crash)';
export const CUT_AT_SHUTDOWN = 'attempt cut off at shutdown (no answer within the grace)';

/**
 * Gives back claims we hold and will not post: each is uncounted and due at `dueAt`. Only a claim
 * still ours (same lease, still pending) is touched. Returns the ids given back.
 */
export async function releaseClaims(db: Queryable, claims: Array<{ id: string; leaseUntil: Date }>, dueAt: Date): Promise<string[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `UPDATE webhook_deliveries d SET attempts = d.attempts - 1, next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease_until)
      WHERE d.id = c.id AND d.status = 'pending' AND d.next_attempt_at = c.lease_until AND d.attempts > 0
      RETURNING d.id`,
    [claims.map((c) => c.id), claims.map((c) => c.leaseUntil), dueAt],
  );
  return rows.map((r) => r.id);
}

/** The outcome that settles a delivery whose last counted attempt was interrupted by a crash. */
export function interruptedOutcome(d: { id: string; webhookId: string; attempts: number }, at: Date): Outcome {
  return {
    deliveryId: d.id,
    webhookId: d.webhookId,
    attempt: d.attempts,
    kind: 'dropped',
    statusCode: null,
    error: INTERRUPTED,
    durationMs: 0,
    at,
    nextAttemptAt: null,
  };
}

/**
 * Keeps claims alive while their deliveries wait in a long queue (a slow receiver's lane): without
 * it a lapsed claim would be retaken and counted again, unposted. Each claim still ours (same lease)
 * gets `leaseUntil`; returns the ids extended.
 */
export async function extendClaims(db: Queryable, claims: Array<{ id: string; leaseUntil: Date }>, leaseUntil: Date): Promise<string[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease_until)
      WHERE d.id = c.id AND d.status = 'pending' AND d.next_attempt_at = c.lease_until
      RETURNING d.id`,
    [claims.map((c) => c.id), claims.map((c) => c.leaseUntil), leaseUntil],
  );
  return rows.map((r) => r.id);
}
