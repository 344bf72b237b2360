/**
 * What the HA topology lacks (lib/platform/ha-watch.ts): each missing piece named in one sentence,
 * and one log line per change of that list, not one per check (issue 71 item 5).
 */
import { describe, expect, it } from '@jest/globals';
import { LAG_WARN_SECONDS, missingOf, watchHa } from '../lib/platform/ha-watch.js';
import type { ReplicationState } from '../lib/platform/db/replication-state.js';
import type { RedisHaReport } from '../lib/platform/redis-ha.js';

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
    expect(w.report()).toEqual({ missing: [], database: null, redis: null, checked_at: null });
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
    expect(w.report()).toEqual({ missing: [], database: { standbys: 2, synchronous: 1, lag_seconds: 0.2 }, redis: healthyRedis, checked_at: '2026-11-26T12:00:00.000Z' });
  });

  it('When a reading fails, then that part is unknown (null) and the rest is still judged', async () => {
    const logger = { warn: () => undefined, info: () => undefined };
    const w = watchHa({ readDatabase: async () => { throw new Error('timed out'); }, readRedis: async () => ({ ...healthyRedis, replicas: 0 }), logger, now: () => new Date(0), everyMs: 0 });
    const r = await w.check();
    expect([r.database, r.missing.length]).toEqual([null, 1]);
  });
});
