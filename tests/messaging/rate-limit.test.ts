/**
 * Per-credential rate limiter and the counter stores behind it.
 *
 * - Behaviours run against the in-process store and, when REDIS_TEST_URL is set, against a real Redis
 *   (random key prefix per run and per test, so runs never collide).
 * - Fail-open runs its own redis-server (skipped with a message when the binary is not on PATH):
 *   killed / hung / absent at boot, then back → limiting resumes without a restart of the store.
 */
import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import request from 'supertest';
import { createClient } from 'redis';
import { ManualClock } from '../../lib/platform/clock.js';
import { MemoryCounterStore, RedisCounterStore, createCounterStore, windowStartOf, type CounterStore } from '../../lib/platform/counters.js';
import type { Logger } from '../../lib/platform/logger.js';
import { eventually } from '../support/eventually.js';
import { RedisServer, hasRedisServer } from '../support/redis-server.js';
import { rateLimit } from '../../middleware/rate-limit.js';
import { timingBound } from '../support/retry-timing.js';

const MINUTE = 60_000;
/** 10 s into a minute: the window resets in 50 s. */
const T0 = Date.UTC(2030, 0, 1, 12, 0, 10);
const RUN = `rltest-${randomUUID()}`;
const REDIS_TEST_URL = process.env.REDIS_TEST_URL;

// ------------------------------------------------------------------------------------------------
// Helpers

interface CapturedLogger {
  logger: Logger;
  warnings: string[];
}

function captureLogger(): CapturedLogger {
  const warnings: string[] = [];
  const log = (msg: unknown) => {
    warnings.push(String(msg));
  };
  const logger = { warn: log, error: log, info: () => {}, debug: () => {} } as unknown as Logger;
  return { logger, warnings };
}

interface TestApp {
  server: Server;
  close(): Promise<void>;
}

