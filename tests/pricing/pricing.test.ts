/**
 * What a campaign costs and how many it may reach (issue 37), against the simulator with the
 * manual clock: the pricing of each status stored with its message (read, `message.status`,
 * unknown categories kept as given) and summed per campaign; the operator's rate card (bad cards
 * 400) and the pre-flight's estimate for a mixed-country audience; the portfolio messaging limit
 * read through the channel (a failed read is "unknown", logged once) with the unique users reached
 * in the moving 24 hours; the simulator's pricing types and typing indicators.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { ALL_SCOPES, api, engineFor, projectWithKey, runUntil, seedContacts, seedMany, template } from '../support/broadcasts.js';
import { refreshMessagingLimit } from '../../lib/pricing/messaging-limit.js';
import { showTyping } from '../../lib/bot/typing.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { eventually } from '../support/eventually.js';
import { person } from '../support/dashboard.js';
import { main } from '../../scripts/ops/main.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const admin = (method: 'get' | 'put' | 'delete', path: string, body?: object) => {
  const r = request(t.app)[method](path).set('Authorization', `Bearer ${t.adminToken}`);
  return body === undefined ? r : r.send(body);
};

const CARD = { currency: 'USD', prices: { '1': { marketing: 0.025, utility: 0.004 }, '44': { marketing: 0.0529, utility: 0.022 }, '91': { marketing: 0.0107 } } };

/** A project with contacts in the US (2), the UK, India and Brazil (no price on the card). */
async function mixedProject(category = 'MARKETING') {
  const { project, key, phoneNumberId } = await projectWithKey(t, [...ALL_SCOPES, 'conversations:read']);
  await template(t, project.id, 'promo', 'Hi {{1}}', category);
  const n = Math.floor(Math.random() * 1e5);
  const phones = [`1415${String(n).padStart(7, '0')}`, `1212${String(n).padStart(7, '0')}`, `4477${String(n).padStart(8, '0')}`, `9198${String(n).padStart(8, '0')}`, `5511${String(n).padStart(9, '0')}`];
  await seedContacts(t, project.id, phones.map((phone) => ({ phone, optedIn: true })));
  return { project, call: api(t, key), phoneNumberId, phones };
}

async function createCampaign(call: ReturnType<typeof api>) {
  const res = await call.post('/v1/broadcasts', {
    name: 'Costed', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
    template_variables: { body: ['{{contact.name|friend}}'] },
  });
  expect(res.status).toBe(201);
  return res.body.data.broadcast;
}

