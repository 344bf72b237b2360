/**
 * The portfolio's messaging limit in the engine (lib/pricing/portfolio-reach.ts): campaigns send
 * what fits in the moving 24 hours and hold the rest with the reason, two campaigns on two engines
 * share one budget, and the held recipients go out as the window moves (manual clock, shared by
 * the simulator, which enforces the same limit with Meta's error).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { ALL_SCOPES, api, engineFor, projectWithKey, runUntil, seedMany, template } from '../support/broadcasts.js';
import { startBroadcastEngine, type RunningEngine } from '../../jobs/broadcast-engine.js';
import { CloudApiClient } from '../../channel/cloud-api.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

type Counts = { total: number; queued: number; sent: number; held: number; failed: number; canceled: number };

async function campaign(call: ReturnType<typeof api>, tag: string) {
  const res = await call.post('/v1/broadcasts', {
    name: `Limit ${tag}`, template_name: 'promo', template_language: 'en_US',
    audience: { filter: { match: 'all', conditions: [{ field: 'tags', op: 'has', value: tag }] } },
  });
  expect(res.status).toBe(201);
  return res.body.data.broadcast as { id: string; preflight: { eligible: number; messaging_limit: Record<string, unknown> } };
}

/** Ticks both engines until `done` holds for the two campaigns' reads (or the deadline). */
type Read = Array<{ status: string; status_reason: string | null; counts: Counts | null }>;

