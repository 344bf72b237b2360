/**
 * A send is never sent twice and never unrecorded: the message is recorded (pending) before the
 * channel is called, a timed-out call keeps it pending with its quota unit and its Idempotency-Key,
 * and the channel's status (which echoes our reference as biz_opaque_callback_data) settles it; a
 * call that certainly failed leaves no message, gives the quota unit back and releases the key.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { setTimeout as sleep } from 'node:timers/promises';

let t: TestApp;
beforeAll(async () => {
  // The test channel client times out after 2 s; the simulator answers this test's sends late.
  t = await startTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: 50, read: null } as any, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

let seq = 0;

async function setup() {
  const project = await t.admin.project(`once ${++seq}`);
  const key = (await t.admin.key(project.id, ['messages:send', 'conversations:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415555${String(1000 + seq)}`;
  const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text: 'hi' });
  expect(res.status).toBe(200);
  return { project, key, pnid: channel.phoneNumberId, phone };
}

const send = (key: string, phone: string, idem?: string) => {
  const req = request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`);
  if (idem) req.set('Idempotency-Key', idem);
  return req.send({ type: 'text', phone: `+${phone}`, content: 'exactly once' });
};
const simSends = async (pnid: string, phone: string) =>
  (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}&to=${phone}`)).body.data as Array<{ wamid: string; payload: any }>;
const quotaUsed = async (projectId: string) =>
  Number((await t.db.pool.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [projectId])).rows[0].n);
const fault = (pnid: string, f: object) => request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: pnid, operation: 'messages', ...f }).expect((r) => expect(r.status).toBeLessThan(300));

describe('a send whose outcome is unknown', () => {
  it('When the channel processes the send but its answer is lost, then the answer is 502 with outcome unknown, and once the status (echoing our reference) arrives a retry with the key gets the one send', async () => {
    const { project, key, pnid, phone } = await setup();
    await fault(pnid, { lose_answer: true });
    const first = await send(key, phone, 'idem-unknown-1');
    expect(first.status).toBe(502);
    expect(first.body.error.details.outcome).toBe('unknown');

    // The simulator processes the send after its latency and reports 'sent' with our reference.
    let replay: request.Response | undefined;
    for (let i = 0; i < 100; i++) {
      replay = await send(key, phone, 'idem-unknown-1');
      if (replay.status === 200) break;
      await sleep(100);
    }
    expect(replay!.status).toBe(200);
    expect(replay!.headers['idempotent-replayed']).toBe('true');
    const sends = await simSends(pnid, phone);
    expect(sends).toHaveLength(1);
    expect(sends[0].payload.biz_opaque_callback_data).toMatch(/^snd_/);
    expect(replay!.body.data).toEqual({ id: sends[0].wamid, status: 'sent' });
    const rows = (await t.db.pool.query('SELECT wamid, status FROM messages WHERE project_id = $1 AND direction = $2', [project.id, 'outbound'])).rows;
    expect(rows).toHaveLength(1);
    expect(rows[0].wamid).toBe(sends[0].wamid);
    expect(await quotaUsed(project.id)).toBe(1);
    // The message reads as usual once known.
    const read = await request(t.app).get(`/v1/messages/${sends[0].wamid}`).set('Authorization', `Bearer ${key}`);
    expect(read.status).toBe(200);
  }, 30_000);

  it('When the outcome is still unknown after the claim grace, then the key is not taken over and nothing is sent again', async () => {
    const { key, pnid, phone } = await setup();
    await fault(pnid, { timeout: true }); // never answers, never processes: the send did not happen
    const first = await send(key, phone, 'idem-unknown-2');
    expect(first.status).toBe(502);
    t.clock.advance(10 * 60_000); // far past the 2-minute takeover of abandoned claims
    const again = await send(key, phone, 'idem-unknown-2');
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('idempotency_in_progress');
    expect(await simSends(pnid, phone)).toHaveLength(0);
  }, 30_000);
});

describe('a send that certainly failed', () => {
  it('When the channel refuses the send, then no message is kept, the quota unit comes back and the key is released for a new attempt', async () => {
    const { project, key, pnid, phone } = await setup();
    await fault(pnid, { graph_error: { code: 131026, http_status: 400, message: 'Message undeliverable' } });
    const refused = await send(key, phone, 'idem-failed-1');
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect((await t.db.pool.query('SELECT 1 FROM messages WHERE project_id = $1 AND direction = $2', [project.id, 'outbound'])).rowCount).toBe(0);
    expect(await quotaUsed(project.id)).toBe(0);
    if (refused.status >= 500) {
      const retry = await send(key, phone, 'idem-failed-1');
      expect(retry.status).toBe(200);
      expect(await quotaUsed(project.id)).toBe(1);
    }
  }, 30_000);
});

describe('idempotent replays', () => {
  it('When a 429 quota_exceeded is replayed, then it carries Retry-After', async () => {
    const { project, key, phone } = await setup();
    await t.admin.call('patch', `/admin/projects/${project.id}`, { daily_send_quota: 0 });
    const first = await send(key, phone, 'idem-quota-1');
    expect(first.status).toBe(429);
    expect(first.body.error.code).toBe('quota_exceeded');
    expect(Number(first.headers['retry-after'])).toBeGreaterThan(0);
    const replay = await send(key, phone, 'idem-quota-1');
    expect(replay.status).toBe(429);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(Number(replay.headers['retry-after'])).toBeGreaterThan(0);
    expect(replay.body).toEqual(first.body);
  });
});
