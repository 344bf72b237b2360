/**
 * Webhook delivery, wired: events → fan-out → attempts → retries.
 *
 * - Fast path (in process): a committed event raises a notification; the listener wakes the
 *   fan-out, which turns undispatched events into delivery rows in one transaction (born claimed
 *   by this instance) and queues their first attempts in the dispatcher (fair, bounded
 *   concurrency per registration). Outcomes are written in batches.
 * - Retries ride on the job runner (Agenda, durable): the retries of a batch are scheduled as
 *   `webhook-retry` jobs at their backoff time (grouped per `retryBucketMs`), carrying ids only.
 * - The `webhook-sweep` job (one runner at a time, every `sweepEveryMs`) is the safety net: it
 *   fans out events whose notification was missed, retakes deliveries whose timer or claim was
 *   lost (a crash, a full queue) once overdue by `overdueGraceMs`, prunes the delivery log, and
 *   deletes events older than `eventRetentionMs` (7 days).
 * The database rows are the truth; every path claims before it queues, so a delivery is never
 * attempted twice at once, and an event accepted before a crash is delivered after it. A claim
 * counts the attempt (lib/webhooks/claims.ts): a crash cannot give a receiver a sixth attempt, and
 * a graceful stop gives back the claims it has not posted, due at once. At start, overdue
 * deliveries are retaken at once (no grace): nothing of this instance can hold them yet.
 *
 * It registers itself on the service's one job runner (jobs/index.ts) and works on the background
 * pool, so a delivery burst cannot starve API requests.
 */
import { setMaxListeners } from 'node:events';
import { systemClock, type Clock } from '../lib/platform/clock.js';
import { EVENTS_CHANNEL } from '../lib/webhooks/events.js';
import { deliveryPolicy, type DeliveryPolicy } from '../lib/webhooks/policy.js';
import { Dispatcher } from '../lib/webhooks/dispatcher.js';
import { AgentPool } from '../lib/webhooks/http-post.js';
import { attemptDelivery, type AttemptInfo, type DeliveryItem } from '../lib/webhooks/attempt.js';
import { OutcomeWriter } from '../lib/webhooks/outcomes.js';
import { fanOutBatch } from '../lib/webhooks/fanout.js';
import { cancelIfOrphaned, claimDeliveries, overdueDeliveries, pruneEvents, pruneLog, type ClaimedDelivery, type RecordedOutcome } from '../lib/webhooks/store.js';
import { extendClaims, interruptedOutcome, releaseClaims } from '../lib/webhooks/claims.js';
import { MAX_ATTEMPTS } from '../lib/webhooks/policy.js';
import { listen, type Listener } from '../lib/webhooks/listener.js';
import { WEBHOOK_CHANGES_CHANNEL } from '../lib/webhooks/registrations.js';
import type { JobContext, JobModule } from './context.js';

export const WEBHOOK_RETRY_JOB = 'webhook-retry';
export const WEBHOOK_SWEEP_JOB = 'webhook-sweep';

export interface RetryJobData {
  /** [delivery id, webhook id] pairs due at the job's time. */
  deliveries: Array<[string, string]>;
}

export interface WebhookDeliveryOptions {
  /** Overrides of the delivery policy; `scale` shortens the retry schedule keeping its ratios. */
  policy?: Partial<DeliveryPolicy> & { scale?: number };
  /** Wall-clock time for leases and retry times (the job runner's own timers are wall-clock). */
  timer?: Clock;
  /** Observes every attempt (benchmarks, tests). */
  onAttempt?: (info: AttemptInfo) => void;
}

export interface WebhookDelivery {
  readonly policy: DeliveryPolicy;
  /** Fans out undispatched events now. */
  kick(): void;
  /** One sweep now (what the periodic job does). */
  sweep(): Promise<void>;
  stats(): { queued: number; running: number };
}

