/**
 * Failed authentication is throttled per client address before the database is asked, in the
 * shared counters (Redis when configured), so a flood of guessed keys costs neither database
 * queries nor time on other instances.
 *
 * Policy and why:
 * - Only failures count (401 from credential resolution), per address, in a fixed window of one
 *   minute. An address over AUTH_FAILURES_PER_MINUTE gets 429 `rate_limited` with Retry-After for
 *   every request until the window ends, without a credential lookup.
 * - A global ceiling (AUTH_FAILURES_GLOBAL_PER_MINUTE) bounds a flood spread over many addresses:
 *   past it, addresses that have failed at least once in the window are refused too. An address
 *   without failures is never refused, so a valid key is never slowed by someone else's failures.
 * - The address is `req.ip`: the socket's peer, or the client named by X-Forwarded-For when
 *   TRUST_PROXY is set (behind a load balancer). Store failures let requests through (fail-open).
 */
import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../lib/platform/clock.js';
import { createLogThrottle, type CounterStore } from '../lib/platform/counters.js';
import { ApiError } from '../lib/platform/errors.js';
import type { Logger } from '../lib/platform/logger.js';

const WINDOW_MS = 60_000;

export interface AuthThrottleOptions {
  store: CounterStore;
  clock: Clock;
  perAddress: number;
  global: number;
  logger?: Logger;
}

export interface AuthThrottle {
  /** Refuses a throttled address; call before resolving the credential. */
  check(req: Request): Promise<void>;
  /** Counts a failed authentication of this request's address. */
  failed(req: Request): Promise<void>;
}

export function createAuthThrottle(opts: AuthThrottleOptions): AuthThrottle {
  const logFailure = createLogThrottle(10_000);
  const addressKey = (req: Request) => `authfail:ip:${req.ip ?? req.socket.remoteAddress ?? 'unknown'}`;
  const failOpen = (err: unknown) =>
    logFailure((suppressed) =>
      opts.logger?.warn('auth throttle: counter store failed; not throttling (fail-open)', {
        error: err instanceof Error ? err.message : String(err),
        suppressedSinceLast: suppressed,
      }),
    );
  const refuse = (resetAt: Date, now: Date): never => {
    const seconds = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
    throw new ApiError(
      'rate_limited',
      `Too many failed authentications from this address; retry in ${seconds} seconds.`,
      { resetAt: resetAt.toISOString() },
      { 'Retry-After': String(seconds) },
    );
  };
  return {
    async check(req) {
      const now = opts.clock.now();
      let mine, all;
      try {
        // amount 0 reads the window's count without adding to it
        mine = await opts.store.hit(addressKey(req), WINDOW_MS, now, 0);
        if (mine.count > 0 && mine.count < opts.perAddress) all = await opts.store.hit('authfail:all', WINDOW_MS, now, 0);
      } catch (err) {
        failOpen(err);
        return;
      }
      if (mine.count >= opts.perAddress) refuse(mine.resetAt, now);
      if (all && all.count >= opts.global) refuse(all.resetAt, now);
    },
    async failed(req) {
      const now = opts.clock.now();
      try {
        await Promise.all([opts.store.hit(addressKey(req), WINDOW_MS, now), opts.store.hit('authfail:all', WINDOW_MS, now)]);
      } catch (err) {
        failOpen(err);
      }
    },
  };
}
