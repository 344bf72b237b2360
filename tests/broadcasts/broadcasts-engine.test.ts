/**
 * The sending engine against the simulator: scheduled → sending → completed, exact counts after
 * out-of-order callbacks, a crash mid-send resumed by a second engine with nobody lost or sent
 * twice, campaign-stopping errors, waves released on time, retargeting spawned once, quota held.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, runUntil, template, promoCampaign } from '../support/broadcasts.js';
import { ChannelError } from '../../channel/errors.js';
import type { CloudApiClient } from '../../channel/cloud-api.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const campaign = (n: number, body: object = {}, projectExtra: object = {}) => promoCampaign(t, n, { body, projectExtra });

async function simMessages(phoneNumberId: string): Promise<Array<{ wamid: string; to: string; payload: any }>> {
  return (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=10000`)).body.data;
}

async function status(wamid: string, s: string, errors?: object[]) {
  const res = await request(t.sim!.url).post('/_sim/status').send({ wamid, status: s, ...(errors ? { errors } : {}) });
  expect(res.body.status_code).toBe(200);
}

describe('engine', () => {
  it('When an approved campaign is due, then it goes scheduled → sending → completed and every recipient gets one message', async () => {
    const { call, id, phoneNumberId } = await campaign(30);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, { scheduled_at: new Date(t.clock.now().getTime() + 3600_000).toISOString() });
      await engine.tick();
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.status).toBe('scheduled');
      t.clock.advance(3600_000);
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('completed');
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'completed', counts: { total: 30, sent: 30, queued: 0, failed: 0, held: 0 }, recipient_count: 30 });
      expect(b.started_at).not.toBeNull();
      const sent = await simMessages(phoneNumberId);
      expect(sent).toHaveLength(30);
      expect(new Set(sent.map((m) => m.to)).size).toBe(30);
      expect(sent[0].payload.template).toMatchObject({ name: 'promo', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'friend' }] }] });
    } finally {
      await engine.stop();
    }
  });

  it('When a contact opts out after approval, then the campaign does not reach them (canceled with the reason)', async () => {
    const { call, id, phoneNumberId, project, base } = await campaign(5);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await t.db.pool.query('UPDATE contacts SET opted_out_at = now() WHERE project_id = $1 AND phone = $2', [project.id, String(base + 2)]);
      await runUntil(t, engine, id, ['completed']);
      expect((await simMessages(phoneNumberId)).map((m) => m.to)).not.toContain(String(base + 2));
      const canceled = (await call.get(`/v1/broadcasts/${id}/recipients?status=canceled`)).body.data.recipients;
      expect(canceled).toHaveLength(1);
      expect(canceled[0]).toMatchObject({ phone: `+${base + 2}`, error: { category: 'permanent', title: 'opted out after approval' } });
    } finally {
      await engine.stop();
    }
  });

  it('When callbacks arrive out of order (read before delivered, a late sent), then counts stay exact and statuses never move back', async () => {
    const { call, id, phoneNumberId } = await campaign(4);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await runUntil(t, engine, id, ['completed']);
      const [a, b, c, d] = (await simMessages(phoneNumberId)).map((m) => m.wamid);
      await status(a, 'read');
      await status(a, 'delivered');
      await status(a, 'sent');
      await status(b, 'delivered');
      await status(c, 'failed', [{ code: 131049, title: 'This message was not delivered to maintain healthy ecosystem engagement.' }]);
      await status(d, 'read');
      const counts = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;
      expect(counts).toEqual({ total: 4, queued: 0, sent: 0, delivered: 1, read: 2, failed: 1, canceled: 0, held: 0, unknown: 0 });
      const failed = (await call.get(`/v1/broadcasts/${id}/recipients?status=failed`)).body.data;
      expect(failed.total).toBe(1);
      expect(failed.recipients[0]).toMatchObject({ status: 'failed', message_id: c, error: { code: 131049, category: 'later' } });
      expect((await call.get(`/v1/broadcasts/${id}/recipients?error_category=later`)).body.data.total).toBe(1);
      expect((await call.get(`/v1/broadcasts/${id}/recipients?status=read&limit=1`)).body.data).toMatchObject({ total: 2, limit: 1 });
    } finally {
      await engine.stop();
    }
  });
});

describe('engine', () => {
  it('When an engine dies mid-send with calls in flight, then a second engine resumes: nobody is lost and nobody gets two messages', async () => {
    const { call, id, phoneNumberId } = await campaign(40);
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
    // Engine A: the first 10 sends pass; then its calls reach the channel and the process "dies" (answers never come).
    const releases: Array<() => void> = [];
    let calls = 0;
    const real = (await engineFor(t)) ;
    await real.stop();
    const { CloudApiClient: Client } = await import('../../channel/cloud-api.js');
    const inner = new Client({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 2000 });
    const dying = Object.create(inner) as CloudApiClient;
    dying.sendMessage = async (creds, payload) => {
      calls++;
      const result = await inner.sendMessage(creds, payload);
      if (calls <= 10) return result;
      await new Promise<void>((r) => releases.push(r));
      throw new ChannelError({ kind: 'unavailable', message: 'process gone', retryable: true, outcomeUnknown: true });
    };
    const { startBroadcastEngine } = await import('../../jobs/broadcast-engine.js');
    const { createLogger } = await import('../../lib/platform/logger.js');
    const a = await startBroadcastEngine({ db: t.db, clock: t.clock, logger: createLogger({ silent: true }), secretBox: t.secretBox, channel: dying },
      { schedule: false, leaseMs: 1000, idleMs: 50, concurrency: 4, maxBatch: 8, owner: 'engine-a' });
    await a.tick();
    const deadline = Date.now() + 10_000;
    while (releases.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(releases.length).toBeGreaterThanOrEqual(4);
    // Engine B on the same database takes over once A's leases run out.
    const b = await engineFor(t, { owner: 'engine-b', leaseMs: 1000, concurrency: 4 });
    try {
      await new Promise((r) => setTimeout(r, 1100));
      expect(await runUntil(t, b, id, ['completed'])).toBe('completed');
      // Calls that reached the channel and never answered (A "died" with them in flight).
      const hung = releases.length;
      for (const r of releases) r();
      await a.stop();
      const sent = await simMessages(phoneNumberId);
      expect(sent).toHaveLength(40);
      expect(new Set(sent.map((m) => m.to)).size).toBe(40);
      const counts = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;
      expect(counts.total).toBe(40);
      // The in-flight sends are pending: `unknown` (never `queued`, issue 44) until their callbacks settle them.
      expect(counts.sent + counts.unknown).toBe(40);
      expect(counts.unknown).toBe(hung);
      expect(counts.queued).toBe(0);
      const { rows } = await t.db.pool.query<{ send_ref: string }>(`SELECT send_ref FROM messages m JOIN broadcasts b ON b.project_id = m.project_id WHERE b.id = $1 AND m.status = 'pending'`, [id]);
      expect(rows).toHaveLength(hung);
      const refs = new Set(rows.map((r) => r.send_ref));
      const pending = sent.filter((m) => refs.has(m.payload.biz_opaque_callback_data));
      expect(pending).toHaveLength(hung);
      for (const m of pending) await status(m.wamid, 'sent');
      const after = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;
      expect(after).toMatchObject({ total: 40, sent: 40, queued: 0, unknown: 0 });
    } finally {
      await b.stop();
    }
  });

  it('When the template is paused at the channel, then the campaign stops as failed with the reason and the rest is canceled', async () => {
    const { call, id, project } = await campaign(20);
    const tpl = await t.db.prisma.template.findFirstOrThrow({ where: { projectId: project.id, name: 'promo' } });
    await request(t.sim!.url).post(`/_sim/templates/${tpl.channelTemplateId}/decision`).send({ decision: 'PAUSED' });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('failed');
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b.status_reason).toMatch(/132015/);
      expect(b.counts.sent).toBe(0);
      expect(b.counts.failed + b.counts.canceled).toBe(20);
      const failed = (await call.get(`/v1/broadcasts/${id}/recipients?status=failed`)).body.data.recipients;
      expect(failed[0].error).toMatchObject({ code: 132015, category: 'campaign' });
    } finally {
      await engine.stop();
    }
  });

  it('When an operator cancels while sending, then the rest is canceled and nothing more is sent', async () => {
    const { call, id, phoneNumberId, project } = await campaign(60);
    await t.admin.call('put', `/admin/projects/${project.id}/broadcast-throughput`, { messages_per_second: 20 });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await engine.tick();
      const deadline = Date.now() + 10_000;
      while ((await simMessages(phoneNumberId)).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await t.admin.call('post', `/admin/broadcasts/${id}/cancel`, {});
      await engine.engine.idle();
      const sentCount = (await simMessages(phoneNumberId)).length;
      expect(sentCount).toBeLessThan(60);
      const counts = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;
      expect(counts.total).toBe(60);
      expect(counts.sent).toBe(sentCount);
      expect(counts.canceled).toBe(60 - sentCount);
      await engine.tick();
      await engine.engine.idle();
      expect((await simMessages(phoneNumberId)).length).toBe(sentCount);
    } finally {
      await engine.stop();
    }
  });
});

describe('engine', () => {
  it('When a campaign has wave_size, then the first wave goes, the rest is held, and the next wave is released at wave_scheduled_at', async () => {
    const { call, id } = await campaign(25, { wave_size: 10, wave_interval_minutes: 60, wave_scheduled_count: 10 });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      const start = t.clock.now().getTime();
      await engine.tick();
      await engine.engine.idle();
      let b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'sending', wave_size: 10, wave_scheduled_count: 10, counts: { sent: 10, held: 15 } });
      expect(Date.parse(b.wave_scheduled_at)).toBe(start + 3600_000);
      t.clock.advance(3599_000);
      await engine.tick();
      await engine.engine.idle();
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts).toMatchObject({ sent: 10, held: 15 });
      t.clock.advance(1000);
      await engine.tick();
      await engine.engine.idle();
      b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b.counts).toMatchObject({ sent: 20, held: 5 });
      expect(Date.parse(b.wave_scheduled_at)).toBe(start + 7200_000);
      t.clock.advance(3600_000);
      expect(await runUntil(t, engine, id, ['completed'])).toBe('completed');
      b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ counts: { sent: 25, held: 0 }, wave_scheduled_at: null });
      const waves = (await call.get(`/v1/broadcasts/${id}/recipients?limit=100`)).body.data.recipients.map((r: any) => r.wave);
      expect(waves.filter((w: number) => w === 1)).toHaveLength(10);
      expect(waves.filter((w: number) => w === 3)).toHaveLength(5);
    } finally {
      await engine.stop();
    }
  });

  it('When recipients fail with 131049 and auto_retarget_quality is on, then one follow-up is spawned about 24 h later, pending approval, and only once', async () => {
    const { call, id, phoneNumberId } = await campaign(5, { auto_retarget_quality: true });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await runUntil(t, engine, id, ['completed']);
      const sent = await simMessages(phoneNumberId);
      for (const m of sent.slice(0, 2)) await status(m.wamid, 'failed', [{ code: 131049, title: 'healthy ecosystem' }]);
      await status(sent[2].wamid, 'failed', [{ code: 131026, title: 'Message undeliverable' }]);
      t.clock.advance(23 * 3600_000);
      await engine.tick();
      expect((await call.get(`/v1/broadcasts?limit=10`)).body.data.total).toBe(1);
      t.clock.advance(3600_000);
      await engine.tick();
      await engine.tick();
      const list = (await call.get(`/v1/broadcasts?limit=10`)).body.data;
      expect(list.total).toBe(2);
      const child = list.broadcasts.find((b: any) => b.id !== id);
      expect(child).toMatchObject({ status: 'pending_approval', retarget_parent_id: id, template_name: 'promo' });
      const full = (await call.get(`/v1/broadcasts/${child.id}`)).body.data.broadcast;
      expect(full.recipient_count).toBe(2);
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.retarget_count).toBe(1);
      const approved = await t.admin.call('post', `/admin/broadcasts/${child.id}/approve`, {});
      expect(approved.broadcast.recipient_count).toBe(2);
      expect(await runUntil(t, engine, child.id, ['completed'])).toBe('completed');
      expect((await simMessages(phoneNumberId)).length).toBe(7);
    } finally {
      await engine.stop();
    }
  });

  it('When the daily quota runs out mid-campaign, then the rest is held (queued, not failed) until the next UTC day', async () => {
    const { call, id, phoneNumberId } = await campaign(12, {}, { daily_send_quota: 5 });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await engine.tick();
      await engine.engine.idle();
      let b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'sending', counts: { sent: 5, queued: 7, failed: 0 } });
      expect(b.status_reason).toMatch(/daily quota/);
      expect((await simMessages(phoneNumberId)).length).toBe(5);
    } finally {
      await engine.stop();
    }
  });
});

describe('pacing', () => {
  timingBound('the pace recovers within the test clock of real time').it('When the channel answers 130429 beyond its real throughput, then the engine slows down, recovers, and sends everyone exactly once', async () => {
    const { call, id, project, phoneNumberId } = await campaign(60);
    await t.admin.call('put', `/admin/projects/${project.id}/broadcast-throughput`, { messages_per_second: 200 });
    await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ throughput_mps: 20 });
    const engine = await engineFor(t, { pacing: { recoverEveryMs: 300 } });
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('completed');
      const sent = await simMessages(phoneNumberId);
      expect(sent).toHaveLength(60);
      expect(new Set(sent.map((m) => m.to)).size).toBe(60);
      expect((await request(t.sim!.url).get('/_sim/stats')).body.throttled).toBeGreaterThan(0);
      const { rows } = await t.db.pool.query('SELECT current_rate, throughput FROM broadcast_pacing WHERE phone_number_id = $1', [phoneNumberId]);
      expect(rows[0].current_rate).toBeLessThan(180);
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts).toMatchObject({ total: 60, sent: 60, failed: 0 });
    } finally {
      await engine.stop();
    }
  });

  it('When a send gets 131056 (pair rate), then that recipient backs off and is sent once later', async () => {
    const { call, id, phoneNumberId } = await campaign(3);
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, operation: 'messages', count: 1, graph_error: { code: 131056 } });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed'])).toBe('completed');
      const sent = await simMessages(phoneNumberId);
      expect(sent).toHaveLength(3);
      const recipients = (await call.get(`/v1/broadcasts/${id}/recipients`)).body.data.recipients;
      expect(recipients.map((r: any) => r.status)).toEqual(['sent', 'sent', 'sent']);
      expect(recipients.map((r: any) => r.attempts).sort()).toEqual([1, 1, 2]);
    } finally {
      await engine.stop();
    }
  });

  it('When the number is set to 20/s, then a campaign is paced at its broadcast share (18/s) within 20%', async () => {
    const { id, project, phoneNumberId } = await campaign(54);
    await t.admin.call('put', `/admin/projects/${project.id}/broadcast-throughput`, { messages_per_second: 20 });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      const started = Date.now();
      await runUntil(t, engine, id, ['completed']);
      const seconds = (Date.now() - started) / 1000;
      expect((await simMessages(phoneNumberId)).length).toBe(54);
      // 54 at 18/s: about 3 s (the first slot is immediate).
      expect(seconds).toBeGreaterThan(2.2);
      expect(seconds).toBeLessThan(4.5);
    } finally {
      await engine.stop();
    }
  });
});
