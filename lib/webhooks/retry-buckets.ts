/**
 * Retries gathered per due bucket before their job is scheduled (issue 69). Outcomes are written
 * in many small batches, and with a job per batch and bucket nearly every failed attempt became a
 * job of its own on the runner: an INSERT and two UPDATEs on PostgreSQL, each planned, and the
 * runner's work around them. In the bench's fan-out (one receiver of ten always failing), the
 * failing receiver's retries cost more than the nine healthy receivers' deliveries together.
 *
 * Here retries wait at most `holdMs` (never past their bucket's time), then each bucket is one job,
 * scheduled off the outcome writer's path: it awaited each job's INSERT before its next batch.
 * The rows stay the truth: a retry whose job is never scheduled (a crash while it waits here, a
 * failed schedule) is pending and due in the database, and the sweep retakes it once overdue.
 */
/** [delivery id, webhook id] pairs. */
export type DeliveryPairs = Array<[string, string]>;

export interface RetryBucketsOptions {
  /** Retries due within this window share a job, at the window's end (never early). */
  bucketMs: number;
  /** How long a retry may wait here for others before its bucket's job is scheduled. */
  holdMs: number;
  now: () => number;
  schedule: (at: Date, deliveries: DeliveryPairs) => Promise<void>;
  /** A schedule failed: the sweep will retake those deliveries. */
  onError: (error: unknown, count: number) => void;
}

export class RetryBuckets {
  private readonly buckets = new Map<number, DeliveryPairs>();
  private timer: NodeJS.Timeout | undefined;
  private fireAt = Infinity;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly opts: RetryBucketsOptions) {}

  /** Holds retries (a delivery, its registration and when it is due) for their bucket's job. */
  add(retries: Array<{ deliveryId: string; webhookId: string; nextAttemptAt: Date | null }>): void {
    const { bucketMs } = this.opts;
    let earliest = Infinity;
    for (const r of retries) {
      if (!r.nextAttemptAt) continue;
      const due = Math.ceil(r.nextAttemptAt.getTime() / bucketMs) * bucketMs;
      const bucket = this.buckets.get(due);
      if (bucket) bucket.push([r.deliveryId, r.webhookId]);
      else this.buckets.set(due, [[r.deliveryId, r.webhookId]]);
      earliest = Math.min(earliest, due);
    }
    if (earliest === Infinity) return;
    const now = this.opts.now();
    this.arm(Math.min(now + this.opts.holdMs, earliest));
  }

  /** Schedules every bucket held now (at a stop, so nothing waits for the sweep). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.fireAt = Infinity;
    const taken = [...this.buckets].sort(([a], [b]) => a - b);
    this.buckets.clear();
    this.flushing = this.flushing.then(async () => {
      for (const [due, deliveries] of taken) {
        await this.opts.schedule(new Date(due), deliveries).catch((e) => this.opts.onError(e, deliveries.length));
      }
    });
    return this.flushing;
  }

  private arm(at: number): void {
    if (at >= this.fireAt) return;
    clearTimeout(this.timer);
    this.fireAt = at;
    this.timer = setTimeout(() => void this.flush(), Math.max(0, at - this.opts.now()));
    this.timer.unref();
  }
}
