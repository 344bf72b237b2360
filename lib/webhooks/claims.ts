/**
 * Exact attempt counting across crashes (the statements are store.ts's: releaseClaims, extendClaims). An attempt is counted in the database when its delivery
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
import type { Outcome } from './store.js';


export const INTERRUPTED = 'attempt interrupted before its outcome was recorded (crash)';
export const CUT_AT_SHUTDOWN = 'attempt cut off at shutdown (no answer within the grace)';

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
