/**
 * Two instances behind a load balancer agree exactly (issue #24 item 3): two service processes on
 * one PostgreSQL database and one Redis (a redis-server of this test's own), requests alternating
 * between them as a round-robin balancer would send them:
 * - the per-credential rate limit is exact across both (limit + 100 requests: exactly `limit` pass);
 * - the daily send quota is exact across both (1,200 sends against 1,000: exactly 1,000 sent,
 *   each once at the channel, 200 refused `quota_exceeded`);
 * - a key revoked through one is refused by the other within a second;
 * - each webhook event, whichever instance accepted it, is delivered once;
 * - a broadcast of 300 recipients, with both instances' engines running, reaches each recipient once;
 * - Redis stopped: both let requests through promptly (fail-open, no 5xx); Redis started again:
 *   both count exactly again, without a restart.
 * The figures are printed.
 *
 * @alone a revocation must be seen within 1 s and each request answered within 1 s while Redis is
 * stopped (timingBound).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { createScratchDatabase } from '../support/db.js';
import { Receiver } from '../support/receiver.js';
import { RedisServer, ServiceProcess, eventually, hasRedisServer, stopAll } from '../support/service-process.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { timingBound } from '../support/retry-timing.js';

const RATE_LIMIT = 1500; // above the 1,200 sends of the quota proof, which share the limiter
const QUOTA = 1000;
const SENDS = 1200;
const EVENTS = 40;
const RECIPIENTS = 300;

let scratch: { url: string; drop(): Promise<void> } | undefined;
let redis: RedisServer;
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Pool;
let rx: Receiver | undefined;
const adminToken = 'adm_two_' + randomBytes(16).toString('hex');
const figures: string[] = [];

const admin = (s: ServiceProcess) => ({
  call: async (method: 'get' | 'post' | 'patch' | 'put', path: string, body?: object) => {
    const req = request(s.url)[method](path).set('Authorization', `Bearer ${adminToken}`);
    const res = body ? await req.send(body) : await req;
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  },
});

/** Runs `n` calls of `fn(i)` with at most `width` in flight; returns the answers in order. */
async function pooled<T>(n: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

/** Waits, if needed, so that a burst does not straddle a minute boundary of the fixed window. */
async function awayFromMinuteEdge(needMs: number): Promise<void> {
  const into = Date.now() % 60_000;
  if (into + needMs > 58_000) await sleep(60_000 - into + 200);
}

const describeIf = hasRedisServer ? describe : describe.skip;

beforeAll(async () => {
  if (!hasRedisServer) return;
  scratch = await createScratchDatabase('two');
  redis = await RedisServer.start();
  sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
  simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
  const opts = {
    databaseUrl: scratch.url,
    redisUrl: redis.url,
    adminToken,
    encryptionKey: randomBytes(32).toString('hex'),
    simulatorUrl: simUrl,
    env: { RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), DATABASE_POOL_MAX: '10' },
  };
  a = await ServiceProcess.start(opts); // migrates the database first
  b = await ServiceProcess.start(opts);
  db = new pg.Pool({ connectionString: scratch.url, max: 2 });
  db.on('error', () => undefined);
}, 240_000);

afterAll(async () => {
  if (figures.length) console.log(`two instances, one PostgreSQL, one Redis:\n  ${figures.join('\n  ')}`);
  await stopAll();
  await db?.end().catch(() => undefined);
  await rx?.close();
  await sim?.close();
  simServer?.closeAllConnections();
  await new Promise<void>((r) => (simServer ? simServer.close(() => r()) : r()));
  await scratch?.drop().catch(() => undefined);
}, 60_000);

let projectId: string;

