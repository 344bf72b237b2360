/**
 * Redis in Sentinel mode (issue 59 item 1; docs/deploy.md "High availability"), apart from the kill
 * test (tests/proofs/failover.test.ts, which needs Patroni and etcd):
 * - the settings: REDIS_SENTINELS with REDIS_SENTINEL_MASTER select Sentinel mode; half of the pair,
 *   both modes at once, or an address that is not host:port stop start-up naming the setting;
 * - the counters through a sentinel: a redis-server of the test's own and a sentinel watching it
 *   (`redis-server --sentinel`, no package beyond redis-server): hits count on the master the
 *   sentinel names, and a sentinel that names no known master leaves the counters failing fast
 *   (the rate limit fails open), never hanging;
 * - what is missing (issue 71 item 5): a sentinel that does not answer and a master without a
 *   replica are named, and the dead sentinel's error (repeated every 2 s by the client) is logged
 *   once, not once per 10 s for ever.
 * @shared Its sentinels and Redis are processes of its own on ports of its own, and it measures no
 *   time; so it shares the workers.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../lib/platform/config.js';
import { RedisCounterStore } from '../../lib/platform/counters.js';
import { redisTargetOf } from '../../lib/platform/redis-client.js';
import { readRedisHa } from '../../lib/platform/redis-ha.js';
import { missingOf } from '../../lib/platform/ha-watch.js';
import { freePort } from '../support/local.js';
import { RedisServer, eventually, hasRedisServer } from '../support/service-process.js';

describe('Sentinel mode settings', () => {
  it('When REDIS_SENTINELS and REDIS_SENTINEL_MASTER are set, then the Redis target is the master behind those sentinels', () => {
    const config = loadConfig({ REDIS_SENTINELS: '10.0.0.1:26379, sentinel-2:26380,[::1]:26381', REDIS_SENTINEL_MASTER: 'messaging', REDIS_PASSWORD: 'p', REDIS_SENTINEL_PASSWORD: 's' });
    expect(redisTargetOf(config)).toEqual({
      kind: 'sentinel',
      sentinels: [{ host: '10.0.0.1', port: 26379 }, { host: 'sentinel-2', port: 26380 }, { host: '::1', port: 26381 }],
      master: 'messaging',
      password: 'p',
      sentinelPassword: 's',
    });
    expect(redisTargetOf(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }))).toEqual({ kind: 'url', url: 'redis://127.0.0.1:6379' });
    expect(redisTargetOf(loadConfig({}))).toBeUndefined();
  });

  it('When only half of the pair, both modes, or an address without a port is set, then start-up stops naming the setting', () => {
    expect(() => loadConfig({ REDIS_SENTINELS: '127.0.0.1:26379' })).toThrow(/REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together/);
    expect(() => loadConfig({ REDIS_SENTINEL_MASTER: 'messaging' })).toThrow(/REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together/);
    expect(() => loadConfig({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_MASTER: 'm', REDIS_URL: 'redis://127.0.0.1:6379' })).toThrow(/REDIS_URL or REDIS_SENTINELS, not both/);
    expect(() => loadConfig({ REDIS_SENTINELS: '127.0.0.1', REDIS_SENTINEL_MASTER: 'm' })).toThrow(/REDIS_SENTINELS: "127.0.0.1" is not host:port/);
    expect(() => loadConfig({ REDIS_SENTINELS: 'h:99999', REDIS_SENTINEL_MASTER: 'm' })).toThrow(/is not host:port/);
  });
});

const describeIf = hasRedisServer ? describe : describe.skip;
if (!hasRedisServer) console.log('redis-sentinel: the counters part skipped: no redis-server here');

let sentinel: ChildProcess | undefined;
let dir: string | undefined;
let master: RedisServer | undefined;
const stores: RedisCounterStore[] = [];

afterAll(async () => {
  for (const s of stores) await s.close();
  sentinel?.kill('SIGKILL');
  await master?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describeIf('the counters through a sentinel', () => {
  it('When the counters are given a sentinel, then they count on the master it names; a master name it does not know fails fast', async () => {
    master = await RedisServer.start();
    const port = await freePort();
    dir = mkdtempSync(path.join(tmpdir(), 'sentinel-'));
    const conf = path.join(dir, 'sentinel.conf');
    writeFileSync(conf, `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor messaging 127.0.0.1 ${master.port} 1\n`);
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    const store = new RedisCounterStore({ target: { kind: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], master: 'messaging' }, timeoutMs: 1_000 });
    stores.push(store);
    await eventually(async () => store.isReady, (ok) => ok, 15_000, 'the sentinel client ready', 100);
    const now = new Date();
    const first = await store.hit('sentinel-test', 60_000, now);
    const second = await store.hit('sentinel-test', 60_000, now, 2);
    expect([first.count, second.count]).toEqual([1, 3]);
    // The count is on the master the sentinel named, under the window's key.
    const keys = await new Promise<string>((resolve) => {
      const cli = spawn('redis-cli', ['-p', String(master!.port), '--scan', '--pattern', 'sentinel-test:*']);
      let out = '';
      cli.stdout.on('data', (d) => (out += d));
      cli.on('close', () => resolve(out.trim()));
      cli.on('error', () => resolve('(no redis-cli)'));
    });
    if (keys !== '(no redis-cli)') expect(keys.split('\n')).toHaveLength(1);

    // A master name no sentinel monitors: never ready, and a hit is refused promptly, not hung.
    const lost = new RedisCounterStore({ target: { kind: 'sentinel', sentinels: [{ host: '127.0.0.1', port }], master: 'nobody' }, timeoutMs: 200 });
    stores.push(lost);
    await sleep(500);
    expect(lost.isReady).toBe(false);
    const t0 = Date.now();
    await expect(lost.hit('x', 60_000, new Date())).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(1_000);
  }, 60_000);

  it('When one of the sentinels is down and the master has no replica, then both are named, and the dead sentinel is logged once however often the client meets it', async () => {
    const own = await RedisServer.start();
    const port = await freePort();
    const dead = await freePort();
    const ownDir = mkdtempSync(path.join(tmpdir(), 'sentinel-'));
    writeFileSync(path.join(ownDir, 'sentinel.conf'), `port ${port}\nbind 127.0.0.1\ndir ${ownDir}\nsentinel monitor messaging 127.0.0.1 ${own.port} 1\n`);
    const proc = spawn('redis-server', [path.join(ownDir, 'sentinel.conf'), '--sentinel'], { stdio: 'ignore' });
    try {
      const sentinels = [{ host: '127.0.0.1', port: dead }, { host: '127.0.0.1', port }];
      const report = await eventually(() => readRedisHa({ sentinels, master: 'messaging' }, 1_000), (r) => r.master !== null, 15_000, 'a sentinel answering');
      expect(report).toEqual({ sentinels: 2, sentinels_up: 1, sentinels_down: [`127.0.0.1:${dead}`], master: `127.0.0.1:${own.port}`, replicas: 0 });
      expect(missingOf(null, report)).toEqual([
        `Redis: sentinel 127.0.0.1:${dead} not answering (1 of 2 up)`,
        `Redis: master 127.0.0.1:${own.port} has no replica (the next master fault loses the counters)`,
      ]);

      const warned: string[] = [];
      const logger = { warn: (_m: string, meta?: { error?: string }) => void warned.push(String(meta?.error)), info: () => undefined };
      const store = new RedisCounterStore({ target: { kind: 'sentinel', sentinels, master: 'messaging' }, timeoutMs: 1_000, logger: logger as never });
      stores.push(store);
      await eventually(async () => store.isReady, (ok) => ok, 15_000, 'the sentinel client ready', 100);
      // The client asks the sentinels every 2 s (scanInterval) and meets the dead one each time; the
      // old log said so once per 10 s, so the wait is longer than that.
      await sleep(11_000);
      expect(warned.filter((e) => e.includes(`:${dead}`))).toEqual([`connect ECONNREFUSED 127.0.0.1:${dead}`]);
      expect((await store.hit('still-counting', 60_000, new Date())).count).toBe(1);
    } finally {
      proc.kill('SIGKILL');
      await own.stop();
      rmSync(ownDir, { recursive: true, force: true });
    }
  }, 60_000);
});
