/**
 * Webhook delivery on the service's one job runner (jobs/index.ts): the engine
 * (lib/webhooks/delivery-engine.ts) does the work; this module gives it its durable timers.
 * - `webhook-retry` jobs carry the ids of deliveries due at the job's time (grouped per `retryBucketMs`);
 * - `webhook-sweep` (one runner at a time, every `sweepEveryMs`) is the engine's safety net.
 * It works on the background pool (its Database built by onPool: `sql` and `pool` both that pool),
 * so a delivery burst cannot starve API requests.
 */
import { systemClock, type Clock } from '../lib/platform/clock.js';
import { deliveryPolicy, type DeliveryPolicy } from '../lib/webhooks/policy.js';
import type { AttemptInfo } from '../lib/webhooks/attempt.js';
import { WebhookDeliveryEngine, type DeliveryPairs } from '../lib/webhooks/delivery-engine.js';
import { onPool, type JobContext, type JobModule } from './context.js';

export const WEBHOOK_RETRY_JOB = 'webhook-retry';
export const WEBHOOK_SWEEP_JOB = 'webhook-sweep';

export interface RetryJobData {
  /** [delivery id, webhook id] pairs due at the job's time. */
  deliveries: DeliveryPairs;
  /** The job's time (ISO): its deliveries fell due within the retry bucket before it (absent in jobs of earlier versions). */
  due?: string;
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
  const engine = new WebhookDeliveryEngine({
    deps,
    db: onPool(deps.db, pool),
    policy: deliveryPolicy(opts.policy),
    timer: opts.timer ?? systemClock,
    onAttempt: opts.onAttempt,
    scheduleRetry: (at, deliveries) => runner.schedule<RetryJobData>(at, WEBHOOK_RETRY_JOB, { deliveries, due: at.toISOString() }),
  });
  runner.define<RetryJobData>(WEBHOOK_RETRY_JOB, (data) => engine.retry(data?.deliveries ?? [], data?.due ? new Date(data.due) : undefined), { concurrency: 20 });
  runner.define(WEBHOOK_SWEEP_JOB, async () => {
    await engine.sweep().catch((e) => deps.logger.error('webhook sweep failed', { error: e instanceof Error ? e.message : String(e) }));
  }, { concurrency: 1, removeOnComplete: false });

  return {
    policy: engine.policy,
    kick: () => engine.kick(),
    sweep: () => engine.sweep(),
    stats: () => engine.stats(),
    /** After the runner started: the periodic sweep and the notifications that wake the fan-out. */
    async start() {
      await runner.every(engine.policy.sweepEveryMs, WEBHOOK_SWEEP_JOB);
      await engine.start();
    },
    /** Before the runner stops: no new work is taken. */
    stopIntake: () => engine.stopIntake(),
    /** After the runner stopped: work in flight finishes (or is cut off) and outcomes are written. */
    drain: () => engine.drain(),
  };
}
