/**
 * What the high-availability topology lacks right now (issue 71 item 5): no synchronous standby,
 * a standby far behind, a Redis master without a replica, a sentinel or an etcd member not answering. Checked every
 * `everyMs` (10 s), reported in /readyz's `ha` (informational: the balancer's decision stays with
 * `checks`), and logged once per change, never once per check: a warn line naming what went
 * missing, an info line when nothing is missing any more.
 */
import type { ReplicationState } from './db/replication-state.js';
import type { RedisHaReport } from './redis-ha.js';
import type { EtcdReport } from './etcd-health.js';

/** A standby replaying further behind than this is named (seconds). */
export const LAG_WARN_SECONDS = 10;

export interface HaReport {
  /** What is missing, one sentence each; empty when nothing is (or nothing is replicated). */
  missing: string[];
  database: { standbys: number; synchronous: number | null; lag_seconds: number | null } | null;
  redis: RedisHaReport | null;
  /** The etcd members (HA_ETCD_ENDPOINTS set only; null otherwise). */
  etcd: EtcdReport | null;
  /** When this was checked; null before the first check. */
  checked_at: string | null;
}

export function missingOf(db: ReplicationState | null, redis: RedisHaReport | null, etcd: EtcdReport | null = null): string[] {
  const out: string[] = [];
  if (db && db.check !== 'ok' && db.check !== 'not configured') out.push(`PostgreSQL: ${db.check}`);
  if (db?.lag_seconds != null && db.lag_seconds > LAG_WARN_SECONDS) out.push(`PostgreSQL: a standby replays ${db.lag_seconds.toFixed(1)} s behind the primary`);
  if (redis) {
    if (redis.sentinels_down.length) out.push(`Redis: sentinel ${redis.sentinels_down.join(', ')} not answering (${redis.sentinels_up} of ${redis.sentinels} up)`);
    if (redis.master && redis.replicas === 0) out.push(`Redis: master ${redis.master} has no replica (the next master fault loses the counters)`);
  }
  if (etcd?.members_down.length) {
    const quorum = etcd.members_up > etcd.members / 2 ? 'quorum kept' : 'quorum lost: Patroni runs on failsafe mode';
    out.push(`etcd: ${etcd.members_down.join(', ')} not healthy (${etcd.members_up} of ${etcd.members} up, ${quorum})`);
  }
  return out;
}

export interface HaWatch {
  report(): HaReport;
  /** One check now (the timer's, or a test's). */
  check(): Promise<HaReport>;
  stop(): void;
}

export function watchHa(opts: {
  readDatabase: () => Promise<ReplicationState>;
  readRedis?: () => Promise<RedisHaReport>;
  readEtcd?: () => Promise<EtcdReport>;
  logger: { warn(message: string, meta?: object): unknown; info(message: string, meta?: object): unknown };
  now: () => Date;
  /** 0: no timer (checks only when called). */
  everyMs: number;
}): HaWatch {
  let latest: HaReport = { missing: [], database: null, redis: null, etcd: null, checked_at: null };
  let logged = '';
  const check = async (): Promise<HaReport> => {
    const [db, redis, etcd] = await Promise.all([
      opts.readDatabase().catch(() => null),
      opts.readRedis ? opts.readRedis().catch(() => null) : Promise.resolve(null),
      opts.readEtcd ? opts.readEtcd().catch(() => null) : Promise.resolve(null),
    ]);
    const missing = missingOf(db, redis, etcd);
    latest = {
      missing,
      database: db && { standbys: db.standbys, synchronous: db.synchronous, lag_seconds: db.lag_seconds },
      redis,
      etcd,
      checked_at: opts.now().toISOString(),
    };
    const key = missing.join('; ');
    if (key !== logged) {
      if (missing.length) opts.logger.warn(`high availability: missing: ${key}`, { missing });
      else opts.logger.info('high availability: nothing missing any more');
      logged = key;
    }
    return latest;
  };
  let timer: NodeJS.Timeout | undefined;
  if (opts.everyMs > 0) {
    void check();
    timer = setInterval(() => void check(), opts.everyMs);
    timer.unref();
  }
  return { report: () => latest, check, stop: () => clearInterval(timer) };
}
