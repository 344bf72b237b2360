/**
 * A primary whose commits cannot complete (issue 71): synchronous replication with no synchronous
 * standby connected (Patroni's `synchronous_mode_strict` with one node left) makes every commit
 * wait for ever. The service bounds that wait (DATABASE_COMMIT_TIMEOUT_MS, 2 s here): a write
 * answers 503 `service_unavailable` with Retry-After within 5 s, never a client time-out; a keyed
 * request's key is not left "in progress" (no 409 idempotency_in_progress once writes resume);
 * /readyz answers 503 naming the missing synchronous standby; and everything recovers without a
 * restart once commits complete again.
 *
 * No Patroni needed: the file's own PostgreSQL (embedded, its own folder and port) gets
 * `synchronous_standby_names` naming a standby that does not exist, which is what strict
 * synchronous mode leaves when no standby is left, then the setting is cleared. A stalled primary
 * is the same server with every one of its processes stopped (SIGSTOP), then continued.
 *
 * @alone its writes must answer 503 within a stated bound (timingBound), which another file's load
 * beside it would stretch.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, tempFolder } from '../support/local.js';
import { endStallCluster, setSyncStandbys } from '../support/sync-standby.js';
import { eventually } from '../support/eventually.js';
import { timingBound } from '../support/retry-timing.js';

const quiet = { info: () => undefined, warn: () => undefined };
const BOUND_MS = 5000;

let dataDir: string;
let server: EmbeddedPostgres | undefined;
let t: TestApp;
let admin: pg.Client;
let key: string;
let contactId: number;

/** The file's own PostgreSQL: its postmaster and every child of it. */
function postgresProcesses(): number[] {
  const postmaster = Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
    } catch {
      return false;
    }
  });
  return [postmaster, ...children.map(Number)];
}
let stopped: number[] = [];
const signal = (pids: number[], sig: NodeJS.Signals) => pids.forEach((pid) => { try { process.kill(pid, sig); } catch { /* gone */ } });

const syncStandby = (names: string | null) => setSyncStandbys(admin, names);

