/**
 * Instances started at the same moment on a fresh database (issue 71: "a second instance crashed
 * at its first start: duplicate key value violates unique constraint pg_class_relname_nsp_index …
 * agenda_logs_job_name_idx"). Three service processes, started at once on a scratch database this
 * file creates, migrated as compose.yaml's one-shot `migrate` leaves it (so the instances pass the
 * migrations' lock together and meet at the job tables, which no migration makes): every one
 * becomes ready, none logs a failure to start, and the job tables are there once. Without the
 * lock around the job tables' DDL this failed one run in two here ("duplicate key value violates
 * unique constraint pg_type_typname_nsp_index"); tests/jobs/job-tables.test.ts meets the race every time.
 *
 * @shared Its instances run on a scratch database of its own: it kills nothing and measures no time.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { createScratchDatabase, withClient } from '../support/db.js';
import { ServiceProcess, stopAll } from '../support/service-process.js';

const INSTANCES = 3;
let scratch: { url: string; drop(): Promise<void> } | undefined;
let sim: Simulator;
let simServer: http.Server;

beforeAll(async () => {
  scratch = await createScratchDatabase('fresh');
  // As compose.yaml's one-shot `migrate` leaves it: migrated, and no job tables yet.
  await applyMigrations(scratch.url, { logger: { info: () => undefined, warn: () => undefined } });
  sim = createSimulator({ autoStatusDelaysMs: null });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
});

afterAll(async () => {
  await stopAll();
  await sim?.close().catch(() => undefined);
  await new Promise((r) => simServer?.close(r));
  await scratch?.drop().catch(() => undefined);
}, 60_000);

describe('instances started at once on a fresh database', () => {
  it(`When ${INSTANCES} instances start at the same moment on a migrated database without the job tables, then all become ready and the job tables are made once`, async () => {
    const opts = {
      databaseUrl: scratch!.url,
      adminToken: 'adm_fresh_' + randomBytes(16).toString('hex'),
      encryptionKey: randomBytes(32).toString('hex'),
      simulatorUrl: `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`,
      env: { DATABASE_POOL_MAX: '4' },
    };
    const started = await Promise.allSettled(Array.from({ length: INSTANCES }, () => ServiceProcess.start(opts)));
    expect(started.map((s) => (s.status === 'rejected' ? String(s.reason).slice(0, 2000) : 'ready'))).toEqual(Array(INSTANCES).fill('ready'));
    const instances = started.map((s) => (s as PromiseFulfilledResult<ServiceProcess>).value);
    for (const s of instances) {
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      expect(await s.log()).not.toMatch(/Failed to start|duplicate key|unhandled/i);
    }
    await withClient(scratch!.url, async (c) => {
      const { rows } = await c.query<{ n: number; distinct_n: number }>(
        'SELECT count(*)::int AS n, count(DISTINCT migration_name)::int AS distinct_n FROM _prisma_migrations WHERE finished_at IS NOT NULL',
      );
      expect(rows[0].n).toBe(rows[0].distinct_n);
      const tables = await c.query<{ t: string }>("SELECT relname AS t FROM pg_class WHERE relname IN ('agenda_jobs', 'agenda_logs') AND relkind = 'r' ORDER BY 1");
      expect(tables.rows.map((r) => r.t)).toEqual(['agenda_jobs', 'agenda_logs']);
    });
  }, 240_000);
});
