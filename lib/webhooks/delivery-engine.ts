/**
 * The webhook delivery engine: events → fan-out → attempts → retries.
 *
 * - Fast path (in process): a committed event raises a notification; the listener wakes the
 *   fan-out, which turns undispatched events into delivery rows in one transaction (born claimed
 *   by this instance) and queues their first attempts in the dispatcher (fair, bounded
 *   concurrency per registration). Outcomes are written in batches.
 * - Retries are durable: the retries of a batch are handed to `scheduleRetry` at their backoff
 *   time (grouped per `retryBucketMs`), carrying ids only; the job runner calls `retry()` then.
 * - `sweep()` (one runner at a time, every `sweepEveryMs`) is the safety net: it fans out events
 *   whose notification was missed, retakes deliveries whose timer or claim was lost (a crash, a
 *   full queue) once overdue by `overdueGraceMs`, prunes the delivery log, and deletes events
 *   older than `eventRetentionMs` (7 days).
 * The database rows are the truth; every path claims before it queues, so a delivery is never
 * attempted twice at once, and an event accepted before a crash is delivered after it. A claim
 * counts the attempt (claims.ts): a crash cannot give a receiver a sixth attempt, and a graceful
 * stop gives back the claims it has not posted, due at once. At start, overdue deliveries are
 * retaken at once (no grace): nothing of this instance can hold them yet.
 *
 * The engine knows no job runner: jobs/webhook-delivery.ts wires it to the service's one runner.
 */
import { setMaxListeners } from 'node:events';
import type pg from 'pg';
import type { Deps } from '../deps.js';
import type { Clock } from '../platform/clock.js';
import { EVENTS_CHANNEL, pruneEvents } from './events.js';
import { MAX_ATTEMPTS, type DeliveryPolicy } from './policy.js';
import { Dispatcher } from './dispatcher.js';
import { AgentPool } from './http-post.js';
import { attemptDelivery, type AttemptInfo, type DeliveryItem } from './attempt.js';
import { OutcomeWriter } from './outcomes.js';
import { fanOutBatch } from './fanout.js';
import { cancelIfOrphaned, claimDeliveries, extendClaims, overdueDeliveries, pruneLog, releaseClaims, type ClaimedDelivery, type RecordedOutcome } from './store.js';
import { interruptedOutcome } from './claims.js';
import { listen, type Listener } from '../platform/db/notifications.js';
import { WEBHOOK_CHANGES_CHANNEL } from './registrations.js';
import { inTransaction } from '../platform/db/transaction.js';

/** [delivery id, webhook id] pairs. */
export type DeliveryPairs = Array<[string, string]>;

export interface DeliveryEngineContext {
  deps: Pick<Deps, 'clock' | 'logger' | 'secretBox' | 'config'>;
  /** The background pool: a delivery burst cannot starve API requests. */
  pool: pg.Pool;
  policy: DeliveryPolicy;
  /** Wall-clock time for leases and retry times (the job runner's own timers are wall-clock). */
  timer: Clock;
  /** Makes `retry(deliveries)` run at `at`, durably (the job runner). */
  scheduleRetry: (at: Date, deliveries: DeliveryPairs) => Promise<void>;
  /** Observes every attempt (benchmarks, tests). */
  onAttempt?: (info: AttemptInfo) => void;
}

export class WebhookDeliveryEngine {
  readonly policy: DeliveryPolicy;
  private readonly agents = new AgentPool();
  /** Registrations whose delivery log may need pruning. */
  private readonly touched = new Set<string>();
  /** Registration id → when it last changed (timer ms), as announced by PostgreSQL notifications. */
  private readonly changes = new Map<string, number>();
  /** Deliveries attempted here whose outcome is being written. */
  private readonly unsettled = new Set<string>();
  private readonly shutdown = new AbortController();
  private readonly outcomes: OutcomeWriter;
  private readonly dispatcher: Dispatcher<DeliveryItem>;
  private stopped = false;
  private fanning: Promise<void> | undefined;
  private again = false;
  private waitingForRoom = false;
  /** Deliveries per event in the last batch: batches are sized so their deliveries fit the queue. */
  private fanOutRatio = 1;
  private listener: Listener | undefined;

