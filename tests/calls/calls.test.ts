/**
 * WhatsApp calls (issue 61, item 1; docs/calls.md), through HTTP against the simulated channel: a
 * customer's call rings in the project (its notification stored once when delivered twice at
 * once, as two instances would take it), is accepted with the softphone's SDP answer passed to
 * WhatsApp as given, and ends with its duration; a call rejected or left unanswered ends so; a
 * business call is refused before WhatsApp for a country without business calls or a customer who
 * has not granted permission; the permission request goes inside the window only, and the
 * customer's answer lets the business call.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { metaSchemas } from '../../simulator/meta/validator.js';
import { person } from '../support/dashboard.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const ANSWER = 'v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=setup:active\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n';

async function shop() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['conversations:read', 'messages:send', 'contacts:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const api = (method: 'get' | 'post', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  return { projectId: project.id, pnid: channel.phoneNumberId, api };
}
type Shop = Awaited<ReturnType<typeof shop>>;

const sim = () => request(t.sim!.url);

async function userCalls(s: Shop, from: string, deliveries = 1): Promise<{ call_id: string; sdp: string }> {
  const res = await sim().post('/_sim/calls').send({ phone_number_id: s.pnid, from, name: 'Ada', deliveries });
  expect(res.status).toBe(200);
  return res.body;
}

async function callOf(s: Shop, callId: string) {
  const res = await s.api('get', `/v1/calls/${callId}`);
  return res.status === 200 ? res.body.data : null;
}

async function eventsOf(projectId: string, name: string) {
  return t.db.prisma.event.findMany({ where: { projectId, name }, orderBy: { createdAt: 'asc' } });
}

/** The /calls requests WhatsApp (the simulator) received for this number. */
async function graphCalls(pnid: string): Promise<any[]> {
  const res = await sim().get('/_sim/requests?limit=1000');
  return (res.body.data as Array<{ method: string; path: string; body: unknown }>).filter((r) => r.method === 'POST' && r.path === `/${pnid}/calls`).map((r) => r.body);
}

async function contactIdOf(s: Shop, phone: string): Promise<number> {
  const res = await s.api('get', `/v1/contacts?phone=${encodeURIComponent(phone)}`);
  return res.body.data.contacts[0].id;
}

