/**
 * Counters in Redis (node-redis v6), one Lua script (INCRBY + PEXPIRE, atomic). Fail-fast: while
 * Redis is down or slow, `hit` rejects within a bounded time (about `timeoutMs`) and never hangs;
 * the client reconnects by itself when Redis returns.
 */
import { createHash } from 'node:crypto';
import { createRedisConnection, type RedisConnection, type RedisTarget } from '../redis-client.js';
import type { Logger } from '../logger.js';
import { checkArgs, windowStartOf, type CounterHit, type CounterStore } from './store.js';

const HIT_SCRIPT = `local c = redis.call('INCRBY', KEYS[1], ARGV[1])
if c == tonumber(ARGV[1]) or redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return c`;
const HIT_SHA = createHash('sha1').update(HIT_SCRIPT).digest('hex');
/** Slots as a sorted set of tokens scored by when they lapse: lapsed ones go, then one is added if fewer than the limit are held. */
const ACQUIRE_SCRIPT = `redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`;

/** Extra lifetime of a window key past its window end (instances' clocks differ slightly). */
const TTL_SLACK_MS = 1_000;
/** Cap of the client's command queue: while Redis is hung, new hits fail at once instead of piling up. */
const MAX_QUEUED_COMMANDS = 10_000;
/** Consecutive timeouts on a connection believed healthy after which the client is replaced. */
const STALE_AFTER_TIMEOUTS = 5;

class CounterTimeoutError extends Error {
  constructor(ms: number) {
    super(`Redis counter command timed out after ${ms} ms`);
    this.name = 'CounterTimeoutError';
  }
}

type Client = RedisConnection;

/** Distinct error messages logged before the client is ready again (bounds the memory of them). */
const MAX_DISTINCT_ERRORS = 20;

export interface RedisCounterStoreOptions {
  /** One Redis server (REDIS_URL)… */
  url?: string;
  /** …or any target, a master behind sentinels included (lib/platform/redis-client.ts). */
  target?: RedisTarget;
  /** Bound on every command (config `redisTimeoutMs`). */
  timeoutMs: number;
  logger?: Logger;
  /** Cap of the reconnect backoff; default 2 s. */
  maxReconnectDelayMs?: number;
}

export class RedisCounterStore implements CounterStore {
  private client: Client;
  private closed = false;
  private consecutiveTimeouts = 0;
  private lastReplaceAt = 0;
  private readonly errorsLogged = new Set<string>();
  private everReady = false;
  private readonly timeoutMs: number;

