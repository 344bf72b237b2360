/**
 * A keyed table insert whose own COMMIT meets a primary that cannot confirm commits (issue 71):
 * its key was claimed before, its transaction then committed on the primary only (the wait for a
 * synchronous standby cancelled after the commit bound), and it answered 503. The key is linked to
 * that transaction, not released as after any 5xx: once a standby confirms commits again, a retry
 * with the same key replays the original answer and the table holds the row once.
 *
 * The file's own PostgreSQL (as tests/proofs/sync-commit-stall.test.ts): `synchronous_standby_names`
 * names a standby that does not exist, then is cleared. The insert is held on a table lock until
 * the setting is in force, so its claim commits before the stall and its own COMMIT meets it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { physicalSchema, withProjectTx } from '../../lib/tables/isolation.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, tempFolder } from '../support/local.js';
import { endStallCluster, setSyncStandbys } from '../support/sync-standby.js';
import { eventually } from '../support/eventually.js';

const quiet = { info: () => undefined, warn: () => undefined };

let dataDir: string;
let server: EmbeddedPostgres | undefined;
let t: TestApp;
let admin: pg.Client;
let adminUrl: string;
let projectId: string;
let key: string;
let table: string;

const syncStandby = (names: string | null) => setSyncStandbys(admin, names);

beforeAll(async () => {
  dataDir = await tempFolder('svc-keyedstall-');
  server = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger: quiet });
  await applyMigrations(server.url, { logger: quiet });
  t = await startTestApp({ databaseUrl: server.url, config: { databaseCommitTimeoutMs: 2000, tablesStatementTimeoutMs: 30_000 } });
  // The superuser, on the service's database (its tables and idempotency_records).
  const url = new URL(server.adminUrl);
  url.pathname = new URL(server.url).pathname;
  adminUrl = url.toString();
  admin = new pg.Client({ connectionString: adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  projectId = (await t.admin.project('keyed-stall')).id;
  key = (await t.admin.key(projectId, ['tables:read', 'tables:write'])).secret;
  await withProjectTx(t.db, projectId, { readOnly: false, statementTimeoutMs: 20000, schema: 'public', ddl: true }, async (c) => {
    await c.query('CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)');
  });
  table = `${await physicalSchema(t.db.sql, projectId, 'public')}.orders`;
}, 120_000);

afterAll(async () => {
  await endStallCluster({ admin, t, server, dataDir });
}, 30_000);

const insert = () =>
  request(t.app).post('/v1/tables/orders/rows').set('Authorization', `Bearer ${key}`).set('Idempotency-Key', 'order-1').send({ rows: [{ item: 'one espresso' }] });

describe('a keyed table insert whose commit cannot be confirmed', () => {
  it('When its claim committed and then its own COMMIT met the stall (answered 503), then a retry with the same key after commits resume replays the original answer and the row is stored once', async () => {
    // Hold the insert on a lock (another session: a transaction sees pg_stat_activity as it was at its start).
    const locker = new pg.Client({ connectionString: adminUrl });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    const first = insert().then((r) => r);
    await eventually(
      () => admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO%orders%'"),
      (r: any) => r.rows[0].n === 1,
      20_000,
      'the insert waiting on the lock',
    );
    const claimed = await admin.query("SELECT state FROM idempotency_records WHERE project_id = $1 AND key = 'order-1'", [projectId]);
    expect(claimed.rows).toEqual([{ state: 'in_progress' }]);
    await syncStandby('nowhere');
    await eventually(() => request(t.app).get('/readyz'), (r: any) => /^no synchronous standby/.test(r.body.error?.details?.checks?.replication ?? ''), 10_000, '/readyz: no synchronous standby');
    await locker.query('ROLLBACK');
    await locker.end();

    const stalled = await first;
    expect([stalled.status, stalled.body.error?.code]).toEqual([503, 'service_unavailable']);
    expect(Number(stalled.headers['retry-after'])).toBeGreaterThan(0);
    // Committed on the primary only: the row is there, the key kept (linked to that transaction), not released.
    expect((await admin.query(`SELECT item FROM ${table}`)).rows).toEqual([{ item: 'one espresso' }]);

    await syncStandby(null);
    await eventually(() => request(t.app).get('/readyz'), (r: any) => (r.body.data ?? r.body.error?.details)?.checks?.replication === 'not configured', 20_000, '/readyz: commits confirmed again');
    const retried = await eventually(insert, (r: any) => r.status !== 503, 10_000, 'the retry answered');
    expect([retried.status, retried.headers['idempotent-replayed']]).toEqual([201, 'true']);
    expect(retried.body).toMatchObject({ success: true, data: { table: 'orders', affected: 1, rows: [{ id: 1, item: 'one espresso' }] } });
    expect((await admin.query(`SELECT id, item FROM ${table}`)).rows).toEqual([{ id: 1, item: 'one espresso' }]);
    // And again: the stored answer, still one row.
    const replay = await insert();
    expect([replay.status, replay.headers['idempotent-replayed'], replay.body.data?.rows]).toEqual([201, 'true', [{ id: 1, item: 'one espresso' }]]);
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n).toBe(1);
  }, 90_000);
});
