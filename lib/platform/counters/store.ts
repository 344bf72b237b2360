/** The shared fixed-window counter interface (see ../counters.ts for the policy). */
export interface CounterHit {
  /** Total in this window, after adding `amount`. */
  count: number;
  /** Window start + windowMs. */
  resetAt: Date;
}

export interface CounterStore {
  hit(key: string, windowMs: number, now: Date, amount?: number): Promise<CounterHit>;
  /**
   * Takes one of `limit` slots of `key` (work in progress across instances): a token to give back
   * with `release`, or null when all are held. A slot lapses `holdMs` after it was taken, so the
   * slots of a holder that died come back by themselves. Optional: a store without it leaves the
   * caller to bound work in its own process.
   */
  acquire?(key: string, limit: number, holdMs: number, now: Date): Promise<string | null>;
  release?(key: string, token: string): Promise<void>;
  close(): Promise<void>;
}

/** Start of the fixed window containing `nowMs` (aligned to multiples of windowMs since the epoch). */
export function windowStartOf(nowMs: number, windowMs: number): number {
  return Math.floor(nowMs / windowMs) * windowMs;
}

export function checkArgs(windowMs: number, amount: number): void {
  if (!Number.isInteger(windowMs) || windowMs <= 0) throw new RangeError(`windowMs must be a positive integer, got ${windowMs}`);
  if (!Number.isInteger(amount) || amount < 0) throw new RangeError(`amount must be a non-negative integer, got ${amount}`);
}

/**
 * Logs at most once per `intervalMs` (real time), reporting how many events were suppressed since the
 * last line. For errors that may repeat on every request (Redis down).
 */
