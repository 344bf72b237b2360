/**
 * The domain on another channel: the app built with an in-memory channel port
 * (tests/support/memory-channel.ts) instead of the Cloud API client. Through HTTP, a customer's
 * message arrives at the channel webhook as the port's events, the API answers it, a template is
 * created, decided and sent, and statuses move the messages: what is stored is what the Cloud API
 * adapter would have stored.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { MemoryChannel } from '../support/memory-channel.js';
import { postNotification, projectOnChannel, type ChannelProject } from '../support/channel-project.js';
import { ChannelError } from '../../lib/channel-port/errors.js';
import type { ChannelEvent } from '../../lib/channel-port/events.js';

const APP_SECRET = 'memory-app-secret';

let t: TestApp;
const channel = new MemoryChannel();
beforeAll(async () => {
  t = await startTestApp({ channel });
});
afterAll(async () => {
  await t.close();
});

/** A project connected to the memory channel on a number of its own. */
const project = () => projectOnChannel(t, {
  name: 'Memory channel', appSecret: APP_SECRET, scopes: ['messages:send', 'conversations:read', 'conversations:write', 'templates:manage', 'templates:read'],
});

/** The channel's notification: the port's events as they are. */
const notify = (p: ChannelProject, events: ChannelEvent[]) => postNotification(t, p.id, APP_SECRET, { phone_number_id: p.phoneNumberId, events });

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const seconds = () => String(Math.floor(t.clock.now().getTime() / 1000));

