/**
 * Shared fixed-window counters (rate limits, budgets).
 *
 * Windows are aligned to multiples of `windowMs` since the epoch, so several instances sharing one
 * Redis agree on the window: the stored key is `<key>:<windowStart>`. `hit` adds `amount` (default 1)
 * and returns the total in the current window and when that window ends.
 *
 * - `MemoryCounterStore`: in-process, the single-instance default. Expired windows are evicted.
 * - `RedisCounterStore`: node-redis v6 (one server, or a master behind sentinels: ./redis-client.ts),
 *   one Lua script (INCRBY + PEXPIRE, atomic). Fail-fast: while
 *   Redis is down or slow, `hit` rejects within a bounded time (about `timeoutMs`) and never hangs;
 *   the client reconnects by itself when Redis returns. Callers decide what a rejection means
 *   (the rate limiter fails open).
 */
import type { Logger } from './logger.js';
import type { CounterStore } from './counters/store.js';
import { MemoryCounterStore } from './counters/memory.js';
import { RedisCounterStore } from './counters/redis.js';
import type { RedisTarget } from './redis-client.js';

export { windowStartOf, type CounterHit, type CounterStore } from './counters/store.js';
export { MemoryCounterStore } from './counters/memory.js';
export { RedisCounterStore, type RedisCounterStoreOptions } from './counters/redis.js';
export { createLogThrottle } from './log-throttle.js';

export function createCounterStore(opts: { redisUrl?: string; redis?: RedisTarget; timeoutMs: number; logger?: Logger }): CounterStore {
  const target = opts.redis ?? (opts.redisUrl ? { kind: 'url' as const, url: opts.redisUrl } : undefined);
  if (target) return new RedisCounterStore({ target, timeoutMs: opts.timeoutMs, logger: opts.logger });
  return new MemoryCounterStore();
}
