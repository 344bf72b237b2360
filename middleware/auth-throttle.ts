/**
 * Failed authentication is throttled per client address, in the shared counters (Redis when
 * configured): the failures are throttled, not the customer.
 *
 * Policy and why:
 * - Only failures count (401 from credential resolution), per address, in a fixed window of one
 *   minute. Many customers' backends share one egress address (NAT, a PaaS), so the throttle never
 *   refuses a valid credential, whatever its address: a credential this instance holds as valid
 *   (lib/access/credential-cache.ts) is served without asking the throttle, and one that is in the
 *   set of valid digests goes on to its lookup even from a throttled address.
 * - A credential already known bad is answered from memory with its 401 (`invalid_api_key`,
 *   `invalid_token`) and counted, throttled or not: it costs no query.
 * - Only a credential that memory cannot place (neither known valid nor known bad) from an address
 *   over AUTH_FAILURES_PER_MINUTE is refused before the database: 429 `rate_limited` with
 *   Retry-After until the window ends. Not 401: it was not looked up, and the answer must not say
 *   a credential is wrong when it was never checked. So a flood of guessed keys costs at most the
 *   per-address limit in queries per window, plus one load of the valid digests.
 * - A global ceiling (AUTH_FAILURES_GLOBAL_PER_MINUTE) bounds a flood spread over many addresses:
 *   past it, addresses that have failed at least once in the window are treated as over their limit.
 * - The address is `req.ip`: the socket's peer, or the client named by X-Forwarded-For when
 *   TRUST_PROXY is set (behind a load balancer). Store failures let requests through (fail-open).
 */
import type { Request } from 'express';
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
  /** The 429 this request's address has earned, or null; call only for a credential memory cannot place. */
  refusal(req: Request): Promise<ApiError | null>;
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
  const refuse = (resetAt: Date, now: Date): ApiError => {
    const seconds = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
    return new ApiError(
      'rate_limited',
      `Too many failed authentications from this address; a credential not already known valid is not looked up for ${seconds} seconds.`,
      { resetAt: resetAt.toISOString() },
      { 'Retry-After': String(seconds) },
    );
  };
  return {
    async refusal(req) {
      const now = opts.clock.now();
      let mine, all;
      try {
        // amount 0 reads the window's count without adding to it
        mine = await opts.store.hit(addressKey(req), WINDOW_MS, now, 0);
        if (mine.count > 0 && mine.count < opts.perAddress) all = await opts.store.hit('authfail:all', WINDOW_MS, now, 0);
      } catch (err) {
        failOpen(err);
        return null;
      }
      if (mine.count >= opts.perAddress) return refuse(mine.resetAt, now);
      if (all && all.count >= opts.global) return refuse(all.resetAt, now);
      return null;
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
