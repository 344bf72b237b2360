/**
 * Sending and receiving over the simulated WhatsApp channel: the 24-hour window, validation codes,
 * storage keyed by wamid, status callbacks moving forward only, inbound deduplication and the
 * webhook signature.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createHmac } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { openChannel } from '../../lib/channel-settings/settings.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

async function projectWithKey(scopes = ['messages:send', 'conversations:read']) {
  const project = await t.admin.project();
  const key = await t.admin.key(project.id, scopes);
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { project, key: key.secret, phoneNumberId: channel.phoneNumberId };
}

/** An approved template at the simulated channel (the templates API arrives later). */
async function approvedTemplate(projectId: string, name = 'hello_world') {
  const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, projectId))!;
  const created = await request(t.sim!.url).post(`/v26.0/${channel.wabaId}/message_templates`).set('Authorization', `Bearer ${channel.accessToken}`)
    .send({ name, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello there' }] });
  expect(created.status).toBe(200);
  const decided = await request(t.sim!.url).post(`/_sim/templates/${created.body.id}/decision`).send({ decision: 'APPROVED' });
  expect(decided.status).toBe(200);
}

const send = (key: string, body: object, headers: Record<string, string> = {}) =>
  request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).set(headers).send(body);

describe('sendMessage', () => {
  it('When the customer wrote within 24 hours, then a text send returns the wamid and status sent, and is stored', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550101', 'hello');
    const res = await send(key, { type: 'text', phone: '+1 415 555 0101', content: 'Your order shipped' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { id: expect.stringMatching(/^wamid\./), status: 'sent' } });
    const got = await request(t.app).get(`/v1/messages/${res.body.data.id}`).set('Authorization', `Bearer ${key}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ wamid: res.body.data.id, direction: 'outbound', type: 'text', status: 'sent' });
    const sent = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`);
    expect(JSON.stringify(sent.body)).toContain('Your order shipped');
  });

  it('When the customer never wrote, then a session send is 409 outside_24h_window and nothing is stored', async () => {
    const { project, key } = await projectWithKey();
    const res = await send(key, { type: 'text', phone: '+14155550102', content: 'hi' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('outside_24h_window');
    expect(await t.db.prisma.contact.count({ where: { projectId: project.id } })).toBe(0);
  });

  it('When 24 hours pass after the inbound message, then the window closes; a template is still accepted', async () => {
    const { project, key, phoneNumberId } = await projectWithKey();
    await approvedTemplate(project.id);
    await inbound(t, phoneNumberId, '14155550103', 'hello');
    t.clock.advance(24 * 3600_000 - 1000);
    expect((await send(key, { type: 'text', phone: '+14155550103', content: 'still open' })).status).toBe(200);
    t.clock.advance(2000);
    expect((await send(key, { type: 'text', phone: '+14155550103', content: 'closed' })).body.error.code).toBe('outside_24h_window');
    const tpl = await send(key, { type: 'template', phone: '+14155550103', template: { name: 'hello_world', language: 'en_US' } });
    expect(tpl.status).toBe(200);
    // Meta's schema requires the language policy on a template send.
    const logged = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&to=14155550103`)).body.data;
    expect(logged.at(-1).payload.template.language).toEqual({ policy: 'deterministic', code: 'en_US' });
  });

  it('When the customer writes and the API replies, then both text messages carry their text as content.text.body (one shape; outbound keeps content)', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550131', 'Hi <b>there</b>!');
    t.clock.advance(1000);
    expect((await send(key, { type: 'text', phone: '+14155550131', content: 'Hello, how can we help?' })).status).toBe(200);
    const conv = await t.db.prisma.conversation.findFirstOrThrow({ where: { contact: { phone: '14155550131' } } });
    const list = await request(t.app).get(`/v1/conversations/${conv.id}/messages`).set('Authorization', `Bearer ${key}`);
    expect(list.status).toBe(200);
    const [outbound, received] = list.body.data.messages;
    expect(received).toMatchObject({ direction: 'inbound', type: 'text', content: { text: { body: 'Hi <b>there</b>!' } } });
    expect(outbound).toMatchObject({ direction: 'outbound', type: 'text', content: { type: 'text', content: 'Hello, how can we help?', text: { body: 'Hello, how can we help?' } } });
    const one = await request(t.app).get(`/v1/messages/${outbound.id}`).set('Authorization', `Bearer ${key}`);
    expect(one.body.data.content.text).toEqual({ body: 'Hello, how can we help?' });
  });

  it('When a template is sent, then its conversation moves to the top of recent activity and keeps its state', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(['messages:send', 'conversations:read', 'conversations:write']);
    await approvedTemplate(project.id);
    await inbound(t, phoneNumberId, '14155550104', 'hello');
    const first = await t.db.prisma.conversation.findFirstOrThrow({ where: { contact: { phone: '14155550104' } } });
    await request(t.app).patch(`/v1/conversations/${first.id}`).set('Authorization', `Bearer ${key}`).send({ state: 'handover' });
    t.clock.advance(1000);
    await inbound(t, phoneNumberId, '14155550105', 'hello');
    t.clock.advance(1000);
    expect((await send(key, { type: 'template', phone: '+14155550104', template: { name: 'hello_world', language: 'en_US' } })).status).toBe(200);
    const list = await request(t.app).get('/v1/conversations').set('Authorization', `Bearer ${key}`);
    expect(list.body.data.conversations[0].contact.phone).toBe('+14155550104');
    expect(list.body.data.conversations[0].state).toBe('handover');
  });

  it.each([
    [{ type: 'text', content: 'x' }, 'missing_recipient'],
    [{ type: 'text', phone: '', content: 'x' }, 'missing_recipient'],
    [{ type: 'text', phone: 'call me', content: 'x' }, 'invalid_phone'],
    [{ type: 'text', phone: '+12', content: 'x' }, 'invalid_phone'],
    [{ type: 'fax', phone: '+14155550199' }, 'unsupported_message_type'],
    [{ type: 'template', phone: '+14155550199', template: { language: 'en_US' } }, 'missing_template_name'],
    [{ type: 'template', phone: '+14155550199', template: { name: 'hello_world' } }, 'missing_language'],
    [{ type: 'interactive', phone: '+14155550199', interactive: { body: 'Pick', buttons: [1, 2, 3, 4].map((n) => ({ id: `b${n}`, title: `B${n}` })) } }, 'too_many_buttons'],
    [{ type: 'text', phone: '+14155550199' }, 'invalid_request'],
    [{ type: 'text', phone: '+14155550199', content: 'x', surprise: 1 }, 'invalid_request'],
  ])('When the body is %j, then 400 %s', async (body, code) => {
    const { key } = await projectWithKey();
    const res = await send(key, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });

  it('When the template is known and the variables do not match its placeholders, then 400 template_variable_mismatch', async () => {
    const { project, key } = await projectWithKey();
    await t.db.prisma.template.create({
      data: { id: `tpl_${project.id}`, projectId: project.id, name: 'order_update', language: 'en_US', category: 'UTILITY', status: 'APPROVED',
        components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} shipped' }] },
    });
    const res = await send(key, { type: 'template', phone: '+14155550106', template: { name: 'order_update', language: 'en_US', variables: ['Ada'] } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'template_variable_mismatch', details: { expected: 2, given: 1 } });
  });

  it('When the key lacks messages:send, then 403 insufficient_scope', async () => {
    const { key } = await projectWithKey(['conversations:read']);
    expect((await send(key, { type: 'text', phone: '+14155550107', content: 'x' })).body.error.code).toBe('insufficient_scope');
  });
});

describe('upstream failures', () => {
  it('When the channel rejects the credentials (190), then 502 upstream_auth_error and no quota is used', async () => {
    const { project, key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550110', 'hello');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, graph_error: { code: 190, http_status: 401 } });
    const res = await send(key, { type: 'text', phone: '+14155550110', content: 'x' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('upstream_auth_error');
    const counters = await t.db.pool.query('SELECT count FROM send_counters WHERE project_id = $1', [project.id]);
    expect(counters.rows[0]?.count ?? 0).toBe(0);
  });

  it('When the channel answers 5xx, then 502 and the message is not recorded as sent', async () => {
    const { project, key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550111', 'hello');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, http_status: 503 });
    const res = await send(key, { type: 'text', phone: '+14155550111', content: 'x' });
    expect(res.status).toBe(502);
    expect(await t.db.prisma.message.count({ where: { projectId: project.id, direction: 'outbound' } })).toBe(0);
  });

  it('When the channel rejects the message (131026), then 502 with the provider detail', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550112', 'hello');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, graph_error: { code: 131026 } });
    const res = await send(key, { type: 'text', phone: '+14155550112', content: 'x' });
    expect(res.status).toBe(502);
    expect(res.body.error.details.provider_code).toBe(131026);
  });

  it('When the channel says the window is closed (131047), then 409 outside_24h_window', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550113', 'hello');
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: phoneNumberId, graph_error: { code: 131047 } });
    expect((await send(key, { type: 'text', phone: '+14155550113', content: 'x' })).body.error.code).toBe('outside_24h_window');
  });
});

describe('channel webhook', () => {
  it('When a status arrives, then it attaches by wamid and only moves forward; failed keeps the error', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550120', 'hello');
    const wamid = (await send(key, { type: 'text', phone: '+14155550120', content: 'x' })).body.data.id;
    const status = (s: string, extra: object = {}) => request(t.sim!.url).post('/_sim/status').send({ wamid, status: s, ...extra });
    await status('read');
    await status('delivered');
    const got = await request(t.app).get(`/v1/messages/${wamid}`).set('Authorization', `Bearer ${key}`);
    expect(got.body.data.status).toBe('read');
    const events = await t.db.prisma.event.findMany({ where: { name: 'message.status' }, orderBy: { createdAt: 'asc' } });
    expect(events.filter((e) => (e.data as any).message_id === wamid).map((e) => (e.data as any).status)).toEqual(['read']);
  });

  it('When one notification carries several statuses, even two for one message, then each applies in order with its event', async () => {
    const { project, key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550125', 'hello');
    const a = (await send(key, { type: 'text', phone: '+14155550125', content: 'a' })).body.data.id;
    const b = (await send(key, { type: 'text', phone: '+14155550125', content: 'b' })).body.data.id;
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const ts = String(Math.floor(Date.now() / 1000));
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: phoneNumberId },
      statuses: [
        { id: a, status: 'delivered', timestamp: ts, recipient_id: '14155550125' },
        { id: b, status: 'read', timestamp: ts, recipient_id: '14155550125' },
        { id: a, status: 'read', timestamp: ts, recipient_id: '14155550125' },
        { id: b, status: 'delivered', timestamp: ts, recipient_id: '14155550125' },
        { id: a, status: 'deleted', timestamp: ts },
        { id: { not: 'a string' }, status: 'read' },
        { id: a, status: 'toString' },
        null,
      ] } }] }] });
    const signature = 'sha256=' + createHmac('sha256', channel.appSecret).update(body).digest('hex');
    const res = await request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', signature).send(body);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ statuses: 8, retryLater: false });
    const statusOf = async (w: string) => (await request(t.app).get(`/v1/messages/${w}`).set('Authorization', `Bearer ${key}`)).body.data.status;
    expect(await statusOf(a)).toBe('read');
    expect(await statusOf(b)).toBe('read');
    const events = await t.db.prisma.event.findMany({ where: { projectId: project.id, name: 'message.status' }, orderBy: { createdAt: 'asc' } });
    const of = (w: string) => events.filter((e) => (e.data as any).message_id === w).map((e) => (e.data as any).status);
    // Both moves of `a` happened (one event each); `b`'s late delivered changed nothing.
    expect(of(a).sort()).toEqual(['delivered', 'read']);
    expect(of(b)).toEqual(['read']);
  });

  it('When a notification repeats one message\'s statuses thousands of times among thousands of unknown ones, then each forward move applies once', async () => {
    const { project, key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550126', 'hello');
    const wamid = (await send(key, { type: 'text', phone: '+14155550126', content: 'x' })).body.data.id;
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const old = String(Math.floor(t.clock.now().getTime() / 1000) - 3600); // unknown ids this old are not retried
    const statuses = [
      ...Array.from({ length: 10_000 }, (_, i) => ({ id: wamid, status: i % 2 ? 'read' : 'delivered', timestamp: old })),
      ...Array.from({ length: 10_000 }, (_, i) => ({ id: `wamid.unknown${i}`, status: 'delivered', timestamp: old })),
    ];
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: phoneNumberId }, statuses } }] }] });
    const signature = 'sha256=' + createHmac('sha256', channel.appSecret).update(body).digest('hex');
    const res = await request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', signature).send(body);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ statuses: 10_000, retryLater: false });
    const got = await request(t.app).get(`/v1/messages/${wamid}`).set('Authorization', `Bearer ${key}`);
    expect(got.body.data.status).toBe('read');
    const events = await t.db.prisma.event.findMany({ where: { projectId: project.id, name: 'message.status' } });
    expect(events.map((e) => (e.data as any).status).sort()).toEqual(['delivered', 'read']);
  });

  it('When a message fails, then the provider error is kept', async () => {
    const { key, phoneNumberId } = await projectWithKey();
    await inbound(t, phoneNumberId, '14155550121', 'hello');
    const wamid = (await send(key, { type: 'text', phone: '+14155550121', content: 'x' })).body.data.id;
    await request(t.sim!.url).post('/_sim/status').send({ wamid, status: 'failed', errors: [{ code: 131026, title: 'Message undeliverable' }] });
    const got = await request(t.app).get(`/v1/messages/${wamid}`).set('Authorization', `Bearer ${key}`);
    expect(got.body.data).toMatchObject({ status: 'failed', error: { code: 131026 } });
  });

  it('When the provider delivers the same inbound payload twice, then it is stored once with one event', async () => {
    const { project, phoneNumberId } = await projectWithKey();
    const channel = await openChannel({ db: t.db, secretBox: t.secretBox }, project.id);
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel!.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: phoneNumberId },
      contacts: [{ wa_id: '14155550122', profile: { name: 'Grace' } }],
      messages: [{ id: 'wamid.DUPLICATE122', from: '14155550122', timestamp: '1700000000', type: 'text', text: { body: 'hi' } }] } }] }] });
    const signature = 'sha256=' + createHmac('sha256', channel!.appSecret).update(body).digest('hex');
    for (let i = 0; i < 2; i++) {
      const res = await request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', signature).send(body);
      expect(res.status).toBe(200);
    }
    expect(await t.db.prisma.message.count({ where: { projectId: project.id, wamid: 'wamid.DUPLICATE122' } })).toBe(1);
    expect(await t.db.prisma.event.count({ where: { projectId: project.id, name: 'message.received' } })).toBe(1);
    const contact = await t.db.prisma.contact.findFirstOrThrow({ where: { projectId: project.id } });
    expect(contact).toMatchObject({ phone: '14155550122', name: 'Grace' });
  });

  it('When Meta verifies the webhook, then the challenge is echoed only with the right verify token', async () => {
    const { project } = await projectWithKey();
    const channel = await openChannel({ db: t.db, secretBox: t.secretBox }, project.id);
    const ok = await request(t.app).get(`/channel/${project.id}/webhook`).query({ 'hub.mode': 'subscribe', 'hub.verify_token': channel!.verifyToken, 'hub.challenge': '1158201444' });
    expect(ok.status).toBe(200);
    expect(ok.text).toBe('1158201444');
    const bad = await request(t.app).get(`/channel/${project.id}/webhook`).query({ 'hub.mode': 'subscribe', 'hub.verify_token': 'nope', 'hub.challenge': '1' });
    expect(bad.status).toBe(401);
  });

  it('When the signature is missing or wrong, then the POST is refused and nothing is stored', async () => {
    const { project } = await projectWithKey();
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [] });
    const none = await request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json').send(body);
    expect(none.status).toBe(401);
    const wrong = await request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json')
      .set('X-Hub-Signature-256', 'sha256=' + createHmac('sha256', 'not-the-secret').update(body).digest('hex')).send(body);
    expect(wrong.status).toBe(401);
    expect(wrong.body.success).toBe(false);
  });
});