  constructor(private readonly ctx: DeliveryEngineContext) {
    this.policy = ctx.policy;
    setMaxListeners(0, this.shutdown.signal); // one listener per attempt in flight
    this.outcomes = new OutcomeWriter({
      pool: ctx.pool,
      logger: ctx.deps.logger,
      disableAfter: ctx.policy.disableAfterFailedEvents,
      onRetries: (retries) => this.scheduleRetries(retries),
      onCommitted: (recorded, disabled) => {
        for (const r of recorded) if (r.kind !== 'retry') this.touched.add(r.webhookId);
        // Disabled registrations receive nothing further: their queued work is dropped (already canceled in the database).
        for (const webhookId of disabled) this.dispatcher.drop(webhookId);
      },
    });
    this.dispatcher = new Dispatcher<DeliveryItem>({
      perWebhook: ctx.policy.perWebhookConcurrency,
      max: ctx.policy.maxConcurrency,
      maxQueued: ctx.policy.maxQueued,
      onError: (e) => ctx.deps.logger.error('webhook attempt failed unexpectedly', { error: e instanceof Error ? e.stack ?? e.message : String(e) }),
      run: (item) => this.attempt(item),
    });
  }

  stats(): { queued: number; running: number } {
    return this.dispatcher.size;
  }

  /** Fans out undispatched events now. */
  kick(): void {
    if (!this.stopped) void this.fanOut();
  }

  /** Starts listening for committed events and registration changes; overdue deliveries resume at once. */
  async start(): Promise<void> {
    const { pool, deps, timer } = this.ctx;
    this.listener = await listen(pool, {
      [EVENTS_CHANNEL]: () => this.kick(),
      [WEBHOOK_CHANGES_CHANNEL]: (webhookId) => {
        const now = timer.now().getTime();
        if (webhookId) this.changes.set(webhookId, now);
        else for (const lane of this.dispatcher.lanesWithWork()) this.changes.set(lane, now); // missed while reconnecting: re-read all
      },
    }, deps.logger, { name: 'webhook listener' });
    // A stop gave them back or a crash left their claims lapsed.
    void this.retakeOverdue(0).catch((e) => deps.logger.warn('webhook start-up retake failed; the sweep retries', { error: String(e) }));
  }

  /** No new work is taken. */
  async stopIntake(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.listener?.close();
  }

  /**
   * Work in flight finishes (or is cut off) and outcomes are written. Queued claims are given back
   * (their attempts were not made). In-flight attempts get `stopGraceMs` to finish; the rest are
   * cut off and recorded as failed attempts (the receiver may have them), retried on the usual
   * schedule by the next instance.
   */
  async drain(): Promise<void> {
    await this.fanning;
    const { dropped, drained } = this.dispatcher.stop();
    await this.giveBack(dropped.flatMap((d) => (d.claim ? [d.claim] : [])));
    const graceOver = new Promise<void>((r) => setTimeout(r, this.policy.stopGraceMs).unref());
    await Promise.race([drained, graceOver]);
    this.shutdown.abort();
    await drained;
    await this.outcomes.flush();
    this.agents.destroy();
  }

  /**
   * A scheduled retry: one claim for all of them (as many as the queue can take). What does not
   * fit is taken by the sweep once overdue; what another worker holds is left to it.
   */
  async retry(pairs: DeliveryPairs): Promise<void> {
    const { pool, deps, timer } = this.ctx;
    const room = Math.max(0, this.policy.maxQueued - this.load());
    const ids = pairs.slice(0, room).map(([id]) => id);
    const now = timer.now();
    const claims = await claimDeliveries(pool, ids, now, new Date(now.getTime() + this.policy.leaseMs));
    const claimedIds = new Set(claims.map((c) => c.id));
    await this.take(claims);
    await cancelIfOrphaned(pool, ids.filter((id) => !claimedIds.has(id)), deps.clock.now()); // disabled or deleted meanwhile
  }

