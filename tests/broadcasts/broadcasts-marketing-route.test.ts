/**
 * The Marketing Messages route of a campaign (`route: "marketing_messages"`): its sends reach Graph's
 * /marketing_messages with the campaign's time-to-live, MARKETING templates only (refused at
 * creation, and named when Meta refuses one at send time), and a business that has not accepted
 * the API's terms (Meta's 131055) stops the campaign with that reason on the recipient.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, projectWithKey, runUntil, seedMany, template } from '../support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const AUDIENCE = { filter: { match: 'all', conditions: [] } };

async function project(category = 'MARKETING', n = 3) {
  const p = await projectWithKey(t);
  await template(t, p.project.id, 'offer', 'Hi {{1}}', category);
  await seedMany(t, p.project.id, n, 15560000000 + Math.floor(Math.random() * 1e6) * 1000);
  return { ...p, call: api(t, p.key) };
}

const body = (extra: object = {}) => ({
  name: 'Flash sale', template_name: 'offer', template_language: 'en_US', audience: AUDIENCE, template_variables: { body: ['friend'] }, ...extra,
});

async function simMessages(phoneNumberId: string): Promise<Array<{ to: string; route: string; payload: Record<string, any> }>> {
  return (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=1000`)).body.data;
}

describe('createBroadcast', () => {
  it('When a MARKETING campaign asks for the marketing_messages route with a ttl, then it is stored and shown on public and admin reads', async () => {
    const { call } = await project();
    const res = await call.post('/v1/broadcasts', body({ route: 'marketing_messages', ttl_seconds: 86_400 }));
    expect(res.status).toBe(201);
    expect(res.body.data.broadcast).toMatchObject({ route: 'marketing_messages', ttl_seconds: 86_400 });
    const id = res.body.data.broadcast.id;
    expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast).toMatchObject({ route: 'marketing_messages', ttl_seconds: 86_400 });
    expect((await call.get('/v1/broadcasts')).body.data.broadcasts[0]).toMatchObject({ route: 'marketing_messages', ttl_seconds: 86_400 });
    const admin = await t.admin.call('get', `/admin/broadcasts/${id}`);
    expect(admin.broadcast).toMatchObject({ route: 'marketing_messages', ttl_seconds: 86_400 });
  });

  it('When no route is given, then the campaign goes through cloud_api without a ttl', async () => {
    const { call } = await project();
    const res = await call.post('/v1/broadcasts', body());
    expect(res.status).toBe(201);
    expect(res.body.data.broadcast).toMatchObject({ route: 'cloud_api', ttl_seconds: null });
  });

  it('When a UTILITY template asks for the marketing_messages route, then creation is refused with marketing_template_required', async () => {
    const { call } = await project('UTILITY');
    const res = await call.post('/v1/broadcasts', body({ route: 'marketing_messages' }));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('marketing_template_required');
    expect(res.body.error.details).toMatchObject({ template_category: 'UTILITY' });
    // The same template on the Cloud API route is fine.
    expect((await call.post('/v1/broadcasts', body())).status).toBe(201);
  });

  it.each([
    ['below Meta\'s range (12 hours)', { route: 'marketing_messages', ttl_seconds: 43_199 }],
    ['above Meta\'s range (30 days)', { route: 'marketing_messages', ttl_seconds: 2_592_001 }],
    ['not an integer', { route: 'marketing_messages', ttl_seconds: 50_000.5 }],
    ['on the cloud_api route', { ttl_seconds: 86_400 }],
    ['on an explicit cloud_api route', { route: 'cloud_api', ttl_seconds: 86_400 }],
    ['an unknown route', { route: 'sms' }],
  ])('When ttl_seconds or route is %s, then 400 invalid_request naming the field', async (_, extra) => {
    const { call } = await project();
    const res = await call.post('/v1/broadcasts', body(extra));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(JSON.stringify(res.body.error.details)).toMatch(/ttl_seconds|route/);
  });
});

describe('engine on the marketing_messages route', () => {
  it('When a marketing campaign runs on the route, then every send reaches /marketing_messages with the template and the ttl', async () => {
    const { call, phoneNumberId } = await project('MARKETING', 4);
    const id = (await call.post('/v1/broadcasts', body({ route: 'marketing_messages', ttl_seconds: 43_200 }))).body.data.broadcast.id;
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('completed');
      const sent = await simMessages(phoneNumberId);
      expect(sent).toHaveLength(4);
      for (const m of sent) {
        expect(m.route).toBe('marketing_messages');
        expect(m.payload).toMatchObject({
          messaging_product: 'whatsapp', type: 'template', message_send_ttl_seconds: 43_200,
          template: { name: 'offer', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'friend' }] }] },
        });
      }
      const requests = (await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ method: string; path: string; status: number }>;
      const posts = requests.filter((r) => r.method === 'POST' && r.path.startsWith(`/${phoneNumberId}/`));
      expect(posts.map((r) => `${r.path} ${r.status}`)).toEqual(Array(4).fill(`/${phoneNumberId}/marketing_messages 200`));
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts).toMatchObject({ total: 4, sent: 4, failed: 0 });
    } finally {
      await engine.stop();
    }
  });

  it('When the business has not accepted the Marketing Messages terms, then the campaign stops and the recipient names marketing_terms_not_accepted (131055)', async () => {
    const { call, phoneNumberId } = await project('MARKETING', 3);
    const off = await request(t.sim!.url).patch(`/_sim/phone-numbers/${phoneNumberId}`).send({ marketing_messages_terms_accepted: false });
    expect(off.body.marketing_messages_terms_accepted).toBe(false);
    const id = (await call.post('/v1/broadcasts', body({ route: 'marketing_messages' }))).body.data.broadcast.id;
    const engine = await engineFor(t, { concurrency: 1 });
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('failed');
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      expect(b.status_reason).toMatch(/131055.*Marketing Messages API terms/);
      const failed = (await call.get(`/v1/broadcasts/${id}/recipients?status=failed`)).body.data.recipients;
      expect(failed.length).toBeGreaterThanOrEqual(1);
      expect(failed[0].error).toMatchObject({ code: 131055, category: 'campaign', reason: 'marketing_terms_not_accepted' });
      expect(await simMessages(phoneNumberId)).toHaveLength(0);
    } finally {
      await engine.stop();
    }
  });

  it('When Meta refuses the template on the route as not MARKETING (recategorised since creation), then the campaign stops with marketing_template_required', async () => {
    // Created as MARKETING here, UTILITY at the channel: Meta recategorised it after the campaign was made.
    const { call, phoneNumberId, project: p } = await project('UTILITY', 2);
    await t.db.pool.query(`UPDATE templates SET category = 'MARKETING' WHERE project_id = $1 AND name = 'offer'`, [p.id]);
    const id = (await call.post('/v1/broadcasts', body({ route: 'marketing_messages' }))).body.data.broadcast.id;
    const engine = await engineFor(t, { concurrency: 1 });
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('failed');
      expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.status_reason).toMatch(/refused the template as not MARKETING/);
      const failed = (await call.get(`/v1/broadcasts/${id}/recipients?status=failed`)).body.data.recipients;
      expect(failed[0].error).toMatchObject({ code: 100, category: 'campaign', reason: 'marketing_template_required' });
      expect(await simMessages(phoneNumberId)).toHaveLength(0);
    } finally {
      await engine.stop();
    }
  });
});

describe('simulator /marketing_messages', () => {
  it('When a send carries a ttl outside Meta\'s range or a non-template type, then Meta\'s code 100 answers', async () => {
    const { phoneNumberId, project: p } = await project('MARKETING', 1);
    const { rows } = await t.db.pool.query<{ phone: string }>('SELECT phone FROM contacts WHERE project_id = $1 LIMIT 1', [p.id]);
    const token = (await request(t.sim!.url).get(`/_sim/phone-numbers/${phoneNumberId}`)).body.access_token;
    const send = (b: object) => request(t.sim!.url).post(`/v26.0/${phoneNumberId}/marketing_messages`).set('Authorization', `Bearer ${token}`)
      .send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: rows[0].phone, ...b });
    const tpl = { type: 'template', template: { name: 'offer', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'x' }] }] } };
    const short = await send({ ...tpl, message_send_ttl_seconds: 600 });
    expect(short.status).toBe(400);
    expect(short.body.error).toMatchObject({ code: 100 });
    const text = await send({ type: 'text', text: { body: 'hi' } });
    expect(text.status).toBe(400);
    expect(text.body.error).toMatchObject({ code: 100 });
    const ok = await send({ ...tpl, message_send_ttl_seconds: 2_592_000 });
    expect(ok.status).toBe(200);
    expect(ok.body.messages[0]).toMatchObject({ message_status: 'accepted' });
  });
});
