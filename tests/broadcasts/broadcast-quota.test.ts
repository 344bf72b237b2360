/**
 * A campaign and the daily send quota: the pre-flight says, before approval, how much of the day's
 * quota is left and how many recipients it would hold until the next UTC midnight (API, CLI,
 * dashboard); a held campaign gives one reason in one date format; raising the quota resumes it at
 * once (the engine's next tick), not at midnight. Business time is the manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, runUntil, promoCampaign } from '../support/broadcasts.js';
import { person } from '../support/dashboard.js';
import { ManualClock } from '../../lib/platform/clock.js';
import { runOps } from '../support/ops.js';

// 21:30 UTC: the next UTC midnight is 2026-11-24 00:00.
const NOW = new Date('2026-11-23T21:30:00.000Z');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock: new ManualClock(NOW), simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const campaign = (n: number, quota: number, body: object = {}) =>
  promoCampaign(t, n, { name: 'Quota', base: 15560000000 + Math.floor(Math.random() * 1e6) * 1000, body, projectExtra: { daily_send_quota: quota } });

const ops = (args: string[]) => runOps(t.baseUrl!, t.adminToken, args);

describe('the quota in the pre-flight', () => {
  it('When 12 recipients meet a quota of 5 with 2 used today, then the API, the CLI and the dashboard say 3 are left and 9 would be held until 2026-11-24 00:00 UTC', async () => {
    const { project, call, id } = await campaign(12, 5);
    await t.db.pool.query(`INSERT INTO send_counters (project_id, day, count) VALUES ($1, '2026-11-23', 2)`, [project.id]);
    const pf = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.preflight;
    expect(pf.eligible).toBe(12);
    expect(pf.quota).toEqual({ day: '2026-11-23', daily_limit: 5, used: 2, remaining: 3, held: 9, resumes_at: '2026-11-24T00:00:00.000Z', conversation_reserve: 0, left_for_conversations: 0 });

    const shown = await ops(['broadcasts', 'show', id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^daily quota: +3 of 5 left on 2026-11-23 \(UTC\): 9 recipients would be held until 2026-11-24 00:00 UTC unless the quota is raised; 0 left for replies$/m);

    const { agent } = await person(t, project.id, `owner-${Date.now()}@example.com`);
    const page = (await agent.get(`/dashboard/projects/${project.id}/broadcasts`)).text;
    expect(page).toContain('3 of 5 left on 2026-11-23 (UTC): 9 recipients would be held until 2026-11-24 00:00 UTC unless the quota is raised; 0 left for replies');
    const detail = (await agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}`)).text;
    expect(detail).toContain('9 recipients would be held until 2026-11-24 00:00 UTC');

    // Approval freezes the report with the quota as it stood; the CLI says what is held.
    const approved = await ops(['broadcasts', 'approve', id]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`The daily quota holds 9 of them until 2026-11-24 00:00 UTC (raise it with: ops projects quota ${project.id} <n>).`);
    const after = (await agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}`)).text;
    expect(after).toMatch(/Daily quota at approval<\/dt><dd class="warning">3 of 5 left on 2026-11-23 \(UTC\): 9 recipients would be held until 2026-11-24 00:00 UTC/);
  });

  it('When everyone fits, or the campaign is scheduled for another day, then nothing is held and the day is the scheduled one', async () => {
    const fits = await campaign(4, 10);
    expect((await fits.call.get(`/v1/broadcasts/${fits.id}`)).body.data.broadcast.preflight.quota).toEqual({ day: '2026-11-23', daily_limit: 10, used: 0, remaining: 10, held: 0, resumes_at: null, conversation_reserve: 0, left_for_conversations: 6 });
    const later = await campaign(7, 5, { scheduled_at: '2026-11-25T09:00:00Z' });
    await t.db.pool.query(`INSERT INTO send_counters (project_id, day, count) VALUES ($1, '2026-11-23', 5)`, [later.project.id]);
    expect((await later.call.get(`/v1/broadcasts/${later.id}`)).body.data.broadcast.preflight.quota).toEqual({
      day: '2026-11-25', daily_limit: 5, used: 0, remaining: 5, held: 2, resumes_at: '2026-11-26T00:00:00.000Z', conversation_reserve: 0, left_for_conversations: 0,
    });
  });
});

describe('a campaign held by the quota', () => {
  it('When the quota is used mid-campaign, then it says so in one format everywhere; raising the quota (ops projects quota) resumes it at once', async () => {
    const { project, call, id } = await campaign(12, 5);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await engine.tick();
      await engine.engine.idle();
      const reason = 'daily quota used; sending resumes at 2026-11-24 00:00 UTC or when the quota is raised';
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'sending', status_reason: reason, counts: { sent: 5, queued: 7 } });
      expect((await ops(['broadcasts', 'show', id])).stdout).toMatch(new RegExp(`^status: +sending \\(${reason.replace(/[()]/g, '\\$&')}\\)$`, 'm'));
      expect((await ops(['broadcasts', 'list', '--project', project.id])).stdout).toContain(`sending (${reason})`);
      const { agent } = await person(t, project.id, `held-${Date.now()}@example.com`);
      expect((await agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}`)).text).toContain(`sending (${reason})`);
      expect((await agent.get(`/dashboard/projects/${project.id}/broadcasts`)).text).toContain(`sending (${reason})`);

      // Ticks before the quota changes do not resume it (it waits for midnight)...
      await engine.tick();
      await engine.engine.idle();
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts.sent).toBe(5);
      // ...raising the quota does, on the next tick, with business time unchanged.
      const raised = await ops(['projects', 'quota', project.id, '50']);
      expect(raised.code).toBe(0);
      expect(await runUntil(t, engine, id, ['completed'], 10_000)).toBe('completed');
      const done = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(done).toMatchObject({ status: 'completed', status_reason: null, counts: { sent: 12, queued: 0 } });
      expect(t.clock.now().toISOString()).toBe(NOW.toISOString());
    } finally {
      await engine.stop();
    }
  });

  it('When the quota is raised but still used, then the campaign parks again with the same reason', async () => {
    const { project, call, id } = await campaign(6, 2);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await engine.tick();
      await engine.engine.idle();
      await t.admin.call('patch', `/admin/projects/${project.id}`, { daily_send_quota: 4 });
      await engine.tick();
      await engine.engine.idle();
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'sending', counts: { sent: 4, queued: 2 } });
      expect(b.status_reason).toBe('daily quota used; sending resumes at 2026-11-24 00:00 UTC or when the quota is raised');
    } finally {
      await engine.stop();
    }
  });
});

describe('a reserve for conversations', () => {
  it('When the project keeps part of its quota for conversations, then the pre-flight says what the campaign leaves for replies, the campaign stops short of the reserve, and a reply still goes out after it', async () => {
    const { project, call, id } = await campaign(10, 10);
    const set = await ops(['projects', 'quota', project.id, '10', '--reserve', '3']);
    expect(set.code).toBe(0);
    expect(set.stdout).toContain(`Set the daily send quota of ${project.id} to 10, 3 of it kept for conversations.`);
    // A bad reserve is refused, nothing changed.
    const bad = await request(t.app).patch(`/admin/projects/${project.id}`).set('Authorization', `Bearer ${t.adminToken}`).send({ conversation_reserve: -1 });
    expect(bad.status).toBe(400);

    const pf = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.preflight;
    expect(pf.quota).toEqual({ day: '2026-11-23', daily_limit: 10, used: 0, remaining: 7, held: 3, resumes_at: '2026-11-24T00:00:00.000Z', conversation_reserve: 3, left_for_conversations: 3 });
    expect((await ops(['broadcasts', 'show', id])).stdout).toMatch(/^daily quota: +7 of 10 left on 2026-11-23 \(UTC\): 3 recipients would be held until 2026-11-24 00:00 UTC unless the quota is raised; 3 left for replies \(3 kept for them\)$/m);

    // A customer writes (the window opens) before the campaign runs.
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    expect((await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: '14155557001', name: 'Ada', text: 'order 42?' })).status).toBe(200);

    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      await engine.tick();
      await engine.engine.idle();
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b).toMatchObject({ status: 'sending', counts: { sent: 7, queued: 3 } });
      // The reply is a conversation's send: it takes the reserve.
      const sender = api(t, (await t.admin.key(project.id, ['messages:send'])).secret);
      const reply = await sender.post('/v1/messages', { type: 'text', phone: '14155557001', content: 'Order 42 ships today.' });
      expect(reply.status).toBe(200);
      expect(reply.body.data.id).toEqual(expect.any(String));
    } finally {
      await engine.stop();
    }
  });
});