beforeAll(async () => {
  dataDir = await tempFolder('svc-syncstall-');
  server = await startEmbeddedPostgres({ dataDir, port: await freePort(), logger: quiet });
  await applyMigrations(server.url, { logger: quiet });
  t = await startTestApp({ databaseUrl: server.url, webhooks: true, simulator: true, config: { databaseCommitTimeoutMs: 2000, devAllowPrivateTargets: true } });
  admin = new pg.Client({ connectionString: server.adminUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  const project = await t.admin.project('sync-stall');
  key = (await t.admin.key(project.id, ['messages:send', 'contacts:read', 'contacts:write'])).secret;
  const row = await t.db.prisma.contact.create({ data: { projectId: project.id, phone: '12125550100', name: 'Grace Hopper', tags: [], attributes: {}, optedIn: false } });
  contactId = Number(row.id);
}, 120_000);

afterAll(async () => {
  signal(stopped, 'SIGCONT');
  await endStallCluster({ admin, t, server, dataDir });
}, 30_000);

const auth = () => ({ Authorization: `Bearer ${key}` });
const sendKeyed = (idem: string) =>
  request(t.app).post('/v1/messages').set(auth()).set('Idempotency-Key', idem).send({ type: 'text', phone: '+14155550123', content: 'Sent once' });
const renameContact = (name: string) =>
  request(t.app).patch(`/v1/contacts/${contactId}`).set(auth()).set('Content-Type', 'application/json').send(JSON.stringify({ name }));

function expect503(res: request.Response): void {
  expect([res.status, res.body.error?.code]).toEqual([503, 'service_unavailable']);
  expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' }, request_id: res.headers['x-request-id'] });
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

describe('commits that cannot complete', () => {
  timingBound(`writes answer 503 within ${BOUND_MS} ms while no synchronous standby confirms commits`).it(
    'When no synchronous standby is connected, then writes answer 503 with Retry-After within the bound, /readyz names it, and after the standby setting is cleared writes, keys and readiness recover without a restart',
    async () => {
      expect((await request(t.app).get('/readyz')).body.data.checks.replication).toBe('not configured');
      await syncStandby('nowhere');
      const down = await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 503, 10_000, '/readyz not ready');
      expect(down.body.error.details.checks.replication).toMatch(/^no synchronous standby: no standby is connected \(synchronous_standby_names = 'nowhere'\)/);
      expect(down.body.error.details.checks.database).toBe('ok');
      expect(Number(down.headers['retry-after'])).toBeGreaterThan(0);

      // A keyed send (its key's claim is its first write) and an unkeyed update through Prisma.
      let started = Date.now();
      const keyed = await sendKeyed('stall-1');
      const keyedMs = Date.now() - started;
      expect503(keyed);
      // Retried with its key at once: 503 with Retry-After again (its claim still stands, its release
      // waiting for the same standby), never 409 idempotency_in_progress.
      const again = await sendKeyed('stall-1');
      expect503(again);
      started = Date.now();
      const renamed = await renameContact('Ada Lovelace');
      const renamedMs = Date.now() - started;
      expect503(renamed);
      console.log(`sync-commit-stall: 503 after ${keyedMs} ms (keyed POST) and ${renamedMs} ms (PATCH), bound ${BOUND_MS} ms`);
      expect(keyedMs).toBeLessThan(BOUND_MS);
      expect(renamedMs).toBeLessThan(BOUND_MS);

      // Commits complete again: ready, and the same key runs (its claim was released, not left in progress).
      await syncStandby(null);
      await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 200, 20_000, '/readyz ready again');
      // The send runs (here refused by the 24-hour rule: no customer wrote in; a 4xx is stored like a 2xx) and is replayed.
      const retried = await sendKeyed('stall-1');
      expect([retried.status, retried.body.error?.code]).toEqual([409, 'outside_24h_window']);
      const replay = await sendKeyed('stall-1');
      expect([replay.status, replay.headers['idempotent-replayed'], replay.body.error?.code]).toEqual([409, 'true', 'outside_24h_window']);
      // The update answered 503 was committed on the primary (its wait for a standby was cancelled):
      // unknown to the client then, settled now, as after a connection lost during COMMIT.
      const contact = await request(t.app).get(`/v1/contacts/${contactId}`).set(auth()).expect(200);
      expect(contact.body.data.contact.name).toBe('Ada Lovelace');
    },
    90_000,
  );

  timingBound(`writes answer 503 within ${BOUND_MS} ms while the primary answers nothing`).it(
    'When every process of the primary is stopped (a stalled machine), then a write answers 503 with Retry-After within the bound, never a client time-out, and the service recovers by itself once it runs again',
    async () => {
      await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 200, 20_000, '/readyz ready');
      stopped = postgresProcesses();
      signal(stopped, 'SIGSTOP');
      try {
        const started = Date.now();
        const res = await renameContact('Katherine Johnson');
        const ms = Date.now() - started;
        console.log(`sync-commit-stall: 503 after ${ms} ms with the primary stopped, bound ${BOUND_MS} ms`);
        expect503(res);
        expect(ms).toBeLessThan(BOUND_MS);
        const ready = await request(t.app).get('/readyz');
        expect([ready.status, ready.body.error?.details?.checks?.database]).toEqual([503, expect.stringMatching(/^unreachable/)]);
      } finally {
        signal(stopped, 'SIGCONT');
        stopped = [];
      }
      await eventually(() => request(t.app).get('/readyz'), (r: any) => r.status === 200, 20_000, '/readyz ready again');
      const renamed = await eventually(() => renameContact('Katherine Johnson'), (r: any) => r.status === 200, 10_000, 'writes again');
      expect(renamed.body.data.contact.name).toBe('Katherine Johnson');
    },
    90_000,
  );
});
