/**
 * How a project's pool of sandboxes (isolates) grows (lib/bot/runtime.ts). Making an isolate
 * compiles the bot's bundle: tens of ms of CPU. On a loaded machine a busy project's events wait
 * longer, so more of them run at once, and each wanting a new isolate made its CPU ten-fold
 * (docs/benchmarks.md, issue 66), which slowed it further. So the pool grows with the project's
 * rate, not with its wait: the first ISOLATES_FREE at once; past them, at most ISOLATES_PER_SECOND
 * a second while one of its events runs (one will be given back); the others wait for it.
 */
export const ISOLATES_FREE = 4;
export const ISOLATES_PER_SECOND = 8;

export class IsolateGrowth {
  /** When the last isolates were made (ms, the caller's monotonic clock), oldest first. */
  private readonly made: number[] = [];

  /** Whether a new isolate must wait for one given back: `running` events hold isolates now, `idle` wait unused. */
  mustWait(now: number, running: number, idle: number): boolean {
    while (this.made.length > 0 && now - this.made[0]! > 1000) this.made.shift();
    return running > 0 && running + idle >= ISOLATES_FREE && this.made.length >= ISOLATES_PER_SECOND;
  }

  /** An isolate is being made now. */
  note(now: number): void {
    this.made.push(now);
  }
}