/** Defines the delivery jobs on the runner; the returned module starts and stops with it. */
export function registerWebhookDelivery(ctx: JobContext, opts: WebhookDeliveryOptions = {}): WebhookDelivery & JobModule {
  const { deps, runner, pool } = ctx;
  const policy = deliveryPolicy(opts.policy);
  const timer = opts.timer ?? systemClock;
  const { logger } = deps;
  const agents = new AgentPool();
  const touched = new Set<string>();
  /** Registration id → when it last changed (timer ms), as announced by PostgreSQL notifications. */
  const changes = new Map<string, number>();
  /** Deliveries attempted here whose outcome is being written. */
  const unsettled = new Set<string>();
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal); // one listener per attempt in flight
  let stopped = false;
  let fanning: Promise<void> | undefined;
  let again = false;
  let waitingForRoom = false;

  const scheduleRetries = async (retries: RecordedOutcome[]) => {
    const buckets = new Map<number, Array<[string, string]>>();
    for (const r of retries) {
      const due = Math.ceil(r.nextAttemptAt!.getTime() / policy.retryBucketMs) * policy.retryBucketMs;
      const bucket = buckets.get(due) ?? [];
      bucket.push([r.deliveryId, r.webhookId]);
      buckets.set(due, bucket);
    }
    for (const [due, deliveries] of buckets) await runner.schedule<RetryJobData>(new Date(due), WEBHOOK_RETRY_JOB, { deliveries });
  };

  const outcomes = new OutcomeWriter({
    pool,
    logger,
    disableAfter: policy.disableAfterFailedEvents,
    onRetries: scheduleRetries,
    onCommitted: (recorded, disabled) => {
      for (const r of recorded) if (r.kind !== 'retry') touched.add(r.webhookId);
      // Disabled registrations receive nothing further: their queued work is dropped (already canceled in the database).
      for (const webhookId of disabled) dispatcher.drop(webhookId);
    },
  });

  const dispatcher: Dispatcher<DeliveryItem> = new Dispatcher<DeliveryItem>({
    perWebhook: policy.perWebhookConcurrency,
    max: policy.maxConcurrency,
    maxQueued: policy.maxQueued,
    onError: (e) => logger.error('webhook attempt failed unexpectedly', { error: e instanceof Error ? e.stack ?? e.message : String(e) }),
    run: async (item) => {
      const attempted = await attemptDelivery(
        {
          pool, clock: deps.clock, timer, secretBox: deps.secretBox, policy, agents, logger, outcomes,
          allowPrivate: deps.config.devAllowPrivateTargets,
          signal: shutdown.signal,
          changes,
          onAttempt: opts.onAttempt,
        },
        item,
      );
      if (attempted) {
        // Until its outcome is committed the delivery still looks pending: the sweep must not retake it.
        unsettled.add(item.id);
        void attempted.written.catch(() => undefined).finally(() => unsettled.delete(item.id));
      }
      if (waitingForRoom && dispatcher.hasRoom()) {
        waitingForRoom = false;
        kick();
      }
    },
  });

  /** Gives back claims that will not be posted here (uncounted, due at once), and asks a runner to retake them now. */
  const giveBack = async (claims: ClaimedDelivery[]) => {
    if (claims.length === 0) return;
    try {
      const released = await releaseClaims(pool, claims, timer.now());
      const byId = new Map(claims.map((c) => [c.id, c.webhookId]));
      if (released.length > 0) await runner.schedule<RetryJobData>(timer.now(), WEBHOOK_RETRY_JOB, { deliveries: released.map((id) => [id, byId.get(id)!]) });
    } catch (e) {
      logger.warn('webhook claims could not be given back; they are retaken after their lease', { error: String(e), count: claims.length });
    }
  };

  /** Queues claimed deliveries; those the queue refuses (stopped, full) are given back at once. */
  const take = async (claims: ClaimedDelivery[], force = false) => {
    const refused = claims.filter((c) => !dispatcher.enqueue({ id: c.id, webhookId: c.webhookId, claim: c }, force));
    await giveBack(refused);
  };

  /**
   * Claims pending deliveries overdue by `graceMs` (their timer or claim was lost, or a stop gave
   * them back) and queues them; those whose fifth attempt was interrupted are dropped.
   */
  const retakeOverdue = async (graceMs: number) => {
    const room = policy.maxQueued - (dispatcher.size.queued + dispatcher.size.running);
    if (room <= 0 || stopped) return;
    const now = timer.now();
    // Ids queued, running or being settled here are ours already (their claims are kept alive): never counted twice.
    const overdue = (await overdueDeliveries(pool, new Date(now.getTime() - graceMs), Math.min(room, 1000))).filter((d) => !dispatcher.has(d.id) && !unsettled.has(d.id));
    const exhausted = overdue.filter((d) => d.attempts >= MAX_ATTEMPTS);
    const open = overdue.filter((d) => d.attempts < MAX_ATTEMPTS).map((d) => d.id);
    const claims = await claimDeliveries(pool, open, now, new Date(now.getTime() + policy.leaseMs));
    await take(claims);
    const claimedIds = new Set(claims.map((c) => c.id));
    await cancelIfOrphaned(pool, open.filter((id) => !claimedIds.has(id)), deps.clock.now());
    if (exhausted.length > 0) {
      await cancelIfOrphaned(pool, exhausted.map((d) => d.id), deps.clock.now());
      await outcomes.room();
      await Promise.all(exhausted.map((d) => outcomes.record(interruptedOutcome(d, deps.clock.now())).catch(() => undefined)));
    }
  };

  /** Extends the leases of queued claims that would lapse before the next sweeps. */
  const keepQueuedClaims = async () => {
    const now = timer.now().getTime();
    const soon = now + 2 * policy.sweepEveryMs;
    const lapsing = dispatcher.waiting().flatMap((i) => (i.claim && i.claim.leaseUntil.getTime() < soon ? [i.claim] : []));
    if (lapsing.length === 0) return;
    const leaseUntil = new Date(now + policy.leaseMs);
    const extending = (async () => {
      for (let at = 0; at < lapsing.length; at += 1000) {
        const chunk = lapsing.slice(at, at + 1000);
        const extended = new Set(await extendClaims(pool, chunk, leaseUntil));
        for (const c of chunk) {
          if (!extended.has(c.id)) continue;
          c.leaseUntil = leaseUntil;
          c.extended = true;
        }
      }
    })();
    // An attempt that starts meanwhile waits for this (both would update the same lease).
    for (const c of lapsing) c.extending = extending;
    try {
      await extending;
    } finally {
      for (const c of lapsing) if (c.extending === extending) c.extending = undefined;
    }
  };

  // Deliveries per event in the last batch: batches are sized so their deliveries fit the queue.
  let fanOutRatio = 1;
  const fanOutLoop = async () => {
    do {
      again = false;
      while (!stopped) {
        const room = policy.maxQueued - (dispatcher.size.queued + dispatcher.size.running);
        if (room <= 0) {
          waitingForRoom = true;
          return;
        }
        const limit = Math.max(1, Math.min(policy.fanOutBatch, Math.floor(room / fanOutRatio)));
        const batch = await fanOutBatch(pool, limit, deps.clock.now(), new Date(timer.now().getTime() + policy.leaseMs));
        if (batch.events > 0) fanOutRatio = Math.max(1, batch.deliveries.length / batch.events);
        // Already claimed by us: queued even past the bound (by at most one batch).
        await take(batch.deliveries, true);
        if (batch.events < limit) break;
      }
    } while (again && !stopped);
  };

  const fanOut = (): Promise<void> => {
    if (fanning) {
      again = true;
      return fanning;
    }
    const run: Promise<void> = fanOutLoop()
      .catch((e) => {
        logger.error('webhook fan-out failed', { error: e instanceof Error ? e.message : String(e) });
      })
      .finally(() => {
        fanning = undefined;
      });
    fanning = run;
    return run;
  };
  const kick = () => {
    if (!stopped) void fanOut();
  };

  const sweep = async () => {
    if (stopped) return;
    // Change marks matter only to claims made before them, which last one lease at most.
    const expired = timer.now().getTime() - policy.leaseMs;
    for (const [id, at] of changes) if (at < expired) changes.delete(id);
    kick(); // never waits for a running fan-out, which may go on as long as events keep coming
    await keepQueuedClaims();
    await retakeOverdue(policy.overdueGraceMs);
    // The log is pruned a metered amount per sweep (rows and time); what is left waits for the next.
    let budget = policy.pruneBudget;
    const until = Date.now() + policy.pruneTimeMs;
    for (const webhookId of [...touched]) {
      if (budget <= 0 || stopped || Date.now() > until) break;
      const chunk = Math.min(budget, 500);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { deliveries } = await pruneLog(client, webhookId, policy.keepDeliveriesPerWebhook, chunk);
        await client.query('COMMIT');
        budget -= deliveries;
        if (deliveries < chunk) touched.delete(webhookId); // nothing more to prune there
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        logger.warn('webhook log pruning failed', { webhook_id: webhookId, error: String(e) });
      } finally {
        client.release();
      }
    }
    // Events past their retention go the same metered way.
    const before = new Date(deps.clock.now().getTime() - policy.eventRetentionMs);
    while (budget > 0 && !stopped && Date.now() <= until) {
      const chunk = Math.min(budget, 2000);
      const deleted = await pruneEvents(pool, before, chunk).catch((e) => {
        logger.warn('event retention: pruning failed', { error: String(e) });
        return 0;
      });
      budget -= deleted;
      if (deleted < chunk) break;
    }
  };

  runner.define<RetryJobData>(WEBHOOK_RETRY_JOB, async (data) => {
    // One claim for the whole job (as many as the queue can take). What does not fit is taken by
    // the sweep once overdue; what another worker holds is left to it.
    const pairs = data?.deliveries ?? [];
    const room = Math.max(0, policy.maxQueued - (dispatcher.size.queued + dispatcher.size.running));
    const now = timer.now();
    const claims = await claimDeliveries(pool, pairs.slice(0, room).map(([id]) => id), now, new Date(now.getTime() + policy.leaseMs));
    const claimedIds = new Set(claims.map((c) => c.id));
    await take(claims);
    const unclaimed = pairs.slice(0, room).map(([id]) => id).filter((id) => !claimedIds.has(id));
    await cancelIfOrphaned(pool, unclaimed, deps.clock.now()); // their registration was disabled or deleted meanwhile
  }, { concurrency: 20 });
  runner.define(WEBHOOK_SWEEP_JOB, async () => {
    await sweep().catch((e) => logger.error('webhook sweep failed', { error: e instanceof Error ? e.message : String(e) }));
  }, { concurrency: 1, removeOnComplete: false });

  let listener: Listener | undefined;

  return {
    policy,
    kick,
    sweep,
    stats: () => dispatcher.size,
    /** After the runner started: the periodic sweep and the notifications that wake the fan-out. */
    async start() {
      await runner.every(policy.sweepEveryMs, WEBHOOK_SWEEP_JOB);
      listener = await listen(pool, {
        [EVENTS_CHANNEL]: kick,
        [WEBHOOK_CHANGES_CHANNEL]: (webhookId) => {
          const now = timer.now().getTime();
          if (webhookId) changes.set(webhookId, now);
          else for (const lane of dispatcher.lanesWithWork()) changes.set(lane, now); // missed while reconnecting: re-read all
        },
      }, logger);
      // Overdue deliveries resume at once: a stop gave them back or a crash left their claims lapsed.
      void retakeOverdue(0).catch((e) => logger.warn('webhook start-up retake failed; the sweep retries', { error: String(e) }));
    },
    /** Before the runner stops: no new work is taken. */
    async stopIntake() {
      if (stopped) return;
      stopped = true;
      await listener?.close();
    },
    /** After the runner stopped: work in flight finishes (or is cut off) and outcomes are written. */
    async drain() {
      await fanning;
      // Queued claims are given back (their attempts were not made). In-flight attempts get
      // `stopGraceMs` to finish; the rest are cut off and recorded as failed attempts (the
      // receiver may have them), retried on the usual schedule by the next instance.
      const { dropped, drained } = dispatcher.stop();
      await giveBack(dropped.flatMap((d) => (d.claim ? [d.claim] : [])));
      const graceOver = new Promise<void>((r) => setTimeout(r, policy.stopGraceMs).unref());
      await Promise.race([drained, graceOver]);
      shutdown.abort();
      await drained;
      await outcomes.flush();
      agents.destroy();
    },
  };
}
