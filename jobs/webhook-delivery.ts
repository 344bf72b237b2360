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
 * The database rows are the truth; every path goes through a claim, so a delivery is never
 * attempted twice at once, and an event accepted before a crash is delivered after it.
 *
 * Background work gets its own small pool, so a delivery burst cannot starve API requests.
 */
import pg from 'pg';
import { setMaxListeners } from 'node:events';
import type { AppDeps } from '../lib/deps.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { EVENTS_CHANNEL } from '../lib/events.js';
import { deliveryPolicy, type DeliveryPolicy } from '../lib/webhooks/policy.js';
import { Dispatcher } from '../lib/webhooks/dispatcher.js';
import { AgentPool } from '../lib/webhooks/http-post.js';
import { attemptDelivery, type AttemptInfo, type DeliveryItem } from '../lib/webhooks/attempt.js';
import { OutcomeWriter } from '../lib/webhooks/outcomes.js';
import { fanOutBatch } from '../lib/webhooks/fanout.js';
import { cancelIfOrphaned, claimDeliveries, overdueDeliveries, pruneEvents, pruneLog, type RecordedOutcome } from '../lib/webhooks/store.js';
import { listen, type Listener } from '../lib/webhooks/listener.js';
import { WEBHOOK_CHANGES_CHANNEL } from '../lib/webhooks/registrations.js';
import { createJobRunner } from './runner.js';

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
  /** Connections of the background pool (the job runner holds one for LISTEN). */
  poolSize?: number;
  processEveryMs?: number;
  lockLifetimeMs?: number;
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
  stop(): Promise<void>;
}

type Deps = Pick<AppDeps, 'db' | 'clock' | 'logger' | 'secretBox' | 'config'>;

export async function startWebhookDelivery(deps: Deps, opts: WebhookDeliveryOptions = {}): Promise<WebhookDelivery> {
  const policy = deliveryPolicy(opts.policy);
  const timer = opts.timer ?? systemClock;
  const { logger } = deps;
  const pool = new pg.Pool({ ...(deps.db.pool as unknown as { options: pg.PoolConfig }).options, max: opts.poolSize ?? 10 });
  pool.on('error', (e) => logger.warn('webhook pool: idle connection error', { error: e.message }));
  // Held clients too: a reset between two queries must not be an unheard 'error' event.
  pool.on('connect', (client) => client.on('error', (e) => logger.warn('webhook pool: connection lost while in use', { error: e.message })));
  const agents = new AgentPool();
  const runner = createJobRunner({ pool, logger, processEveryMs: opts.processEveryMs, lockLifetimeMs: opts.lockLifetimeMs, name: `webhooks-${process.pid}` });
  const touched = new Set<string>();
  /** Registration id → when it last changed (timer ms), as announced by PostgreSQL notifications. */
  const changes = new Map<string, number>();
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
      await attemptDelivery(
        {
          pool, clock: deps.clock, timer, secretBox: deps.secretBox, policy, agents, logger, outcomes,
          allowPrivate: deps.config.devAllowPrivateTargets,
          signal: shutdown.signal,
          changes,
          onAttempt: opts.onAttempt,
        },
        item,
      );
      if (waitingForRoom && dispatcher.hasRoom()) {
        waitingForRoom = false;
        kick();
      }
    },
  });

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
        for (const d of batch.deliveries) dispatcher.enqueue({ id: d.id, webhookId: d.webhookId, claim: d }, true);
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
    const room = policy.maxQueued - (dispatcher.size.queued + dispatcher.size.running);
    if (room > 0) {
      const overdue = await overdueDeliveries(pool, new Date(timer.now().getTime() - policy.overdueGraceMs), Math.min(room, 1000));
      for (const d of overdue) dispatcher.enqueue(d);
    }
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
    for (const c of claims) dispatcher.enqueue({ id: c.id, webhookId: c.webhookId, claim: c });
    const unclaimed = pairs.slice(0, room).map(([id]) => id).filter((id) => !claimedIds.has(id));
    await cancelIfOrphaned(pool, unclaimed, deps.clock.now()); // their registration was disabled or deleted meanwhile
  }, { concurrency: 20 });
  runner.define(WEBHOOK_SWEEP_JOB, async () => {
    await sweep().catch((e) => logger.error('webhook sweep failed', { error: e instanceof Error ? e.message : String(e) }));
  }, { concurrency: 1, removeOnComplete: false });

  let listener: Listener | undefined;
  try {
    await runner.start();
    await runner.every(policy.sweepEveryMs, WEBHOOK_SWEEP_JOB);
    listener = await listen(pool, {
      [EVENTS_CHANNEL]: kick,
      [WEBHOOK_CHANGES_CHANNEL]: (webhookId) => {
        const now = timer.now().getTime();
        if (webhookId) changes.set(webhookId, now);
        else for (const lane of dispatcher.lanesWithWork()) changes.set(lane, now); // missed while reconnecting: re-read all
      },
    }, logger);
  } catch (e) {
    await runner.stop().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw e;
  }

  return {
    policy,
    kick,
    sweep,
    stats: () => dispatcher.size,
    async stop() {
      if (stopped) return;
      stopped = true;
      await listener?.close();
      await runner.stop().catch((e) => logger.warn('job runner stop failed', { error: String(e) }));
      await fanning;
      // In-flight attempts get `stopGraceMs` to finish and their outcomes are written; the rest are
      // cut off unrecorded, and, like queued ones, stay claimed or pending for the next instance.
      const drained = dispatcher.stop();
      const graceOver = new Promise<void>((r) => setTimeout(r, policy.stopGraceMs).unref());
      await Promise.race([drained, graceOver]);
      shutdown.abort();
      await drained;
      await outcomes.flush();
      agents.destroy();
      await pool.end().catch(() => undefined);
    },
  };
}
