/**
 * Fair shares of the database: one project's slow table reads (100 at once, each held up for
 * seconds) must not take the connections that another project's authentication, sends and pings
 * need. Tenant work has a pool of its own and a per-project bound (lib/tables/tenant-pool.ts).
 * Nor may several projects together leave another without a table connection (issue 44, item 5):
 * shares shrink as projects come, and a reserve is kept for projects holding none.
 *
 * @alone It measures latencies and statement timeouts on this machine's CPU: another file's load
 * beside it would be measured too (tests/support/test-environment.js).
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import pg from 'pg';
import type { TestApp } from '../support/app.js';
import { tablesHarness } from '../support/tables.js';
import { physicalSchema, storageNames } from '../../lib/tables/isolation.js';
import { lockWaiters, testDatabaseUrl } from '../support/db.js';
import { importsSettled } from '../../lib/contacts-import/imports.js';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { timingBound } from '../support/retry-timing.js';

const h = tablesHarness({
  simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
  bot: { memoryMb: 32, startupTimeoutMs: 2000, eventTimeoutMs: 5000 },
  config: { dataDir: mkdtempSync(path.join(os.tmpdir(), 'fair-share-')), tablesStatementTimeoutMs: 5000, tablesAcquireTimeoutMs: 1000, tablesProjectConcurrency: 4, tablesPoolMax: 10 },
  beforeClose: importsSettled,
});
let t: TestApp;
const made = h.made;
beforeAll(() => {
  t = h.t;
});

function admin(method: 'get' | 'post', path: string, body?: object) {
  const req = request(t.app)[method](path).set('Authorization', `Bearer ${t.adminToken}`);
  return body ? req.send(body) : req;
}

describe('tenant work and platform work', () => {
  timingBound('another project\'s latency under 1 s').it('When one project runs 100 concurrent slow table reads, then another project\'s pings and sends keep their normal latency', async () => {
    const a = await t.admin.project('A');
    made.push(a.id);
    const aKey = (await t.admin.key(a.id, ['tables:read'])).secret;
    expect((await admin('post', `/admin/projects/${a.id}/tables/ddl`, { sql: 'CREATE TABLE slow (id int PRIMARY KEY)' })).status).toBe(200);
    const c = await t.admin.project('C');
    made.push(c.id);
    const cKey = (await t.admin.key(c.id, ['tables:read'])).secret;
    expect((await admin('post', `/admin/projects/${c.id}/tables/ddl`, { sql: 'CREATE TABLE fine (id int PRIMARY KEY)' })).status).toBe(200);
    const b = await t.admin.project('B');
    const bKey = (await t.admin.key(b.id, ['messages:send'])).secret;
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: b.id } });
    const inbound = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: '14155550123', name: 'Ada', text: 'hi' });
    expect(inbound.status).toBe(200);

    // Normal latency first (warm caches and connections).
    const ping = () => request(t.baseUrl!).get('/v1/ping').set('Authorization', `Bearer ${bKey}`);
    const send = () => request(t.baseUrl!).post('/v1/messages').set('Authorization', `Bearer ${bKey}`).send({ type: 'text', phone: '+14155550123', content: 'hello' });
    for (let i = 0; i < 3; i++) {
      expect((await ping()).status).toBe(200);
      expect((await send()).status).toBe(200);
    }

    // Every read of A's table waits on a lock held here for about 2.5 s: longer than the acquire
    // timeout (1 s: the queued reads answer 503), shorter than the statement timeout (5 s: the reads
    // holding A's connections finish once it is released, never racing the timeout on a slow machine).
    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    await locker.query(`BEGIN; LOCK TABLE "${await physicalSchema(t.db.sql, a.id, 'public')}".slow IN ACCESS EXCLUSIVE MODE`);
    const reads = Array.from({ length: 100 }, () => request(t.baseUrl!).get('/v1/tables/slow/rows').set('Authorization', `Bearer ${aKey}`)
      .then((r) => ({ status: r.status, code: r.body.error?.code, retryAfter: r.headers['retry-after'] })));
    const latencies: number[] = [];
    const statuses: number[] = [];
    let aSessions = 0;
    let cLatency = 0;
    try {
      await new Promise((r) => setTimeout(r, 300)); // the reads are in flight and holding what they can
      // A holds at most its own share of tenant connections; another project's table read still goes through.
      const aRole = (await storageNames(t.db.sql, a.id)).role;
      aSessions = (await t.db.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1 AND state <> 'idle'", [aRole])).rows[0].n;
      const cStarted = Date.now();
      expect((await request(t.baseUrl!).get('/v1/tables/fine/rows').set('Authorization', `Bearer ${cKey}`)).status).toBe(200);
      cLatency = Date.now() - cStarted;
      const until = Date.now() + 2000;
      while (Date.now() < until) {
        for (const call of [ping, send]) {
          const started = Date.now();
          const res = await call();
          latencies.push(Date.now() - started);
          statuses.push(res.status);
        }
      }
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const aReads = await Promise.all(reads);
    const readStatuses = aReads.map((r) => r.status);
    const max = Math.max(...latencies);
    console.log(`B during A's 100 slow reads: ${latencies.length} calls, max ${max} ms, median ${latencies.sort((x, y) => x - y)[latencies.length >> 1]} ms; C's table read ${cLatency} ms; A's sessions ${aSessions}; A's reads: ${JSON.stringify(countBy(readStatuses))}`);
    expect(statuses.every((s) => s === 200)).toBe(true);
    // Normal latency here is tens of milliseconds; a taken pool made each call wait seconds.
    expect(max).toBeLessThan(1000);
    expect(cLatency).toBeLessThan(1000);
    expect(aSessions).toBeLessThanOrEqual(4);
    // A's surplus waits at most TABLES_ACQUIRE_TIMEOUT_MS, then 503 service_unavailable with Retry-After; never a 500.
    for (const r of aReads) {
      if (r.status === 200) continue;
      expect(r).toEqual({ status: 503, code: 'service_unavailable', retryAfter: '1' });
    }
    expect(readStatuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(90);
  }, 60_000);
});

describe('fair shares between projects', () => {
  it('When three projects each hold as many tenant connections as they can with DDL and reads waiting on a lock, then a fourth project\'s read is answered within its statement timeout', async () => {
    // Issue 44, item 5: one long DDL and three more per project, 4 slots each of 10, left B's reads
    // waiting 5 s for a 503. Here every statement of X, Y and Z waits on a lock held about 2.5 s.
    const busy: Array<{ id: string; key: string; schema: string }> = [];
    for (const name of ['X', 'Y', 'Z']) {
      const p = await t.admin.project(name);
      made.push(p.id);
      expect((await admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: 'CREATE TABLE slow (id int PRIMARY KEY)' })).status).toBe(200);
      busy.push({ id: p.id, key: (await t.admin.key(p.id, ['tables:read'])).secret, schema: await physicalSchema(t.db.sql, p.id, 'public') });
    }
    const b = await t.admin.project('B3');
    made.push(b.id);
    expect((await admin('post', `/admin/projects/${b.id}/tables/ddl`, { sql: "CREATE TABLE fine (id, note) AS VALUES (1, 'mine')" })).status).toBe(200);
    const bKey = (await t.admin.key(b.id, ['tables:read'])).secret;
    const readB = () => request(t.baseUrl!).get('/v1/tables/fine/rows').set('Authorization', `Bearer ${bKey}`);
    expect((await readB()).status).toBe(200);

    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    await locker.query(`BEGIN; ${busy.map((p) => `LOCK TABLE "${p.schema}".slow IN ACCESS EXCLUSIVE MODE;`).join(' ')}`);
    const lockedAt = Date.now();
    const outcome = (r: request.Response) => ({ status: r.status, code: r.body.error?.code as string | undefined });
    const held: Array<Promise<{ status: number; code?: string }>> = [];
    for (const p of busy) {
      for (let i = 0; i < 4; i++) held.push(admin('post', `/admin/projects/${p.id}/tables/ddl`, { sql: `ALTER TABLE slow ADD COLUMN c${i} int` }).then(outcome));
      for (let i = 0; i < 4; i++) held.push(request(t.baseUrl!).get('/v1/tables/slow/rows').set('Authorization', `Bearer ${p.key}`).then(outcome));
    }
    const bAnswers: Array<{ status: number; code?: string; ms: number }> = [];
    let sessions: Record<string, number> = {};
    try {
      // Every request in flight holds what it can: sampled until the busy projects hold their share
      // (a fixed 300 ms saw 5 sessions of 6 on a loaded CI machine), for at most 2 s of the lock's 2.5.
      const roles = await Promise.all(busy.map(async (p) => (await storageNames(t.db.sql, p.id)).role));
      for (;;) {
        const active = await t.db.pool.query<{ usename: string; n: number }>(
          "SELECT usename, count(*)::int AS n FROM pg_stat_activity WHERE usename = ANY ($1) AND state <> 'idle' GROUP BY usename", [roles]);
        sessions = Object.fromEntries(active.rows.map((r) => [busy[roles.indexOf(r.usename)].id, r.n]));
        if (Object.values(sessions).reduce((x, y) => x + y, 0) >= 6 || Date.now() - lockedAt > 2000) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const res = await readB();
        bAnswers.push({ ...outcome(res), ms: Date.now() - started });
      }
    } finally {
      await new Promise((r) => setTimeout(r, Math.max(0, 2500 - (Date.now() - lockedAt))));
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const others = await Promise.all(held);
    console.log(`B's reads while X, Y and Z held the pool: ${JSON.stringify(bAnswers)}; their sessions: ${JSON.stringify(sessions)}; their calls: ${JSON.stringify(countBy(others.map((o) => o.status)))}`);
    // B holds nothing, so it gets a slot at once (the reserve), well within its statement timeout.
    for (const a of bAnswers) {
      expect({ status: a.status, code: a.code }).toEqual({ status: 200, code: undefined });
      expect(a.ms).toBeLessThan(t.config.tablesStatementTimeoutMs);
    }
    // The busy projects held at most their share between them, and what did not fit was 503, never a 500.
    expect(Object.values(sessions).reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(t.config.tablesPoolMax);
    expect(Object.values(sessions).reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(6);
    for (const o of others) {
      if (o.status !== 200) expect(o).toEqual({ status: 503, code: 'service_unavailable' });
    }
  }, 60_000);
});

describe('tenant work and the bot', () => {
  timingBound('another project\'s bot under 1.5 s').it('When one project runs 100 concurrent slow table reads, then another project\'s bot keeps answering within its normal time', async () => {
    const a = await t.admin.project('A2');
    made.push(a.id);
    const aKey = (await t.admin.key(a.id, ['tables:read'])).secret;
    expect((await admin('post', `/admin/projects/${a.id}/tables/ddl`, { sql: 'CREATE TABLE slow (id int PRIMARY KEY)' })).status).toBe(200);
    const b = await t.admin.project('B2');
    const bKey = (await t.admin.key(b.id, ['code:read', 'code:write'])).secret;
    expect((await request(t.app).post('/v1/deployments').set('Authorization', `Bearer ${bKey}`).send({})).status).toBeLessThan(300);
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: b.id } });
    const replyTime = async (phone: string, text: string) => {
      const started = Date.now();
      expect((await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text })).status).toBe(200);
      for (;;) {
        const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${channel.phoneNumberId}`);
        if (JSON.stringify(res.body).includes(`You said: ${text}`)) return Date.now() - started;
        if (Date.now() - started > 8000) return Infinity;
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const normal = await replyTime('14155550201', 'warm');

    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    await locker.query(`BEGIN; LOCK TABLE "${await physicalSchema(t.db.sql, a.id, 'public')}".slow IN ACCESS EXCLUSIVE MODE`);
    const reads = Array.from({ length: 100 }, () => request(t.baseUrl!).get('/v1/tables/slow/rows').set('Authorization', `Bearer ${aKey}`).then((r) => r.status));
    const during: number[] = [];
    try {
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 0; i < 3; i++) during.push(await replyTime(`1415555021${i}`, `busy ${i}`));
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await Promise.all(reads);
    console.log(`B's bot replies: ${normal} ms unloaded; during A's 100 slow reads: ${during.join(', ')} ms`);
    expect(Math.max(...during)).toBeLessThan(1500);
  }, 60_000);
});

describe('contact imports', () => {
  it('When a project starts many imports at once, then they apply one batch at a time (one platform connection), and all complete', async () => {
    const p = await t.admin.project('imports');
    const key = (await t.admin.key(p.id, ['contacts:write', 'contacts:read'])).secret;
    const csv = 'number\n+14155550999\n';
    const upload = () => request(t.app).post('/v1/contact-imports').set('Authorization', `Bearer ${key}`).set('Content-Type', 'text/csv').send(csv);
    expect((await upload()).status).toBeLessThan(300);
    await importsSettled();
    // Every batch needs this contact's row: while it is locked here, each batch in flight waits on it.
    const locker = new pg.Client({ connectionString: testDatabaseUrl() });
    await locker.connect();
    await locker.query('BEGIN');
    const locked = await locker.query('SELECT phone FROM contacts WHERE project_id = $1 FOR UPDATE', [p.id]);
    expect(locked.rows).toEqual([{ phone: '14155550999' }]);
    let waiting = 0;
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const res = await upload();
        expect(res.status).toBeLessThan(300);
        ids.push(res.body.data.import.id);
      }
      await new Promise((r) => setTimeout(r, 500));
      waiting = await lockWaiters(locker);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await importsSettled();
    expect(waiting).toBe(1);
    for (const id of ids) {
      const got = await request(t.app).get(`/v1/contact-imports/${id}`).set('Authorization', `Bearer ${key}`);
      expect(got.body.data.import.status).toBe('completed');
    }
  }, 60_000);
});

function countBy(xs: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
