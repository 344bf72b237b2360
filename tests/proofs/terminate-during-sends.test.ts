/**
 * Fault: every PostgreSQL backend the service holds (request pool, LISTEN clients, the job
 * runner's, webhook delivery's) is terminated with pg_terminate_backend, twice, while 40 sends run
 * (half with an Idempotency-Key). The service runs on a private embedded PostgreSQL, with the
 * Cloud API simulator. Every answer during the fault is the envelope (200, or 503
 * service_unavailable with Retry-After); the service recovers without a restart; and nothing is
 * lost, doubled or left unrecorded: each keyed send, retried with its key, is sent exactly once;
 * every message the channel sent has its row and every row was sent; the quota counts each send once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, tempFolder } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';

const quiet = { info: () => undefined, warn: () => undefined };
const SENDS = 40;


let dataDir: string;
let server: EmbeddedPostgres;
let t: TestApp;
const crashes: string[] = [];
const onCrash = (e: unknown) => void crashes.push(e instanceof Error ? e.message : String(e));

beforeAll(async () => {
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  dataDir = await tempFolder('svc-terminate-');
  server = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger: quiet });
  await applyMigrations(server.url, { logger: quiet });
  t = await startTestApp({
    databaseUrl: server.url,
    config: { devAllowPrivateTargets: true, databaseAcquireTimeoutMs: 10_000 },
    simulator: { autoStatusDelaysMs: { sent: 0, delivered: 50, read: null } as any, templateAutoDecisionMs: null },
    webhooks: true,
  });
}, 120_000);

afterAll(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await t?.close().catch(() => undefined);
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 30_000);

async function terminateAll(): Promise<number> {
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()');
  await admin.end();
  return rowCount ?? 0;
}

describe('pg_terminate_backend while sends run', () => {
  it('When every backend is terminated twice during 40 sends, then every answer is an envelope, the service recovers by itself, and sends, rows and quota agree exactly', async () => {
    const project = await t.admin.project('terminate');
    const key = (await t.admin.key(project.id, ['messages:send'])).secret;
    const { phoneNumberId: pnid } = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const phones = Array.from({ length: SENDS }, (_, i) => `1415556${String(1000 + i)}`);
    for (const phone of phones) {
      const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, text: 'hi' });
      expect(res.body.status_code).toBe(200);
    }
    const send = (i: number) => {
      const req = request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`);
      if (i % 2 === 0) req.set('Idempotency-Key', `terminate-${i}`);
      return req.send({ type: 'text', phone: `+${phones[i]}`, content: `message ${i}` });
    };

    const running = phones.map((_, i) => send(i));
    await sleep(30);
    expect(await terminateAll()).toBeGreaterThan(0);
    await sleep(80);
    await terminateAll();
    const answers = await Promise.all(running);
    for (const res of answers) {
      expect([200, 503]).toContain(res.status);
      if (res.status === 503) {
        expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
        expect(res.body.request_id).toBe(res.headers['x-request-id']);
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
    }

    // Recovery without a restart.
    await eventually(() => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`), (r: any) => r.status === 200, 20_000, 'ping');

    // A keyed send that did not get its answer is retried with its key until it has one: never a second send.
    for (let i = 0; i < SENDS; i += 2) {
      if (answers[i].status === 200) continue;
      const final = await eventually(() => send(i), (r: any) => r.status === 200, 20_000, `keyed send ${i}`);
      expect(final.body.data.status).toBe('sent');
    }

    // Statuses settle every pending message; then channel and database agree exactly.
    const rows = await eventually(
      async () => (await t.db.pool.query(`SELECT wamid, status FROM messages WHERE project_id = $1 AND direction = 'outbound'`, [project.id])).rows,
      (r: any[]) => Array.isArray(r) && r.every((m) => m.status !== 'pending'),
      20_000,
      'no message left pending',
    );
    const simSent = ((await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}&limit=1000`)).body.data as Array<{ wamid: string; to: string }>);
    expect(new Set(rows.map((r: any) => r.wamid))).toEqual(new Set(simSent.map((s) => s.wamid)));
    expect(rows).toHaveLength(simSent.length);
    for (let i = 0; i < SENDS; i += 2) expect(simSent.filter((s) => s.to === phones[i])).toHaveLength(1); // keyed: exactly once
    for (let i = 1; i < SENDS; i += 2) {
      // Without a key: sent once when it answered 200; a 503 may or may not have been sent, never twice.
      const n = simSent.filter((s) => s.to === phones[i]).length;
      expect(n).toBeLessThanOrEqual(1);
      if (answers[i].status === 200) expect(n).toBe(1);
    }
    const used = Number((await t.db.pool.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [project.id])).rows[0].n);
    expect(used).toBe(simSent.length);
    expect(crashes).toEqual([]);
  }, 120_000);
});