describe('a customer calls the business', () => {
  it('When the call notification arrives twice at once, then one ringing call with the offer is stored and one call.ringing raised; accepted with the softphone\'s answer it is answered, and the hang-up (delivered twice) ends it once with its duration', async () => {
    const s = await shop();
    const { call_id, sdp } = await userCalls(s, '5511988880001', 2);

    const ringing = await callOf(s, call_id);
    expect(ringing).toMatchObject({ call_id, direction: 'user_initiated', status: 'ringing', offer_sdp: sdp, contact: { phone: '+5511988880001', name: 'Ada' } });
    const listed = await s.api('get', `/v1/calls?conversation_id=${ringing.conversation_id}`);
    expect(listed.body.data.calls.map((c: { call_id: string }) => c.call_id)).toEqual([call_id]);
    expect((await eventsOf(s.projectId, 'call.ringing')).map((e) => (e.data as any).call.call_id)).toEqual([call_id]);

    const accepted = await s.api('post', `/v1/calls/${ringing.id}/actions`).send({ action: 'accept', sdp: ANSWER });
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toMatchObject({ status: 'accepted', answered_at: t.clock.now().toISOString() });
    // The SDP answer went to WhatsApp as the softphone gave it, in Meta's shape.
    const sent = (await graphCalls(s.pnid)).find((b) => b.action === 'accept');
    expect(sent).toMatchObject({ messaging_product: 'whatsapp', call_id, action: 'accept', session: { sdp_type: 'answer', sdp: ANSWER } });
    expect((await eventsOf(s.projectId, 'call.answered')).length).toBe(1);

    t.clock.advance(42_000);
    expect((await sim().post(`/_sim/calls/${call_id}/hangup`).send({ deliveries: 2 })).status).toBe(200);
    const ended = await eventually(() => callOf(s, call_id), (c) => c?.status === 'completed', 10_000, 'the call ended');
    expect(ended).toMatchObject({ duration_seconds: 42, ended_at: t.clock.now().toISOString() });
    const endedEvents = await eventsOf(s.projectId, 'call.ended');
    expect(endedEvents.map((e) => (e.data as any).call)).toEqual([expect.objectContaining({ call_id, status: 'completed', duration_seconds: 42 })]);

    // The customer's conversation in the dashboard shows the call and how it went.
    const owner = await person(t, s.projectId, `owner-${Date.now()}@example.com`);
    const page = await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${ringing.conversation_id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Voice call from the customer: ended · 42 s');

    // An ended call takes no action.
    const late = await s.api('post', `/v1/calls/${call_id}/actions`).send({ action: 'terminate' });
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('conflict');
  });

  it('When the business rejects a call, then it ends rejected; a call nobody answers ends missed; accept without an SDP answer is refused', async () => {
    const s = await shop();
    const first = await userCalls(s, '5511988880002');
    const noSdp = await s.api('post', `/v1/calls/${first.call_id}/actions`).send({ action: 'accept' });
    expect(noSdp.status).toBe(400);
    expect(noSdp.body.error.code).toBe('invalid_request');
    // An sdp of the wrong type is refused in the envelope, whatever the action, and nothing is sent.
    for (const body of [{ action: 'accept', sdp: 12345 }, { action: 'pre_accept', sdp: { sdp: 'v=0' } }, { action: 'reject', sdp: ['v=0'] }, { action: 'accept', sdp: null }]) {
      const wrong = await s.api('post', `/v1/calls/${first.call_id}/actions`).send(body);
      expect({ body, status: wrong.status, code: wrong.body.error?.code }).toEqual({ body, status: 400, code: 'invalid_request' });
    }

    expect((await s.api('post', `/v1/calls/${first.call_id}/actions`).send({ action: 'reject' })).status).toBe(200);
    const rejected = await eventually(() => callOf(s, first.call_id), (c) => c?.ended_at != null, 10_000, 'the rejected call ended');
    expect(rejected).toMatchObject({ status: 'rejected', duration_seconds: null });

    const second = await userCalls(s, '5511988880002');
    expect((await sim().post(`/_sim/calls/${second.call_id}/hangup`).send({})).status).toBe(200);
    const missed = await eventually(() => callOf(s, second.call_id), (c) => c?.ended_at != null, 10_000, 'the unanswered call ended');
    expect(missed.status).toBe('missed');
    expect((await eventsOf(s.projectId, 'call.ended')).map((e) => (e.data as any).call.status).sort()).toEqual(['missed', 'rejected']);
  });

  it('When an unknown call is acted on, then 404', async () => {
    const s = await shop();
    const res = await s.api('post', '/v1/calls/wacid.nothing-here/actions').send({ action: 'reject' });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

describe('the business calls a customer', () => {
  it('When the customer\'s number is of a country without business calls, or they gave no permission, then the call is refused before WhatsApp with its code', async () => {
    const s = await shop();
    await sim().post('/_sim/inbound').send({ phone_number_id: s.pnid, from: '14155550191', text: 'hi' });
    await sim().post('/_sim/inbound').send({ phone_number_id: s.pnid, from: '5511988880003', text: 'oi' });
    const us = await s.api('post', '/v1/calls').send({ contact_id: await contactIdOf(s, '+14155550191'), sdp: ANSWER });
    expect(us.status).toBe(422);
    expect(us.body.error).toMatchObject({ code: 'calling_unavailable_in_country', details: { country: 'US/CA' } });
    const br = await s.api('post', '/v1/calls').send({ contact_id: await contactIdOf(s, '+5511988880003'), sdp: ANSWER });
    expect(br.status).toBe(409);
    expect(br.body.error.code).toBe('call_permission_required');
    expect(await graphCalls(s.pnid)).toEqual([]);
  });

  it('When the business asks inside the window and the customer accepts, then the contact is granted and the call rings, is answered and ends with its duration; outside the window the request is refused', async () => {
    const s = await shop();
    await sim().post('/_sim/inbound').send({ phone_number_id: s.pnid, from: '5511988880004', text: 'Can you call me?' });
    const contactId = await contactIdOf(s, '+5511988880004');
    const asked = await s.api('post', `/v1/contacts/${contactId}/call-permission-request`).send({ body: 'May we call you about your order?' });
    expect(asked.status).toBe(200);
    expect(asked.body.data).toMatchObject({ status: 'sent', call_permission_status: 'pending' });
    const sent = await sim().get(`/_sim/messages?phone_number_id=${s.pnid}&to=5511988880004`);
    expect(sent.body.data.at(-1).payload.interactive).toEqual({ type: 'call_permission_request', body: { text: 'May we call you about your order?' }, action: { name: 'call_permission_request' } });

    expect((await sim().post('/_sim/users/5511988880004/call-permission').send({ phone_number_id: s.pnid, response: 'accept' })).status).toBe(200);
    const granted = await eventually(() => s.api('get', `/v1/contacts/${contactId}`), (r) => r.body?.data?.contact?.call_permission_status === 'granted', 10_000, 'permission granted');
    expect(granted.body.data.contact.call_permission_expires_at).toBe(new Date(t.clock.now().getTime() + 7 * 24 * 3600_000).toISOString());

    const started = await s.api('post', '/v1/calls').send({ contact_id: contactId, sdp: ANSWER, reference: 'order-42' });
    expect(started.status).toBe(200);
    expect(started.body.data).toMatchObject({ direction: 'business_initiated', status: 'dialing' });
    const callId = started.body.data.call_id;
    expect((await graphCalls(s.pnid)).at(-1)).toEqual({ messaging_product: 'whatsapp', to: '5511988880004', action: 'connect', session: { sdp_type: 'offer', sdp: ANSWER }, biz_opaque_callback_data: 'order-42' });
    await eventually(() => callOf(s, callId), (c) => c?.status === 'ringing', 10_000, 'the business call rings');
    expect((await sim().post(`/_sim/calls/${callId}/answer`).send({})).status).toBe(200);
    await eventually(() => callOf(s, callId), (c) => c?.status === 'accepted', 10_000, 'the customer answered');
    t.clock.advance(7_000);
    expect((await s.api('post', `/v1/calls/${callId}/actions`).send({ action: 'terminate' })).status).toBe(200);
    const ended = await eventually(() => callOf(s, callId), (c) => c?.ended_at != null, 10_000, 'the business call ended');
    expect(ended).toMatchObject({ status: 'completed', duration_seconds: 7 });
    expect((await graphCalls(s.pnid)).at(-1)).toEqual({ messaging_product: 'whatsapp', call_id: callId, action: 'terminate' });

    // A day later the window is closed: the interactive request is refused with the window's code.
    t.clock.advance(25 * 3600_000);
    const outside = await s.api('post', `/v1/contacts/${contactId}/call-permission-request`).send({ body: 'May we call you?' });
    expect(outside.status).toBe(409);
    expect(outside.body.error.code).toBe('outside_24h_window');
  });

  it('Every /calls request the service made is one Meta\'s published contract accepts', async () => {
    const res = await sim().get('/_sim/requests?limit=1000');
    const bodies = (res.body.data as Array<{ method: string; path: string; body: unknown }>).filter((r) => r.method === 'POST' && r.path.endsWith('/calls')).map((r) => r.body);
    expect(bodies.length).toBeGreaterThan(3);
    for (const b of bodies) expect({ body: b, issues: metaSchemas().request('POST /{Version}/{Phone-Number-ID}/calls', b, 'application/json') }).toEqual({ body: b, issues: [] });
  });
});
