/**
 * Per-credential fixed-window rate limiter (spec "Limits": 60 requests per minute per credential,
 * headers on every limited response, Retry-After on 429, fail-open when the counter store fails).
 *
 * Mount after authentication; `keyOf` names the credential (undefined skips limiting).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../lib/platform/clock.js';
import { createLogThrottle, type CounterStore } from '../lib/platform/counters.js';
import { ApiError } from '../lib/platform/errors.js';
import type { Logger } from '../lib/platform/logger.js';

export interface RateLimitOptions {
  store: CounterStore;
  /** Requests allowed per window; a function is read on every request (e.g. live configuration). */
  limit: number | (() => number);
  /** Window length; default 60 000 ms. */
  windowMs?: number;
  clock: Clock;
  /** The credential's counter key (e.g. `key:<id>`, `agent:<id>`); undefined skips limiting. */
  keyOf: (req: Request) => string | undefined;
  logger?: Logger;
  /** Prefix of the store key; default `rl:`. */
  prefix?: string;
  /** Told of each refusal (metrics). */
  onReject?: () => void;
}

export function rateLimit(opts: RateLimitOptions): (req: Request, res: Response, next: NextFunction) => void {
  const { store, clock, keyOf, logger } = opts;
  const windowMs = opts.windowMs ?? 60_000;
  const prefix = opts.prefix ?? 'rl:';
  const limitOpt = opts.limit;
  const limitOf = typeof limitOpt === 'function' ? limitOpt : () => limitOpt;
  const logFailure = createLogThrottle(10_000);

  const failOpen = (err: unknown, next: NextFunction): void => {
    logFailure((suppressed) =>
      logger?.warn('Rate limiter counter store failed; allowing requests through (fail-open)', {
        error: err instanceof Error ? err.message : String(err),
        suppressedSinceLast: suppressed,
      }),
    );
    next();
  };

  return function rateLimitMiddleware(req: Request, res: Response, next: NextFunction): void {
    const id = keyOf(req);
    if (id === undefined) {
      next();
      return;
    }
    const now = clock.now();
    const nowMs = now.getTime();
    let pending: ReturnType<CounterStore['hit']>;
    try {
      pending = store.hit(prefix + id, windowMs, now);
    } catch (err) {
      failOpen(err, next);
      return;
    }
    pending.then(
      ({ count, resetAt }) => {
        const limit = limitOf();
        const msLeft = resetAt.getTime() - nowMs;
        const resetSeconds = msLeft > 0 ? Math.max(1, Math.ceil(msLeft / 1000)) : 0;
        const reset = String(resetSeconds);
        res.setHeader('RateLimit-Limit', String(limit));
        res.setHeader('RateLimit-Remaining', String(count >= limit ? 0 : limit - count));
        res.setHeader('RateLimit-Reset', reset);
        if (count > limit) {
          opts.onReject?.();
          next(
            new ApiError(
              'rate_limited',
              `Rate limit exceeded: at most ${limit} requests per ${windowMs / 1000} seconds for this credential; retry in ${resetSeconds} seconds`,
              { limit, resetAt: resetAt.toISOString() },
              { 'Retry-After': reset },
            ),
          );
          return;
        }
        next();
      },
      (err: unknown) => failOpen(err, next),
    );
  };
}
