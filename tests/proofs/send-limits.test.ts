/**
 * The daily send quota and Idempotency-Key on POST /v1/messages: exact under concurrency, reset at
 * UTC midnight, failed sends not counted; every transition of the spec's idempotency state machine.
 *
 * @alone Its concurrent sends wait on a small pool with a bounded wait: another file's load beside it
 * turns them into 503s (tests/support/test-environment.js).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import pg from 'pg';
import { pgTx } from '../../lib/platform/db/tx.js';
import { releaseSend, reserveSend, reserveSends } from '../../lib/messaging/quota.js';
import { recordSend } from '../../lib/messaging/record-batch.js';
import { testDatabaseUrl } from '../support/db.js';
import { ApiError } from '../../lib/platform/errors.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null }, config: { rateLimitPerMinute: 1_000_000 } });
  t.clock.set(new Date('2026-03-01T23:59:00Z'));
});
afterAll(async () => {
  await t.close();
});

async function setup(quota?: number) {
  const project = await t.admin.project('limits', quota === undefined ? {} : { daily_send_quota: quota });
  const key = (await t.admin.key(project.id, ['messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { project, key, phoneNumberId: channel.phoneNumberId };
}

async function openWindow(phoneNumberId: string, from: string) {
  const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from, text: 'hi' });
  expect(res.body.status_code).toBe(200);
}

const send = (key: string, body: object, headers: Record<string, string> = {}) =>
  request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).set(headers).send(body);

async function upstreamSends(phoneNumberId: string): Promise<number> {
  const res = await request(t.sim!.url).get('/_sim/messages').query({ phone_number_id: phoneNumberId, limit: 10000 });
  const list = Array.isArray(res.body) ? res.body : res.body.messages ?? res.body.data;
  return list.length;
}

describe('daily send quota', () => {
  it('When 1,200 sends race for a quota of 1,000, then exactly 1,000 are reserved', async () => {
    const { project } = await setup();
    const now = t.clock.now();
    const outcomes = await Promise.allSettled(Array.from({ length: 1200 }, () => reserveSend(t.db.sql, project.id, 1000, now)));
    expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1000);
    const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect(rejected.every((o) => o.reason instanceof ApiError && o.reason.code === 'quota_exceeded')).toBe(true);
  });

  it('When 1,200 sends race through the batched reservations of two instances for a quota of 1,000, then exactly 1,000 are reserved', async () => {
    const { project } = await setup();
    const now = t.clock.now();
    // Another pool is another instance: its own batcher, the same counter row.
    const other = new pg.Pool({ connectionString: testDatabaseUrl(), max: 10 });
    try {
      const outcomes = await Promise.allSettled(Array.from({ length: 1200 }, (_, i) => reserveSends(i % 2 ? pgTx(other) : t.db.sql, project.id, 1000, now)));
      expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1000);
      const rejected = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(rejected.every((o) => o.reason instanceof ApiError && o.reason.code === 'quota_exceeded')).toBe(true);
      const { rows } = await t.db.pool.query('SELECT count FROM send_counters WHERE project_id = $1', [project.id]);
      expect(rows).toEqual([{ count: 1000 }]);
    } finally {
      await other.end();
    }
  });

  it('When 1,200 sends race through the record statements of two instances (each taking its unit as it records) for a quota of 1,000, then exactly 1,000 are recorded, each with one unit', async () => {
    const { project } = await setup(1000);
    const now = t.clock.now();
    const other = new pg.Pool({ connectionString: testDatabaseUrl(), max: 10 });
    try {
      const outcomes = await Promise.all(Array.from({ length: 1200 }, (_, i) =>
        recordSend(i % 2 ? pgTx(other) : t.db.sql, project.id, { to: { phone: `1415600${String(i % 40).padStart(4, '0')}` }, ref: `race-${i}`, type: 'text', content: { body: 'hi' } }, now)));
      expect(outcomes.filter((o) => o.outcome === 'recorded')).toHaveLength(1000);
      expect(outcomes.filter((o) => o.outcome === 'over_quota').map((o) => o.limit)).toEqual(Array(200).fill(1000));
      const { rows } = await t.db.pool.query('SELECT count FROM send_counters WHERE project_id = $1', [project.id]);
      expect(rows).toEqual([{ count: 1000 }]);
      const messages = await t.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND status = 'pending'`, [project.id]);
      expect(messages.rows[0].n).toBe(1000);
    } finally {
      await other.end();
    }
  });

  it('When concurrent sends exceed the quota over HTTP, then exactly the quota is accepted and the rest get 429 quota_exceeded', async () => {
    const { key, phoneNumberId } = await setup(20);
    await openWindow(phoneNumberId, '14155550201');
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => send(key, { type: 'text', phone: '+14155550201', content: `m${i}` })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBe(20);
    expect(statuses.filter((s) => s === 429).length).toBe(10);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited.body.error).toMatchObject({ code: 'quota_exceeded', details: { limit: 20, resetAt: '2026-03-02T00:00:00.000Z' } });
    expect(limited.headers['retry-after']).toBe('60');
    expect(await upstreamSends(phoneNumberId)).toBe(20);
  });

  it('When UTC midnight passes, then the quota resets; waiting before it does not', async () => {
    const { key, phoneNumberId } = await setup(1);
    await openWindow(phoneNumberId, '14155550202');
    expect((await send(key, { type: 'text', phone: '+14155550202', content: 'a' })).status).toBe(200);
    t.clock.advance(30_000);
    expect((await send(key, { type: 'text', phone: '+14155550202', content: 'b' })).body.error.code).toBe('quota_exceeded');
    t.clock.advance(31_000); // 00:00:01 UTC
    expect((await send(key, { type: 'text', phone: '+14155550202', content: 'c' })).status).toBe(200);
    t.clock.set(new Date('2026-03-01T23:59:00Z'));
  });

  it('When a send fails upstream, then it does not consume quota', async () => {
    const { key, phoneNumberId } = await setup(1);
    await openWindow(phoneNumberId, '14155550203');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, http_status: 500 });
    expect((await send(key, { type: 'text', phone: '+14155550203', content: 'a' })).status).toBe(502);
    expect((await send(key, { type: 'text', phone: '+14155550203', content: 'b' })).status).toBe(200);
  });

  it('When a reservation is released, then the count never goes below zero', async () => {
    const { project } = await setup();
    await releaseSend(t.db.sql, project.id, t.clock.now());
    const rows = await t.db.pool.query('SELECT count FROM send_counters WHERE project_id = $1', [project.id]);
    expect(rows.rows.length === 0 || rows.rows[0].count === 0).toBe(true);
  });
});

describe('Idempotency-Key', () => {
  it('When the same key and body are sent twice, then the second replays the first response and sends nothing', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550301');
    const body = { type: 'text', phone: '+14155550301', content: 'once', preview_url: false };
    const first = await send(key, body, { 'Idempotency-Key': 'order-1' });
    // Same body with keys in another order: the same fingerprint.
    const second = await send(key, { preview_url: false, content: 'once', phone: '+14155550301', type: 'text' }, { 'Idempotency-Key': 'order-1' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(await upstreamSends(phoneNumberId)).toBe(1);
  });

  it('When the key is reused with another body, then 409 idempotency_key_mismatch', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550302');
    await send(key, { type: 'text', phone: '+14155550302', content: 'a' }, { 'Idempotency-Key': 'k-mismatch' });
    const res = await send(key, { type: 'text', phone: '+14155550302', content: 'b' }, { 'Idempotency-Key': 'k-mismatch' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('idempotency_key_mismatch');
  });

  it('When a 4xx is replayed, then its body keeps the original request_id while X-Request-Id is new', async () => {
    const { key } = await setup();
    const body = { type: 'text', phone: '+14155550303', content: 'window closed' };
    const first = await send(key, body, { 'Idempotency-Key': 'k-4xx', 'X-Request-Id': 'original-req' });
    expect(first.status).toBe(409);
    const replay = await send(key, body, { 'Idempotency-Key': 'k-4xx', 'X-Request-Id': 'retry-req' });
    expect(replay.status).toBe(409);
    expect(replay.body.request_id).toBe('original-req');
    expect(replay.headers['x-request-id']).toBe('retry-req');
  });

  it('When the first attempt ends in a 5xx, then the key is released and a retry sends again', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550304');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, http_status: 503 });
    const body = { type: 'text', phone: '+14155550304', content: 'retry me' };
    expect((await send(key, body, { 'Idempotency-Key': 'k-5xx' })).status).toBe(502);
    const retry = await send(key, body, { 'Idempotency-Key': 'k-5xx' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });

  it('When 50 concurrent requests share one key, then exactly one upstream send happens and the rest are in progress or replays', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550305');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, latency_ms: 300 });
    const body = { type: 'text', phone: '+14155550305', content: 'exactly once' };
    const results = await Promise.all(Array.from({ length: 50 }, () => send(key, body, { 'Idempotency-Key': 'k-concurrent' })));
    const ok = results.filter((r) => r.status === 200);
    const busy = results.filter((r) => r.status === 409);
    expect(ok.length + busy.length).toBe(50);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(busy.every((r) => r.body.error.code === 'idempotency_in_progress')).toBe(true);
    expect(new Set(ok.map((r) => r.body.data.id)).size).toBe(1);
    expect(await upstreamSends(phoneNumberId)).toBe(1);
  });

  it('When concurrent requests bring ten keys twice each (claims and completions batched), then each key sends once and each pair answers one message', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550307');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, latency_ms: 200 });
    const keys = Array.from({ length: 10 }, (_, i) => `k-batch-${i}`);
    const results = await Promise.all([...keys, ...keys].map((k) => send(key, { type: 'text', phone: '+14155550307', content: `batch ${k}` }, { 'Idempotency-Key': k })));
    expect(results.every((r) => r.status === 200 || (r.status === 409 && r.body.error.code === 'idempotency_in_progress'))).toBe(true);
    for (let i = 0; i < 10; i++) {
      const pair = [results[i], results[i + 10]].filter((r) => r.status === 200);
      expect(pair.length).toBeGreaterThanOrEqual(1);
      expect(new Set(pair.map((r) => r.body.data.id)).size).toBe(1);
    }
    expect(await upstreamSends(phoneNumberId)).toBe(10);
    // Every key's answer was stored: a retry of each replays it.
    for (const [i, k] of keys.entries()) {
      const replay = await send(key, { type: 'text', phone: '+14155550307', content: `batch ${k}` }, { 'Idempotency-Key': k });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.data.id).toBe((results[i].status === 200 ? results[i] : results[i + 10]).body.data.id);
    }
  });

  it('When 24 hours pass, then the key behaves as new', async () => {
    const { key, phoneNumberId } = await setup();
    await openWindow(phoneNumberId, '14155550306');
    const body = { type: 'text', phone: '+14155550306', content: 'daily' };
    const first = await send(key, body, { 'Idempotency-Key': 'k-expiry' });
    t.clock.advance(23 * 3600_000);
    await openWindow(phoneNumberId, '14155550306');
    expect((await send(key, body, { 'Idempotency-Key': 'k-expiry' })).body).toEqual(first.body);
    t.clock.advance(3600_000 + 1000);
    const later = await send(key, body, { 'Idempotency-Key': 'k-expiry' });
    expect(later.status).toBe(200);
    expect(later.body.data.id).not.toBe(first.body.data.id);
    t.clock.set(new Date('2026-03-01T23:59:00Z'));
  });

  it('When two projects use the same key, then they do not collide', async () => {
    const a = await setup();
    const b = await setup();
    await openWindow(a.phoneNumberId, '14155550307');
    await openWindow(b.phoneNumberId, '14155550307');
    const body = { type: 'text', phone: '+14155550307', content: 'same key' };
    const ra = await send(a.key, body, { 'Idempotency-Key': 'shared' });
    const rb = await send(b.key, body, { 'Idempotency-Key': 'shared' });
    expect(ra.body.data.id).not.toBe(rb.body.data.id);
  });

  it.each([[''], ['x'.repeat(256)]])('When the key is %j (empty or over 255), then 400 invalid_idempotency_key', async (k) => {
    const { key } = await setup();
    const res = await send(key, { type: 'text', phone: '+14155550308', content: 'x' }, { 'Idempotency-Key': k });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_idempotency_key');
  });
});