  /** One sweep: fan-out, claims kept alive, overdue work retaken, the log and old events pruned. */
  async sweep(): Promise<void> {
    if (this.stopped) return;
    // Change marks matter only to claims made before them, which last one lease at most.
    const expired = this.ctx.timer.now().getTime() - this.policy.leaseMs;
    for (const [id, at] of this.changes) if (at < expired) this.changes.delete(id);
    this.kick(); // never waits for a running fan-out, which may go on as long as events keep coming
    await this.keepQueuedClaims();
    await this.retakeOverdue(this.policy.overdueGraceMs);
    // Metered per sweep (rows and time); what is left waits for the next.
    const budget = { rows: this.policy.pruneBudget, until: Date.now() + this.policy.pruneTimeMs };
    await this.pruneLogs(budget);
    await this.pruneOldEvents(budget);
  }

  private load(): number {
    return this.dispatcher.size.queued + this.dispatcher.size.running;
  }

  private async attempt(item: DeliveryItem): Promise<void> {
    const { pool, deps, timer } = this.ctx;
    const attempted = await attemptDelivery(
      {
        pool, clock: deps.clock, timer, secretBox: deps.secretBox, policy: this.policy, agents: this.agents,
        logger: deps.logger, outcomes: this.outcomes,
        allowPrivate: deps.config.devAllowPrivateTargets,
        signal: this.shutdown.signal,
        changes: this.changes,
        onAttempt: this.ctx.onAttempt,
      },
      item,
    );
    if (attempted) {
      // Until its outcome is committed the delivery still looks pending: the sweep must not retake it.
      this.unsettled.add(item.id);
      void attempted.written.catch(() => undefined).finally(() => this.unsettled.delete(item.id));
    }
    if (this.waitingForRoom && this.dispatcher.hasRoom()) {
      this.waitingForRoom = false;
      this.kick();
    }
  }

  private async scheduleRetries(retries: RecordedOutcome[]): Promise<void> {
    const bucketMs = this.policy.retryBucketMs;
    const buckets = new Map<number, DeliveryPairs>();
    for (const r of retries) {
      const due = Math.ceil(r.nextAttemptAt!.getTime() / bucketMs) * bucketMs;
      const bucket = buckets.get(due) ?? [];
      bucket.push([r.deliveryId, r.webhookId]);
      buckets.set(due, bucket);
    }
    for (const [due, deliveries] of buckets) await this.ctx.scheduleRetry(new Date(due), deliveries);
  }

  /** Gives back claims that will not be posted here (uncounted, due at once), and asks a runner to retake them now. */
  private async giveBack(claims: ClaimedDelivery[]): Promise<void> {
    if (claims.length === 0) return;
    const { pool, timer, deps } = this.ctx;
    try {
      const released = await releaseClaims(pool, claims, timer.now());
      const byId = new Map(claims.map((c) => [c.id, c.webhookId]));
      if (released.length > 0) await this.ctx.scheduleRetry(timer.now(), released.map((id) => [id, byId.get(id)!]));
    } catch (e) {
      deps.logger.warn('webhook claims could not be given back; they are retaken after their lease', { error: String(e), count: claims.length });
    }
  }

  /** Queues claimed deliveries; those the queue refuses (stopped, full) are given back at once. */
  private async take(claims: ClaimedDelivery[], force = false): Promise<void> {
    const refused = claims.filter((c) => !this.dispatcher.enqueue({ id: c.id, webhookId: c.webhookId, claim: c }, force));
    await this.giveBack(refused);
  }

  /**
   * Claims pending deliveries overdue by `graceMs` (their timer or claim was lost, or a stop gave
   * them back) and queues them; those whose fifth attempt was interrupted are dropped.
   */
  private async retakeOverdue(graceMs: number): Promise<void> {
    const room = this.policy.maxQueued - this.load();
    if (room <= 0 || this.stopped) return;
    const { pool, deps, timer } = this.ctx;
    const now = timer.now();
    // Ids queued, running or being settled here are ours already (their claims are kept alive): never counted twice.
    const overdue = (await overdueDeliveries(pool, new Date(now.getTime() - graceMs), Math.min(room, 1000)))
      .filter((d) => !this.dispatcher.has(d.id) && !this.unsettled.has(d.id));
    const exhausted = overdue.filter((d) => d.attempts >= MAX_ATTEMPTS);
    const open = overdue.filter((d) => d.attempts < MAX_ATTEMPTS).map((d) => d.id);
    const claims = await claimDeliveries(pool, open, now, new Date(now.getTime() + this.policy.leaseMs));
    await this.take(claims);
    const claimedIds = new Set(claims.map((c) => c.id));
    await cancelIfOrphaned(pool, open.filter((id) => !claimedIds.has(id)), deps.clock.now());
    if (exhausted.length > 0) {
      await cancelIfOrphaned(pool, exhausted.map((d) => d.id), deps.clock.now());
      await this.outcomes.room();
      await Promise.all(exhausted.map((d) => this.outcomes.record(interruptedOutcome(d, deps.clock.now())).catch(() => undefined)));
    }
  }

