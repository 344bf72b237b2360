/**
 * WhatsApp groups (issue 61, item 2; docs/groups.md), through HTTP against the simulated channel:
 * a group is created (pending until WhatsApp's group_create names it), its invite link got and
 * reset, users join (directly, or by a join request the business approves), write in the group
 * (stored in the group's conversation, kind `group`, with their sender), the business sends to it
 * (statuses and pricing as for one-to-one; interactive refused before Graph), removes a
 * participant, and WhatsApp changes the group's settings and suspends it. The business rejects join
 * requests, changes the subject and description, and deletes the group: each change is the group's
 * at once and its notification after changes nothing more. Every group notification is delivered
 * twice at once (as two instances would take it) and changes the group once, with one event; the
 * notifications are Meta's shape and the Graph calls are ones Meta's contract accepts.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { metaSchemas } from '../../simulator/meta/validator.js';
import { person } from '../support/dashboard.js';

// A group's notifications delivered twice take about 20 s on a loaded two-core machine: above
// jest's default 30 s is a hang, not a slow machine. Not a retry.
jest.setTimeout(90_000);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: 0, read: 0 }, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

async function shop() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['conversations:read', 'conversations:write', 'messages:send', 'contacts:read', 'contacts:write'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const api = (method: 'get' | 'post' | 'patch' | 'delete', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  // The same project read with a key that may read but not change (conversations:read only).
  const reader = (await t.admin.key(project.id, ['conversations:read'])).secret;
  const read = (method: 'get' | 'post' | 'patch' | 'delete', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${reader}`);
  return { projectId: project.id, pnid: channel.phoneNumberId, api, read, key };
}
type Shop = Awaited<ReturnType<typeof shop>>;

const sim = () => request(t.sim!.url);

async function eventsOf(projectId: string, name: string) {
  return t.db.prisma.event.findMany({ where: { projectId, name }, orderBy: { createdAt: 'asc' } });
}

/** The group's Graph requests WhatsApp (the simulator) received, by path ending. */
async function graphRequests(ending: string): Promise<Array<{ method: string; path: string; body: any }>> {
  const res = await sim().get('/_sim/requests?limit=1000');
  return (res.body.data as Array<{ method: string; path: string; body: unknown }>).filter((r) => r.path.endsWith(ending)) as any;
}

/** A group created through the API and confirmed by WhatsApp's notification (delivered twice at once). */
async function activeGroup(s: Shop, body: object = { subject: 'Order 42 delivery', description: 'Ada and the shop' }) {
  const created = await s.api('post', '/v1/groups').send(body);
  expect(created.status).toBe(201);
  // Pending until WhatsApp's notification, which may already have come (the simulator is fast).
  expect(['pending', 'active']).toContain(created.body.data.group.status);
  const id = created.body.data.group.id;
  const group = await eventually(() => s.api('get', `/v1/groups/${id}`), (r) => r.body.data?.group?.status === 'active', 10_000, 'the group confirmed');
  const g = group.body.data.group;
  // Meta delivers at least once: the creation's notification again, twice at once, changes nothing.
  expect((await sim().post(`/_sim/groups/${encodeURIComponent(g.group_id)}/created`).send({ deliveries: 2 })).status).toBe(200);
  return g as { id: number; group_id: string; conversation_id: number; subject: string };
}

const gpath = (g: { group_id: string }, rest: string) => `/_sim/groups/${encodeURIComponent(g.group_id)}/${rest}`;

/** The group's notifications of `field` the service answered 200 (the simulator's callback log): applied, not only sent. */
async function answeredNotifications(g: { group_id: string }, field: string): Promise<number> {
  const res = await sim().get(`/_sim/callbacks?kind=${encodeURIComponent(`group:${field}`)}&limit=1000`);
  return (res.body.data as Array<{ ref: string; status_code: number | null }>).filter((c) => c.ref === g.group_id && c.status_code === 200).length;
}

/** Graph calls on the group's own node (`/{group_id}`, no edge), by method. */
async function groupNodeCalls(g: { group_id: string }, method: 'POST' | 'DELETE') {
  return (await graphRequests(`/${g.group_id}`)).filter((r) => r.method === method && r.path === `/${g.group_id}`);
}