async function simMessages(phoneNumberId: string): Promise<Array<{ wamid: string; to: string }>> {
  return (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=10000`)).body.data;
}

async function simStatus(wamid: string, status: string, pricing?: object) {
  const res = await request(t.sim!.url).post('/_sim/status').send({ wamid, status, ...(pricing ? { pricing } : {}) });
  expect(res.body.status_code).toBe(200);
}

describe('rate card', () => {
  it('When the operator sets, reads and removes the rate card, then it is kept as given and GET without one is 404', async () => {
    const set = await admin('put', '/admin/rate-card', CARD);
    expect(set.status).toBe(200);
    expect(set.body.data.rate_card).toMatchObject(CARD);
    expect((await admin('get', '/admin/rate-card')).body.data.rate_card.prices['44']).toEqual({ marketing: 0.0529, utility: 0.022 });
    expect((await admin('delete', '/admin/rate-card')).body.data).toEqual({ deleted: true });
    const none = await admin('get', '/admin/rate-card');
    expect({ status: none.status, code: none.body.error.code }).toEqual({ status: 404, code: 'not_found' });
  });

  it.each([
    ['an unknown category', { currency: 'USD', prices: { '44': { promotional: 0.05 } } }, 'prices.44.promotional'],
    ['a negative price', { currency: 'USD', prices: { '44': { marketing: -0.01 } } }, 'prices.44.marketing'],
    ['a calling code with a plus', { currency: 'USD', prices: { '+44': { marketing: 0.05 } } }, undefined],
    ['a code with a leading zero', { currency: 'USD', prices: { '044': { marketing: 0.05 } } }, 'prices.044'],
    ['no category at all', { currency: 'USD', prices: { '44': {} } }, undefined],
    ['a lower-case currency', { currency: 'usd', prices: { '44': { marketing: 0.05 } } }, undefined],
    ['a price that is a string', { currency: 'USD', prices: { '44': { marketing: '0.05' } } }, undefined],
  ])('When the card has %s, then 400 invalid_request and the card is unchanged', async (_what, card, field) => {
    await admin('put', '/admin/rate-card', CARD);
    const res = await admin('put', '/admin/rate-card', card);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
    if (field) expect(res.body.error.details.fields[0].field).toBe(field);
    expect((await admin('get', '/admin/rate-card')).body.data.rate_card.prices).toEqual(CARD.prices);
  });
});

describe('cost estimate in the pre-flight', () => {
  it('When a MARKETING campaign goes to a mixed-country audience, then the pre-flight estimates per calling code and leaves the unpriced out of the total', async () => {
    await admin('put', '/admin/rate-card', CARD);
    const { call } = await mixedProject();
    const b = await createCampaign(call);
    const e = b.preflight.cost_estimate;
    expect(e).toMatchObject({
      estimate: true, available: true, category: 'marketing', currency: 'USD', recipients: 5,
      billable_recipients: 4, free_recipients: 0, unpriced_recipients: 1,
    });
    expect(e.total).toBeCloseTo(2 * 0.025 + 0.0529 + 0.0107, 6);
    expect(e.by_calling_code).toEqual([
      { calling_code: '44', recipients: 1, unit_price: 0.0529, amount: 0.0529 },
      { calling_code: '1', recipients: 2, unit_price: 0.025, amount: 0.05 },
      { calling_code: '91', recipients: 1, unit_price: 0.0107, amount: 0.0107 },
    ]);
    expect(e.reason).toMatch(/1 recipient/);
  });

  it('When a UTILITY campaign reaches a customer whose service window is open, then that recipient is counted free', async () => {
    await admin('put', '/admin/rate-card', CARD);
    const { call, phoneNumberId, phones } = await mixedProject('UTILITY');
    const inbound = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: phones[2], name: 'Ada', text: 'hello' });
    expect(inbound.body.status_code).toBe(200);
    const e = (await createCampaign(call)).preflight.cost_estimate;
    // The UK customer wrote: free; two US recipients at the utility price; India has no utility price; Brazil no code.
    expect(e).toMatchObject({ category: 'utility', free_recipients: 1, billable_recipients: 2, unpriced_recipients: 2 });
    expect(e.total).toBeCloseTo(0.008, 6);
  });

  it('When no rate card is set, then the pre-flight says there is no estimate and why', async () => {
    await admin('delete', '/admin/rate-card');
    const { call } = await mixedProject();
    const e = (await createCampaign(call)).preflight.cost_estimate;
    expect(e).toMatchObject({ estimate: true, available: false, total: null, currency: null, recipients: 5 });
    expect(e.reason).toMatch(/No rate card/);
  });
});

describe('pricing recorded from statuses', () => {
  it('When a campaign is sent and its statuses carry pricing, then each message shows it, message.status carries it, an unknown category is kept, and the campaign sums them beside the estimate', async () => {
    await admin('put', '/admin/rate-card', CARD);
    const { call, phoneNumberId, project } = await mixedProject();
    const b = await createCampaign(call);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${b.id}/approve`, {});
      expect(await runUntil(t, engine, b.id, ['completed', 'failed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    const sent = await simMessages(phoneNumberId);
    expect(sent).toHaveLength(5);
    for (const m of sent.slice(0, 4)) await simStatus(m.wamid, 'delivered');
    // Meta adds categories: one it invented after we shipped is stored as given.
    await simStatus(sent[4].wamid, 'delivered', { category: 'marketing_plus', type: 'regular' });

    const read = await call.get(`/v1/messages/${encodeURIComponent(sent[0].wamid)}`);
    expect(read.status).toBe(200);
    expect(read.body.data.pricing).toEqual({ category: 'marketing', type: 'regular', pricing_model: 'PMP', billable: true });
    const odd = await call.get(`/v1/messages/${encodeURIComponent(sent[4].wamid)}`);
    expect(odd.body.data.pricing).toMatchObject({ category: 'marketing_plus', type: 'regular', pricing_model: 'PMP' });

    const events = await t.db.prisma.event.findMany({ where: { projectId: project.id, name: 'message.status' } });
    expect(events).toHaveLength(5);
    expect(events.map((e) => (e.data as any).pricing.category).sort()).toEqual(['marketing', 'marketing', 'marketing', 'marketing', 'marketing_plus']);

    const after = (await call.get(`/v1/broadcasts/${b.id}`)).body.data.broadcast;
    expect(after.billing).toMatchObject({
      by_category: { marketing: { regular: 4 }, marketing_plus: { regular: 1 } },
      billable: 5, free: 0, unreported: 0,
    });
    // The card prices marketing only: the Brazilian recipient (no code) and the unknown category are unpriced.
    const priced = sent.slice(0, 4).map((m) => m.to);
    const expected = priced.reduce((a, to) => a + (to.startsWith('44') ? 0.0529 : to.startsWith('91') ? 0.0107 : to.startsWith('1') ? 0.025 : 0), 0);
    expect(after.billing.reported_cost.amount).toBeCloseTo(expected, 6);
    expect(after.billing.reported_cost.unpriced).toBe(5 - priced.filter((to) => /^(44|91|1)/.test(to)).length);
    expect(after.billing.estimate).toMatchObject({ available: true, billable_recipients: 4, unpriced_recipients: 1 });
    // The operator's read shows the same; the dashboard's campaign page shows it beside the estimate.
    expect((await t.admin.call('get', `/admin/broadcasts/${b.id}`)).broadcast.billing.billable).toBe(5);
    const owner = await person(t, project.id, `owner-${project.id}@example.com`);
    const page = await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts/${b.id}`);
    // Money in the currency's minor units (cents): 0.1136 USD shows as 0.11 USD.
    expect(page.text).toMatch(/<dd id="billing-estimate">about 0\.11 USD \(estimate from the rate card, marketing\)/);
    expect(page.text).toMatch(/<dd id="billing-reported">5 charged, 0 free, 0 not reported yet; [0-9]+\.[0-9]{2} USD \(\+[0-9]+ not priced by the card\)/);
  });

  it('When a status carries no pricing (read) after one that did, then the pricing is kept', async () => {
    const { call, phoneNumberId } = await mixedProject();
    const b = await createCampaign(call);
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${b.id}/approve`, {});
      await runUntil(t, engine, b.id, ['completed', 'failed']);
    } finally {
      await engine.stop();
    }
    const [m] = await simMessages(phoneNumberId);
    await simStatus(m.wamid, 'delivered');
    await simStatus(m.wamid, 'read');
    const read = await call.get(`/v1/messages/${encodeURIComponent(m.wamid)}`);
    expect(read.body.data).toMatchObject({ status: 'read', pricing: { category: 'marketing', type: 'regular' } });
  });
});

