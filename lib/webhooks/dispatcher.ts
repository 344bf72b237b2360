/**
 * The in-memory work queue of delivery attempts, fair across registrations: at most
 * `perWebhook` attempts run at once for one registration and `max` overall, and registrations
 * with work take turns. A slow or hanging receiver therefore holds only its own slots, and the
 * others keep flowing. The queue is bounded (`maxQueued`); what does not fit stays pending in
 * the database and is picked up by the sweep. An item is a delivery id, possibly with its claim
 * (fresh from the fan-out); without one, the attempt claims the row when it starts, so an id
 * queued twice (or on two instances) is attempted once.
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
  private readonly queued = new Set<string>();
  private running = 0;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly opts: DispatcherOptions<T>) {}

  get size(): { queued: number; running: number } {
    return { queued: this.queued.size - this.running, running: this.running };
  }

  /** Whether the queue can take more (fan-out pauses when it cannot). */
  hasRoom(): boolean {
    return this.queued.size < this.opts.maxQueued;
  }

  /**
   * False when stopped, full, or already queued or running here. `force` takes it even when full
   * (the fan-out's deliveries, already claimed; the fan-out sizes its batches to the room left).
   */
  enqueue(item: T, force = false): boolean {
    if (!this.stopped && this.queued.has(item.id)) return this.upgrade(item);
    if (this.stopped || (!force && !this.hasRoom())) return false;
    this.queued.add(item.id);
    let lane = this.lanes.get(item.webhookId);
    if (!lane) this.lanes.set(item.webhookId, (lane = { running: 0, queue: [], ready: false }));
    lane.queue.push(item);
    this.markReady(item.webhookId, lane);
    this.pump();
    return true;
  }

  /**
   * The same id again. A claimed item (a retry job's) replaces a queued unclaimed one (the sweep's):
   * dropping it would leave its claim unused until the lease ran out, and the retry a minute late.
   */
  private upgrade(item: T): boolean {
    if (!(item as { claim?: unknown }).claim) return false;
    const lane = this.lanes.get(item.webhookId);
    const at = lane?.queue.findIndex((q) => q.id === item.id) ?? -1;
    if (at < 0 || (lane!.queue[at] as { claim?: unknown }).claim) return false;
    lane!.queue[at] = item;
    return true;
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
      lane.running++;
      this.running++;
      this.markReady(webhookId, lane);
      void this.opts
        .run(item)
        .catch(this.opts.onError)
        .finally(() => {
          lane.running--;
          this.running--;
          this.queued.delete(item.id);
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

  /** Stops taking and starting work; queued ids are forgotten (they stay pending in the database). Waits for running attempts. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const lane of this.lanes.values()) {
      for (const item of lane.queue) this.queued.delete(item.id);
      lane.queue = [];
    }
    this.ready.length = 0;
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    this.notifyIdle();
  }
}
