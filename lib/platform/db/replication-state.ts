/**
 * Whether the primary can confirm commits, as /readyz reports it (issue 71): with
 * `synchronous_standby_names` set (Patroni's synchronous mode), a commit waits until enough
 * synchronous standbys have it; with none connected every write hangs, so the instance must not be
 * ready for the balancer. One read-only statement; what a role without `pg_read_all_stats` cannot
 * see (the standbys' sync_state) is judged by what it can: no WAL sender at all, its own sessions
 * waiting on SyncRep, or a commit the guard had to cancel a moment ago (commit-guard.ts).
 */
import type { Queryable } from './transaction.js';

export interface ReplicationRow {
  names: string;
  commit_mode: string;
  senders: number;
  sync: number;
  hidden: number;
  lag_seconds: number | null;
  waiting: number;
}

export const REPLICATION_SQL = `SELECT pg_catalog.current_setting('synchronous_standby_names') AS names,
  pg_catalog.current_setting('synchronous_commit') AS commit_mode,
  (SELECT count(*)::int FROM pg_catalog.pg_stat_replication) AS senders,
  (SELECT count(*)::int FROM pg_catalog.pg_stat_replication WHERE sync_state IN ('sync', 'quorum')) AS sync,
  (SELECT count(*)::int FROM pg_catalog.pg_stat_replication WHERE sync_state IS NULL) AS hidden,
  (SELECT max(extract(epoch FROM replay_lag))::float8 FROM pg_catalog.pg_stat_replication) AS lag_seconds,
  (SELECT count(*)::int FROM pg_catalog.pg_stat_activity WHERE wait_event = 'SyncRep' AND now() - query_start > interval '1 second') AS waiting`;

/** How many synchronous standbys `synchronous_standby_names` asks for (`FIRST 2 (…)`, `ANY 2 (…)`, `2 (…)`; else 1). */
export function requiredStandbys(names: string): number {
  const m = /^\s*(?:(?:FIRST|ANY)\s+)?(\d+)\s*\(/i.exec(names);
  return m ? Number(m[1]) : 1;
}

export interface ReplicationState {
  /** `ok`, `not configured`, or why commits cannot complete: the /readyz check `replication`. */
  check: string;
  /** Informational: standbys seen, synchronous ones, the largest replay lag (null when unknown). */
  standbys: number;
  synchronous: number | null;
  lag_seconds: number | null;
}

/** Judges one row of REPLICATION_SQL; `recentlyUnconfirmed`: the guard cancelled a commit a moment ago. */
export function judgeReplication(r: ReplicationRow, recentlyUnconfirmed: boolean): ReplicationState {
  const info = { standbys: r.senders, synchronous: r.hidden > 0 ? null : r.sync, lag_seconds: r.lag_seconds };
  const names = r.names.trim();
  if (!names || ['off', 'local'].includes(r.commit_mode)) return { check: 'not configured', ...info };
  const need = requiredStandbys(names);
  const why = (what: string) => `no synchronous standby: ${what} (synchronous_standby_names = '${names}'); commits wait, so writes cannot complete`;
  if (r.senders === 0) return { check: why('no standby is connected'), ...info };
  if (r.hidden === 0 && r.sync < need) return { check: why(`${r.sync} of ${need} connected`), ...info };
  if (r.waiting > 0) return { check: why(`${r.waiting} commit(s) waiting over 1 s`), ...info };
  if (recentlyUnconfirmed) return { check: why('a commit was just cancelled after the commit bound'), ...info };
  return { check: 'ok', ...info };
}

export async function readReplication(db: Queryable, recentlyUnconfirmed: boolean): Promise<ReplicationState> {
  const { rows } = await db.query<ReplicationRow>(REPLICATION_SQL);
  return judgeReplication(rows[0], recentlyUnconfirmed);
}
