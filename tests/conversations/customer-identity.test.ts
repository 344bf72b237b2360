/**
 * Customers without a phone number (WhatsApp usernames, 2026) and marketing consent, through the
 * simulator against the real database: a username customer's message is stored and answered by
 * business-scoped user id (`recipient`), revealed ids merge contacts, a BSUID change re-keys,
 * STOP / user_preferences / 131050 opt out and a MARKETING send is then refused before the channel,
 * a broadcast over a mixed audience sends each contact once by the right identifier, bad inputs.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, runUntil, template } from '../support/broadcasts.js';
import { eventually } from '../support/eventually.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { applyWebhook } from '../../lib/messaging/inbound.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const SCOPES = ['messages:send', 'conversations:read', 'conversations:write', 'contacts:read', 'contacts:write', 'broadcasts:read', 'broadcasts:manage'];

async function setup() {
  const project = await t.admin.project('Usernames');
  const key = (await t.admin.key(project.id, SCOPES)).secret;
  const pnid = (await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } })).phoneNumberId;
  const sim = t.sim!.url;
  const call = api(t, key);
  const user = async (b: object) => (await request(sim).post('/_sim/users').send({ phone_number_id: pnid, ...b }).expect(201)).body;
  const write = async (b: object) => {
    const r = await request(sim).post('/_sim/inbound').send({ phone_number_id: pnid, ...b });
    expect(r.status).toBe(200);
    expect(r.body.status_code).toBe(200);
    return r.body.wamid as string;
  };
  const sends = async () => (await request(sim).get(`/_sim/messages?phone_number_id=${pnid}&limit=1000`)).body.data as Array<{ wamid: string; to: string; payload: any }>;
  const contacts = async () => (await t.db.pool.query('SELECT * FROM contacts WHERE project_id = $1 ORDER BY id', [project.id])).rows;
  const events = async (name: string) => (await t.db.pool.query('SELECT data FROM events WHERE project_id = $1 AND name = $2 ORDER BY created_at', [project.id, name])).rows.map((r) => r.data);
  return { project, key, pnid, sim, call, user, write, sends, contacts, events };
}

describe('customers without a phone number', () => {
  it('When a username customer with a withheld phone writes, then the message is stored, message.received names user_id and username, the reply goes by recipient and its status attaches', async () => {
    const s = await setup();
    const u = await s.user({ username: 'ada.l', phone: '+14155550101', name: 'Ada' });
    expect(u.phone_shared).toBe(false);
    const wamid = await s.write({ user_id: u.user_id, text: 'hello' });

    const [contact] = await s.contacts();
    expect(contact).toMatchObject({ phone: null, user_id: u.user_id, parent_user_id: u.parent_user_id, username: 'ada.l' });
    const [received] = await s.events('message.received');
    expect(received.message).toMatchObject({ wamid, customer: { phone: null, user_id: u.user_id, username: 'ada.l' } });
    expect(received.conversation.contact).toMatchObject({ phone: null, user_id: u.user_id, username: 'ada.l' });
    expect(received.conversation.window_open).toBe(true);

    const listed = await s.call.get(`/v1/contacts?user_id=${encodeURIComponent(u.user_id)}`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.contacts).toHaveLength(1);
    expect(listed.body.data.contacts[0]).toMatchObject({ phone: null, user_id: u.user_id, username: 'ada.l', consent: { status: 'unknown', source: null } });
    const conv = await s.call.get(`/v1/conversations?user_id=${encodeURIComponent(u.user_id)}`);
    expect(conv.body.data.conversations).toHaveLength(1);

    const reply = await s.call.post('/v1/messages', { type: 'text', user_id: u.user_id, content: 'Hi Ada' });
    expect(reply.status).toBe(200);
    const [sent] = await s.sends();
    expect(sent.payload.recipient).toBe(u.user_id);
    expect(sent.payload.to).toBeUndefined();

    const st = await request(s.sim).post('/_sim/status').send({ wamid: reply.body.data.id, status: 'delivered' });
    expect(st.body.status_code).toBe(200);
    const msg = await s.call.get(`/v1/messages/${reply.body.data.id}`);
    expect(msg.body.data).toMatchObject({ status: 'delivered', customer: { user_id: u.user_id, username: 'ada.l', phone: null } });
    const statuses = await s.events('message.status');
    expect(statuses.at(-1)).toMatchObject({ status: 'delivered', user_id: u.user_id, username: 'ada.l', phone: null });

    // A replayed notification (Meta retries for days) is stored once, and merges nothing.
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, s.project.id))!;
    const payload = {
      object: 'whatsapp_business_account',
      entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
        messaging_product: 'whatsapp', metadata: { phone_number_id: s.pnid },
        contacts: [{ profile: { name: 'Ada', username: 'ada.l' }, user_id: u.user_id }],
        messages: [{ from_user_id: u.user_id, id: 'wamid.replayed', timestamp: '1', type: 'text', text: { body: 'again' } }],
      } }] }],
    };
    const first = await applyWebhook(t.services.deps, channel, payload);
    const second = await applyWebhook(t.services.deps, channel, payload);
    expect([first.messages, second.messages]).toEqual([1, 0]);
    expect((await t.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND wamid = 'wamid.replayed'`, [s.project.id])).rows[0].n).toBe(1);
    expect(await s.contacts()).toHaveLength(1);
  });

  it('When the same user later shares the phone, and a phone-only contact with its own conversation exists, then they become one contact with one conversation holding every message in the later state', async () => {
    const s = await setup();
    const u = await s.user({ username: 'grace', phone: '+14155550202', name: 'Grace' });
    // The phone-only contact: an earlier conversation (before usernames), in state `handover`.
    const older = await s.write({ from: '+14155550299', text: 'other customer' }); // unrelated customer
    expect(older).toBeTruthy();
    const { rows: [pc] } = await t.db.pool.query(
      `INSERT INTO contacts (project_id, phone, tags, attributes, created_at, updated_at) VALUES ($1, '14155550202', '{vip}', '{"plan":"pro"}', now(), now()) RETURNING id`,
      [s.project.id],
    );
    const { rows: [pcv] } = await t.db.pool.query(
      `INSERT INTO conversations (project_id, contact_id, state, last_message_at, last_inbound_at, created_at, updated_at)
       VALUES ($1, $2, 'handover', $3, $3, $3, $3) RETURNING id`,
      [s.project.id, pc.id, new Date(t.clock.now().getTime() - 3600_000)],
    );
    await t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
       VALUES ($1, $2, 'wamid.old1', 'inbound', 'text', '{}', 'received', now(), now())`,
      [s.project.id, pcv.id],
    );
    // BSUID-only: the username customer writes, its conversation is moved to `done` (the later state).
    await s.write({ user_id: u.user_id, text: 'first' });
    const bc = (await s.contacts()).find((c) => c.user_id === u.user_id)!;
    const bcv = (await t.db.pool.query('SELECT id FROM conversations WHERE contact_id = $1', [bc.id])).rows[0];
    expect((await s.call.patch(`/v1/conversations/${bcv.id}`, { state: 'done' })).status).toBe(200);

    await request(s.sim).patch(`/_sim/users/${u.user_id}`).send({ phone_number_id: s.pnid, share_phone: true }).expect(200);
    t.clock.advance(1000);
    await s.write({ user_id: u.user_id, text: 'now with my number' });

    const mine = (await s.contacts()).filter((c) => c.phone === '14155550202' || c.user_id === u.user_id);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ id: pc.id, phone: '14155550202', user_id: u.user_id, username: 'grace', tags: ['vip'], attributes: { plan: 'pro' } });
    const convs = (await t.db.pool.query('SELECT id, state FROM conversations WHERE contact_id = $1', [pc.id])).rows;
    expect(convs).toHaveLength(1);
    expect(convs[0].state).toBe('done');
    const texts = (await t.db.pool.query('SELECT wamid FROM messages WHERE conversation_id = $1', [convs[0].id])).rows;
    expect(texts).toHaveLength(3);
  });

  it('When WhatsApp reports a BSUID change, then the contact is re-keyed, and a replay changes nothing', async () => {
    const s = await setup();
    const u = await s.user({ username: 'linus' });
    await s.write({ user_id: u.user_id, text: 'hi' });
    const changed = await request(s.sim).post(`/_sim/users/${u.user_id}/change-id`).send({ phone_number_id: s.pnid }).expect(200);
    expect(changed.body.status_code).toBe(200);
    const all = await s.contacts();
    expect(all).toHaveLength(1);
    expect(all[0].user_id).toBe(changed.body.user_id);
    await s.write({ user_id: changed.body.user_id, text: 'still me' });
    expect(await s.contacts()).toHaveLength(1);
  });
});

describe('marketing consent', () => {
  async function withMarketing() {
    const s = await setup();
    await template(t, s.project.id, 'promo', 'Deals!');
    const marketing = (to: object) => s.call.post('/v1/messages', { type: 'template', ...to, template: { name: 'promo', language: 'en_US' } });
    return { ...s, marketing };
  }

  it('When a customer writes STOP (the whole message), then the contact opts out (source keyword) and a MARKETING send is refused before the channel; a sentence containing stop is no opt-out', async () => {
    const s = await withMarketing();
    await s.write({ from: '+14155550301', text: 'please stop the noise' });
    expect((await s.contacts())[0].opted_out_at).toBeNull();
    await s.write({ from: '+14155550301', text: '  Stop ' });
    const c = (await s.call.get('/v1/contacts?phone=%2B14155550301')).body.data.contacts[0];
    expect(c.consent).toMatchObject({ status: 'opted_out', source: 'keyword' });
    expect(c.opted_in).toBe(false);
    const before = (await s.sends()).length;
    const res = await s.marketing({ phone: '+14155550301' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('recipient_opted_out');
    expect(await s.sends()).toHaveLength(before);
    // A text is not marketing: still sent in the open window.
    expect((await s.call.post('/v1/messages', { type: 'text', phone: '+14155550301', content: 'ok' })).status).toBe(200);
    // START opts back in.
    await s.write({ from: '+14155550301', text: 'START' });
    expect((await s.call.get('/v1/contacts?phone=%2B14155550301')).body.data.contacts[0].consent.status).toBe('opted_in');
  });

  it('When the "Stop promotions" quick reply is tapped with a configured confirmation, then the contact opts out and the confirmation is sent', async () => {
    const s = await withMarketing();
    const put = await request(t.app).put('/v1/consent-keywords').set('Authorization', `Bearer ${s.key}`)
      .send({ opt_out: ['STOP', 'Stop promotions'], opt_in: ['START'], opt_out_confirmation: 'You will get no more offers.', opt_in_confirmation: null });
    expect(put.status).toBe(200);
    await s.write({ from: '+14155550302', type: 'button', object: { payload: 'Stop promotions', text: 'Stop promotions' } });
    expect((await s.contacts())[0].consent_source).toBe('keyword');
    await eventually(async () => (await s.sends()).map((m) => m.payload.text?.body), (b) => Array.isArray(b) && b.includes('You will get no more offers.'));
    // The conversation says who answered: the service itself, not a person or the bot (issue 60).
    const [conv] = (await s.call.get('/v1/conversations?phone=%2B14155550302')).body.data.conversations;
    const items = (await s.call.get(`/v1/conversations/${conv.id}/messages`)).body.data.messages;
    expect(items.find((m: { direction: string }) => m.direction === 'outbound').author).toEqual({ kind: 'automation', id: null, name: 'consent_confirmation' });
  });

  it('When WhatsApp sends user_preferences stop, then the contact opts out (source user_preferences), also a user we did not know, and a replay changes nothing', async () => {
    const s = await withMarketing();
    const u = await s.user({ username: 'mae' });
    const r = await request(s.sim).post(`/_sim/users/${u.user_id}/preferences`).send({ phone_number_id: s.pnid, value: 'stop' }).expect(200);
    expect(r.body.status_code).toBe(200);
    // Unknown before: stored with the opt-out, for when the user writes.
    const [c] = await s.contacts();
    expect(c).toMatchObject({ user_id: u.user_id, consent_source: 'user_preferences' });
    expect(c.opted_out_at).not.toBeNull();
    const at = c.consent_at;
    await request(s.sim).post(`/_sim/users/${u.user_id}/preferences`).send({ phone_number_id: s.pnid, value: 'stop' }).expect(200);
    expect((await s.contacts())[0].consent_at).toEqual(at);
    const before = (await s.sends()).length;
    const res = await s.marketing({ user_id: u.user_id });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('recipient_opted_out');
    expect(await s.sends()).toHaveLength(before);
  });

  it('When a marketing send fails with 131050, then the contact opts out (source error_131050) and the next MARKETING send is refused before the channel', async () => {
    const s = await withMarketing();
    await request(s.sim).post('/_sim/faults').send({ phone_number_id: s.pnid, operation: 'messages', count: 1, async_error: { code: 131050 } }).expect(201);
    const first = await s.marketing({ phone: '+14155550303' });
    expect(first.status).toBe(200);
    await request(s.sim).post('/_sim/status').send({ wamid: first.body.data.id, status: 'failed', errors: [{ code: 131050, title: 'stopped marketing' }] });
    await eventually(async () => (await s.contacts())[0]?.consent_source, (v) => v === 'error_131050');
    const before = (await s.sends()).length;
    const res = await s.marketing({ phone: '+14155550303' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('recipient_opted_out');
    expect(await s.sends()).toHaveLength(before);
  });

  it('When consent is set through PATCH /v1/contacts/{id}, then it reads back with source api; a bad value is 400', async () => {
    const s = await setup();
    await s.write({ from: '+14155550304', text: 'hi' });
    const [c] = await s.contacts();
    const res = await s.call.patch(`/v1/contacts/${c.id}`, { consent: 'opted_in' });
    expect(res.status).toBe(200);
    expect(res.body.data.contact).toMatchObject({ opted_in: true, consent: { status: 'opted_in', source: 'api', updated_at: expect.any(String) } });
    const bad = await s.call.patch(`/v1/contacts/${c.id}`, { consent: 'maybe' });
    expect(bad.status).toBe(400);
  });
});

describe('sending by user_id', () => {
  it('When the recipient is both, neither, malformed or unknown, then a clear 4xx with its own code and nothing sent', async () => {
    const s = await setup();
    const before = (await s.sends()).length;
    const send = (b: object) => s.call.post('/v1/messages', { type: 'text', content: 'x', ...b });
    const both = await send({ phone: '+14155550401', user_id: 'US.13491208655302741918' });
    expect([both.status, both.body.error.code]).toEqual([400, 'conflicting_recipient']);
    const neither = await send({});
    expect([neither.status, neither.body.error.code]).toEqual([400, 'missing_recipient']);
    for (const bad of ['USA.123', '13491208655302741918', `US.${'1'.repeat(129)}`, 'US.12-34']) {
      const r = await send({ user_id: bad });
      expect([bad, r.status, r.body.error.code]).toEqual([bad, 400, 'invalid_user_id']);
    }
    const unknown = await send({ user_id: 'US.99999999999999999999' });
    expect([unknown.status, unknown.body.error.code]).toEqual([409, 'outside_24h_window']);
    expect(await s.sends()).toHaveLength(before);
    expect(await s.contacts()).toHaveLength(0);
  });

  it('When an authentication template is sent to a customer known only by BSUID, then the channel refuses it (131062) and the answer is 400 recipient_requires_phone', async () => {
    const s = await setup();
    await template(t, s.project.id, 'otp', 'Your code is {{1}}', 'AUTHENTICATION');
    const u = await s.user({ username: 'otp.user' });
    await s.write({ user_id: u.user_id, text: 'code please' });
    const res = await s.call.post('/v1/messages', { type: 'template', user_id: u.user_id, template: { name: 'otp', language: 'en_US', variables: ['123456'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('recipient_requires_phone');
  });

  it('When a broadcast goes to a mixed audience, then each eligible contact gets one message by the right identifier and opted-out contacts none', async () => {
    const s = await setup();
    await template(t, s.project.id, 'promo', 'Deals!');
    const phoneOnly = '14155550501';
    const u = await s.user({ username: 'bsuid.only' });
    const both = await s.user({ username: 'both.ids', phone: '+14155550502', share_phone: true });
    const out = await s.user({ username: 'stopped' });
    await s.write({ from: `+${phoneOnly}`, text: 'hi' });
    await s.write({ user_id: u.user_id, text: 'hi' });
    await s.write({ user_id: both.user_id, text: 'hi' });
    await s.write({ user_id: out.user_id, text: 'STOP' });
    await t.db.pool.query(`UPDATE contacts SET opted_in = true, opted_in_at = now() WHERE project_id = $1 AND opted_out_at IS NULL`, [s.project.id]);
    // A segment counts BSUID-only contacts like any other.
    const bc = (await s.contacts()).find((c) => c.user_id === u.user_id)!;
    expect((await s.call.patch(`/v1/contacts/${bc.id}`, { tags: { add: ['vip'] } })).status).toBe(200);
    const seg = await s.call.post('/v1/segments', { name: 'VIP', filter: { match: 'all', conditions: [{ field: 'tags', op: 'has', value: 'vip' }] } });
    expect(seg.body.data.segment.contact_count).toBe(1);
    const created = await s.call.post('/v1/broadcasts', {
      name: 'Mixed', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.broadcast.id as string;
    const before = (await s.sends()).length;
    const engine = await engineFor(t);
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    const sent = (await s.sends()).slice(before).map((m) => m.payload);
    expect(sent).toHaveLength(3);
    expect(sent.filter((p) => p.to === phoneOnly)).toHaveLength(1);
    expect(sent.filter((p) => p.to === '14155550502')).toHaveLength(1);
    expect(sent.filter((p) => p.recipient === u.user_id && p.to === undefined)).toHaveLength(1);
    expect(sent.some((p) => p.recipient === out.user_id)).toBe(false);
    const recipients = (await s.call.get(`/v1/broadcasts/${id}/recipients`)).body.data.recipients;
    expect(recipients.find((r: any) => r.user_id === u.user_id)).toMatchObject({ phone: null });
  });
});