describe('the domain on an in-memory channel', () => {
  it('When a customer writes and the API answers, then the conversation, both messages and their statuses are stored', async () => {
    const p = await project();
    const inbound = await notify(p, [{
      kind: 'message', channelMessageId: 'mem.in-1', customer: { phone: '14155550123', profileName: 'Ada' }, type: 'text', timestamp: seconds(),
      content: { type: 'text', text: { body: 'Where is my order?' } },
    }]);
    expect(inbound.status).toBe(200);
    expect(inbound.body.data).toEqual({ messages: 1, statuses: 0, templates: 0, retryLater: false });
    // The channel's retry of the same notification stores nothing twice.
    expect((await notify(p, [{ kind: 'message', channelMessageId: 'mem.in-1', customer: { phone: '14155550123' }, type: 'text', content: { type: 'text', text: { body: 'Where is my order?' } } }])).body.data.messages).toBe(0);

    const sent = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'text', phone: '+14155550123', content: 'It ships today' });
    expect(sent.status).toBe(200);
    const out = channel.sent.at(-1)!;
    expect(sent.body.data).toEqual({ id: out.channelMessageId, status: 'sent' });
    expect(out).toMatchObject({ phoneNumberId: p.phoneNumberId, message: { recipient: { kind: 'customer', phone: '14155550123' }, content: { type: 'text', text: { body: 'It ships today' } } } });

    const statuses = await notify(p, [
      { kind: 'status', channelMessageId: out.channelMessageId, status: 'delivered', timestamp: seconds(), customer: { phone: '14155550123' } },
      { kind: 'status', channelMessageId: out.channelMessageId, status: 'read', timestamp: seconds() },
    ]);
    expect(statuses.body.data).toEqual({ messages: 0, statuses: 2, templates: 0, retryLater: false });

    const list = await request(t.app).get('/v1/conversations').set(auth(p.key));
    expect(list.status).toBe(200);
    expect(list.body.data.conversations).toHaveLength(1);
    const conversation = list.body.data.conversations[0];
    expect(conversation).toMatchObject({ contact: { phone: '+14155550123', name: 'Ada' }, window_open: true });
    const messages = await request(t.app).get(`/v1/conversations/${conversation.id}/messages`).set(auth(p.key));
    expect(messages.status).toBe(200);
    const byId = Object.fromEntries(messages.body.data.messages.map((m: any) => [m.wamid, m]));
    expect(byId['mem.in-1']).toMatchObject({ direction: 'inbound', type: 'text', status: 'received', content: { text: { body: 'Where is my order?' } } });
    expect(byId[out.channelMessageId]).toMatchObject({ direction: 'outbound', type: 'text', status: 'read' });
  });

  it('When a template is created, decided by the channel and sent, then it goes out as the channel\'s template', async () => {
    const p = await project();
    const created = await request(t.app).post('/v1/templates').set(auth(p.key))
      .send({ name: 'memory_hello', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello from memory' }] });
    expect(created.status).toBe(201);
    expect(created.body.data.template).toMatchObject({ name: 'memory_hello', status: 'PENDING' });
    const decided = await notify(p, [{ kind: 'template_status', templateId: channel.templates.get('memory_hello/en_US')!.id, name: 'memory_hello', language: 'en_US', status: 'APPROVED' }]);
    expect(decided.body.data.templates).toBe(1);

    const sent = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'template', phone: '+14155550124', template: { name: 'memory_hello', language: 'en_US' } });
    expect(sent.status).toBe(200);
    expect(channel.sent.at(-1)).toMatchObject({ message: { recipient: { kind: 'customer', phone: '14155550124' }, content: { type: 'template', template: { name: 'memory_hello', language: { code: 'en_US' } } } } });

    // The adapter's reasons decide: a closed window at the channel is the spec's answer, not a 502.
    channel.refuseNext = new ChannelError({ kind: 'rejected', retryable: false, operation: 'sendMessage', httpStatus: 400, message: 'window closed', reasons: ['window_closed'] });
    const refused = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'template', phone: '+14155550125', template: { name: 'memory_hello', language: 'en_US' } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('outside_24h_window');
  });
  it('When the channel tells of an echo, history, a standby message and a handover, and the API passes the thread, then the domain applies them as on the Cloud API', async () => {
    const p = await project();
    const writer = await t.admin.key(p.id, ['conversations:read', 'conversations:write', 'messages:send']);
    const customer = { phone: '14155550177' };
    await notify(p, [{ kind: 'message', channelMessageId: 'mem.coex-in', customer, type: 'text', timestamp: seconds(), content: { type: 'text', text: { body: 'hi' } } }]);
    const told = await notify(p, [
      { kind: 'message_echo', channelMessageId: 'mem.coex-echo', customer, type: 'text', timestamp: seconds(), content: { type: 'text', text: { body: 'Hello from the app' } } },
      { kind: 'history', channelMessageId: 'mem.coex-old', direction: 'inbound', customer, type: 'text', timestamp: '1700000000', content: { type: 'text', text: { body: 'last year' } } },
      { kind: 'standby_message', channelMessageId: 'mem.coex-standby', customer, type: 'text', timestamp: seconds(), content: { type: 'text', text: { body: 'to the agent' } } },
      { kind: 'thread_control_changed', customer, action: 'take', newOwnerAppId: '9900' },
    ]);
    expect(told.body.data).toMatchObject({ messages: 3 });
    const conversation = (await request(t.app).get('/v1/conversations').set(auth(p.key))).body.data.conversations[0];
    expect(conversation).toMatchObject({ state: 'handover', thread: { held_by: 'other_app', app_id: '9900' } });
    const messages = (await request(t.app).get(`/v1/conversations/${conversation.id}/messages`).set(auth(p.key))).body.data.messages;
    const byId = Object.fromEntries(messages.map((m: any) => [m.wamid, m]));
    expect(byId['mem.coex-echo']).toMatchObject({ direction: 'outbound', author: { kind: 'business_app' } });
    expect(byId['mem.coex-old']).toMatchObject({ direction: 'inbound', history: true });
    expect(byId['mem.coex-standby']).toMatchObject({ direction: 'inbound' });

    const taken = await request(t.app).post(`/v1/conversations/${conversation.id}/thread-control`).set(auth(writer.secret)).send({ action: 'take' });
    expect([taken.status, taken.body.data.thread.held_by]).toEqual([200, 'us']);
    expect(channel.threadCalls.at(-1)).toEqual({ to: { phone: '14155550177' }, action: 'take', targetAppId: undefined, metadata: undefined });
  });

  it('When the channel names a group before the service recorded its creation, then it is one group, active, with the creation\'s approval mode; its participants, a participant\'s message and a send to it go through the port', async () => {
    const p = await project();
    channel.nextRequestId = 'req.fast-1';
    // WhatsApp's group_create comes first (a fast channel), naming the creation's request id.
    const early = await notify(p, [{ kind: 'group_lifecycle', groupId: 'mem.group-1', change: 'created', requestId: 'req.fast-1', subject: 'Fast club' }]);
    expect(early.status).toBe(200);
    const created = await request(t.app).post('/v1/groups').set(auth(p.key)).send({ subject: 'Fast club', join_approval_mode: 'approval_required' });
    expect(created.status).toBe(201);
    expect(created.body.data.group).toMatchObject({ status: 'active', group_id: 'mem.group-1', join_approval_mode: 'approval_required', conversation_id: expect.any(Number) });
    expect((await request(t.app).get('/v1/groups').set(auth(p.key))).body.data.groups).toHaveLength(1);
    expect(channel.groupsCreated.get('req.fast-1')).toEqual({ subject: 'Fast club', joinApprovalMode: 'approval_required' });

    await notify(p, [{ kind: 'group_participants', groupId: 'mem.group-1', added: [{ waId: '5511955550001' }], removed: [] }]);
    await notify(p, [{
      kind: 'message', channelMessageId: 'mem.group-in-1', groupId: 'mem.group-1', customer: { phone: '5511955550001', profileName: 'Caio' }, type: 'text', timestamp: seconds(),
      content: { type: 'text', text: { body: 'Oi, grupo' }, group_id: 'mem.group-1' },
    }]);
    const id = created.body.data.group.id;
    expect((await request(t.app).get(`/v1/groups/${id}/participants`).set(auth(p.key))).body.data.participants.map((x: { phone: string }) => x.phone)).toEqual(['+5511955550001']);
    const conv = created.body.data.group.conversation_id;
    const messages = (await request(t.app).get(`/v1/conversations/${conv}/messages`).set(auth(p.key))).body.data.messages;
    expect(messages.map((m: { content: { group_sender: unknown } }) => m.content.group_sender)).toEqual([{ phone: '+5511955550001', user_id: null, name: 'Caio' }]);

    const sent = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'text', group_id: id, content: 'Bem-vindo' });
    expect(sent.status).toBe(200);
    expect(channel.sent.at(-1)?.message).toMatchObject({ recipient: { kind: 'group', groupId: 'mem.group-1' }, content: { type: 'text', text: { body: 'Bem-vindo' } } });
  });
});