describe('portfolio messaging limit', () => {
  it('When the channel reports TIER_250 and 3 users were reached today, then the pre-flight of 300 says 250 fit now', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi {{1}}');
    const base = 15550000000 + Math.floor(Math.random() * 1e5) * 1000;
    await seedMany(t, project.id, 3, base, ['first']);
    await seedMany(t, project.id, 297, base + 3);
    expect((await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_250' })).status).toBe(200);
    const call = api(t, key);
    const first = await call.post('/v1/broadcasts', {
      name: 'First', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [{ field: 'tags', op: 'has', value: 'first' }] } },
      template_variables: { body: ['x'] },
    });
    expect(first.body.data.broadcast.preflight.messaging_limit).toMatchObject({ state: 'known', tier: 'TIER_250', limit: 250, unlimited: false, reached_24h: 0, remaining: 250, fits_now: 3 });
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${first.body.data.broadcast.id}/approve`, {});
      await runUntil(t, engine, first.body.data.broadcast.id, ['completed']);
    } finally {
      await engine.stop();
    }
    const second = (await createCampaign(call));
    expect(second.preflight.eligible).toBe(300);
    expect(second.preflight.messaging_limit).toMatchObject({ state: 'known', limit: 250, reached_24h: 3, remaining: 247, fits_now: 250 });
    expect(new Date(second.preflight.messaging_limit.next_release_at).getTime()).toBe(t.clock.now().getTime() + 24 * 3600_000);
    // The window moves: a day later nobody counts any more.
    t.clock.advance(24 * 3600_000 + 1000);
    const later = (await call.get(`/v1/broadcasts/${second.id}`)).body.data.broadcast;
    expect(later.preflight.messaging_limit).toMatchObject({ reached_24h: 0, remaining: 250, fits_now: 250 });
  });

  it('When reading the limit fails, then the pre-flight says unknown, and the failure is logged once however often it is read', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi {{1}}');
    await seedMany(t, project.id, 2, 15560000000 + Math.floor(Math.random() * 1e5) * 1000);
    const fault = await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, operation: 'other', http_status: 500, count: 3 });
    expect(fault.status).toBeLessThan(300);
    const warnings: string[] = [];
    const logger = { warn: (m: string) => warnings.push(m), info: () => undefined, error: () => undefined, debug: () => undefined } as never;
    const deps = { ...t.services.deps, logger, config: { ...t.config, messagingLimitRefreshMs: 0 } };
    for (let i = 0; i < 3; i++) await refreshMessagingLimit(deps, project.id);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/messaging limit of number .* could not be read/);
    const b = await createCampaign(api(t, key));
    expect(b.preflight.messaging_limit).toMatchObject({ state: 'unknown', tier: null, limit: null, remaining: null, fits_now: null, reached_24h: 0 });
    // Once the channel answers again, the next refresh reads it.
    await refreshMessagingLimit(deps, project.id);
    expect((await api(t, key).get(`/v1/broadcasts/${b.id}`)).body.data.broadcast.preflight.messaging_limit).toMatchObject({ state: 'known', tier: 'TIER_UNLIMITED', unlimited: true, fits_now: 2 });
  });
});

describe('simulator pricing and typing indicators', () => {
  it('When a utility template goes to a customer whose window is open, then its delivered status says free_customer_service; cold it is regular; a reply is service, free', async () => {
    const { project, key } = await projectWithKey(t, ['messages:send', 'conversations:read']);
    await template(t, project.id, 'notice', 'Updated', 'UTILITY');
    const { phoneNumberId } = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const send = (body: object) => request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send(body);
    const cold = await send({ type: 'template', phone: '+4915112345678', template: { name: 'notice', language: 'en_US' } });
    expect(cold.status).toBe(200);
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '4915112345679', name: 'Ada', text: 'hi' });
    const warm = await send({ type: 'template', phone: '+4915112345679', template: { name: 'notice', language: 'en_US' } });
    const reply = await send({ type: 'text', phone: '+4915112345679', content: 'hello' });
    const pricing: Record<string, unknown> = {};
    for (const [name, r] of Object.entries({ cold, warm, reply })) {
      expect(r.status).toBe(200);
      const wamid = r.body.data.id as string;
      await simStatus(wamid, 'delivered');
      pricing[name] = (await t.db.pool.query('SELECT pricing FROM messages WHERE project_id = $1 AND wamid = $2', [project.id, wamid])).rows[0].pricing;
    }
    expect(pricing).toEqual({
      cold: { category: 'utility', type: 'regular', pricing_model: 'PMP', billable: true },
      warm: { category: 'utility', type: 'free_customer_service', pricing_model: 'PMP', billable: false },
      reply: { category: 'service', type: 'free_customer_service', pricing_model: 'PMP', billable: false },
    });
  });

  it('When a TIER_250 portfolio sends templates to 251 new customers, then the 251st is reported failed with 131048; a reached customer and, a day later, a new one go through', async () => {
    const { project, phoneNumberId } = await projectWithKey(t);
    await template(t, project.id, 'promo', 'Hi');
    await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_250' });
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const graph = (to: string) => request(t.sim!.url).post(`/v26.0/${phoneNumberId}/messages`).set('Authorization', `Bearer ${channel.accessToken}`)
      .send({ messaging_product: 'whatsapp', recipient_type: 'individual', to, type: 'template', template: { name: 'promo', language: { code: 'en_US', policy: 'deterministic' } } });
    const base = 4930000000 + Math.floor(Math.random() * 1e4) * 1000;
    const ids: string[] = [];
    for (let i = 0; i < 251; i++) {
      const r = await graph(String(base + i));
      expect(r.status).toBe(200);
      ids.push(r.body.messages[0].id);
    }
    const again = await graph(String(base));
    const stateOf = async (wamid: string) => ((await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=1000`)).body.data as any[]).find((m) => m.wamid === wamid)?.status;
    await eventually(() => stateOf(ids[250]), (s) => s === 'failed', 5000, 'the 251st send failed');
    expect(await stateOf(ids[249])).not.toBe('failed');
    expect(await stateOf(again.body.messages[0].id)).not.toBe('failed');
    t.clock.advance(24 * 3600_000 + 1000);
    const later = await graph(String(base + 1000));
    await new Promise((r) => setTimeout(r, 200));
    expect(await stateOf(later.body.messages[0].id)).not.toBe('failed');
    // The phone number serves the limit as Meta's field.
    const node = await request(t.sim!.url).get(`/v26.0/${phoneNumberId}?fields=whatsapp_business_manager_messaging_limit`).set('Authorization', `Bearer ${channel.accessToken}`);
    expect(node.body.whatsapp_business_manager_messaging_limit).toBe('TIER_250');
    // A tier the simulator does not know is refused at the control API.
    expect((await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ messaging_limit: 'TIER_3' })).status).toBe(400);
  });

  it('When the bot shows it is typing, then the channel gets a read mark with typing_indicator text; an unknown message or bad id is refused', async () => {
    const { project, phoneNumberId } = await projectWithKey(t);
    const inbound = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550901', name: 'Ada', text: 'hello' });
    expect(inbound.body.status_code).toBe(200);
    const { rows } = await t.db.pool.query<{ wamid: string }>(`SELECT wamid FROM messages WHERE project_id = $1 AND direction = 'inbound'`, [project.id]);
    expect(rows).toHaveLength(1);
    const deps = t.services.deps;
    expect(await showTyping(deps, project.id, { messageId: rows[0].wamid }, false)).toEqual({ ok: true, value: true });
    const marks = (await request(t.sim!.url).get('/_sim/read-marks')).body.data as any[];
    expect(marks.filter((m) => m.message_id === rows[0].wamid)).toEqual([expect.objectContaining({ phone_number_id: phoneNumberId, typing: true })]);
    expect(await showTyping(deps, project.id, { messageId: 'wamid.not-ours' }, false)).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await showTyping(deps, project.id, { messageId: 42 }, false)).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    // The simulator, like Meta, knows one typing indicator type.
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const bad = await request(t.sim!.url).post(`/v26.0/${phoneNumberId}/messages`).set('Authorization', `Bearer ${channel.accessToken}`)
      .send({ messaging_product: 'whatsapp', status: 'read', message_id: rows[0].wamid, typing_indicator: { type: 'audio' } });
    expect(bad.status).toBe(400);
  });
});

