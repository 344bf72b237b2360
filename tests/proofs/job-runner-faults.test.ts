/**
 * Fault: the job runner's backends are terminated again and again, some while its notification
 * channel is reconnecting. Afterwards the runner still runs jobs, holds no pool connection it lost
 * (each failed reconnect used to keep its checked-out client for good: the pool shrank and
 * `pool.end()` at shutdown waited for ever), and stops promptly.
 *
 * @alone jobs must run again within 8 s of its backends' termination (timingBound).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { createJobRunner, type JobRunner } from '../../jobs/runner.js';
import { testDatabaseUrl } from '../support/db.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { timingBound } from '../support/retry-timing.js';


let pool: pg.Pool;
let runner: JobRunner;
const ran: number[] = [];

beforeAll(async () => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 });
  pool.on('error', () => undefined);
  pool.on('connect', (c) => c.on('error', () => undefined));
  runner = createJobRunner({ pool, logger: { warn: () => undefined, info: () => undefined, error: () => undefined } as never, processEveryMs: 100, lockLifetimeMs: 1000, name: 'faults-runner' });
  runner.define<{ n: number }>('faults-probe', async (data) => void ran.push(data.n));
  await runner.start();
});

afterAll(async () => {
  await runner.stop().catch(() => undefined);
  await pool.end().catch(() => undefined);
});

async function terminateOthers(): Promise<number> {
  const admin = new pg.Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  const { rowCount } = await admin.query(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database() AND application_name = ''`,
  );
  await admin.end();
  return rowCount ?? 0;
}

describe('job runner under terminated backends', () => {
  timingBound('jobs run again within 8 s').it('When its backends are terminated 12 times, some while it reconnects, then it runs jobs again, leaks no connection and stops promptly', async () => {
    for (let i = 0; i < 12; i++) {
      await terminateOthers();
      await sleep(i % 3 === 0 ? 5 : 40 + ((i * 37) % 120)); // some land during the reconnect's checkout and LISTEN
    }
    await sleep(3000); // the channel reconnects (backoff from 100 ms)
    await runner.schedule(new Date(), 'faults-probe', { n: 1 });
    const until = Date.now() + 10_000;
    while (!ran.includes(1) && Date.now() < until) await sleep(50);
    expect(ran).toContain(1);

    const t0 = Date.now();
    await runner.stop();
    // Only the channel's LISTEN client was checked out; after stop nothing is.
    expect(pool.totalCount - pool.idleCount).toBe(0);
    await Promise.race([pool.end(), sleep(5000).then(() => { throw new Error('pool.end() waits for a client never given back'); })]);
    expect(Date.now() - t0).toBeLessThan(8000);
  }, 60_000);
});
