/**
 * The instance's bot work in flight (events, start-ups, previews, deploy checks), shared between
 * projects in turn.
 *
 * Policy and why:
 * - At most `capacity` pieces of work are in flight at once, whatever their projects: each holds an
 *   isolate (memory) for as long as it runs, awaiting I/O included, so waiting counts as much as
 *   CPU does.
 * - While work waits, a freed slot goes to the waiting project with the fewest pieces in flight
 *   (the earliest waiter among equals), not to whoever came first: a quiet project (none in flight)
 *   is served at the next release, however many pieces a busy project has queued. A project never
 *   waits behind more than one release per project ahead of it in the turn.
 * - The bound (docs/bot.md): with per-project concurrency P (the runtime's
 *   MAX_CONCURRENT_PER_PROJECT) and capacity C, up to floor(C / P) projects can hold every piece
 *   they may at once and another project still finds a slot free; past that, it waits for the
 *   next release, at most one event's hard time limit.
 */
export class FairSlots {
  private inFlight = 0;
  private readonly held = new Map<string, number>();
  /** Waiters per project, in arrival order; `order` numbers them across projects. */
  private readonly waiting = new Map<string, Array<{ order: number; grant: () => void }>>();
  private order = 0;

  constructor(public capacity: number) {}

  /** The release when a slot is free now (nobody waits), else undefined: taken synchronously. */
  tryAcquire(key: string): (() => void) | undefined {
    if (this.inFlight >= this.capacity || this.waiting.size > 0) return undefined;
    this.take(key);
    return this.releaser(key);
  }

  /** Resolves with the release when `key` may run one more piece of work. */
  async acquire(key: string): Promise<() => void> {
    const now = this.tryAcquire(key);
    if (now) return now;
    await new Promise<void>((grant) => {
      const list = this.waiting.get(key) ?? [];
      list.push({ order: this.order++, grant });
      this.waiting.set(key, list);
      this.serve();
    });
    return this.releaser(key);
  }

  private releaser(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      const n = (this.held.get(key) ?? 1) - 1;
      if (n > 0) this.held.set(key, n);
      else this.held.delete(key);
      this.serve();
    };
  }

  /** Pieces of work in flight now. */
  get inFlightNow(): number {
    return this.inFlight;
  }

  /** Work in flight, and per project (tests, metrics). */
  get stats(): { inFlight: number; waiting: number; projects: number } {
    let waiting = 0;
    for (const list of this.waiting.values()) waiting += list.length;
    return { inFlight: this.inFlight, waiting, projects: this.held.size };
  }

  private take(key: string): void {
    this.inFlight++;
    this.held.set(key, (this.held.get(key) ?? 0) + 1);
  }

  /** Grants free slots to waiting projects, fewest in flight first. */
  private serve(): void {
    while (this.inFlight < this.capacity && this.waiting.size > 0) {
      let best: string | undefined;
      let bestHeld = Infinity;
      let bestOrder = Infinity;
      for (const [key, list] of this.waiting) {
        const held = this.held.get(key) ?? 0;
        if (held < bestHeld || (held === bestHeld && list[0].order < bestOrder)) {
          best = key;
          bestHeld = held;
          bestOrder = list[0].order;
        }
      }
      const list = this.waiting.get(best!)!;
      const next = list.shift()!;
      if (list.length === 0) this.waiting.delete(best!);
      this.take(best!);
      next.grant();
    }
  }
}
