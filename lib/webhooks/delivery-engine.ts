/**
 * The webhook delivery engine: events → fan-out → attempts → retries.
 *
 * - Fast path (in process): a committed event raises a notification; the listener wakes the
 *   fan-out, which turns undispatched events into delivery rows in one transaction and queues
 *   their first attempts in the dispatcher (fair, bounded concurrency per registration).
 *   Outcomes are written in batches.
 * - Claims only for what starts soon (issue 62): a registration holds claims here for its
 *   running attempts plus about `laneAheadMs` of its recent throughput (`laneCap`). Within that
 *   its new deliveries are born claimed; beyond it they are written parked (pending, due, nothing
 *   counted) and the registration is marked; as its queue empties, the due work of the marked
 *   registrations is claimed in one statement for all of them (store.ts claimDue, on the index of
 *   due deliveries), oldest first. A queued claim thus starts well within its lease: no claim per
 *   delivery and, but for a receiver that slows down suddenly, no extension.
 * - Retries are durable: they are pending and due in the database, and handed to `scheduleRetry`
 *   at their backoff time, gathered per `retryBucketMs` for as long again (retry-buckets.ts: one
 *   job per bucket, not per failed attempt), carrying ids only; the job runner calls `retry()`
 *   then, which marks their registrations and claims their due work as above.
 * - `sweep()` (one runner at a time, every `sweepEveryMs`) is the safety net: it fans out events
 *   whose notification was missed, finds the registrations with work overdue by `overdueGraceMs`
 *   (a lost timer or claim: a crash, another instance's parked work) and claims it as above,
 *   extends the few queued claims that would lapse, prunes the delivery log, and deletes events
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
import type { Deps } from '../deps.js';
import type { Clock } from '../platform/clock.js';
import { EVENTS_CHANNEL, pruneEvents } from './events.js';
import type { DeliveryPolicy } from './policy.js';
import { Dispatcher } from './dispatcher.js';
import { AgentPool } from './http-post.js';
import { attemptDelivery, type AttemptInfo, type DeliveryItem } from './attempt.js';
import { OutcomeWriter } from './outcomes.js';
import { RetryBuckets, type DeliveryPairs } from './retry-buckets.js';
import { fanOutBatch } from './fanout.js';
import { cancelIfOrphaned, claimDue, extendClaims, interruptedLastAttempts, lanesWithDue, pruneLog, releaseClaims, type ClaimedDelivery } from './store.js';
import { interruptedOutcome } from './claims.js';
import { listen, type Listener } from '../platform/db/notifications.js';
import { WEBHOOK_CHANGES_CHANNEL } from './registrations.js';
import { inTransaction } from '../platform/db/transaction.js';
import type { Database } from '../platform/db/database.js';

export type { DeliveryPairs };

export interface DeliveryEngineContext {
  deps: Pick<Deps, 'clock' | 'logger' | 'secretBox' | 'config'>;
  /**
   * The background pool's Database (jobs/context.ts onPool), so a delivery burst cannot starve API
   * requests: statements run on its handle (`sql`); `pool` is named only to open a transaction
   * (fan-out, outcomes, pruning) and for the listener's connection settings.
   */
  db: Pick<Database, 'pool' | 'sql'>;
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
  private readonly retryBuckets: RetryBuckets;
  private readonly dispatcher: Dispatcher<DeliveryItem>;
  private stopped = false;
  private fanning: Promise<void> | undefined;
  private again = false;
  private waitingForRoom = false;
  /** Deliveries per event in the last batch: batches are sized so their deliveries fit the queue. */
  private fanOutRatio = 1;
  /** Registrations with due deliveries waiting in the database (parked), each with a mark that changes whenever more are parked. */
  private readonly parked = new Map<string, number>();
  private parkSeq = 0;
  private pulling: Promise<void> | undefined;
  private pullAgain = false;
  private pullScheduled = false;
  private sweeps = 0;
  /** Per parked registration, the due time its scan of due deliveries starts from (claimDue's `from`); none: from the start. */
  private readonly cursors = new Map<string, Date>();
  /** Bumped whenever a registration's scan start moves back (a pull in flight then leaves it there). */
  private readonly cursorEpochs = new Map<string, number>();
  /** Each registration's recent throughput here (attempts per second), measured over windows of about a second. */
  private readonly laneRates = new Map<string, { count: number; since: number; rate: number }>();
  private listener: Listener | undefined;

  constructor(private readonly ctx: DeliveryEngineContext) {
    this.policy = ctx.policy;
    setMaxListeners(0, this.shutdown.signal); // one listener per attempt in flight
    this.retryBuckets = new RetryBuckets({
      bucketMs: ctx.policy.retryBucketMs,
      holdMs: ctx.policy.retryBucketMs,
      now: () => ctx.timer.now().getTime(),
      schedule: ctx.scheduleRetry,
      onError: (e, count) => ctx.deps.logger.warn('could not schedule webhook retries; the sweep will pick them up', { error: String(e), count }),
    });
    this.outcomes = new OutcomeWriter({
      db: ctx.db,
      logger: ctx.deps.logger,
      disableAfter: ctx.policy.disableAfterFailedEvents,
      onRetries: (retries) => this.retryBuckets.add(retries),
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
    const { db, deps, timer } = this.ctx;
    this.listener = await listen(db.pool, {
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
    await this.pulling;
    const { dropped, drained } = this.dispatcher.stop();
    await this.giveBack(dropped.flatMap((d) => (d.claim ? [d.claim] : [])));
    const graceOver = new Promise<void>((r) => setTimeout(r, this.policy.stopGraceMs).unref());
    await Promise.race([drained, graceOver]);
    this.shutdown.abort();
    await drained;
    await this.outcomes.flush();
    await this.retryBuckets.flush();
    this.agents.destroy();
  }

  /**
   * A scheduled retry: its registrations have due deliveries, claimed with the rest of their due
   * work, oldest first, as their queues here have room (claimDue: one statement for all of them).
   * What another worker holds is left to it; those of a registration disabled or deleted meanwhile
   * are canceled.
   */
  async retry(pairs: DeliveryPairs, dueAt?: Date): Promise<void> {
    if (pairs.length === 0 || this.stopped) return;
    // The job's deliveries fell due within its bucket: the scans start there at the latest.
    const floor = dueAt ? new Date(dueAt.getTime() - this.policy.retryBucketMs - 1) : undefined;
    for (const [, webhookId] of pairs) this.markParked(webhookId, floor ?? null);
    await this.pullNow();
    await cancelIfOrphaned(this.ctx.db.sql, pairs.map(([id]) => id), this.ctx.deps.clock.now());
  }

  /** One sweep: fan-out, claims kept alive, overdue work retaken, the log and old events pruned. */
  async sweep(): Promise<void> {
    if (this.stopped) return;
    // Change marks matter only to claims made before them: those of a lease ago, or older ones kept alive in the queue.
    const now = this.ctx.timer.now().getTime();
    let expired = now - this.policy.leaseMs;
    for (const item of this.dispatcher.waiting()) {
      if (item.claim?.claimedAt) expired = Math.min(expired, item.claim.claimedAt.getTime());
    }
    for (const [id, at] of this.changes) if (at < expired) this.changes.delete(id);
    for (const [id, r] of this.laneRates) if (r.since < now - 60_000 && this.dispatcher.laneLoad(id) === 0) this.laneRates.delete(id);
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
    const { db, deps, timer } = this.ctx;
    const attempted = await attemptDelivery(
      {
        sql: db.sql, clock: deps.clock, timer, secretBox: deps.secretBox, policy: this.policy, agents: this.agents,
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
    this.countAttempt(item.webhookId);
    if (this.parked.has(item.webhookId)) this.pullSoon();
    if (this.waitingForRoom && this.dispatcher.hasRoom()) {
      this.waitingForRoom = false;
      this.kick();
    }
  }

  private countAttempt(webhookId: string): void {
    const now = Date.now();
    let r = this.laneRates.get(webhookId);
    if (!r) this.laneRates.set(webhookId, (r = { count: 0, since: now, rate: 0 }));
    r.count++;
    const elapsed = now - r.since;
    if (elapsed >= 1000) {
      r.rate = (r.count * 1000) / elapsed;
      r.count = 0;
      r.since = now;
    }
  }

  /**
   * How many claims a registration may hold here, running and queued: its concurrency plus about
   * `laneAheadMs` of its recent throughput (a stalled window counts as slow), so a queued claim
   * starts well within its lease.
   */
  private laneCap(webhookId: string): number {
    const { perWebhookConcurrency: per, laneAheadMs, maxLaneAhead } = this.policy;
    const r = this.laneRates.get(webhookId);
    let rate = r?.rate ?? 0;
    if (r) {
      const elapsed = Date.now() - r.since;
      if (elapsed > 2000) rate = Math.min(rate, (r.count * 1000) / elapsed);
    }
    return per + Math.min(maxLaneAhead, Math.max(per, Math.ceil((rate * laneAheadMs) / 1000)));
  }

  /**
   * Marks a registration as having due work in the database. `scanFrom`: the earliest due time of
   * that work when known (null: unknown, the next scan starts from the beginning); the fan-out's
   * parked rows are due now, after anything claimed before (undefined: the scan start is kept).
   */
  private markParked(webhookId: string, scanFrom?: Date | null): void {
    this.parked.set(webhookId, ++this.parkSeq);
    if (scanFrom === undefined) return;
    const at = this.cursors.get(webhookId);
    if (scanFrom === null) this.cursors.delete(webhookId);
    else if (at && scanFrom < at) this.cursors.set(webhookId, scanFrom);
    else if (at) return; // the scan starts earlier already
    // A pull in flight must not move the start past this work.
    this.cursorEpochs.set(webhookId, (this.cursorEpochs.get(webhookId) ?? 0) + 1);
  }

  /** A pull once the current attempts have given their slots back (many completions, one pull). */
  private pullSoon(): void {
    if (this.pullScheduled || this.stopped) return;
    this.pullScheduled = true;
    setImmediate(() => {
      this.pullScheduled = false;
      void this.pullNow();
    });
  }

  /** Claims the due work of parked registrations that have room here; resolves when this round (and one asked for meanwhile) is done. */
  private pullNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.pulling) {
      this.pullAgain = true;
      return this.pulling;
    }
    const run: Promise<void> = this.pullLoop()
      .catch((e) => {
        this.ctx.deps.logger.error('webhook claim of due deliveries failed; the sweep retries', { error: e instanceof Error ? e.message : String(e) });
      })
      .finally(() => {
        this.pulling = undefined;
      });
    this.pulling = run;
    return run;
  }

  private async pullLoop(): Promise<void> {
    const { db, timer } = this.ctx;
    do {
      this.pullAgain = false;
      let total = this.policy.maxQueued - this.load();
      const wants: Array<[string, number, Date | null]> = [];
      const marks = new Map<string, number>();
      const epochs = new Map<string, number | undefined>();
      for (const [webhookId, mark] of this.parked) {
        if (total <= 0) break;
        const cap = this.laneCap(webhookId);
        const load = this.dispatcher.laneLoad(webhookId);
        // A busy registration is refilled once half of its room is free: fewer, larger claims.
        if (load > 0 && cap - load < Math.ceil(cap / 2)) continue;
        const n = Math.min(cap - load, total);
        if (n <= 0) continue;
        total -= n;
        wants.push([webhookId, n, this.cursors.get(webhookId) ?? null]);
        marks.set(webhookId, mark);
        epochs.set(webhookId, this.cursorEpochs.get(webhookId));
      }
      if (wants.length === 0) return;
      const now = timer.now();
      const claims = await claimDue(db.sql, wants, now, new Date(now.getTime() + this.policy.leaseMs));
      const got = new Map<string, number>();
      for (const c of claims) {
        got.set(c.webhookId, (got.get(c.webhookId) ?? 0) + 1);
        // Claimed oldest first: the registration's next scan starts at the latest due time claimed,
        // unless it was moved back meanwhile (a retry or the sweep found older work).
        if (this.cursorEpochs.get(c.webhookId) !== epochs.get(c.webhookId)) continue;
        const at = this.cursors.get(c.webhookId);
        if (!at || c.dueAt > at) this.cursors.set(c.webhookId, c.dueAt);
      }
      // Fewer than asked: nothing more is due there, unless more was parked meanwhile.
      for (const [webhookId, n] of wants) {
        if ((got.get(webhookId) ?? 0) < n && this.parked.get(webhookId) === marks.get(webhookId)) {
          this.parked.delete(webhookId);
          this.cursors.delete(webhookId);
          this.cursorEpochs.delete(webhookId);
        }
      }
      // A claim on a row whose outcome this instance is still writing (its lease lapsed first) is not
      // attempted: the outcome, once committed, overwrites it (count, status and due time). Nothing
      // is written for it here; were the outcome lost, the claim lapses and counts, as a crash's would.
      await this.take(claims.filter((c) => !this.unsettled.has(c.id)));
    } while (this.pullAgain && !this.stopped);
  }

  /** Gives back claims that will not be posted here (uncounted, due at once), and asks a runner to retake them now. */
  private async giveBack(claims: ClaimedDelivery[]): Promise<void> {
    if (claims.length === 0) return;
    const { db, timer, deps } = this.ctx;
    try {
      const released = await releaseClaims(db.sql, claims, timer.now());
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
   * Finds the registrations with deliveries overdue by `graceMs` (their timer or claim was lost, a
   * stop gave them back, another instance crashed) and claims their due work as they have room;
   * deliveries whose fifth attempt was interrupted are dropped.
   */
  private async retakeOverdue(graceMs: number): Promise<void> {
    if (this.stopped) return;
    const { db, deps, timer } = this.ctx;
    const before = new Date(timer.now().getTime() - graceMs);
    // A registration already being claimed here keeps its scan start, but for one sweep in four
    // (work due before it, e.g. a dead instance's lapsed claims, is found within four sweeps).
    const rescan = this.sweeps++ % 4 === 0;
    for (const webhookId of await lanesWithDue(db.sql, before)) this.markParked(webhookId, rescan || !this.parked.has(webhookId) ? null : undefined);
    await this.pullNow();
    // Ids queued, running or being settled here are ours already (their claims are kept alive): never counted twice.
    const exhausted = (await interruptedLastAttempts(db.sql, before, 1000)).filter((d) => !this.dispatcher.has(d.id) && !this.unsettled.has(d.id));
    if (exhausted.length > 0) {
      await cancelIfOrphaned(db.sql, exhausted.map((d) => d.id), deps.clock.now());
      await this.outcomes.room();
      await Promise.all(exhausted.map((d) => this.outcomes.record(interruptedOutcome(d, deps.clock.now())).catch(() => undefined)));
    }
  }

  /** Extends the leases of queued claims that would lapse before the next sweeps. */
  private async keepQueuedClaims(): Promise<void> {
    const now = this.ctx.timer.now().getTime();
    // Those that could no longer be used as they are (lease shorter than an attempt and its margin) before the next sweep.
    const soon = now + this.policy.sweepEveryMs + this.policy.attemptTimeoutMs + 2000;
    const lapsing = this.dispatcher.waiting().flatMap((i) => (i.claim && i.claim.leaseUntil.getTime() < soon ? [i.claim] : []));
    if (lapsing.length === 0) return;
    const leaseUntil = new Date(now + this.policy.leaseMs);
    const extending = (async () => {
      for (let at = 0; at < lapsing.length; at += 1000) {
        const chunk = lapsing.slice(at, at + 1000);
        const extended = new Set(await extendClaims(this.ctx.db.sql, chunk, leaseUntil));
        for (const c of chunk) {
          if (!extended.has(c.id)) continue;
          c.claimedAt ??= new Date(c.leaseUntil.getTime() - this.policy.leaseMs);
          c.leaseUntil = leaseUntil;
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
    const { db, deps, timer } = this.ctx;
    do {
      this.again = false;
      while (!this.stopped) {
        const room = this.policy.maxQueued - this.load();
        if (room <= 0) {
          this.waitingForRoom = true;
          return;
        }
        const limit = Math.max(1, Math.min(this.policy.fanOutBatch, Math.floor(room / this.fanOutRatio)));
        // A registration's deliveries are born claimed while it has room here (and none parked before them), else parked.
        const left = new Map<string, number>();
        const admit = (webhookId: string): boolean => {
          if (this.parked.has(webhookId)) return false;
          const n = left.get(webhookId) ?? this.laneCap(webhookId) - this.dispatcher.laneLoad(webhookId);
          left.set(webhookId, n - 1);
          return n > 0;
        };
        const wall = timer.now();
        const batch = await fanOutBatch(db, limit, deps.clock.now(), new Date(wall.getTime() + this.policy.leaseMs), { admit, dueAt: wall });
        if (batch.events > 0) this.fanOutRatio = Math.max(1, batch.deliveries.length / batch.events);
        for (const webhookId of batch.parked) this.markParked(webhookId);
        // Already claimed by us: queued even past the bound (by at most one batch).
        await this.take(batch.deliveries, true);
        if (batch.parked.size > 0) this.pullSoon();
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
    const { db, deps } = this.ctx;
    for (const webhookId of [...this.touched]) {
      if (budget.rows <= 0 || this.stopped || Date.now() > budget.until) break;
      const chunk = Math.min(budget.rows, 500);
      try {
        const { deliveries } = await inTransaction(db.pool, (client) => pruneLog(client, webhookId, this.policy.keepDeliveriesPerWebhook, chunk));
        budget.rows -= deliveries;
        if (deliveries < chunk) this.touched.delete(webhookId); // nothing more to prune there
      } catch (e) {
        deps.logger.warn('webhook log pruning failed', { webhook_id: webhookId, error: String(e) });
      }
    }
  }

  private async pruneOldEvents(budget: { rows: number; until: number }): Promise<void> {
    const { db, deps } = this.ctx;
    const before = new Date(deps.clock.now().getTime() - this.policy.eventRetentionMs);
    while (budget.rows > 0 && !this.stopped && Date.now() <= budget.until) {
      const chunk = Math.min(budget.rows, 2000);
      const deleted = await pruneEvents(db.sql, before, chunk).catch((e) => {
        deps.logger.warn('event retention: pruning failed', { error: String(e) });
        return 0;
      });
      budget.rows -= deleted;
      if (deleted < chunk) break;
    }
  }
}
