/**
 * Using a flow: POST /v1/messages sends an interactive flow message for a published flow (the
 * channel gets Meta's payload with the published channel flow id), and the customer's completion
 * (`nfm_reply`, sent by the simulator like Meta) is stored on the conversation and delivered in
 * message.received with `content.flow_reply`. Bad sends: unknown flow, unpublished flow, wrong
 * screen or data, flow mixed with buttons.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { Receiver } from '../support/receiver.js';
import { projectWithKey } from '../support/uploads.js';

let t: TestApp;
let rx: Receiver;
let key: string;
let projectId: string;
let phoneNumberId: string;
const CUSTOMER = '+14155550181';

beforeAll(async () => {
  t = await startTestApp({ config: { devAllowPrivateTargets: true }, simulator: { autoStatusDelaysMs: null }, webhooks: true });
  rx = await Receiver.start();
  const p = await projectWithKey(t, ['flows:read', 'flows:write', 'messages:send', 'conversations:read', 'webhooks:manage', 'events:message_received']);
  key = p.key;
  projectId = p.project.id;
  phoneNumberId = p.phoneNumberId;
  const reg = await request(t.app).post('/v1/webhooks').set(auth()).send({ url: rx.url + '/events', events: ['message.received'] });
  expect(reg.status).toBe(201);
  // The customer writes first: the 24-hour window is open.
  const hi = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: CUSTOMER.slice(1), name: 'Ada', text: 'Hi' });
  expect(hi.body.status_code).toBe(200);
  await rx.waitFor('/events', 1);
  const g = await request(t.app).post('/v1/flows/generate').set(auth()).send({
    name: 'feedback',
    categories: ['SURVEY'],
    description: {
      screens: [
        { title: 'Rate us', fields: [{ name: 'rating', label: 'Rating', type: 'single_choice', choices: ['Good', 'Bad'], required: true }] },
        { title: 'Anything else', fields: [{ name: 'comment', label: 'Comment', type: 'paragraph' }] },
      ],
    },
  });
  expect(g.status).toBe(201);
});
afterAll(async () => {
  await t?.db.pool.query(`UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL WHERE status = 'pending'`);
  await t?.close();
  await rx?.close();
});

function auth() {
  return { Authorization: `Bearer ${key}` };
}
const send = (flow: object, extra: object = {}) =>
  request(t.app).post('/v1/messages').set(auth()).send({ type: 'interactive', phone: CUSTOMER, interactive: { body: 'Tell us how it went', flow, ...extra } });

describe('sendMessage with a flow', () => {
  it('When the flow is not published yet, then 409 conflict; an unknown flow is 404', async () => {
    const draft = await send({ name: 'feedback', cta: 'Open' });
    expect(draft.status).toBe(409);
    expect(draft.body.error.code).toBe('conflict');
    const unknown = await send({ name: 'no_such_flow', cta: 'Open' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
  });

  it('When a published flow is sent, then the channel gets a flow message with the published flow id, first screen and token', async () => {
    const pub = await request(t.app).post(`/admin/projects/${projectId}/flows/feedback/publish`).set({ Authorization: `Bearer ${t.adminToken}` }).send({});
    expect(pub.status).toBe(200);
    const channelFlowId = pub.body.data.flow.channel_flow_id;
    const res = await send({ name: 'feedback', cta: 'Give feedback', token: 'order-1042' });
    expect(res.status).toBe(200);
    const wamid = res.body.data.id;
    const sent = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`)).body.data.find((m: { wamid: string }) => m.wamid === wamid);
    expect(sent.payload.interactive).toMatchObject({
      type: 'flow',
      body: { text: 'Tell us how it went' },
      action: {
        name: 'flow',
        parameters: { flow_message_version: '3', flow_id: channelFlowId, flow_cta: 'Give feedback', flow_token: 'order-1042', flow_action: 'navigate', flow_action_payload: { screen: 'RATE_US' } },
      },
    });
  });

  it('When the customer completes the flow, then the nfm_reply is stored on the conversation and delivered in message.received with flow_reply', async () => {
    const res = await send({ name: 'feedback', cta: 'Give feedback' });
    expect(res.status).toBe(200);
    const wamid = res.body.data.id;
    const before = rx.at('/events').length;
    const done = await request(t.sim!.url).post('/_sim/flows/complete').send({ wamid, response: { rating: 'good', comment: 'Lovely staff' } });
    expect(done.status).toBe(200);
    expect(done.body.status_code).toBe(200);
    const got = (await rx.waitFor('/events', before + 1))[before];
    const message = got.body.data.message;
    expect(message).toMatchObject({ direction: 'inbound', type: 'interactive', status: 'received' });
    expect(message.content.interactive.type).toBe('nfm_reply');
    expect(message.content.flow_reply).toMatchObject({ flow_name: 'feedback', response: { rating: 'good', comment: 'Lovely staff' } });
    expect(message.content.flow_reply.flow_token).toMatch(/^flt_/);
    // Stored: readable in the conversation's messages.
    const list = await request(t.app).get(`/v1/conversations/${got.body.data.conversation_id}/messages`).set(auth());
    const stored = list.body.data.messages.find((m: { wamid: string }) => m.wamid === message.wamid);
    expect(stored.content.flow_reply.flow_name).toBe('feedback');
  });

  it('When the completion has no context, then the flow is found by its token', async () => {
    const res = await send({ name: 'feedback', cta: 'Again', token: 'token-no-context' });
    expect(res.status).toBe(200);
    const before = rx.at('/events').length;
    const sim = await request(t.sim!.url).post('/_sim/inbound').send({
      phone_number_id: phoneNumberId,
      from: CUSTOMER.slice(1),
      type: 'interactive',
      interactive: { type: 'nfm_reply', nfm_reply: { name: 'flow', body: 'Sent', response_json: JSON.stringify({ flow_token: 'token-no-context', rating: 'bad' }) } },
    });
    expect(sim.body.status_code).toBe(200);
    const got = (await rx.waitFor('/events', before + 1))[before];
    expect(got.body.data.message.content.flow_reply).toEqual({ flow_name: 'feedback', flow_token: 'token-no-context', response: { flow_token: 'token-no-context', rating: 'bad' } });
  });

  it.each([
    ['a screen the flow does not have', { name: 'feedback', cta: 'Open', screen: 'NOWHERE' }, {}, 400, 'invalid_request'],
    ['a screen that declares data, without it', { name: 'feedback', cta: 'Open', screen: 'ANYTHING_ELSE' }, {}, 400, 'invalid_request'],
    ['data the first screen does not declare', { name: 'feedback', cta: 'Open', data: { x: 1 } }, {}, 400, 'invalid_request'],
    ['a flow and buttons together', { name: 'feedback', cta: 'Open' }, { buttons: [{ id: 'a', title: 'A' }] }, 400, 'invalid_request'],
    ['a cta over 30 characters', { name: 'feedback', cta: 'x'.repeat(31) }, {}, 400, 'invalid_request'],
    ['no cta', { name: 'feedback' }, {}, 400, 'invalid_request'],
  ])('When the send has %s, then it is refused (4xx) and nothing is sent', async (_what, flow, extra, status, code) => {
    const before = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`)).body.data.length;
    const res = await send(flow, extra);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    const after = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`)).body.data.length;
    expect(after).toBe(before);
  });

  it('When the second screen is opened with its data, then it is sent', async () => {
    const res = await send({ name: 'feedback', cta: 'Open', screen: 'ANYTHING_ELSE', data: { rating: 'good' } });
    expect(res.status).toBe(200);
  });

  it('When the flow is deprecated, then sending it is 409', async () => {
    const dep = await request(t.app).post(`/admin/projects/${projectId}/flows/feedback/deprecate`).set({ Authorization: `Bearer ${t.adminToken}` }).send();
    expect(dep.status).toBe(200);
    const res = await send({ name: 'feedback', cta: 'Open' });
    expect(res.status).toBe(409);
  });
});