describe('the domain on an in-memory channel', () => {
  it("When a group's join request is rejected, its subject changed and the group deleted through the API, then the port is asked each, the group follows at once, and the channel's own events of the same changes raise no second event", async () => {
    const p = await project();
    channel.nextRequestId = 'req.mem-2';
    const created = await request(t.app).post('/v1/groups').set(auth(p.key)).send({ subject: 'Slow club', join_approval_mode: 'approval_required' });
    await notify(p, [{ kind: 'group_lifecycle', groupId: 'mem.group-2', change: 'created', requestId: 'req.mem-2', subject: 'Slow club' }]);
    const id = created.body.data.group.id;
    const events = async (name: string) => t.db.prisma.event.count({ where: { projectId: p.id, name } });

    channel.joinRequests.set('mem.group-2', [{ id: 'jr-1', waId: '5511955550002' }]);
    const rejected = await request(t.app).post(`/v1/groups/${id}/join-requests/rejections`).set(auth(p.key)).send({ join_request_ids: ['jr-1'] });
    expect(rejected.body.data).toEqual({ rejected: ['jr-1'], failed: [] });
    expect(channel.joinRequests.get('mem.group-2')).toEqual([]);

    const renamed = await request(t.app).patch(`/v1/groups/${id}`).set(auth(p.key)).send({ subject: 'Quick club' });
    expect(renamed.body.data.group).toMatchObject({ subject: 'Quick club', status: 'active' });
    expect(channel.settingsChanges.at(-1)).toEqual({ groupId: 'mem.group-2', input: { subject: 'Quick club' } });
    expect((await notify(p, [{ kind: 'group_settings', groupId: 'mem.group-2', subject: 'Quick club' }])).status).toBe(200);
    expect(await events('group.settings_changed')).toBe(1);

    const deleted = await request(t.app).delete(`/v1/groups/${id}`).set(auth(p.key));
    expect(deleted.body.data.group).toMatchObject({ status: 'deleted' });
    expect(channel.groupsDeleted).toContain('mem.group-2');
    expect((await notify(p, [{ kind: 'group_lifecycle', groupId: 'mem.group-2', change: 'deleted' }])).status).toBe(200);
    expect(await events('group.deleted')).toBe(1);
    const refused = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'text', group_id: id, content: 'Still there?' });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'group_not_active']);
  });
  it('When the channel tells of a rejected call ending before it answers the reject, then the call ends rejected, not missed', async () => {
    const p = await project();
    const writer = await t.admin.key(p.id, ['messages:send', 'conversations:read']);
    const customer = { phone: '14155550188' };
    await notify(p, [{ kind: 'call', callId: 'mem.call-1', customer, event: 'connect', direction: 'user_initiated', sdp: { type: 'offer', sdp: 'v=0' }, timestamp: seconds() }]);
    // WhatsApp ends the call at once; its terminate notification reaches the service before the reject's answer.
    channel.beforeCallAnswer = async (input) => {
      if (input.action === 'reject') await notify(p, [{ kind: 'call', callId: 'mem.call-1', customer, event: 'terminate', direction: 'user_initiated', status: 'COMPLETED', timestamp: seconds() }]);
    };
    try {
      const rejected = await request(t.app).post('/v1/calls/mem.call-1/actions').set(auth(writer.secret)).send({ action: 'reject' });
      expect(rejected.status).toBe(200);
    } finally {
      channel.beforeCallAnswer = undefined;
    }
    const calls = (await request(t.app).get('/v1/calls').set(auth(writer.secret))).body.data.calls;
    expect(calls.find((c: { call_id: string }) => c.call_id === 'mem.call-1')).toMatchObject({ status: 'rejected', ended_at: expect.any(String) });
  });
});