describe('the operator CLI and the dashboard show the estimate', () => {
  async function ops(args: string[]) {
    let stdout = '';
    let stderr = '';
    const code = await main(args, { SERVICE_URL: t.baseUrl!, ADMIN_TOKEN: t.adminToken }, { out: (x) => void (stdout += x + '\n'), err: (x) => void (stderr += x + '\n') });
    return { code, stdout, stderr };
  }

  it('When the operator sets the card from a file and shows a pending campaign, then the CLI prints the card, the estimate and the limit; a bad card file is refused', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rate-card-'));
    writeFileSync(path.join(dir, 'card.json'), JSON.stringify(CARD));
    writeFileSync(path.join(dir, 'bad.json'), JSON.stringify({ currency: 'USD', prices: { '44': { marketing: -1 } } }));
    const set = await ops(['broadcasts', 'rate-card-set', path.join(dir, 'card.json')]);
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/\+44: marketing 0\.0529, utility 0\.022/);
    const bad = await ops(['broadcasts', 'rate-card-set', path.join(dir, 'bad.json')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_request/);
    const { call } = await mixedProject();
    const b = await createCampaign(call);
    const show = await ops(['broadcasts', 'show', b.id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/cost estimate:\s+about 0\.1136 USD \(estimate from the rate card, marketing\): 4 charged, 0 free, 1 unpriced/);
    expect(show.stdout).toMatch(/messaging limit:\s+unlimited; 0 reached in 24 h/);
    expect((await ops(['broadcasts', 'rate-card-delete'])).stdout).toMatch(/removed/);
    expect((await ops(['broadcasts', 'show', b.id])).stdout).toMatch(/cost estimate:\s+No rate card is set/);
  });

  it('When an owner opens the approval queue, then each pending campaign shows its estimated cost and the messaging limit', async () => {
    await admin('put', '/admin/rate-card', CARD);
    const { call, project } = await mixedProject();
    await createCampaign(call);
    const owner = await person(t, project.id, `owner-${project.id}@example.com`);
    const page = await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/Estimated cost<\/dt><dd id="cost-estimate">about 0\.11 USD \(estimate from the rate card, marketing\); 4 recipients charged; 1 recipient not priced by the card/);
    expect(page.text).toMatch(/Messaging limit<\/dt><dd id="messaging-limit">unlimited/);
  });
});
