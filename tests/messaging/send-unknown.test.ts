/**
 * Every send settles (issue #34): a send whose answer was lost and that no status names within
 * the bound (SEND_UNKNOWN_AFTER_SECONDS) becomes final `unknown`, exactly at the bound (manual
 * clock, no sleeps on the rule itself): its quota unit stays spent, its Idempotency-Key replays a
 * final answer, a `message.status` event reports it, and a status that still comes later wins.
 * The same for a campaign, and for a recipient whose intent was recorded before a crash cut the
 * call (never sent, never sent twice).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, runUntil, template, promoCampaign } from '../support/broadcasts.js';
import { eventually } from '../support/eventually.js';
import { settleLostSends } from '../../jobs/send-settle.js';
import { recordIntents } from '../../lib/messaging/ledger.js';
import { claimBatch } from '../../lib/broadcasts/recipients.js';
import { loadConfig } from '../../lib/platform/config.js';

const BOUND_MS = 3600_000;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    config: { sendUnknownAfterMs: BOUND_MS, graphTimeoutMs: 1500 },
  });
});
afterAll(async () => {
  await t.close();
});

const settle = () => settleLostSends({ db: t.db, clock: t.clock, config: t.config });
const fault = (pnid: string, f: object) => request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: pnid, operation: 'messages', ...f }).expect((r) => expect(r.status).toBeLessThan(300));
const simSends = async (pnid: string, to?: string) =>
  (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}${to ? `&to=${to}` : ''}&limit=1000`)).body.data as Array<{ wamid: string; to: string; payload: any }>;
const simStatus = async (wamid: string, status: string) => expect((await request(t.sim!.url).post('/_sim/status').send({ wamid, status })).body.status_code).toBe(200);

let seq = 0;
async function sender() {
  const project = await t.admin.project(`unknown ${++seq}`);
  const key = (await t.admin.key(project.id, ['messages:send', 'conversations:read'])).secret;
  const { phoneNumberId: pnid } = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415556${String(1000 + seq)}`;
  expect((await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, text: 'hi' })).body.status_code).toBe(200);
  const send = (idem: string) =>
    request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).set('Idempotency-Key', idem).send({ type: 'text', phone: `+${phone}`, content: 'lost' });
  const quota = async () => Number((await t.db.pool.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [project.id])).rows[0].n);
  const outbound = async () => (await t.db.pool.query<{ status: string; wamid: string; id: string }>(
    `SELECT status, wamid, id::text FROM messages WHERE project_id = $1 AND direction = 'outbound'`, [project.id])).rows;
  return { project, key, pnid, phone, send, quota, outbound };
}

describe('a send whose outcome is never reported', () => {
  it('When the answer is lost and no status comes, then the message is pending until exactly the bound, then final unknown: unit spent, event raised, key replays a final answer; a late status still wins', async () => {
    const s = await sender();
    await fault(s.pnid, { lose_answer: true });
    const sentAt = t.clock.now().getTime();
    const first = await s.send('lost-1');
    expect(first.status).toBe(502);
    expect(first.body.error.details.outcome).toBe('unknown');
    expect(await s.outbound()).toMatchObject([{ status: 'pending' }]);
    expect((await s.send('lost-1')).status).toBe(409);

    t.clock.set(new Date(sentAt + BOUND_MS - 1));
    await settle();
    expect(await s.outbound()).toMatchObject([{ status: 'pending' }]);
    t.clock.set(new Date(sentAt + BOUND_MS));
    expect(await settle()).toBeGreaterThanOrEqual(1);
    const [msg] = await s.outbound();
    expect(msg.status).toBe('unknown');
    expect(await s.quota()).toBe(1); // it may have been sent: the unit stays spent
    const events = (await t.db.pool.query(`SELECT data FROM events WHERE project_id = $1 AND name = 'message.status'`, [s.project.id])).rows;
    expect(events).toEqual([{ data: expect.objectContaining({ id: Number(msg.id), status: 'unknown' }) }]);

    // The key's answer is final now, and the same on every retry; nothing is sent again.
    const replay = await s.send('lost-1');
    expect(replay.status).toBe(502);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toMatchObject({ success: false, error: { code: 'upstream_error', details: { outcome: 'unknown', final: true } } });
    expect((await s.send('lost-1')).body).toEqual(replay.body);
    // Another request under the same key is still a mismatch.
    const other = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${s.key}`).set('Idempotency-Key', 'lost-1').send({ type: 'text', phone: `+${s.phone}`, content: 'other' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_mismatch');
    const atChannel = await simSends(s.pnid, s.phone);
    expect(atChannel).toHaveLength(1);

    // A late status (it did go out) wins over unknown.
    await simStatus(atChannel[0].wamid, 'delivered');
    await eventually(s.outbound, (rows) => rows[0]?.status === 'delivered', 10_000, 'the late status applied');
    expect((await s.outbound())[0].wamid).toBe(atChannel[0].wamid);
    const read = await request(t.app).get(`/v1/messages/${atChannel[0].wamid}`).set('Authorization', `Bearer ${s.key}`);
    expect(read.body.data.status).toBe('delivered');
    // A second pass settles nothing more.
    expect(await settle()).toBe(0);
  }, 30_000);

  it('When a send is settled unknown, then GET /v1/messages/{id} answers it with status unknown', async () => {
    const s = await sender();
    await fault(s.pnid, { lose_answer: true });
    expect((await s.send('lost-2')).status).toBe(502);
    t.clock.advance(BOUND_MS);
    await settle();
    const [msg] = await s.outbound();
    const read = await request(t.app).get(`/v1/messages/${msg.id}`).set('Authorization', `Bearer ${s.key}`);
    expect(read.status).toBe(200);
    expect(read.body.data.status).toBe('unknown');
  }, 30_000);
});

describe('a campaign send whose outcome is never reported', () => {
  const campaign = (n: number) => promoCampaign(t, n, { name: 'Lost', base: 15570000000 + Math.floor(Math.random() * 1e6) * 1000 });
  const counts = async (call: ReturnType<typeof api>, id: string) => (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;

  it('When one recipient\'s answer is lost and no status comes, then it is unknown at once (neither queued nor sent) and stays so past the bound; a late status still wins', async () => {
    const c = await campaign(5);
    await fault(c.pnid, { lose_answer: true, count: 1 });
    await t.admin.call('post', `/admin/broadcasts/${c.id}/approve`, {});
    const sentAt = t.clock.now().getTime();
    const engine = await engineFor(t, { concurrency: 1 });
    try {
      expect(await runUntil(t, engine, c.id, ['completed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    const atChannel = await simSends(c.pnid);
    expect(atChannel).toHaveLength(5);
    const lost = (await t.db.pool.query(`SELECT phone, state, wamid, send_ref FROM broadcast_recipients WHERE broadcast_id = $1 AND wamid IS NULL`, [c.id])).rows;
    expect(lost).toEqual([expect.objectContaining({ state: 'unknown', wamid: null })]);
    // Issue 44: reported unknown from the start (it was `queued` until the bound).
    expect(await counts(c.call, c.id)).toMatchObject({ total: 5, sent: 4, queued: 0, unknown: 1 });

    t.clock.set(new Date(sentAt + BOUND_MS - 1));
    await settle();
    expect(await counts(c.call, c.id)).toMatchObject({ sent: 4, queued: 0, unknown: 1 });
    t.clock.set(new Date(sentAt + BOUND_MS));
    await settle();
    expect(await counts(c.call, c.id)).toMatchObject({ total: 5, sent: 4, queued: 0, unknown: 1 });
    const listed = (await c.call.get(`/v1/broadcasts/${c.id}/recipients?status=unknown`)).body.data;
    expect(listed.total).toBe(1);
    expect(listed.recipients[0]).toMatchObject({ phone: `+${lost[0].phone}`, status: 'unknown', message_id: null });

    const late = atChannel.find((m) => m.payload.biz_opaque_callback_data === lost[0].send_ref)!;
    await simStatus(late.wamid, 'read');
    await eventually(() => counts(c.call, c.id), (n) => n.read === 1, 10_000, 'the late status counted');
    expect(await counts(c.call, c.id)).toMatchObject({ total: 5, sent: 4, read: 1, unknown: 0 });
  }, 40_000);

  it('When a crash left a recipient recorded but never called, then it is not sent (again or at all) and is unknown, also past the bound', async () => {
    const c = await campaign(3);
    await t.admin.call('post', `/admin/broadcasts/${c.id}/approve`, {});
    // A dead engine's work: one recipient claimed, its intent recorded, the call never made.
    const past = new Date(Date.now() - 60_000);
    const [r] = await claimBatch(t.db.sql, c.id, 'dead-engine', 1, past, past, past);
    await recordIntents(t.db.sql, c.project.id, [{ to: { phone: r.phone }, ref: r.send_ref, type: 'template', content: { type: 'template' } }], t.clock.now());
    const sentAt = t.clock.now().getTime();
    const engine = await engineFor(t);
    try {
      expect(await runUntil(t, engine, c.id, ['completed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    const atChannel = await simSends(c.pnid);
    expect(atChannel.map((m) => m.to).sort()).toEqual([String(c.base), String(c.base + 1), String(c.base + 2)].filter((p) => p !== r.phone).sort());
    expect((await t.db.pool.query('SELECT state FROM broadcast_recipients WHERE id = $1', [r.id])).rows[0].state).toBe('unknown');
    expect(await counts(c.call, c.id)).toMatchObject({ total: 3, sent: 2, queued: 0, unknown: 1 });
    t.clock.set(new Date(sentAt + BOUND_MS));
    await settle();
    expect(await counts(c.call, c.id)).toMatchObject({ total: 3, sent: 2, queued: 0, unknown: 1 });
    expect(await simSends(c.pnid)).toHaveLength(2);
  }, 40_000);
});

describe('settings (read once, validated at start)', () => {
  it('When SEND_UNKNOWN_AFTER_SECONDS is not a whole number of seconds in range, then the configuration refuses to start naming it', () => {
    expect(loadConfig({}).sendUnknownAfterMs).toBe((7 * 86400 + 3600) * 1000);
    expect(loadConfig({ SEND_UNKNOWN_AFTER_SECONDS: '120' }).sendUnknownAfterMs).toBe(120_000);
    for (const bad of ['abc', '-5', '1.5', '0', '999999999']) {
      expect(() => loadConfig({ SEND_UNKNOWN_AFTER_SECONDS: bad })).toThrow(/SEND_UNKNOWN_AFTER_SECONDS/);
    }
  });

  it('When BROADCAST_DEFAULT_MPS or BROADCAST_RATE_SHARE is bad, then the configuration refuses to start naming it (it no longer falls back silently)', () => {
    expect(loadConfig({})).toMatchObject({ broadcastDefaultMps: 80, broadcastRateShare: 0.9 });
    expect(loadConfig({ BROADCAST_DEFAULT_MPS: '250', BROADCAST_RATE_SHARE: '1' })).toMatchObject({ broadcastDefaultMps: 250, broadcastRateShare: 1 });
    for (const bad of ['fast', '0', '-3', '100001']) expect(() => loadConfig({ BROADCAST_DEFAULT_MPS: bad })).toThrow(/BROADCAST_DEFAULT_MPS/);
    for (const bad of ['most', '0', '1.5', '-0.2']) expect(() => loadConfig({ BROADCAST_RATE_SHARE: bad })).toThrow(/BROADCAST_RATE_SHARE/);
  });
});