/** A tiny app: the limiter keyed on `x-credential`, one route, and a minimal error middleware. */
async function startApp(opts: {
  store: CounterStore;
  clock: ManualClock;
  limit?: number | (() => number);
  prefix?: string;
  logger?: Logger;
}): Promise<TestApp> {
  const app = express();
  app.use(
    rateLimit({
      store: opts.store,
      limit: opts.limit ?? 60,
      clock: opts.clock,
      keyOf: (req) => req.header('x-credential') ?? undefined,
      logger: opts.logger,
      prefix: opts.prefix ?? `${RUN}:${randomUUID()}:`,
    }),
  );
  app.get('/v1/ping', (_req, res) => {
    res.json({ ok: true });
  });
  app.use((err: any, _req: Request, res: Response, _next: NextFunction) => {
    for (const [k, v] of Object.entries((err.headers as Record<string, string> | undefined) ?? {})) res.setHeader(k, v);
    res.status(err.status ?? 500).json({
      success: false,
      error: { code: err.code ?? 'server_error', message: err.message, details: err.details },
    });
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function ping(app: TestApp, credential?: string) {
  const r = request(app.server).get('/v1/ping');
  return credential === undefined ? r : r.set('x-credential', credential);
}


// ------------------------------------------------------------------------------------------------
// Behaviours shared by both stores

function behaviours(makeStore: () => CounterStore | Promise<CounterStore>) {
  let store: CounterStore;
  const apps: TestApp[] = [];
  const app = async (clock: ManualClock, limit?: number | (() => number)) => {
    const a = await startApp({ store, clock, limit });
    apps.push(a);
    return a;
  };

  beforeAll(async () => {
    store = await makeStore();
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await store.close();
  });

  it('aligns windows to multiples of windowMs and adds amount', async () => {
    const key = `${RUN}:${randomUUID()}`;
    const first = await store.hit(key, MINUTE, new Date(T0));
    expect(first.count).toBe(1);
    expect(first.resetAt.toISOString()).toBe('2030-01-01T12:01:00.000Z');
    expect((await store.hit(key, MINUTE, new Date(T0 + 1000), 5)).count).toBe(6);
    // Next window: a fresh count.
    const next = await store.hit(key, MINUTE, new Date(T0 + MINUTE));
    expect(next.count).toBe(1);
    expect(next.resetAt.toISOString()).toBe('2030-01-01T12:02:00.000Z');
  });

  it('sets the rate headers on every response and counts Remaining down', async () => {
    const a = await app(new ManualClock(T0));
    for (let i = 1; i <= 60; i++) {
      const res = await ping(a, 'key-a');
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('60');
      expect(res.headers['ratelimit-remaining']).toBe(String(60 - i));
      expect(res.headers['ratelimit-reset']).toBe('50');
      expect(res.headers['retry-after']).toBeUndefined();
    }
  });

  it('answers the 61st request with 429 rate_limited and Retry-After, and resets with the window', async () => {
    const clock = new ManualClock(T0);
    const a = await app(clock);
    for (let i = 1; i <= 60; i++) expect((await ping(a, 'key-a')).status).toBe(200);

    clock.advance(20_000); // 30 s left in the window
    const res = await ping(a, 'key-a');
    expect(res.status).toBe(429);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('rate_limited');
    expect(res.body.error.message).toMatch(/rate limit/i);
    expect(res.body.error.details).toEqual({ limit: 60, resetAt: '2030-01-01T12:01:00.000Z' });
    expect(res.headers['retry-after']).toBe('30');
    expect(res.headers['ratelimit-limit']).toBe('60');
    expect(res.headers['ratelimit-remaining']).toBe('0');
    expect(res.headers['ratelimit-reset']).toBe('30');

    // Still limited (and Remaining never negative) until the last millisecond of the window.
    clock.set(Date.UTC(2030, 0, 1, 12, 0, 59, 999));
    const last = await ping(a, 'key-a');
    expect(last.status).toBe(429);
    expect(last.headers['ratelimit-remaining']).toBe('0');
    expect(last.headers['ratelimit-reset']).toBe('1'); // 1 ms left rounds up to 1 s
    expect(last.headers['retry-after']).toBe('1');

    // Crossing the boundary opens a new window without sleeping.
    clock.set(Date.UTC(2030, 0, 1, 12, 1, 0));
    const fresh = await ping(a, 'key-a');
    expect(fresh.status).toBe(200);
    expect(fresh.headers['ratelimit-remaining']).toBe('59');
    expect(fresh.headers['ratelimit-reset']).toBe('60');
  });

  it('counts each credential separately', async () => {
    const a = await app(new ManualClock(T0));
    for (let i = 1; i <= 61; i++) await ping(a, 'key-a');
    expect((await ping(a, 'key-a')).status).toBe(429);
    const other = await ping(a, 'agent-b');
    expect(other.status).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe('59');
    expect((await ping(a, 'agent-b')).headers['ratelimit-remaining']).toBe('58');
  });

  it('skips requests without a credential (no headers, never limited)', async () => {
    const a = await app(new ManualClock(T0), 1);
    for (let i = 0; i < 3; i++) {
      const res = await ping(a);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });

  it('reads a function limit on every request', async () => {
    let limit = 2;
    const a = await app(new ManualClock(T0), () => limit);
    expect((await ping(a, 'k')).headers['ratelimit-remaining']).toBe('1');
    expect((await ping(a, 'k')).status).toBe(200);
    expect((await ping(a, 'k')).status).toBe(429);
    limit = 10;
    const res = await ping(a, 'k');
    expect(res.status).toBe(200);
    expect(res.headers['ratelimit-limit']).toBe('10');
    expect(res.headers['ratelimit-remaining']).toBe('6');
  });
}

describe('rate limit with the in-process store', () => {
  behaviours(() => new MemoryCounterStore());

  it('evicts expired windows', async () => {
    const store = new MemoryCounterStore({ sweepIntervalMs: 1_000 });
    for (let i = 0; i < 500; i++) await store.hit(`k${i}`, MINUTE, new Date(T0));
    expect(store.size).toBe(500);
    // Still inside the window: nothing is evicted.
    await store.hit('k0', MINUTE, new Date(T0 + 30_000));
    expect(store.size).toBe(500);
    // After the window ended, the next hit sweeps every expired window.
    await store.hit('k0', MINUTE, new Date(T0 + MINUTE));
    expect(store.size).toBe(1);
    // Through the middleware too: many credentials, then a later window.
    const clock = new ManualClock(T0);
    const a = await startApp({ store, clock });
    try {
      for (let i = 0; i < 20; i++) await ping(a, `cred-${i}`);
      expect(store.size).toBe(21);
      clock.advance(2 * MINUTE);
      await ping(a, 'cred-0');
      expect(store.size).toBe(1);
    } finally {
      await a.close();
      await store.close();
    }
  });

  it('createCounterStore without a Redis URL gives the in-process store', async () => {
    const store = createCounterStore({ timeoutMs: 200 });
    expect(store).toBeInstanceOf(MemoryCounterStore);
    await store.close();
  });
});

(REDIS_TEST_URL ? describe : describe.skip)('rate limit with the Redis store (REDIS_TEST_URL)', () => {
  behaviours(async () => {
    const store = new RedisCounterStore({ url: REDIS_TEST_URL!, timeoutMs: 1_000 });
    await eventually(async () => store.isReady, Boolean, 10_000, 'the store connected', 20); // connects in the background
    return store;
  });

  it('stores <key>:<windowStart> with an expiry', async () => {
    const store = createCounterStore({ redisUrl: REDIS_TEST_URL, timeoutMs: 1_000 });
    const probe = createClient({ url: REDIS_TEST_URL });
    probe.on('error', () => {});
    try {
      expect(store).toBeInstanceOf(RedisCounterStore);
      await probe.connect();
      const key = `${RUN}:${randomUUID()}`;
      await eventually(async () => (store as RedisCounterStore).isReady, Boolean, 10_000, 'the store connected', 20);
      expect((await store.hit(key, MINUTE, new Date(T0), 3)).count).toBe(3);
      const stored = `${key}:${windowStartOf(T0, MINUTE)}`;
      expect(await probe.get(stored)).toBe('3');
      const ttl = await probe.pTTL(stored);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(50_000 + 1_000); // window end + 1 s slack
      await probe.del(stored);
    } finally {
      await store.close();
      probe.destroy();
    }
  });
});

if (!REDIS_TEST_URL) {
  // eslint-disable-next-line no-console
  console.warn('rate-limit.test: REDIS_TEST_URL is not set; the shared behaviours against Redis are skipped');
}


// ------------------------------------------------------------------------------------------------
// Fail-open against a redis-server this test owns

if (!hasRedisServer) {
  // eslint-disable-next-line no-console
  console.warn('rate-limit.test: redis-server is not on PATH; the fail-open tests are skipped');
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

(hasRedisServer ? describe : describe.skip)('fail-open with a redis-server this test starts and stops', () => {
  const TIMEOUT_MS = 200;
  const servers: RedisServer[] = [];
  const stores: CounterStore[] = [];
  const apps: TestApp[] = [];

  async function setup(startServer: boolean) {
    const redis = await RedisServer.create();
    servers.push(redis);
    if (startServer) await redis.start();
    const cap = captureLogger();
    const store = new RedisCounterStore({
      url: `redis://127.0.0.1:${redis.port}`,
      timeoutMs: TIMEOUT_MS,
      maxReconnectDelayMs: 200,
      logger: cap.logger,
    });
    stores.push(store);
    const clock = new ManualClock(T0);
    const a = await startApp({ store, clock, logger: cap.logger });
    apps.push(a);
    return { redis, store, clock, app: a, cap };
  }

  /** Polls requests until the limiter answers with headers again (the client reconnected by itself). */
  async function waitForLimiting(a: TestApp): Promise<request.Response> {
    return eventually(() => ping(a, 'key-a'), (res) => res.headers?.['ratelimit-limit'] !== undefined, 10_000, 'limiting again');
  }

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all(servers.map((s) => s.stop()));
  });

  timingBound('each request within 1 s while Redis is down').it('lets requests through promptly while Redis is down, and resumes limiting when it returns', async () => {
    const { redis, app: a, cap } = await setup(true);
    const first = await waitForLimiting(a);
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-remaining']).toBe('59');
    expect((await ping(a, 'key-a')).headers['ratelimit-remaining']).toBe('58');

    await redis.stop();
    for (let i = 0; i < 10; i++) {
      const { value: res, ms } = await timed(() => ping(a, 'key-a'));
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
      expect(res.headers['ratelimit-remaining']).toBeUndefined();
      expect(ms).toBeLessThan(1_000);
    }
    // Warnings are rate-limited, not one per request.
    const failOpenWarnings = cap.warnings.filter((w) => /fail-open/.test(w));
    expect(failOpenWarnings.length).toBeGreaterThanOrEqual(1);
    expect(failOpenWarnings.length).toBeLessThanOrEqual(2);

    // Same port, empty Redis (no script cache: EVALSHA → NOSCRIPT → EVAL).
    await redis.start();
    const back = await waitForLimiting(a);
    expect(back.status).toBe(200);
    expect(back.headers['ratelimit-remaining']).toBe('59'); // no persistence: a fresh count
    expect((await ping(a, 'key-a')).headers['ratelimit-remaining']).toBe('58');
  });

  timingBound('each request within 1 s while Redis is unreachable').it('fails open when Redis is unreachable at boot, and starts limiting once it comes up', async () => {
    const { redis, app: a } = await setup(false);
    for (let i = 0; i < 5; i++) {
      const { value: res, ms } = await timed(() => ping(a, 'key-a'));
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
      expect(ms).toBeLessThan(1_000);
    }
    await redis.start();
    const res = await waitForLimiting(a);
    expect(res.headers['ratelimit-remaining']).toBe('59');
  });

  timingBound('each request within 1 s while Redis hangs').it('bounds every request while Redis hangs (SIGSTOP), and recovers after SIGCONT', async () => {
    const { redis, app: a, cap } = await setup(true);
    await waitForLimiting(a);

    redis.signal('SIGSTOP');
    try {
      for (let i = 0; i < 8; i++) {
        const { value: res, ms } = await timed(() => ping(a, 'key-a'));
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
        expect(ms).toBeLessThan(1_000);
      }
    } finally {
      redis.signal('SIGCONT');
    }
    // An open connection that never answers is replaced after a few timeouts in a row.
    expect(cap.warnings.some((w) => /keep timing out/.test(w))).toBe(true);
    const res = await waitForLimiting(a);
    expect(res.status).toBe(200);
  });
});