describeIf('two instances behind a round-robin balancer', () => {
  it('When limit + 100 requests of one key alternate between the instances, then exactly the limit pass and the rest are refused rate_limited', async () => {
    const project = (await admin(a).call('post', '/admin/projects', { name: 'two instances' })).project;
    projectId = project.id;
    const key = (await admin(b).call('post', `/admin/projects/${projectId}/keys`, { name: 'rl', scopes: ['messages:send'] })).secret as string;
    await awayFromMinuteEdge(15_000);
    const started = Date.now();
    const answers = await pooled(RATE_LIMIT + 100, 16, (i) => request(i % 2 ? b.url : a.url).get('/v1/ping').set('Authorization', `Bearer ${key}`));
    const ok = answers.filter((r) => r.status === 200).length;
    const limited = answers.filter((r) => r.status === 429);
    figures.push(`rate limit ${RATE_LIMIT}/min: ${RATE_LIMIT + 100} requests alternating A/B in ${Date.now() - started} ms → ${ok} passed, ${limited.length} refused`);
    expect(ok).toBe(RATE_LIMIT);
    expect(limited).toHaveLength(100);
    for (const r of limited) {
      expect(r.body.error.code).toBe('rate_limited');
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
    // Both instances refused some: the counter is shared, not per process.
    expect(new Set(limited.map((r) => r.request.url.startsWith(a.url) ? 'a' : 'b')).size).toBe(2);
  }, 120_000);

  it('When 1,200 sends alternate between the instances against a daily quota of 1,000, then exactly 1,000 are sent, each once at the channel', async () => {
    await admin(a).call('patch', `/admin/projects/${projectId}`, { daily_send_quota: QUOTA });
    const key = (await admin(a).call('post', `/admin/projects/${projectId}/keys`, { name: 'quota', scopes: ['messages:send'] })).secret as string;
    const pnid = (await admin(b).call('get', `/admin/projects/${projectId}/channel`)).channel.phone_number_id as string;
    const phone = '14155558800';
    const opened = await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, name: 'Ada', text: 'hi' }).expect(200);
    expect(opened.body.status_code).toBe(200);
    const started = Date.now();
    const answers = await pooled(SENDS, 24, (i) =>
      request(i % 2 ? b.url : a.url).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phone}`, content: `n${i}` }),
    );
    const sent = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    const other = answers.filter((r) => r.status !== 200 && r.status !== 429);
    figures.push(`daily quota ${QUOTA}: ${SENDS} sends alternating A/B in ${Date.now() - started} ms → ${sent.length} sent, ${refused.length} refused quota_exceeded, ${other.length} other`);
    expect(other.map((r) => `${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
    expect(sent).toHaveLength(QUOTA);
    expect(refused).toHaveLength(SENDS - QUOTA);
    for (const r of refused) expect(r.body.error.code).toBe('quota_exceeded');
    // At the channel: exactly 1,000 messages, every answered id among them once.
    const atChannel = (await request(simUrl).get(`/_sim/messages?phone_number_id=${pnid}&to=${phone}&limit=5000`).expect(200)).body.data as Array<{ wamid: string }>;
    expect(atChannel).toHaveLength(QUOTA);
    expect(new Set(atChannel.map((m) => m.wamid))).toEqual(new Set(sent.map((r) => r.body.data.id)));
    const used = Number((await db.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [projectId])).rows[0].n);
    expect(used).toBe(QUOTA);
  }, 240_000);

  timingBound('the revocation seen within 1 s').it('When a key is revoked through one instance, then the other refuses it invalid_api_key within a second', async () => {
    const { key, secret } = await admin(a).call('post', `/admin/projects/${projectId}/keys`, { name: 'revoked', scopes: ['messages:send'] });
    // B has the key in its credential cache.
    await request(b.url).get('/v1/ping').set('Authorization', `Bearer ${secret}`).expect(200);
    await request(b.url).get('/v1/ping').set('Authorization', `Bearer ${secret}`).expect(200);
    const revokedAt = Date.now();
    await admin(a).call('post', `/admin/keys/${key.id}/revoke`);
    const refused = await eventually(
      () => request(b.url).get('/v1/ping').set('Authorization', `Bearer ${secret}`),
      (r: any) => r.status === 401,
      5_000,
      'B refuses the revoked key',
      20,
    );
    const ms = Date.now() - revokedAt;
    figures.push(`revocation through A refused by B after ${ms} ms`);
    expect(refused.body.error.code).toBe('invalid_api_key');
    expect(ms).toBeLessThan(1_000);
    // And A, of course.
    expect((await request(a.url).get('/v1/ping').set('Authorization', `Bearer ${secret}`)).status).toBe(401);
  }, 30_000);

  it('When events are accepted alternately by the two instances, then each is delivered once, with one delivery id', async () => {
    rx = await Receiver.start();
    const key = (await admin(a).call('post', `/admin/projects/${projectId}/keys`, { name: 'hooks', scopes: ['webhooks:manage'] })).secret as string;
    await request(b.url).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: `${rx.url}/two`, events: ['two.test'] }).expect(201);
    const runtime = (await admin(a).call('post', `/admin/projects/${projectId}/runtime-tokens`)).secret as string;
    const started = Date.now();
    await pooled(EVENTS, 8, async (i) => {
      const res = await request(i % 2 ? b.url : a.url).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'two.test', payload: { n: i } });
      expect(res.status).toBe(202);
    });
    await rx.waitFor('/two', EVENTS, 60_000);
    const deliveredIn = Date.now() - started;
    await sleep(2_000); // a duplicate would come meanwhile (both runners scan every 100s of ms)
    const got = rx.at('/two');
    const ns = got.map((r) => r.body.data.n as number).sort((x, y) => x - y);
    figures.push(`webhooks: ${EVENTS} events accepted alternately by A/B → ${got.length} deliveries (${new Set(got.map((r) => r.body.id)).size} distinct ids) in ${deliveredIn} ms`);
    expect(ns).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
    expect(new Set(got.map((r) => r.body.id)).size).toBe(EVENTS);
  }, 120_000);
});

