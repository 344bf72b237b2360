/**
 * Instances starting at once on a fresh database (issue 71): the job runner's tables (Agenda's
 * `agenda_jobs`, `agenda_logs`, their indexes and trigger) are created by one of them, under an
 * advisory lock, and the others find them there; none crashes on "duplicate key value violates
 * unique constraint pg_class_relname_nsp_index". Each runner has a pool of its own, as separate
 * instances do; the file's own database has the tables dropped first, as a fresh one has none.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { createJobRunner, type JobRunner } from '../../jobs/runner.js';
import { testDatabaseUrl } from '../support/db.js';
import { eventually } from '../support/eventually.js';
import { freePort } from '../support/local.js';

const RUNNERS = 4;
const quiet = { warn: () => undefined, info: () => undefined, error: () => undefined } as never;
const pools: pg.Pool[] = [];
const runners: JobRunner[] = [];
// An unheard rejection (the backend's connect, which Agenda never awaits) would end a real process.
const crashes: string[] = [];
const onCrash = (e: unknown) => void crashes.push(e instanceof Error ? e.message : String(e));

async function sql<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: testDatabaseUrl() });
  await c.connect();
  try {
    return (await c.query<T>(text)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
  await sql('DROP TABLE IF EXISTS agenda_jobs, agenda_logs CASCADE; DROP FUNCTION IF EXISTS update_agenda_jobs_updated_at()');
});

afterAll(async () => {
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
  for (const r of runners) await r.stop().catch(() => undefined);
  for (const p of pools) await p.end().catch(() => undefined);
});

describe('job tables', () => {
  it(`When ${RUNNERS} job runners start at once on a database without the job tables, then all start, none throws, and the tables are there once`, async () => {
    expect(await sql("SELECT to_regclass('agenda_jobs') AS t")).toEqual([{ t: null }]);
    const ran: string[] = [];
    for (let i = 0; i < RUNNERS; i++) {
      const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 });
      pool.on('error', () => undefined);
      pools.push(pool);
      const runner = createJobRunner({ pool, logger: quiet, processEveryMs: 100, lockLifetimeMs: 1000, name: `fresh-${i}` });
      runner.define<{ by: string }>('fresh-probe', async (data) => void ran.push(data.by));
      runners.push(runner);
    }
    const started = await Promise.allSettled(runners.map((r) => r.start()));
    expect(started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'started'))).toEqual(Array(RUNNERS).fill('started'));

    const indexes = await sql<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE tablename IN ('agenda_jobs', 'agenda_logs') ORDER BY indexname");
    expect(indexes.map((r) => r.indexname)).toEqual(
      expect.arrayContaining(['agenda_jobs_find_and_lock_idx', 'agenda_jobs_next_run_at_idx', 'agenda_logs_job_name_idx', 'agenda_logs_timestamp_idx']),
    );
    expect(await sql("SELECT count(*)::int AS n FROM pg_trigger WHERE tgname = 'agenda_jobs_updated_at_trigger'")).toEqual([{ n: 1 }]);

    // The runners work on them: a job scheduled through one runs (on whichever runner takes it).
    await runners[RUNNERS - 1].schedule(new Date(), 'fresh-probe', { by: 'last' });
    await eventually(async () => ran.length, (n) => n === 1, 10_000, 'the probe job ran');
    expect(crashes).toEqual([]);
  }, 60_000);

  it('When the database is out of reach as the runner is made, then start() rejects naming it, and nothing is left unhandled (it used to end the process and leave start() waiting)', async () => {
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/none`, max: 2, connectionTimeoutMillis: 2000 });
    pool.on('error', () => undefined);
    pools.push(pool);
    const runner = createJobRunner({ pool, logger: quiet, processEveryMs: 100, lockLifetimeMs: 1000, name: 'unreachable' });
    await expect(runner.start()).rejects.toThrow(/ECONNREFUSED|connect/);
    expect(crashes).toEqual([]);
  });

  it('When the job tables are already there, then a runner starts on them unchanged (the DDL is idempotent under its lock)', async () => {
    const pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 3 });
    pool.on('error', () => undefined);
    pools.push(pool);
    const runner = createJobRunner({ pool, logger: quiet, processEveryMs: 100, lockLifetimeMs: 1000, name: 'again' });
    runners.push(runner);
    await expect(runner.start()).resolves.toBeUndefined();
    expect(crashes).toEqual([]);
  });
});