/** WhatsApp's (the simulator's) own view of the group. */
async function atWhatsApp(g: { group_id: string }) {
  return ((await sim().get('/_sim/groups')).body.data as Array<{ id: string }>).find((x) => x.id === g.group_id) as Record<string, unknown>;
}

describe('a group from creation to messages', () => {
  it('When a group is created, joined, written in and sent to, then each notification (delivered twice) is stored once with one event, the conversation is of kind group with its participants, and the send goes to the group', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    expect(g).toMatchObject({ subject: 'Order 42 delivery', description: 'Ada and the shop', join_approval_mode: 'auto_approve', participant_count: 0 });
    expect((await eventsOf(s.projectId, 'group.created')).map((e) => (e.data as any).group.id)).toEqual([g.id]);
    expect(await t.db.prisma.contact.count({ where: { projectId: s.projectId, kind: 'group' } })).toBe(1);
    expect((await graphRequests('/groups')).filter((r) => r.path === `/${s.pnid}/groups`).at(-1)?.body)
      .toEqual({ messaging_product: 'whatsapp', subject: 'Order 42 delivery', description: 'Ada and the shop', join_approval_mode: 'auto_approve' });

    // The invite link: got once from WhatsApp, then answered as stored; reset gets a new one.
    const link = await s.api('get', `/v1/groups/${g.id}/invite-link`);
    expect(link.status).toBe(200);
    expect(link.body.data.invite_link).toMatch(/^https:\/\/chat\.whatsapp\.com\//);
    expect((await s.api('get', `/v1/groups/${g.id}/invite-link`)).body.data.invite_link).toBe(link.body.data.invite_link);
    expect((await graphRequests('/invite_link')).length).toBe(1);
    const reset = await s.api('post', `/v1/groups/${g.id}/invite-link`);
    expect(reset.status).toBe(200);
    expect(reset.body.data.invite_link).not.toBe(link.body.data.invite_link);

    // Two users join by the link; the first's notification comes twice at once.
    expect((await sim().post(gpath(g, 'join')).send({ from: '+5511977770001', deliveries: 2 })).body.joined).toBe(true);
    expect((await sim().post(gpath(g, 'join')).send({ from: '+5511977770002' })).body.joined).toBe(true);
    const participants = await eventually(() => s.api('get', `/v1/groups/${g.id}/participants`), (r) => r.body.data?.participants?.length === 2, 10_000, 'two participants');
    expect(participants.body.data.participants.map((p: { phone: string }) => p.phone)).toEqual(['+5511977770001', '+5511977770002']);
    expect((await eventsOf(s.projectId, 'group.participants_changed')).map((e) => (e.data as any).added_participants)).toEqual([['+5511977770001'], ['+5511977770002']]);

    // A participant writes (delivered twice at once): one message in the group's conversation.
    expect((await sim().post(gpath(g, 'inbound')).send({ from: '5511977770001', name: 'Ada', text: 'Where is my order?', deliveries: 2 })).status).toBe(200);
    const conv = await s.api('get', `/v1/conversations/${g.conversation_id}`);
    expect(conv.status).toBe(200);
    expect(conv.body.data.conversation).toMatchObject({
      kind: 'group', group: { id: g.id, group_id: g.group_id, subject: 'Order 42 delivery', status: 'active', participant_count: 2 },
      contact: { phone: null, user_id: null, name: 'Order 42 delivery' },
    });
    const inbound = await s.api('get', `/v1/conversations/${g.conversation_id}/messages`);
    expect(inbound.body.data.messages).toHaveLength(1);
    expect(inbound.body.data.messages[0]).toMatchObject({ direction: 'inbound', type: 'text', content: { text: { body: 'Where is my order?' }, group_id: g.group_id, group_sender: { phone: '+5511977770001', name: 'Ada' } } });
    const received = await eventsOf(s.projectId, 'message.received');
    expect(received).toHaveLength(1);
    expect((received[0].data as any).conversation).toMatchObject({ kind: 'group', group: { id: g.id } });
    // Nobody of the group became a contact, and the group's own record is no contact either.
    expect((await s.api('get', '/v1/contacts')).body.data.contacts).toEqual([]);
    const own = await t.db.prisma.contact.findFirstOrThrow({ where: { projectId: s.projectId, kind: 'group' } });
    expect((await s.api('get', `/v1/contacts/${own.id}`)).status).toBe(404);
    expect((await request(t.app).patch(`/v1/contacts/${own.id}`).set('Authorization', `Bearer ${s.key}`).send({ name: 'Renamed' })).status).toBe(404);
    // A group has no customer's thread to pass.
    const thread = await s.api('post', `/v1/conversations/${g.conversation_id}/thread-control`).send({ action: 'release' });
    expect(thread.status).toBe(400);
    expect(thread.body.error.code).toBe('unsupported_in_group');
    // The group's conversation is listed with the others.
    const listed = await s.api('get', '/v1/conversations');
    expect(listed.body.data.conversations.map((c: { id: number; kind?: string }) => [c.id, c.kind])).toEqual([[g.conversation_id, 'group']]);

    // The business answers in the group: Graph gets recipient_type group; statuses (naming the group) settle it, with pricing.
    const sent = await s.api('post', '/v1/messages').send({ type: 'text', group_id: g.id, content: 'It leaves today.' });
    expect(sent.status).toBe(200);
    const graphSend = (await sim().get(`/_sim/messages?phone_number_id=${s.pnid}`)).body.data.find((m: { wamid: string }) => m.wamid === sent.body.data.id);
    expect(graphSend.payload).toMatchObject({ messaging_product: 'whatsapp', recipient_type: 'group', to: g.group_id, type: 'text', text: { body: 'It leaves today.' } });
    const delivered = await eventually(
      () => s.api('get', `/v1/conversations/${g.conversation_id}/messages`),
      (r) => r.body.data?.messages?.find((m: { wamid: string }) => m.wamid === sent.body.data.id)?.status === 'delivered', 10_000, 'the group send delivered',
    );
    const out = delivered.body.data.messages.find((m: { wamid: string }) => m.wamid === sent.body.data.id);
    expect(out).toMatchObject({ direction: 'outbound', status: 'delivered', pricing: { category: 'service' } });
    expect((await eventsOf(s.projectId, 'message.status')).map((e) => (e.data as any).status)).toContain('delivered');

    // The dashboard's conversation view names the group, its participants and who wrote.
    const owner = await person(t, s.projectId, `owner-${Date.now()}@example.com`);
    const page = await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${g.conversation_id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Group: Order 42 delivery');
    expect(page.text).toContain('+5511977770002');
    expect(page.text).toContain('Ada (+5511977770001)');
    // A group has no window (the API sends any message): the page offers the text reply, and no thread control (refused on a group).
    expect(page.text).toContain('none (a group has no customer service window): any message may be sent');
    expect(page.text).not.toContain('only an approved template may be sent');
    expect(page.text).toContain('id="reply-text"');
    expect(page.text).not.toContain('Pass to app');
    expect(page.text).not.toContain('id="conversation-thread"');
  });
});

describe('refusals', () => {
  it('When a send to a group is interactive, names a phone too, an unknown or a pending group, then it is refused with its code and nothing reaches Graph', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    const before = (await graphRequests('/messages')).length;
    const interactive = await s.api('post', '/v1/messages').send({ type: 'interactive', group_id: g.id, interactive: { body: 'Pick one', buttons: [{ id: 'a', title: 'A' }] } });
    expect(interactive.status).toBe(400);
    expect(interactive.body.error.code).toBe('unsupported_in_group');
    const both = await s.api('post', '/v1/messages').send({ type: 'text', group_id: g.id, phone: '+5511977770001', content: 'x' });
    expect(both.status).toBe(400);
    expect(both.body.error.code).toBe('conflicting_recipient');
    const unknown = await s.api('post', '/v1/messages').send({ type: 'text', group_id: 999999999, content: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    // A group WhatsApp has not confirmed yet (the notification withheld: a creation straight in the store).
    const pending = await t.db.pool.query<{ id: string }>(
      `INSERT INTO groups (project_id, request_id, status, subject, join_approval_mode, created_at, updated_at) VALUES ($1, 'req-pending', 'pending', 'Later', 'auto_approve', now(), now()) RETURNING id::text`,
      [s.projectId],
    );
    const notYet = await s.api('post', '/v1/messages').send({ type: 'text', group_id: Number(pending.rows[0].id), content: 'x' });
    expect(notYet.status).toBe(409);
    expect(notYet.body.error.code).toBe('group_not_active');
    expect((await s.api('get', `/v1/groups/${pending.rows[0].id}/invite-link`)).body.error.code).toBe('group_not_active');
    expect((await graphRequests('/messages')).length).toBe(before);
    // Bad input: a blank subject, an unknown group, a malformed id.
    expect((await s.api('post', '/v1/groups').send({ subject: '   ' })).body.error.code).toBe('invalid_request');
    expect((await s.api('post', '/v1/groups').send({ subject: 'x'.repeat(129) })).status).toBe(400);
    expect((await s.api('get', '/v1/groups/999999999')).status).toBe(404);
    expect((await s.api('get', '/v1/groups/abc')).body.error.code).toBe('invalid_id');
    expect((await s.api('delete', `/v1/groups/${g.id}/participants/+5511900000000`)).status).toBe(404);
  });

  it('When the key lacks conversations:write, then creating a group is 403 and nothing reaches Graph', async () => {
    const project = await t.admin.project();
    const key = (await t.admin.key(project.id, ['conversations:read'])).secret;
    const res = await request(t.app).post('/v1/groups').set('Authorization', `Bearer ${key}`).send({ subject: 'No' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('join requests, removals, settings and suspension', () => {
  it('When a user asks to join an approval_required group and is approved, one is removed, the settings change and WhatsApp suspends the group, then each is stored once (notifications twice) and sends are refused while suspended', async () => {
    const s = await shop();
    const g = await activeGroup(s, { subject: 'VIP club', join_approval_mode: 'approval_required' });
    await s.api('get', `/v1/groups/${g.id}/invite-link`);
    const asked = await sim().post(gpath(g, 'join')).send({ from: '+5511977770011' });
    expect(asked.body).toMatchObject({ joined: false });
    const open = await s.api('get', `/v1/groups/${g.id}/join-requests`);
    expect(open.status).toBe(200);
    expect(open.body.data.join_requests).toEqual([{ id: asked.body.join_request_id, phone: '+5511977770011', created_at: expect.any(String) }]);
    const approved = await s.api('post', `/v1/groups/${g.id}/join-requests`).send({ join_request_ids: [asked.body.join_request_id, 'nope'] });
    expect(approved.status).toBe(200);
    expect(approved.body.data).toEqual({ approved: [asked.body.join_request_id], failed: ['nope'] });
    await eventually(() => s.api('get', `/v1/groups/${g.id}/participants`), (r) => r.body.data?.participants?.length === 1, 10_000, 'the approved user joined');

    // Removed through the API: WhatsApp's notification takes them out of the list.
    const removed = await s.api('delete', `/v1/groups/${g.id}/participants/+5511977770011`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ group_id: g.id, phone: '+5511977770011', requested: true });
    expect((await graphRequests('/participants')).at(-1)?.body).toEqual({ messaging_product: 'whatsapp', participants: [{ user: '5511977770011' }] });
    await eventually(() => s.api('get', `/v1/groups/${g.id}/participants`), (r) => r.body.data?.participants?.length === 0, 10_000, 'the participant removed');
    expect((await eventsOf(s.projectId, 'group.participants_changed')).map((e) => [(e.data as any).added_participants, (e.data as any).removed_participants])).toEqual([
      [['+5511977770011'], []], [[], ['+5511977770011']],
    ]);

    // Settings changed at WhatsApp (twice at once): one event; the conversation's record follows the subject.
    expect((await sim().post(gpath(g, 'settings')).send({ subject: 'VIP club 2027', deliveries: 2 })).status).toBe(200);
    expect((await eventsOf(s.projectId, 'group.settings_changed')).map((e) => (e.data as any).group.subject)).toEqual(['VIP club 2027']);
    expect((await s.api('get', `/v1/conversations/${g.conversation_id}`)).body.data.conversation.contact.name).toBe('VIP club 2027');

    // Suspended (twice at once): one event, and the group takes no send nor link until restored.
    expect((await sim().post(gpath(g, 'suspend')).send({ suspended: true, deliveries: 2 })).status).toBe(200);
    expect((await eventsOf(s.projectId, 'group.status_changed')).map((e) => (e.data as any).group.status)).toEqual(['suspended']);
    const refused = await s.api('post', '/v1/messages').send({ type: 'text', group_id: g.id, content: 'Hello?' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'group_not_active', details: { status: 'suspended' } });
    expect((await sim().post(gpath(g, 'suspend')).send({ suspended: false })).status).toBe(200);
    expect((await s.api('get', `/v1/groups/${g.id}`)).body.data.group.status).toBe('active');

    // Deleted (twice at once): one group.deleted; its conversation stays.
    expect((await sim().post(gpath(g, 'delete')).send({ deliveries: 2 })).status).toBe(200);
    expect((await eventsOf(s.projectId, 'group.deleted')).length).toBe(1);
    expect((await s.api('get', `/v1/groups/${g.id}`)).body.data.group.status).toBe('deleted');
    expect((await s.api('get', `/v1/conversations/${g.conversation_id}`)).status).toBe(200);
  });
});

describe('the business rejects join requests, changes the settings and deletes a group', () => {
  it('When the business rejects a join request, then WhatsApp gets Meta\'s DELETE naming it, the user does not join and only the other request stays open; an unknown id comes back failed', async () => {
    const s = await shop();
    const g = await activeGroup(s, { subject: 'Book club', join_approval_mode: 'approval_required' });
    await s.api('get', `/v1/groups/${g.id}/invite-link`);
    const ada = (await sim().post(gpath(g, 'join')).send({ from: '+5511977770021' })).body.join_request_id as string;
    const bo = (await sim().post(gpath(g, 'join')).send({ from: '+5511977770022' })).body.join_request_id as string;

    const rejected = await s.api('post', `/v1/groups/${g.id}/join-requests/rejections`).send({ join_request_ids: [ada, 'nope'] });
    expect(rejected.status).toBe(200);
    expect(rejected.body.data).toEqual({ rejected: [ada], failed: ['nope'] });
    expect((await graphRequests('/join_requests')).filter((r) => r.method === 'DELETE').map((r) => r.body)).toEqual([{ messaging_product: 'whatsapp', join_requests: [ada, 'nope'] }]);
    // Only Bo's request is open, here and at WhatsApp; Ada is no participant.
    expect((await s.api('get', `/v1/groups/${g.id}/join-requests`)).body.data.join_requests).toEqual([{ id: bo, phone: '+5511977770022', created_at: expect.any(String) }]);
    expect(await atWhatsApp(g)).toMatchObject({ participants: [], join_requests: [bo] });
    expect((await s.api('get', `/v1/groups/${g.id}/participants`)).body.data.participants).toEqual([]);
    // Bo's request, left open, can still be approved.
    expect((await s.api('post', `/v1/groups/${g.id}/join-requests`).send({ join_request_ids: [bo] })).body.data).toEqual({ approved: [bo], failed: [] });

    // Bad input is refused before WhatsApp, in the spec's envelope.
    const none = await s.api('post', `/v1/groups/${g.id}/join-requests/rejections`).send({ join_request_ids: [] });
    expect(none.status).toBe(400);
    expect(none.body).toMatchObject({ success: false, error: { code: 'invalid_request', details: { fields: [{ field: 'join_request_ids' }] } }, request_id: expect.any(String) });
    expect((await s.api('post', `/v1/groups/${g.id}/join-requests/rejections`).send({})).body.error.code).toBe('invalid_request');
    const unknown = await s.api('post', '/v1/groups/999999999/join-requests/rejections').send({ join_request_ids: [bo] });
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
    expect((await graphRequests('/join_requests')).filter((r) => r.method === 'DELETE')).toHaveLength(1);
  });

  it('When the business changes the subject and the description, then WhatsApp gets Meta\'s POST /{group_id}, the group answers with them at once and its conversation takes the subject; WhatsApp\'s group_settings_update that follows raises no second event', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    const changed = await s.api('patch', `/v1/groups/${g.id}`).send({ subject: '  Order 42: on its way ', description: 'Ada, Bo and the shop' });
    expect(changed.status).toBe(200);
    expect(changed.body.data.group).toMatchObject({ id: g.id, status: 'active', subject: 'Order 42: on its way', description: 'Ada, Bo and the shop' });
    expect((await groupNodeCalls(g, 'POST')).map((r) => r.body)).toEqual([{ messaging_product: 'whatsapp', subject: 'Order 42: on its way', description: 'Ada, Bo and the shop' }]);
    expect((await s.api('get', `/v1/groups/${g.id}`)).body.data.group).toMatchObject({ subject: 'Order 42: on its way', description: 'Ada, Bo and the shop' });
    expect((await s.api('get', `/v1/conversations/${g.conversation_id}`)).body.data.conversation).toMatchObject({ contact: { name: 'Order 42: on its way' }, group: { subject: 'Order 42: on its way' } });
    // WhatsApp's notification of the change, once the service answered it: still one event.
    await eventually(() => answeredNotifications(g, 'group_settings_update'), (n) => n === 1, 10_000, 'the settings notification answered');
    const events = async () => (await eventsOf(s.projectId, 'group.settings_changed')).map((e) => [(e.data as any).group.subject, (e.data as any).group.description]);
    expect(await events()).toEqual([['Order 42: on its way', 'Ada, Bo and the shop']]);

    // The description alone, emptied (0 characters): the subject is not sent, and stays.
    const cleared = await s.api('patch', `/v1/groups/${g.id}`).send({ description: '' });
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.group).toMatchObject({ subject: 'Order 42: on its way', description: '' });
    expect((await groupNodeCalls(g, 'POST')).at(-1)?.body).toEqual({ messaging_product: 'whatsapp', description: '' });
    await eventually(() => answeredNotifications(g, 'group_settings_update'), (n) => n === 2, 10_000, 'the second settings notification answered');
    // (The test's clock stands still: both events have the same time, so their order is not asserted.)
    expect((await events()).sort()).toEqual([['Order 42: on its way', ''], ['Order 42: on its way', 'Ada, Bo and the shop']]);
    expect(await atWhatsApp(g)).toMatchObject({ subject: 'Order 42: on its way', description: '' });

    // The contract's limits exactly: 128 and 2,048 characters are taken.
    const longest = await s.api('patch', `/v1/groups/${g.id}`).send({ subject: 'S'.repeat(128), description: 'd'.repeat(2048) });
    expect(longest.status).toBe(200);
    expect(longest.body.data.group).toMatchObject({ subject: 'S'.repeat(128), description: 'd'.repeat(2048) });
  });

  it('When a settings change is empty, blank, too long, has an unknown field, or names an unknown or a pending group, then it is refused with its code and nothing reaches WhatsApp', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    const patch = (body: object, id: number = g.id) => s.api('patch', `/v1/groups/${id}`).send(body);
    const fieldsOf = (r: request.Response) => [r.status, r.body.error?.code, (r.body.error?.details?.fields ?? []).map((f: { field: string }) => f.field)];

    const empty = await patch({});
    expect(empty.body).toMatchObject({ success: false, error: { code: 'invalid_request' }, request_id: expect.any(String) });
    expect(empty.status).toBe(400);
    const blank = await patch({ subject: '   ' });
    expect([blank.status, blank.body.error]).toEqual([400, { code: 'invalid_request', message: 'subject must not be blank.', details: { fields: [{ field: 'subject', message: 'is blank' }] } }]);
    expect(fieldsOf(await patch({ subject: '' }))).toEqual([400, 'invalid_request', ['subject']]);
    expect(fieldsOf(await patch({ subject: 'x'.repeat(129) }))).toEqual([400, 'invalid_request', ['subject']]);
    expect(fieldsOf(await patch({ description: 'x'.repeat(2049) }))).toEqual([400, 'invalid_request', ['description']]);
    expect((await patch({ subject: 'Fine', profile_picture_file: 'a.jpg' })).body.error.code).toBe('invalid_request');

    const unknown = await patch({ subject: 'Fine' }, 999999999);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
    const pending = await t.db.pool.query<{ id: string }>(
      `INSERT INTO groups (project_id, request_id, status, subject, join_approval_mode, created_at, updated_at) VALUES ($1, 'req-pending-settings', 'pending', 'Later', 'auto_approve', now(), now()) RETURNING id::text`,
      [s.projectId],
    );
    const notYet = await patch({ subject: 'Fine' }, Number(pending.rows[0].id));
    expect([notYet.status, notYet.body.error]).toEqual([409, expect.objectContaining({ code: 'group_not_active', details: { status: 'pending' } })]);

    expect(await groupNodeCalls(g, 'POST')).toEqual([]);
    expect((await s.api('get', `/v1/groups/${g.id}`)).body.data.group).toMatchObject({ subject: 'Order 42 delivery', description: 'Ada and the shop' });
    expect(await eventsOf(s.projectId, 'group.settings_changed')).toEqual([]);
  });

  it('When the key may read but not change (no conversations:write), then changing, deleting a group and rejecting its join requests are 403 insufficient_scope, and the group and WhatsApp are untouched', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    const refused = [
      await s.read('patch', `/v1/groups/${g.id}`).send({ subject: 'No' }),
      await s.read('delete', `/v1/groups/${g.id}`),
      await s.read('post', `/v1/groups/${g.id}/join-requests/rejections`).send({ join_request_ids: ['any'] }),
    ];
    expect(refused.map((r) => [r.status, r.body.error.code])).toEqual([[403, 'insufficient_scope'], [403, 'insufficient_scope'], [403, 'insufficient_scope']]);
    // The same key reads the group.
    expect((await s.read('get', `/v1/groups/${g.id}`)).body.data.group).toMatchObject({ status: 'active', subject: 'Order 42 delivery' });
    expect([...(await groupNodeCalls(g, 'POST')), ...(await groupNodeCalls(g, 'DELETE'))]).toEqual([]);
    expect((await graphRequests('/join_requests')).filter((r) => r.path === `/${g.group_id}/join_requests`)).toEqual([]);
  });

  it('When the business deletes a group, then WhatsApp gets Meta\'s DELETE /{group_id}, the group is deleted at once with one group.deleted (WhatsApp\'s group_delete that follows changes nothing), its conversation stays, and it refuses sends, changes, join requests and a second deletion', async () => {
    const s = await shop();
    const g = await activeGroup(s);
    await s.api('get', `/v1/groups/${g.id}/invite-link`);
    expect((await sim().post(gpath(g, 'join')).send({ from: '+5511977770031' })).body.joined).toBe(true);
    expect((await s.api('post', '/v1/messages').send({ type: 'text', group_id: g.id, content: 'Last call' })).status).toBe(200);
    // The creation's notifications (once, then twice again) all answered before the deletion.
    const lifecycle = () => answeredNotifications(g, 'group_lifecycle_update');
    const before = await eventually(lifecycle, (n) => n >= 3, 10_000, "the creation's notifications answered");

    const deleted = await s.api('delete', `/v1/groups/${g.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.group).toMatchObject({ id: g.id, group_id: g.group_id, status: 'deleted', conversation_id: g.conversation_id });
    // Meta's deleteGroup takes no body.
    expect((await groupNodeCalls(g, 'DELETE')).map((r) => r.body)).toEqual([null]);
    await eventually(lifecycle, (n) => n === before + 1, 10_000, 'the group_delete notification answered');
    expect((await eventsOf(s.projectId, 'group.deleted')).map((e) => [(e.data as any).group.id, (e.data as any).group.status])).toEqual([[g.id, 'deleted']]);
    expect((await s.api('get', `/v1/groups/${g.id}`)).body.data.group.status).toBe('deleted');
    expect(await atWhatsApp(g)).toMatchObject({ deleted: true });
    const conv = await s.api('get', `/v1/conversations/${g.conversation_id}/messages`);
    expect(conv.body.data.messages.map((m: { content: { text?: { body: string } } }) => m.content.text?.body)).toContain('Last call');

    // A deleted group takes nothing more, and WhatsApp is not asked about it.
    const aboutGroup = async () => (await graphRequests('')).filter((r) => r.path.includes(g.group_id) || r.body?.to === g.group_id).length;
    const requestsBefore = await aboutGroup();
    const refusals = [
      await s.api('post', '/v1/messages').send({ type: 'text', group_id: g.id, content: 'Anyone?' }),
      await s.api('patch', `/v1/groups/${g.id}`).send({ subject: 'Back again' }),
      await s.api('delete', `/v1/groups/${g.id}`),
      await s.api('post', `/v1/groups/${g.id}/join-requests/rejections`).send({ join_request_ids: ['any'] }),
      await s.api('post', `/v1/groups/${g.id}/invite-link`),
    ];
    expect(refusals.map((r) => [r.status, r.body.error.code, r.body.error.details])).toEqual(Array(5).fill([409, 'group_not_active', { status: 'deleted' }]));
    expect(await aboutGroup()).toBe(requestsBefore);
    expect((await eventsOf(s.projectId, 'group.deleted'))).toHaveLength(1);

    const unknown = await s.api('delete', '/v1/groups/999999999');
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'not_found']);
    expect((await s.api('delete', '/v1/groups/abc')).body.error.code).toBe('invalid_id');
  });
});

describe("Meta's contract", () => {
  it("Every group notification the simulator sent is one Meta's webhook schema accepts, and every group Graph call the service made, and the simulator's answer to it, is one Meta's contract accepts", async () => {
    const groups = (await sim().get('/_sim/groups')).body.data as Array<{ id: string }>;
    const notifications = (await Promise.all(groups.map(async (g) => (await sim().get(`/_sim/groups/${encodeURIComponent(g.id)}/notifications`)).body.data))).flat();
    expect(new Set(notifications.map((n: { field: string }) => n.field))).toEqual(new Set(['group_lifecycle_update', 'group_participants_update', 'group_settings_update', 'group_status_update', 'messages']));
    for (const n of notifications) expect({ n, issues: metaSchemas().request('POST /whatsapp/webhooks', n.body, 'application/json') }).toEqual({ n, issues: [] });

    const requests = (await sim().get('/_sim/requests?limit=1000')).body.data as Array<{ method: string; path: string; body: unknown; status: number; answer: unknown }>;
    const groupIds = new Set(groups.map((g) => g.id));
    const checks: Array<[string, { body: unknown; status: number; answer: unknown }]> = [];
    for (const r of requests) {
      const [node, edge] = r.path.split('/').filter(Boolean);
      if (r.method === 'POST' && edge === 'groups') checks.push(['POST /{Version}/{Phone-Number-ID}/groups', r]);
      else if (r.method === 'POST' && edge === 'invite_link') checks.push(['POST /{Version}/{group_id}/invite_link', r]);
      else if (r.method === 'DELETE' && edge === 'participants') checks.push(['DELETE /{Version}/{group_id}/participants', r]);
      else if (r.method === 'POST' && edge === 'join_requests') checks.push(['POST /{Version}/{group_id}/join_requests', r]);
      else if (r.method === 'DELETE' && edge === 'join_requests') checks.push(['DELETE /{Version}/{group_id}/join_requests', r]);
      else if (r.method === 'POST' && edge === undefined && groupIds.has(node)) checks.push(['POST /{Version}/{group_id}', r]);
      else if (r.method === 'DELETE' && edge === undefined && groupIds.has(node)) checks.push(['DELETE /{Version}/{group_id}', r]);
      else if (r.method === 'POST' && edge === 'messages' && (r.body as { recipient_type?: string })?.recipient_type === 'group') checks.push(['POST /{Version}/{Phone-Number-ID}/messages', r]);
    }
    expect(new Set(checks.map(([op]) => op)).size).toBe(8);
    for (const [op, { body }] of checks) {
      // Meta's deleteGroup declares no body: none is sent.
      const issues = op === 'DELETE /{Version}/{group_id}' ? (body === null ? [] : ['a body was sent']) : metaSchemas().request(op as never, body, 'application/json');
      expect({ op, body, issues }).toEqual({ op, body, issues: [] });
    }
    // The simulator answers the business's group calls as Meta's contract says it answers them.
    for (const [op, { status, answer }] of checks) if (status === 200) expect({ op, answer, issues: metaSchemas().response(op as never, answer) }).toEqual({ op, answer, issues: [] });
  });
});
