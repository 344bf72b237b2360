/**
 * The in-memory work queue of delivery attempts, fair across registrations: at most
 * `perWebhook` attempts run at once for one registration and `max` overall, and registrations
 * with work take turns. A slow or hanging receiver therefore holds only its own slots, and the
 * others keep flowing. The queue is bounded (`maxQueued`); what does not fit stays pending in
 * the database and is picked up by the sweep. An item is a delivery id, normally with its claim
 * (every producer claims before it queues: the fan-out, the retry jobs and the sweep); without
 * one, the attempt claims the row when it starts, so an id queued twice (or on two instances) is
 * attempted once. A claimed item is never refused as a duplicate of an unclaimed one (it replaces
 * it when queued, and runs after it when running): refusing it would leave its claim unused until
 * the lease ran out. Whoever gets `false` from `enqueue` for a claimed item gives its claim back.
 */
export interface WorkItem {
  /** Delivery id. */
  id: string;
  webhookId: string;
}

export interface DispatcherOptions<T extends WorkItem> {
  perWebhook: number;
  max: number;
  maxQueued: number;
  run: (item: T) => Promise<void>;
  onError: (e: unknown) => void;
}

interface Lane<T> {
  running: number;
  queue: T[];
  ready: boolean;
}

export class Dispatcher<T extends WorkItem = WorkItem> {
  private readonly lanes = new Map<string, Lane<T>>();
  private readonly ready: string[] = [];
  /** Ids waiting in a lane's queue. */
  private readonly queued = new Set<string>();
  /** Ids running now (with how many copies: a claimed item may run after an unclaimed one). */
  private readonly runningIds = new Map<string, number>();
  private running = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly opts: DispatcherOptions<T>) {}

  get size(): { queued: number; running: number } {
    return { queued: this.queued.size, running: this.running };
  }

  /** Whether the queue can take more (fan-out pauses when it cannot). */
  hasRoom(): boolean {
    return this.queued.size + this.running < this.opts.maxQueued;
  }

  /**
   * False when stopped, full, or already queued or running here. `force` takes it even when full
   * (the fan-out's deliveries, already claimed; the fan-out sizes its batches to the room left).
   */
  enqueue(item: T, force = false): boolean {
    if (this.stopped) return false;
    if (this.queued.has(item.id)) return this.upgrade(item);
    // Running unclaimed (its claim will fail, since this item holds it): this one runs after it.
    if (this.runningIds.has(item.id) && !claimOf(item)) return false;
    if (!force && !this.hasRoom()) return false;
    this.queued.add(item.id);
    let lane = this.lanes.get(item.webhookId);
    if (!lane) this.lanes.set(item.webhookId, (lane = { running: 0, queue: [], ready: false }));
    lane.queue.push(item);
    this.markReady(item.webhookId, lane);
    this.pump();
    return true;
  }

  /**
   * The same id again, queued. A claimed item replaces a queued unclaimed one (dropping it would
   * leave its claim unused until the lease ran out, and the retry a minute late), and a newer claim
   * replaces an older one (which lapsed, or the newer could not have been made).
   */
  private upgrade(item: T): boolean {
    const claim = claimOf(item);
    if (!claim) return false;
    const lane = this.lanes.get(item.webhookId);
    const at = lane?.queue.findIndex((q) => q.id === item.id) ?? -1;
    if (at < 0) return false;
    const held = claimOf(lane!.queue[at]);
    if (held && held.leaseUntil >= claim.leaseUntil) return false;
    lane!.queue[at] = item;
    return true;
  }

  /** The items of a registration queued or running here. */
  laneLoad(webhookId: string): number {
    const lane = this.lanes.get(webhookId);
    return lane ? lane.running + lane.queue.length : 0;
  }

  /** Whether `id` is queued or running here (the sweep leaves such ids to us). */
  has(id: string): boolean {
    return this.queued.has(id) || this.runningIds.has(id);
  }

  /** The items waiting in the queue (their claims' leases are kept alive while they wait). */
  waiting(): T[] {
    return [...this.lanes.values()].flatMap((lane) => lane.queue);
  }

  /** The registrations with work queued or running. */
  lanesWithWork(): string[] {
    return [...this.lanes.keys()];
  }

  /** Forgets the queued (not running) work of a registration, e.g. once it is disabled. */
  drop(webhookId: string): number {
    const lane = this.lanes.get(webhookId);
    if (!lane) return 0;
    const dropped = lane.queue.length;
    for (const item of lane.queue) this.queued.delete(item.id);
    lane.queue = [];
    if (lane.running === 0) this.lanes.delete(webhookId);
    return dropped;
  }

  private markReady(webhookId: string, lane: Lane<T>): void {
    if (!lane.ready && lane.queue.length > 0 && lane.running < this.opts.perWebhook) {
      lane.ready = true;
      this.ready.push(webhookId);
    }
  }

  private pump(): void {
    while (!this.stopped && this.running < this.opts.max && this.ready.length > 0) {
      const webhookId = this.ready.shift()!;
      const lane = this.lanes.get(webhookId);
      if (!lane) continue; // dropped meanwhile
      lane.ready = false;
      const item = lane.queue.shift();
      if (item === undefined) continue;
      this.queued.delete(item.id);
      this.runningIds.set(item.id, (this.runningIds.get(item.id) ?? 0) + 1);
      lane.running++;
      this.running++;
      this.markReady(webhookId, lane);
      void this.opts
        .run(item)
        .catch(this.opts.onError)
        .finally(() => {
          lane.running--;
          this.running--;
          const copies = (this.runningIds.get(item.id) ?? 1) - 1;
          if (copies > 0) this.runningIds.set(item.id, copies);
          else this.runningIds.delete(item.id);
          if (lane.running === 0 && lane.queue.length === 0) this.lanes.delete(webhookId);
          else this.markReady(webhookId, lane);
          if (this.running === 0 && this.ready.length === 0) this.notifyIdle();
          this.pump();
        });
    }
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Resolves when nothing runs and nothing waits. */
  idle(): Promise<void> {
    if (this.running === 0 && this.queued.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking and starting work. Returns the queued items, now forgotten (they stay pending in
   * the database: the caller gives their claims back), and `drained`, which settles once the
   * running attempts have ended.
   */
  stop(): { dropped: T[]; drained: Promise<void> } {
    this.stopped = true;
    const dropped: T[] = [];
    for (const lane of this.lanes.values()) {
      dropped.push(...lane.queue);
      lane.queue = [];
    }
    this.queued.clear();
    this.ready.length = 0;
    const drained = this.running > 0 ? new Promise<void>((resolve) => this.idleWaiters.push(resolve)) : Promise.resolve();
    if (this.running === 0) this.notifyIdle();
    return { dropped, drained };
  }
}

function claimOf(item: WorkItem): { leaseUntil: Date | number } | undefined {
  return (item as { claim?: { leaseUntil: Date | number } }).claim;
}