describeIf('two instances behind a round-robin balancer', () => {
  it('When both instances run their broadcast engines on one campaign, then each recipient is sent exactly once', async () => {
    const key = (await admin(a).call('post', `/admin/projects/${projectId}/keys`, { name: 'bc', scopes: ['templates:manage', 'templates:read', 'broadcasts:manage'] })).secret as string;
    await admin(a).call('patch', `/admin/projects/${projectId}`, { daily_send_quota: 100_000 });
    const pnid = (await admin(b).call('get', `/admin/projects/${projectId}/channel`)).channel.phone_number_id as string;
    await request(a.url).post('/v1/templates').set('Authorization', `Bearer ${key}`)
      .send({ name: 'promo', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'New menu today' }] }).expect(201);
    await eventually(
      async () => (await request(b.url).get('/v1/templates/promo?language=en_US').set('Authorization', `Bearer ${key}`)).body?.data?.template?.status,
      (s) => s === 'APPROVED', 30_000, 'the template approved',
    );
    const base = 15557000000;
    await db.query(
      `INSERT INTO contacts (project_id, phone, tags, opted_in, opted_in_at, created_at, updated_at)
       SELECT $1, ($2::bigint + g)::text, '{}', true, now(), now(), now() FROM generate_series(0, $3 - 1) g`,
      [projectId, base, RECIPIENTS],
    );
    const created = await request(b.url).post('/v1/broadcasts').set('Authorization', `Bearer ${key}`)
      .send({ name: 'two engines', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [{ field: 'phone', op: 'starts_with', value: '+1555700' }] } } });
    expect(created.status).toBe(201);
    const id = created.body.data.broadcast.id as string;
    const started = Date.now();
    await admin(a).call('post', `/admin/broadcasts/${id}/approve`, { approved_by: 'two instances' });
    await eventually(async () => (await db.query('SELECT status FROM broadcasts WHERE id = $1', [id])).rows[0].status, (s) => s === 'completed', 120_000, 'the campaign completed', 250);
    const atChannel = (await request(simUrl).get(`/_sim/messages?phone_number_id=${pnid}&limit=10000`).expect(200)).body.data as Array<{ to: string; type: string }>;
    const templates = atChannel.filter((m) => m.type === 'template');
    const perPhone = new Map<string, number>();
    for (const m of templates) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
    figures.push(`broadcast of ${RECIPIENTS} recipients with both engines running: completed in ${Date.now() - started} ms, ${templates.length} messages at the channel, ${[...perPhone.values()].filter((n) => n > 1).length} recipients twice`);
    expect([...perPhone].filter(([, n]) => n > 1)).toEqual([]);
    expect(perPhone.size).toBe(RECIPIENTS);
    const states = (await db.query(`SELECT state, count(*)::int AS n FROM broadcast_recipients WHERE broadcast_id = $1 GROUP BY state`, [id])).rows;
    expect(states).toEqual([{ state: 'sent', n: RECIPIENTS }]);
  }, 180_000);

  timingBound('each request within 1 s while Redis is stopped').it('When Redis stops, then both instances let requests through promptly; when it starts again, then both count exactly again without a restart', async () => {
    const key = (await admin(a).call('post', `/admin/projects/${projectId}/keys`, { name: 'redis', scopes: ['messages:send'] })).secret as string;
    const ping = (i: number) => request(i % 2 ? b.url : a.url).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    await redis.stop();
    let slowest = 0;
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      const res = await ping(i);
      slowest = Math.max(slowest, Date.now() - t0);
      expect(res.status).toBe(200); // fail-open: let through, not refused, not a 5xx
    }
    expect(slowest).toBeLessThan(1_000);
    await redis.start();
    // Each instance's client reconnects by itself: wait until both answer with the limiter's headers.
    for (const s of [a, b]) {
      await eventually(() => request(s.url).get('/v1/ping').set('Authorization', `Bearer ${key}`), (r: any) => r.headers['ratelimit-limit'] !== undefined, 30_000, 'limiting back', 200);
    }
    await awayFromMinuteEdge(15_000);
    const used = RATE_LIMIT - Number((await ping(0)).headers['ratelimit-remaining']);
    const answers = await pooled(RATE_LIMIT - used + 50, 16, ping);
    const ok = answers.filter((r) => r.status === 200).length;
    figures.push(`Redis stopped: 20 requests alternating A/B all let through, slowest ${slowest} ms; Redis started: ${answers.length} more requests → ${ok} passed (exactly the ${RATE_LIMIT - used} left), ${answers.length - ok} refused`);
    expect(ok).toBe(RATE_LIMIT - used);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(50);
  }, 120_000);
});
