/**
 * What the HA topology lacks (lib/platform/ha-watch.ts): each missing piece named in one sentence,
 * and one log line per change of that list, not one per check (issue 71 item 5).
 */
import { describe, expect, it } from '@jest/globals';
import { LAG_WARN_SECONDS, missingOf, watchHa } from '../../lib/platform/ha-watch.js';
import type { ReplicationState } from '../../lib/platform/db/replication-state.js';
import type { RedisHaReport } from '../../lib/platform/redis-ha.js';
import { readEtcd } from '../../lib/platform/etcd-health.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../support/local.js';
import { loadConfig } from '../../lib/platform/config.js';

const healthyDb: ReplicationState = { check: 'ok', standbys: 2, synchronous: 1, lag_seconds: 0.2 };
const healthyRedis: RedisHaReport = { sentinels: 3, sentinels_up: 3, sentinels_down: [], master: '10.0.0.1:6379', replicas: 1 };

describe('what the HA topology lacks', () => {
  it('When every piece is there, or nothing is replicated, then nothing is missing', () => {
    expect(missingOf(healthyDb, healthyRedis)).toEqual([]);
    expect(missingOf({ check: 'not configured', standbys: 0, synchronous: 0, lag_seconds: null }, null)).toEqual([]);
  });

  it('When the synchronous standby is gone, a standby lags, a sentinel is down or the master has no replica, then each is named', () => {
    const db = { check: "no synchronous standby: no standby is connected (synchronous_standby_names = '*'); commits wait, so writes cannot complete", standbys: 0, synchronous: 0, lag_seconds: null };
    expect(missingOf(db, null)).toEqual([`PostgreSQL: ${db.check}`]);
    expect(missingOf({ ...healthyDb, lag_seconds: LAG_WARN_SECONDS + 2.04 }, null)).toEqual(['PostgreSQL: a standby replays 12.0 s behind the primary']);
    expect(missingOf(null, { ...healthyRedis, sentinels_up: 2, sentinels_down: ['10.0.0.3:26379'], replicas: 0 })).toEqual([
      'Redis: sentinel 10.0.0.3:26379 not answering (2 of 3 up)',
      'Redis: master 10.0.0.1:6379 has no replica (the next master fault loses the counters)',
    ]);
  });

  it('When the same thing stays missing over many checks, then it is logged once; a change is logged once more, and its end once at info', async () => {
    let redis = healthyRedis;
    const lines: string[] = [];
    const logger = { warn: (m: string) => void lines.push(`warn ${m}`), info: (m: string) => void lines.push(`info ${m}`) };
    const w = watchHa({ readDatabase: async () => healthyDb, readRedis: async () => redis, logger, now: () => new Date('2026-11-26T12:00:00Z'), everyMs: 0 });
    expect(w.report()).toEqual({ missing: [], database: null, redis: null, etcd: null, checked_at: null });
    await w.check();
    expect(lines).toEqual([]);
    redis = { ...healthyRedis, replicas: 0 };
    for (let i = 0; i < 5; i++) await w.check();
    redis = { ...redis, sentinels_up: 2, sentinels_down: ['10.0.0.3:26379'] };
    for (let i = 0; i < 5; i++) await w.check();
    redis = healthyRedis;
    for (let i = 0; i < 5; i++) await w.check();
    expect(lines).toEqual([
      'warn high availability: missing: Redis: master 10.0.0.1:6379 has no replica (the next master fault loses the counters)',
      'warn high availability: missing: Redis: sentinel 10.0.0.3:26379 not answering (2 of 3 up); Redis: master 10.0.0.1:6379 has no replica (the next master fault loses the counters)',
      'info high availability: nothing missing any more',
    ]);
    expect(w.report()).toEqual({ missing: [], database: { standbys: 2, synchronous: 1, lag_seconds: 0.2 }, redis: healthyRedis, etcd: null, checked_at: '2026-11-26T12:00:00.000Z' });
  });

  it('When a reading fails, then that part is unknown (null) and the rest is still judged', async () => {
    const logger = { warn: () => undefined, info: () => undefined };
    const w = watchHa({ readDatabase: async () => { throw new Error('timed out'); }, readRedis: async () => ({ ...healthyRedis, replicas: 0 }), logger, now: () => new Date(0), everyMs: 0 });
    const r = await w.check();
    expect([r.database, r.missing.length]).toEqual([null, 1]);
  });

  it('When etcd members do not answer healthy, then they are named with whether the quorum holds', async () => {
    // One healthy member, one without quorum (`health: false`), one port where nothing listens.
    const server = http.createServer((req, res) => res.end(JSON.stringify({ health: req.url === '/health' ? 'true' : 'false' })));
    const unhealthy = http.createServer((_req, res) => res.end('{"health":"false"}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    await new Promise<void>((r) => unhealthy.listen(0, '127.0.0.1', () => r()));
    const [a, b, c] = [`http://127.0.0.1:${(server.address() as AddressInfo).port}`, `http://127.0.0.1:${(unhealthy.address() as AddressInfo).port}`, `http://127.0.0.1:${await freePort()}`];
    try {
      const etcd = await readEtcd([a, b, c], 1000);
      expect(etcd).toEqual({ members: 3, members_up: 1, members_down: [b, c] });
      expect(missingOf(null, null, etcd)).toEqual([`etcd: ${b}, ${c} not healthy (1 of 3 up, quorum lost: Patroni runs on failsafe mode)`]);
      expect(missingOf(null, null, { members: 3, members_up: 2, members_down: [c] })).toEqual([`etcd: ${c} not healthy (2 of 3 up, quorum kept)`]);
    } finally {
      server.close();
      unhealthy.close();
    }
  });

  it('When HA_ETCD_ENDPOINTS is set, then it is the members\' URLs; anything but http(s)://host:port stops start-up naming it', () => {
    expect(loadConfig({ HA_ETCD_ENDPOINTS: 'http://10.0.0.1:2379, https://etcd-2:2379/' }).haEtcdEndpoints).toEqual(['http://10.0.0.1:2379', 'https://etcd-2:2379']);
    expect(loadConfig({}).haEtcdEndpoints).toBeUndefined();
    expect(() => loadConfig({ HA_ETCD_ENDPOINTS: '10.0.0.1:2379' })).toThrow(/HA_ETCD_ENDPOINTS: "10.0.0.1:2379" is not an http\(s\):\/\/host:port URL/);
  });
});