/** What the simulated channel received from the number. */
async function channelGot(phoneNumberId: string): Promise<Array<{ to: string; status: string }>> {
  return (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=10000`)).body.data;
}

/** Ticks both engines until `done` holds for the two campaigns' reads and the channel's count (or the deadline). */
async function tickUntil(engines: RunningEngine[], read: () => Promise<Read>, phoneNumberId: string, done: (b: Read, received: number) => boolean) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    await Promise.all(engines.map((e) => e.tick()));
    const b = await read();
    if (done(b, (await channelGot(phoneNumberId)).length)) return b;
    if (Date.now() > deadline) throw new Error(`campaigns stayed ${JSON.stringify(b.map((x) => ({ status: x.status, counts: x.counts })))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('portfolio messaging limit in the engine', () => {
  it('When two campaigns of 375 and 300 meet a 250-user limit (Meta’s first tier) on two engines, then 250 are sent and 425 held with the reason, and the rest go out as the window moves, none refused by the channel', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t, ALL_SCOPES, { daily_send_quota: 100_000 });
    await template(t, project.id, 'promo', 'Hi');
    const base = 16000000000 + Math.floor(Math.random() * 1e5) * 10_000;
    await seedMany(t, project.id, 375, base, ['a']);
    await seedMany(t, project.id, 300, base + 5000, ['b']);
    expect((await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_250' })).status).toBe(200);
    const call = api(t, key);
    const a = await campaign(call, 'a');
    const b = await campaign(call, 'b');
    // The pre-flight says what fits now (each campaign alone).
    expect(a.preflight.messaging_limit).toMatchObject({ state: 'known', tier: 'TIER_250', limit: 250, fits_now: 250 });
    for (const c of [a, b]) expect((await t.admin.call('post', `/admin/broadcasts/${c.id}/approve`, {})).broadcast.status).toBe('scheduled');

    const engines = await Promise.all(['one', 'two'].map((owner) => engineFor(t, { owner, leaseMs: 15_000, pacing: { defaultThroughput: 1000 }, limitRecheckMs: 50 })));
    const read = async () => Promise.all([a, b].map(async (c) => (await call.get(`/v1/broadcasts/${c.id}`)).body.data.broadcast));
    const sum = (bs: Array<{ counts: Counts | null }>, k: keyof Counts) => bs.reduce((n, x) => n + (x.counts?.[k] ?? 0), 0);
    try {
      // Day one: the budget is shared; what does not fit is held, queued nowhere, with the reason.
      let now = await tickUntil(engines, read, phoneNumberId, (bs, got) => sum(bs, 'held') === 425 && got === 250);
      await new Promise((r) => setTimeout(r, 300));
      now = await read();
      expect(sum(now, 'held')).toBe(425);
      expect(sum(now, 'failed') + sum(now, 'canceled')).toBe(0);
      expect(await channelGot(phoneNumberId)).toHaveLength(250);
      for (const c of now) {
        expect(c.status).toBe('sending');
        if (c.counts!.held > 0) expect(c.status_reason).toMatch(/^messaging limit reached \(250 unique users in 24 hours\); held recipients go out as the window frees room, from \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      }
      // The approver's read shows the same.
      const approver = (await t.admin.call('get', `/admin/broadcasts/${a.id}`)).broadcast;
      expect(approver.counts.held).toBe(now[0].counts!.held);
      expect(approver.status_reason).toBe(now[0].status_reason);

      // The window moves: a day later the first 250 leave it, 250 more go out.
      t.clock.advance(24 * 3600_000 + 1000);
      await tickUntil(engines, read, phoneNumberId, (bs, got) => sum(bs, 'held') === 175 && got === 500);
      t.clock.advance(24 * 3600_000 + 1000);
      now = await tickUntil(engines, read, phoneNumberId, (bs) => bs.every((x) => x.status === 'completed'));
      expect(sum(now, 'held') + sum(now, 'failed') + sum(now, 'canceled')).toBe(0);
      expect(now.map((x) => x.status_reason)).toEqual([null, null]);
    } finally {
      await Promise.all(engines.map((e) => e.stop()));
    }
    // The channel, which enforces the same limit, refused none of them, and each customer got one message.
    const sim = await channelGot(phoneNumberId);
    expect(sim).toHaveLength(675);
    expect(new Set(sim.map((m) => m.to)).size).toBe(675);
    expect(sim.filter((m) => m.status === 'failed')).toEqual([]);
  }, 180_000);

  it('When the limit cannot be read, then the campaign is held by pacing alone and the engine says so once', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi');
    await seedMany(t, project.id, 40, 17000000000 + Math.floor(Math.random() * 1e5) * 1000, ['u']);
    // The channel's read of the limit fails: the number's limit is stored unknown.
    expect((await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, operation: 'other', http_status: 500, count: 1 })).status).toBeLessThan(300);
    const c = await campaign(api(t, key), 'u');
    await t.admin.call('post', `/admin/broadcasts/${c.id}/approve`, {});
    expect((await t.db.pool.query('SELECT state FROM channel_messaging_limits WHERE phone_number_id = $1', [phoneNumberId])).rows[0].state).toBe('unknown');
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), info: () => undefined, error: () => undefined, debug: () => undefined } as never;
    const engine = await startBroadcastEngine(
      { db: t.db, clock: t.clock, logger, secretBox: t.secretBox, channel: new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 5000 }) },
      { schedule: false, leaseMs: 15_000, idleMs: 50, maxBatch: 10, pacing: { defaultThroughput: 1000 } },
    );
    try {
      expect(await runUntil(t, engine, c.id, ['completed', 'failed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    expect(await channelGot(phoneNumberId)).toHaveLength(40);
    expect(warnings.filter((w) => /messaging limit of number .* is unknown: campaigns are held by pacing alone/.test(w))).toHaveLength(1);
  });

  it('When Meta announces a new portfolio limit (business_capability_update), then every number of the account stores it without a read, and an unlimited tier (-1) is kept as such', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi');
    await seedMany(t, project.id, 5, 17100000000 + Math.floor(Math.random() * 1e5) * 1000, ['w']);
    const stored = async () => (await t.db.pool.query('SELECT state, tier, user_limit FROM channel_messaging_limits WHERE phone_number_id = $1', [phoneNumberId])).rows[0];
    // Reads of the messaging limit (the throughput level's reads, by the jobs' start, are another field).
    const reads = async () => ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ path: string; method: string; query: { fields?: string } }>)
      .filter((r) => r.method === 'GET' && r.path.includes(`/${phoneNumberId}`) && !r.path.includes('/messages') && !String(r.query?.fields ?? '').includes('throughput')).length;
    const before = await reads();
    // The simulator, like Meta, posts the change to the number's webhook: no read needed.
    expect((await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_10K' })).status).toBe(200);
    expect(await stored()).toEqual({ state: 'known', tier: 'TIER_10K', user_limit: 10000 });
    const c = await campaign(api(t, key), 'w');
    expect(c.preflight.messaging_limit).toMatchObject({ state: 'known', tier: 'TIER_10K', limit: 10000, fits_now: 5 });
    expect(await reads()).toBe(before);
    await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_UNLIMITED' });
    expect(await stored()).toEqual({ state: 'known', tier: 'TIER_UNLIMITED', user_limit: null });
  });

  it('When the portfolio is unlimited, then a campaign is held by pace alone: nothing is reserved or held', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi');
    await seedMany(t, project.id, 300, 17200000000 + Math.floor(Math.random() * 1e5) * 1000, ['x']);
    await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_250' });
    await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_UNLIMITED' });
    const c = await campaign(api(t, key), 'x');
    expect(c.preflight.messaging_limit).toMatchObject({ state: 'known', unlimited: true, fits_now: 300 });
    await t.admin.call('post', `/admin/broadcasts/${c.id}/approve`, {});
    const engine = await engineFor(t, { leaseMs: 15_000, pacing: { defaultThroughput: 1000 } });
    try {
      expect(await runUntil(t, engine, c.id, ['completed', 'failed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    const done = (await api(t, key).get(`/v1/broadcasts/${c.id}`)).body.data.broadcast;
    expect(done.counts).toMatchObject({ total: 300, held: 0, failed: 0 });
    expect(done.status_reason).toBeNull();
    expect(await channelGot(phoneNumberId)).toHaveLength(300);
    const channel = (await t.db.pool.query('SELECT waba_id FROM channel_settings WHERE project_id = $1', [project.id])).rows[0];
    expect((await t.db.pool.query('SELECT count(*)::int AS n FROM portfolio_reach WHERE waba_id = $1', [channel.waba_id])).rows[0].n).toBe(0);
  });
});
