/**
 * Slots shared fairly between projects, for work one process does for many tenants at once (the
 * tables' tenant connections, lib/tables/tenant-pool.ts; the channel's notifications,
 * handlers/channel-webhook.ts): per-project shares that shrink as more projects are active, the
 * fewest-holding waiter first, a reserve for projects holding none, and waiters that give up after
 * a timeout. The policy in full: lib/tables/tenant-pool.ts.
 */
import { waitInLine } from './wait-in-line.js';

/** Slots kept for projects that hold none: a fifth of the total, at least 1 (none when total is 1). */
export function reserveOf(total: number): number {
  return Math.min(Math.max(1, Math.floor(total / 5)), total - 1);
}

/** A FIFO counting semaphore whose waiters give up after a timeout. */
export class Slots {
  private used = 0;
  private readonly waiters: Array<(granted: boolean) => void> = [];
  constructor(readonly max: number) {}

  get busy(): number {
    return this.used;
  }

  acquire(timeoutMs: number): Promise<boolean> {
    if (this.used < this.max) {
      this.used++;
      return Promise.resolve(true);
    }
    return waitInLine(this.waiters, timeoutMs, false);
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next(true); // the slot passes to the next waiter
    else this.used--;
  }
}

interface Waiter {
  project: string;
  /** May take one of the reserved slots (API and bot work, not operator DDL). */
  reserve: boolean;
  grant(): void;
}

/**
 * Tenant slots shared fairly between projects (the policy above): per-project shares that shrink
 * as more projects are active, the fewest-holding waiter first, and a reserve for projects holding
 * none. Waiters give up after a timeout.
 */
export class FairShares {
  private used = 0;
  private readonly held = new Map<string, number>();
  private readonly queue: Waiter[] = [];

  /**
   * `borrowUpTo`: a project may go past its share, up to this many, into slots nobody else can take
   * now (when no waiter within its share is left). For short holds (a notification's apply), where
   * a share of 1 among many mostly idle projects would leave slots idle while one busy project
   * queues; any other project still gets the next freed slot first (fewest held), and the reserve.
   */
  constructor(readonly total: number, readonly perProject: number, readonly reserve = reserveOf(total), private readonly opts: { borrowUpTo?: number } = {}) {}

  heldBy(project: string): number {
    return this.held.get(project) ?? 0;
  }

  /** The most one project may hold now. */
  share(): number {
    const active = new Set(this.held.keys());
    for (const w of this.queue) active.add(w.project);
    return Math.min(this.perProject, Math.max(1, Math.floor(this.total / Math.max(1, active.size))));
  }

  private may(w: Waiter, share: number): boolean {
    const h = this.heldBy(w.project);
    if (this.used >= this.total || h >= share) return false;
    return this.total - this.used > this.reserve || (h === 0 && w.reserve);
  }

  /** Resolves true with a slot, or false after `timeoutMs`. */
  acquire(project: string, timeoutMs: number, opts: { reserve: boolean }): Promise<boolean> {
    return new Promise((resolve) => {
      // Every caller queues, so a newcomer never passes a waiter with a better claim.
      const w: Waiter = {
        project,
        reserve: opts.reserve,
        grant: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        const i = this.queue.indexOf(w);
        if (i < 0) return;
        this.queue.splice(i, 1);
        resolve(false);
        this.dispatch(); // one project fewer is waiting: the others' shares may grow
      }, timeoutMs);
      this.queue.push(w);
      this.dispatch();
    });
  }

  release(project: string): void {
    const h = this.heldBy(project) - 1;
    if (h > 0) this.held.set(project, h);
    else this.held.delete(project);
    this.used--;
    this.dispatch();
  }

  private dispatch(): void {
    for (;;) {
      const share = this.share();
      let best = this.fewestHolding(share);
      if (best < 0 && this.opts.borrowUpTo) best = this.fewestHolding(this.opts.borrowUpTo);
      if (best < 0) return;
      const [w] = this.queue.splice(best, 1);
      this.held.set(w.project, this.heldBy(w.project) + 1);
      this.used++;
      w.grant();
    }
  }

  /** The waiter that may take a slot within `cap` and holds the fewest, or -1. */
  private fewestHolding(cap: number): number {
    let best = -1;
    for (let i = 0; i < this.queue.length; i++) {
      const w = this.queue[i];
      if (!this.may(w, cap)) continue;
      if (best < 0 || this.heldBy(w.project) < this.heldBy(this.queue[best].project)) best = i;
    }
    return best;
  }
}
