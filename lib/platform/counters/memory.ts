/** In-process counters: the single-instance default. Expired windows are evicted. */
import { checkArgs, windowStartOf, type CounterHit, type CounterStore } from './store.js';

interface MemoryEntry {
  count: number;
  /** resetAt in ms. */
  expiresAt: number;
}

export class MemoryCounterStore implements CounterStore {
  private readonly entries = new Map<string, MemoryEntry>();
  /** Time (of the callers' clock) after which the next hit sweeps expired windows. */
  private nextSweepAt = -Infinity;
  private readonly sweepIntervalMs: number;

  /** @param opts.sweepIntervalMs how often (in the callers' clock time) expired windows are evicted; default 10 s. */
  constructor(opts: { sweepIntervalMs?: number } = {}) {
    this.sweepIntervalMs = opts.sweepIntervalMs ?? 10_000;
  }

  hit(key: string, windowMs: number, now: Date, amount = 1): Promise<CounterHit> {
    try {
      checkArgs(windowMs, amount);
    } catch (err) {
      return Promise.reject(err);
    }
    const nowMs = now.getTime();
    if (nowMs >= this.nextSweepAt) this.sweep(nowMs);
    const start = windowStartOf(nowMs, windowMs);
    const expiresAt = start + windowMs;
    const windowKey = `${key}:${start}`;
    let entry = this.entries.get(windowKey);
    if (entry === undefined) {
      entry = { count: 0, expiresAt };
      this.entries.set(windowKey, entry);
    }
    entry.count += amount;
    return Promise.resolve({ count: entry.count, resetAt: new Date(expiresAt) });
  }

  /** Slots held per key: token → when it lapses (ms of the callers' clock). */
  private readonly slots = new Map<string, Map<string, number>>();
  private nextToken = 1;

  acquire(key: string, limit: number, holdMs: number, now: Date): Promise<string | null> {
    const nowMs = now.getTime();
    let held = this.slots.get(key);
    if (!held) this.slots.set(key, (held = new Map()));
    for (const [token, until] of held) if (until <= nowMs) held.delete(token);
    if (held.size >= limit) return Promise.resolve(null);
    const token = String(this.nextToken++);
    held.set(token, nowMs + holdMs);
    return Promise.resolve(token);
  }

  release(key: string, token: string): Promise<void> {
    const held = this.slots.get(key);
    held?.delete(token);
    if (held && held.size === 0) this.slots.delete(key);
    return Promise.resolve();
  }

  /** Evicts every window that ended at or before `nowMs`. Runs by itself from `hit`. */
  sweep(nowMs: number): void {
    for (const [k, e] of this.entries) {
      if (e.expiresAt <= nowMs) this.entries.delete(k);
    }
    this.nextSweepAt = nowMs + this.sweepIntervalMs;
  }

  /** Number of windows held (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.slots.clear();
  }
}

// ---------------------------------------------------------------------------------------------------
// Redis store

/**
 * KEYS[1] window key; ARGV[1] amount; ARGV[2] TTL in ms. Sets the TTL when the key is new (or, should
 * it ever lack one, whenever it has none), so every window key expires.
 */