  /** Extends the leases of queued claims that would lapse before the next sweeps. */
  private async keepQueuedClaims(): Promise<void> {
    const now = this.ctx.timer.now().getTime();
    const soon = now + 2 * this.policy.sweepEveryMs;
    const lapsing = this.dispatcher.waiting().flatMap((i) => (i.claim && i.claim.leaseUntil.getTime() < soon ? [i.claim] : []));
    if (lapsing.length === 0) return;
    const leaseUntil = new Date(now + this.policy.leaseMs);
    const extending = (async () => {
      for (let at = 0; at < lapsing.length; at += 1000) {
        const chunk = lapsing.slice(at, at + 1000);
        const extended = new Set(await extendClaims(this.ctx.pool, chunk, leaseUntil));
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
  }

  private async fanOutLoop(): Promise<void> {
    const { pool, deps, timer } = this.ctx;
    do {
      this.again = false;
      while (!this.stopped) {
        const room = this.policy.maxQueued - this.load();
        if (room <= 0) {
          this.waitingForRoom = true;
          return;
        }
        const limit = Math.max(1, Math.min(this.policy.fanOutBatch, Math.floor(room / this.fanOutRatio)));
        const batch = await fanOutBatch(pool, limit, deps.clock.now(), new Date(timer.now().getTime() + this.policy.leaseMs));
        if (batch.events > 0) this.fanOutRatio = Math.max(1, batch.deliveries.length / batch.events);
        // Already claimed by us: queued even past the bound (by at most one batch).
        await this.take(batch.deliveries, true);
        if (batch.events < limit) break;
      }
    } while (this.again && !this.stopped);
  }

  private fanOut(): Promise<void> {
    if (this.fanning) {
      this.again = true;
      return this.fanning;
    }
    const run: Promise<void> = this.fanOutLoop()
      .catch((e) => {
        this.ctx.deps.logger.error('webhook fan-out failed', { error: e instanceof Error ? e.message : String(e) });
      })
      .finally(() => {
        this.fanning = undefined;
      });
    this.fanning = run;
    return run;
  }

  private async pruneLogs(budget: { rows: number; until: number }): Promise<void> {
    const { pool, deps } = this.ctx;
    for (const webhookId of [...this.touched]) {
      if (budget.rows <= 0 || this.stopped || Date.now() > budget.until) break;
      const chunk = Math.min(budget.rows, 500);
      try {
        const { deliveries } = await inTransaction(pool, (client) => pruneLog(client, webhookId, this.policy.keepDeliveriesPerWebhook, chunk));
        budget.rows -= deliveries;
        if (deliveries < chunk) this.touched.delete(webhookId); // nothing more to prune there
      } catch (e) {
        deps.logger.warn('webhook log pruning failed', { webhook_id: webhookId, error: String(e) });
      }
    }
  }

  private async pruneOldEvents(budget: { rows: number; until: number }): Promise<void> {
    const { pool, deps } = this.ctx;
    const before = new Date(deps.clock.now().getTime() - this.policy.eventRetentionMs);
    while (budget.rows > 0 && !this.stopped && Date.now() <= budget.until) {
      const chunk = Math.min(budget.rows, 2000);
      const deleted = await pruneEvents(pool, before, chunk).catch((e) => {
        deps.logger.warn('event retention: pruning failed', { error: String(e) });
        return 0;
      });
      budget.rows -= deleted;
      if (deleted < chunk) break;
    }
  }
}
