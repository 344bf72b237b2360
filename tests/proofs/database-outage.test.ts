/**
 * A database blink must not stop the service. The app runs on a private PostgreSQL of its own
 * (embedded, in a temp folder on a free port) that this file terminates, stops and starts again,
 * with the job runner and webhook delivery running. During the outage every answer is the
 * envelope's 503 `service_unavailable` with Retry-After, within the acquisition bound (never a
 * hang) and /readyz names the failed check; afterwards requests, readiness, the credential cache's
 * listener and the job runner work again without restarting anything.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { checkReachable } from '../../lib/platform/db/database.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { Receiver } from '../support/receiver.js';
import { freePort, tempFolder } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';

const quiet = { info: () => undefined, warn: () => undefined };


let dataDir: string;
let port: number;
let server: EmbeddedPostgres | undefined;
let t: TestApp;
let rx: Receiver;
let key: string;
let runtime: string;

const start = async () => (server = await startEmbeddedPostgres({ dataDir, port, logger: quiet }));
const ping = () => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);

// An unheard 'error' event or rejection would end a real process: here it is recorded and fails the test.
const crashes: string[] = [];
const onCrash = (e: unknown) => void crashes.push(e instanceof Error ? e.message : String(e));

beforeAll(async () => {
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  dataDir = await tempFolder('svc-outage-');
  port = await freePort();
  await start();
  await applyMigrations(server!.url, { logger: quiet });
  t = await startTestApp({
    databaseUrl: server!.url,
    config: { devAllowPrivateTargets: true, databaseAcquireTimeoutMs: 10_000, credentialCacheTtlMs: 60_000 },
    webhooks: true,
  });
  rx = await Receiver.start();
  const project = await t.admin.project('outage');
  key = (await t.admin.key(project.id, ['webhooks:manage'])).secret;
  runtime = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret;
}, 120_000);

afterAll(async () => {
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await t?.close().catch(() => undefined);
  await rx?.close();
  await server?.stop();
  await rm(dataDir, { recursive: true, force: true });
}, 30_000);

async function deliveredAfterEmit(pathName: string): Promise<void> {
  const reg = await request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: rx.url + pathName, events: ['outage.check'] });
  expect(reg.status).toBe(201);
  const emitted = await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'outage.check', payload: { p: pathName } });
  expect(emitted.status).toBe(202);
  await rx.waitFor(pathName, 1);
}

describe('database faults', () => {
  it('When every backend the service holds is terminated while requests run, then the process survives and later requests and deliveries succeed', async () => {
    expect((await ping()).status).toBe(200);
    const running = Array.from({ length: 20 }, () => ping());
    const admin = new pg.Client({ connectionString: server!.url });
    await admin.connect();
    const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()');
    await admin.end();
    expect(rowCount).toBeGreaterThan(0); // the pool, the LISTEN connections, the job runner's
    for (const res of await Promise.all(running)) {
      expect([200, 503]).toContain(res.status);
      if (res.status === 503) expect(res.body.error.code).toBe('service_unavailable');
    }
    await eventually(ping, (r: any) => r.status === 200, 20_000);
    await deliveredAfterEmit('/after-terminate');
    expect(crashes).toEqual([]);
  }, 60_000);

  it('When PostgreSQL stops, then requests answer 503 service_unavailable with Retry-After within the bound, and all recovers by itself once it is back', async () => {
    await request(t.app).get('/readyz').expect(200);
    await server!.stop();
    const t0 = Date.now();
    const during = await Promise.all(Array.from({ length: 5 }, () => ping()));
    expect(Date.now() - t0).toBeLessThan(15_000); // bounded: no hang (a refused connection fails at once)
    for (const res of during) {
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
      expect(res.body.request_id).toBe(res.headers['x-request-id']);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Readiness says so, naming the check; the operator's scrape still answers.
    const down = await request(t.app).get('/readyz').expect(503);
    expect(down.body.error.details.checks.database).toMatch(/^unreachable/);
    const scrape = await request(t.app).get('/metrics').set('Authorization', `Bearer ${t.adminToken}`).expect(200);
    expect(scrape.text).toMatch(/service_ready 0/);
    await sleep(1500); // listeners and the job runner notice and retry
    await start();
    await eventually(ping, (r: any) => r.status === 200, 20_000);
    // Ready again without a restart.
    await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 200, 30_000);
    await deliveredAfterEmit('/after-restart');
    // The credential cache listens again: an operator write (scopes edit) is seen at once.
    const keys = await t.admin.call('get', `/admin/projects/${(await ping()).body.data.projectId}/keys`);
    await t.admin.call('patch', `/admin/keys/${keys.keys[0].id}`, { scopes: ['webhooks:manage', 'contacts:read'] });
    await eventually(ping, (r: any) => r.status === 200 && r.body.data.scopes.includes('contacts:read'), 5000);
    expect(crashes).toEqual([]);
  }, 90_000);
});

describe('start-up', () => {
  it('When nothing answers at DATABASE_URL, then the message names host and port', async () => {
    const closed = await freePort();
    await expect(checkReachable(`postgres://u@127.0.0.1:${closed}/x`, 2000)).rejects.toThrow(`cannot reach PostgreSQL at 127.0.0.1:${closed} (DATABASE_URL)`);
  });
});
