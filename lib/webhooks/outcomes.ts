/**
 * Writes attempt outcomes in batches: whatever completed while the previous batch was being
 * written (or within `flushMs`) goes in one transaction, so the database sees tens of commits per
 * second instead of one per delivery, and each registration row is updated once per batch.
 * A caller's promise resolves once its outcome is committed. Commits are asynchronous
 * (`synchronous_commit = off`): a database crash may forget the last few hundred milliseconds of
 * outcomes, whose deliveries are then attempted again under the same id (at least once).
 * After a commit: retries are handed to the scheduler, grouped by due time, and registrations the
 * batch disabled have their pending deliveries canceled.
 */
import type { Logger } from '../platform/logger.js';
import { applyEndpointChanges, endpointChanges, lockEndpoints, WEBHOOK_CHANGES_CHANNEL } from './registrations.js';
import { cancelPending, recordOutcomes, type Outcome, type RecordedOutcome } from './store.js';
import { inTransaction } from '../platform/db/transaction.js';
import type { Database } from '../platform/db/database.js';

export interface OutcomeWriterOptions {
  /** The engine's background pool, named only to open each batch's transaction (its statements run on the transaction's handle). */
  db: Pick<Database, 'pool'>;
  logger: Logger;
  disableAfter: number;
  maxBatch?: number;
  flushMs?: number;
  /** Outcomes waiting to be written before attempts are held back. */
  maxQueued?: number;
  /** Called after each commit with the retries it recorded (held for their job: it does not wait). */
  onRetries(retries: RecordedOutcome[]): void;
  /** Called after each commit with every recorded outcome and the registrations it disabled. */
  onCommitted?(recorded: RecordedOutcome[], disabled: string[]): void;
}

interface Pending {
  outcome: Outcome;
  resolve: (r: RecordedOutcome | undefined) => void;
  reject: (e: unknown) => void;
}

export class OutcomeWriter {
  private queue: Pending[] = [];
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: OutcomeWriterOptions) {}

  /** Backpressure: resolves when fewer than `maxQueued` outcomes wait to be written. */
  async room(): Promise<void> {
    while (this.queue.length >= (this.opts.maxQueued ?? 20_000)) await (this.writing ?? this.flush());
  }

  /** Resolves with the recorded outcome, or undefined when the delivery was no longer pending. */
  record(outcome: Outcome): Promise<RecordedOutcome | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, resolve, reject });
      if (this.queue.length >= (this.opts.maxBatch ?? 500)) this.flushSoon(0);
      else this.flushSoon(this.opts.flushMs ?? 5);
    });
  }

  private flushSoon(ms: number): void {
    if (this.writing) return; // the running write picks the queue up when it ends
    if (this.timer && ms > 0) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms);
  }

  /** Writes everything queued now (and what queues meanwhile). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.opts.maxBatch ?? 500);
    this.writing = this.write(batch).finally(() => {
      this.writing = undefined;
      if (this.queue.length > 0) this.flushSoon(0);
    });
    await this.writing;
  }

  /** One transaction; retried when PostgreSQL picks it as a deadlock or serialization victim. */
  private async transact(outcomes: Outcome[], at: Date): Promise<{ recorded: RecordedOutcome[]; disabled: string[] }> {
    return inTransaction(
      this.opts.db.pool,
      async (client) => {
        await lockEndpoints(client, outcomes.map((o) => o.webhookId));
        const recorded = await recordOutcomes(client, outcomes);
        const disabled = await applyEndpointChanges(client, endpointChanges(recorded), this.opts.disableAfter);
        if (disabled.length > 0) await cancelPending(client, disabled, at, WEBHOOK_CHANGES_CHANNEL);
        return { recorded, disabled };
      },
      // enable_seqscan off: the plans made here are cached for the connection's life (the record's
      // named statement, and the attempts' foreign-key check on webhook_deliveries), and a plan made
      // while the tables were nearly empty scanned them whole once they had grown: the check alone
      // took 2 to 8 ms an attempt (1 to 4 s a batch of 500) until autovacuum's next visit replanned it.
      // Every statement here has its index; with this they use it whatever the statistics say.
      { local: { synchronous_commit: 'off', enable_seqscan: 'off' }, retryOn: ['40P01', '40001'], attempts: 3 },
    );
  }

  private async write(batch: Pending[]): Promise<void> {
    const at = new Date(Math.max(...batch.map((p) => p.outcome.at.getTime())));
    let recorded: RecordedOutcome[];
    let disabled: string[];
    try {
      ({ recorded, disabled } = await this.transact(batch.map((p) => p.outcome), at));
    } catch (e) {
      this.opts.logger.error('webhook outcomes could not be written; the deliveries will be retaken after their lease', { error: String(e) });
      for (const p of batch) p.reject(e);
      return;
    }
    if (disabled.length > 0) this.opts.logger.warn('webhooks disabled after consecutive failed events', { webhook_ids: disabled });
    const byId = new Map(recorded.map((r) => [r.deliveryId, r]));
    this.opts.onCommitted?.(recorded, disabled);
    // Settled as soon as committed: a retry falling due is then claimable at once, whoever claims it.
    for (const p of batch) p.resolve(byId.get(p.outcome.deliveryId));
    const retries = recorded.filter((r) => r.kind === 'retry');
    if (retries.length > 0) this.opts.onRetries(retries);
  }
}
