/**
 * The per-key upload budget shared by header samples and media uploads (spec "Limits").
 *
 * Policy:
 * - One budget per credential (`rateKey`: each API key, each agent connection), in fixed one-minute
 *   windows aligned like the rate limiter's, kept in the shared CounterStore (Redis when REDIS_URL
 *   is set, so every instance sees the same budget).
 * - Two meters: requests (UPLOAD_REQUESTS_PER_MINUTE) and bytes (UPLOAD_BYTES_PER_MINUTE). A request
 *   is counted when it arrives; bytes are charged as received (inline data, multipart file or
 *   download), whether or not the upload is then accepted.
 * - Before reading a file the remaining byte budget is known, and the transfer aborts mid-stream
 *   once it is used: 429 `rate_limited` with Retry-After (the end of the window), even when the
 *   request count is fine. Concurrent uploads may overshoot by what they had in flight; the next
 *   request then finds nothing left.
 * - Fail-open like the rate limiter: when the counter store fails, uploads are not limited by the
 *   budget (the per-format ceilings still apply), and a throttled warning is logged.
 */
import type { Deps } from '../deps.js';
import { createLogThrottle } from '../platform/counters.js';
import { ApiError } from '../platform/errors.js';

export const BUDGET_WINDOW_MS = 60_000;
const logFailure = createLogThrottle(10_000);

export class UploadBudget {
  constructor(
    private readonly deps: Pick<Deps, 'counters' | 'clock' | 'config' | 'logger'>,
    private readonly key: string,
  ) {}

  private get bytesKey(): string {
    return `ub:bytes:${this.key}`;
  }

  private failOpen(err: unknown): void {
    logFailure((suppressed) =>
      this.deps.logger.warn('Upload budget counter store failed; uploads are not budget-limited (fail-open)', {
        error: err instanceof Error ? err.message : String(err),
        suppressedSinceLast: suppressed,
      }),
    );
  }

  /** Seconds until the current window ends (at least 1). */
  retryAfterSeconds(): number {
    const now = this.deps.clock.now().getTime();
    const end = Math.floor(now / BUDGET_WINDOW_MS) * BUDGET_WINDOW_MS + BUDGET_WINDOW_MS;
    return Math.max(1, Math.ceil((end - now) / 1000));
  }

  exceeded(what: 'requests' | 'bytes'): ApiError {
    const { uploadRequestsPerMinute, uploadBytesPerMinute } = this.deps.config;
    const retry = this.retryAfterSeconds();
    const message =
      what === 'requests'
        ? `Upload budget exceeded: at most ${uploadRequestsPerMinute} uploads per minute for this credential; retry in ${retry} seconds.`
        : `Upload budget exceeded: at most ${uploadBytesPerMinute} bytes per minute for this credential; retry in ${retry} seconds.`;
    return new ApiError('rate_limited', message, {
      budget: what,
      limit: what === 'requests' ? uploadRequestsPerMinute : uploadBytesPerMinute,
    }, { 'Retry-After': String(retry) });
  }

  /** Counts this request; 429 when the request meter is over. */
  async countRequest(): Promise<void> {
    let count: number;
    try {
      ({ count } = await this.deps.counters.hit(`ub:req:${this.key}`, BUDGET_WINDOW_MS, this.deps.clock.now()));
    } catch (err) {
      this.failOpen(err);
      return;
    }
    if (count > this.deps.config.uploadRequestsPerMinute) throw this.exceeded('requests');
  }

  /** Bytes left in this window (Infinity when the store fails). */
  async remaining(): Promise<number> {
    try {
      const { count } = await this.deps.counters.hit(this.bytesKey, BUDGET_WINDOW_MS, this.deps.clock.now(), 0);
      return Math.max(0, this.deps.config.uploadBytesPerMinute - count);
    } catch (err) {
      this.failOpen(err);
      return Number.POSITIVE_INFINITY;
    }
  }

  /** Charges bytes received by this request. */
  async charge(bytes: number): Promise<void> {
    if (!(bytes > 0)) return;
    try {
      await this.deps.counters.hit(this.bytesKey, BUDGET_WINDOW_MS, this.deps.clock.now(), bytes);
    } catch (err) {
      this.failOpen(err);
    }
  }
}
