/**
 * How /readyz judges whether the primary can confirm commits (lib/platform/db/replication-state.ts),
 * from one row of its statement, including what a role without pg_read_all_stats cannot see.
 */
import { describe, expect, it } from '@jest/globals';
import { judgeReplication, requiredStandbys, type ReplicationRow } from '../../lib/platform/db/replication-state.js';

const row = (r: Partial<ReplicationRow>): ReplicationRow => ({ names: '*', commit_mode: 'on', senders: 1, sync: 1, hidden: 0, lag_seconds: 0.01, waiting: 0, ...r });

describe('replication readiness', () => {
  it('When synchronous_standby_names is empty or commits do not wait (synchronous_commit local/off), then the check is not configured', () => {
    expect(judgeReplication(row({ names: '' , senders: 0, sync: 0 }), false).check).toBe('not configured');
    expect(judgeReplication(row({ commit_mode: 'local', senders: 0, sync: 0 }), false).check).toBe('not configured');
  });

  it('When a synchronous standby is required and none (or too few) is connected, then the check names it', () => {
    expect(judgeReplication(row({ senders: 0, sync: 0 }), false).check).toMatch(/^no synchronous standby: no standby is connected \(synchronous_standby_names = '\*'\)/);
    expect(judgeReplication(row({ names: 'FIRST 2 (a, b, c)', senders: 2, sync: 1 }), false).check).toMatch(/^no synchronous standby: 1 of 2 connected/);
    expect(judgeReplication(row({}), false)).toEqual({ check: 'ok', standbys: 1, synchronous: 1, lag_seconds: 0.01 });
  });

  it('When the standbys sync state is hidden from the role, then waiting commits or a commit just cancelled decide, and the count is reported unknown', () => {
    const hidden = row({ sync: 0, hidden: 1, lag_seconds: null });
    expect(judgeReplication(hidden, false)).toEqual({ check: 'ok', standbys: 1, synchronous: null, lag_seconds: null });
    expect(judgeReplication({ ...hidden, waiting: 2 }, false).check).toMatch(/2 commit\(s\) waiting over 1 s/);
    expect(judgeReplication(hidden, true).check).toMatch(/a commit was just cancelled/);
  });

  it('When synchronous_standby_names has a count, then that many are required', () => {
    expect([requiredStandbys('*'), requiredStandbys('pg2'), requiredStandbys('ANY 2 (a, b, c)'), requiredStandbys('3 (a, b, c)'), requiredStandbys('FIRST 1 ("pg2")')]).toEqual([1, 1, 2, 3, 1]);
  });
});
