/**
 * The delivery policy as data (the spec's retry and disable rules, plus the bounds that keep one
 * bad receiver from hurting the others):
 *
 * - 5 attempts in total; after a failed attempt the next one waits about 5, 10, 20, 40 seconds
 *   (±10% jitter, so a burst of failures does not retry in lockstep); after the fifth failure the
 *   event is dropped for that registration.
 * - An attempt succeeds on a 2xx only; it is cut at 10 seconds.
 * - 10 consecutive failed events disable the registration.
 * - At most `perWebhookConcurrency` attempts run at once per registration and `maxConcurrency`
 *   overall; at most `maxQueued` deliveries wait in memory (the rest wait in the database).
 * - Response bodies are discarded and never read beyond `responseBodyCap` bytes.
 *
 * Tests shorten the schedule with `scale` (ratios kept) instead of sleeping through it.
 */
export const MAX_ATTEMPTS = 5;
export const RETRY_DELAYS_MS = [5_000, 10_000, 20_000, 40_000] as const;
export const ATTEMPT_TIMEOUT_MS = 10_000;
export const DISABLE_AFTER_FAILED_EVENTS = 10;

export interface DeliveryPolicy {
  /** Waits before attempts 2..5 (length MAX_ATTEMPTS - 1). */
  retryDelaysMs: number[];
  /** Relative jitter applied to each wait (0.1 = ±10%). */
  jitter: number;
  /** Hard deadline of one attempt, DNS and body included. */
  attemptTimeoutMs: number;
  disableAfterFailedEvents: number;
  perWebhookConcurrency: number;
  maxConcurrency: number;
  maxQueued: number;
  responseBodyCap: number;
  /** An attempt in flight holds its delivery this long; a crashed instance's deliveries are retaken after it. */
  leaseMs: number;
  /** A pending delivery this overdue is taken by the sweep (its timer was lost, e.g. in a crash). */
  overdueGraceMs: number;
  /** How often the sweep runs (catch-up fan-out, overdue deliveries, log pruning). */
  sweepEveryMs: number;
  /** Completed deliveries kept per registration for the operators' log (pending ones are always kept). */
  keepDeliveriesPerWebhook: number;
  /** Deliveries the sweep may delete from the log per run, and for how long it may try. */
  pruneBudget: number;
  pruneTimeMs: number;
  /** Events (the outbox) are kept this long after their fan-out, then deleted by the sweep. */
  eventRetentionMs: number;
  /** Events fanned out per transaction. */
  fanOutBatch: number;
  /**
   * Retries due within this window are scheduled as one job (rounded up: never early, at most this
   * late), gathered for as long before it is scheduled (retry-buckets.ts), off the outcome
   * writer's path (issue 69). 1 s buckets made fewer jobs but were no faster overall in the bench,
   * and retry a little later (docs/benchmarks.md, Issue 69, third round).
   */
  retryBucketMs: number;
  /** At shutdown, how long attempts in flight may take to finish before they are cut off. */
  stopGraceMs: number;
  /**
   * A registration's claims held here beyond its running attempts: about this long of its recent
   * throughput (at least `perWebhookConcurrency`, at most `maxLaneAhead`), so a claim starts well
   * within its lease and needs no extension; the rest waits in the database, due, and is claimed in
   * batches (claimDue) as the registration's queue empties.
   */
  laneAheadMs: number;
  maxLaneAhead: number;
}

export function deliveryPolicy(overrides: Partial<DeliveryPolicy> & { scale?: number } = {}): DeliveryPolicy {
  const { scale = 1, ...rest } = overrides;
  const policy: DeliveryPolicy = {
    retryDelaysMs: RETRY_DELAYS_MS.map((ms) => Math.round(ms * scale)),
    jitter: 0.1,
    attemptTimeoutMs: ATTEMPT_TIMEOUT_MS,
    disableAfterFailedEvents: DISABLE_AFTER_FAILED_EVENTS,
    perWebhookConcurrency: 16,
    maxConcurrency: 512,
    maxQueued: 20_000,
    responseBodyCap: 64 * 1024,
    leaseMs: ATTEMPT_TIMEOUT_MS + 20_000,
    overdueGraceMs: 15_000,
    sweepEveryMs: 15_000,
    keepDeliveriesPerWebhook: 200,
    pruneBudget: 20_000,
    pruneTimeMs: 2000,
    eventRetentionMs: 7 * 24 * 3600 * 1000,
    fanOutBatch: 500,
    retryBucketMs: 250,
    stopGraceMs: 3000,
    laneAheadMs: 3000,
    maxLaneAhead: 2000,
    ...rest,
  };
  if (policy.retryDelaysMs.length !== MAX_ATTEMPTS - 1) {
    throw new Error(`Webhook policy: retryDelaysMs needs ${MAX_ATTEMPTS - 1} entries (${MAX_ATTEMPTS} attempts in total)`);
  }
  if (policy.leaseMs <= policy.attemptTimeoutMs + 2000) throw new Error('Webhook policy: leaseMs must exceed attemptTimeoutMs by 2 s or more');
  return policy;
}

/** The wait before the attempt after `attemptsDone` failed ones, or null when the event is dropped. */
export function retryDelayMs(policy: DeliveryPolicy, attemptsDone: number, random: () => number = Math.random): number | null {
  if (attemptsDone >= MAX_ATTEMPTS) return null;
  const base = policy.retryDelaysMs[attemptsDone - 1];
  if (base === undefined) return null;
  return Math.max(0, Math.round(base * (1 + policy.jitter * (2 * random() - 1))));
}