  constructor(private readonly opts: RedisCounterStoreOptions) {
    if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) throw new RangeError('timeoutMs must be positive');
    if (!opts.url && !opts.target) throw new RangeError('url or target is required');
    this.timeoutMs = opts.timeoutMs;
    this.client = this.newClient();
  }

  private newClient(): Client {
    const target = this.opts.target ?? { kind: 'url' as const, url: this.opts.url ?? '' };
    const client = createRedisConnection(target, { timeoutMs: this.timeoutMs, maxReconnectDelayMs: this.opts.maxReconnectDelayMs ?? 2_000, maxQueuedCommands: MAX_QUEUED_COMMANDS });
    // Once per distinct error until the client is ready again, not once per 10 s: a sentinel that
    // stays down repeats its error for ever while the counters work on the master (issue 71).
    client.onError((err: unknown) => {
      // node-redis reports one failure twice, once wrapped ("… client error: Error: connect ECONNREFUSED …").
      const message = (err instanceof Error ? err.message : String(err)).replace(/^.*\bError: /, '');
      if (this.errorsLogged.has(message) || this.errorsLogged.size >= MAX_DISTINCT_ERRORS) return;
      this.errorsLogged.add(message);
      this.opts.logger?.warn('Redis counter store: connection error (the master: counters unavailable, rate limits open, until it reconnects; or a sentinel); each distinct error is logged once until the client is ready again', { error: message });
    });
    client.onReady(() => {
      this.consecutiveTimeouts = 0;
      // The first ready only ends the start: an error from then on (a sentinel down from the start) is not new.
      if (!this.everReady) return void (this.everReady = true);
      if (this.errorsLogged.size) this.opts.logger?.info('Redis counter store connected again');
      this.errorsLogged.clear();
    });
    // Boot never waits for Redis and never fails on it: the client keeps retrying in the background.
    client.connect().catch(() => {});
    return client;
  }

  /**
   * A connection that is open but never answers (hung server, half-open TCP) is only noticed by
   * TCP keep-alive after minutes; after several timeouts in a row, replace the client.
   */
  private replaceStaleClient(): void {
    const t = Date.now();
    if (this.closed || t - this.lastReplaceAt < Math.max(5_000, this.timeoutMs * 10)) return;
    this.lastReplaceAt = t;
    this.consecutiveTimeouts = 0;
    const old = this.client;
    this.opts.logger?.warn('Redis counter store: commands keep timing out; reconnecting');
    this.client = this.newClient();
    try {
      old.destroy();
    } catch {
      /* already closed */
    }
  }

  /** True while connected; `hit` rejects at once otherwise. Connecting happens in the background. */
  get isReady(): boolean {
    return !this.closed && this.client.isReady;
  }

  hit(key: string, windowMs: number, now: Date, amount = 1): Promise<CounterHit> {
    try {
      checkArgs(windowMs, amount);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.closed) return Promise.reject(new Error('Counter store is closed'));
    const client = this.client;
    // Fast path while disconnected (also what disableOfflineQueue would do).
    if (!client.isReady) return Promise.reject(new Error('Redis counter store is not connected'));

    const nowMs = now.getTime();
    const start = windowStartOf(nowMs, windowMs);
    const resetAtMs = start + windowMs;
    const ttl = Math.max(1, resetAtMs - nowMs + TTL_SLACK_MS);
    const windowKey = `${key}:${start}`;

    const command = this.evalHit(client, windowKey, amount, ttl);
    return new Promise<CounterHit>((resolve, reject) => {
      const timer = setTimeout(() => {
        command.catch(() => {}); // it may settle later (or when the socket closes)
        if (client === this.client && client.isReady && ++this.consecutiveTimeouts >= STALE_AFTER_TIMEOUTS) {
          this.replaceStaleClient();
        }
        reject(new CounterTimeoutError(this.timeoutMs));
      }, this.timeoutMs);
      command.then(
        (count) => {
          clearTimeout(timer);
          this.consecutiveTimeouts = 0;
          resolve({ count, resetAt: new Date(resetAtMs) });
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  async acquire(key: string, limit: number, holdMs: number, now: Date): Promise<string | null> {
    const token = `${now.getTime()}.${Math.random().toString(36).slice(2)}`;
    const until = now.getTime() + holdMs;
    const reply = await this.bounded((client) => client.sendCommand(['EVAL', ACQUIRE_SCRIPT, '1', `slots:${key}`, String(now.getTime()), String(limit), String(until), token, String(holdMs + TTL_SLACK_MS)]));
    return Number(reply) === 1 ? token : null;
  }

  async release(key: string, token: string): Promise<void> {
    await this.bounded((client) => client.sendCommand(['ZREM', `slots:${key}`, token]));
  }

  /** One command within `timeoutMs`; rejects at once while disconnected. */
  private bounded<T>(run: (client: Client) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('Counter store is closed'));
    const client = this.client;
    if (!client.isReady) return Promise.reject(new Error('Redis counter store is not connected'));
    const command = run(client);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        command.catch(() => {});
        reject(new CounterTimeoutError(this.timeoutMs));
      }, this.timeoutMs);
      command.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  /** EVALSHA, falling back to EVAL (which caches the script again) on NOSCRIPT, e.g. after a Redis restart. */
  private async evalHit(client: Client, windowKey: string, amount: number, ttl: number): Promise<number> {
    const tail = ['1', windowKey, String(amount), String(ttl)];
    let reply: unknown;
    try {
      reply = await client.sendCommand(['EVALSHA', HIT_SHA, ...tail]);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      reply = await client.sendCommand(['EVAL', HIT_SCRIPT, ...tail]);
    }
    const n = Number(reply);
    if (!Number.isFinite(n)) throw new Error(`Unexpected reply from the counter script: ${String(reply)}`);
    return n;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const client = this.client;
    if (client.isReady) {
      // Graceful (pending replies drain), but bounded.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        client.close().catch(() => {}),
        new Promise<void>((r) => {
          timer = setTimeout(r, Math.max(this.timeoutMs, 100));
        }),
      ]);
      clearTimeout(timer);
    }
    try {
      client.destroy(); // stops any reconnect loop
    } catch {
      /* already closed */
    }
  }
}

/** Redis when `redisUrl` is set (shared across instances), else the in-process store. */
