/**
 * The team's operations on a conversation through HTTP (issue 60, item 1): assignment to a member
 * and back, labels and the list's filters by them, private notes (never sent to the customer),
 * canned replies, the events each change writes, the author of each message; and their refusals
 * (bad input is a clear 4xx with the spec's envelope, never a 500).
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { grant, person, uniqueEmail as email } from '../support/dashboard.js';
import { expectError } from '../support/expect-error.js';

let t: TestApp;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => {
  t = app;
});

async function shop(scopes = ['conversations:read', 'conversations:write', 'messages:send', 'webhooks:manage']) {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, scopes)).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const api = (method: 'get' | 'put' | 'post' | 'delete', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId, api };
}

async function conversationWith(s: { phoneNumberId: string; projectId: string }, from: string): Promise<number> {
  const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: s.phoneNumberId, from, name: 'Ada', text: 'Where is my order?' });
  expect(res.status).toBe(200);
  const { rows } = await t.db.pool.query<{ id: string }>(
    'SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2',
    [s.projectId, from],
  );
  return Number(rows[0].id);
}

async function eventsOf(projectId: string, name: string): Promise<any[]> {
  // The test's clock stands still unless moved: the tests move it a second after each change.
  const { rows } = await t.db.pool.query<{ data: any }>('SELECT data FROM events WHERE project_id = $1 AND name = $2 ORDER BY created_at', [projectId, name]);
  return rows.map((r) => r.data);
}

describe('assignConversation and unassignConversation', () => {
  it('When a conversation is assigned to a member and unassigned, then the conversation, the list filters and the events say so', async () => {
    const s = await shop();
    const ada = email('ada');
    const bob = email('bob');
    await grant(t, s.projectId, ada, 'owner');
    await grant(t, s.projectId, bob, 'member');
    const first = await conversationWith(s, '14155550701');
    const second = await conversationWith(s, '14155550702');

    const assigned = await s.api('put', `/v1/conversations/${first}/assignee`).send({ email: ada.toUpperCase() });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(assigned.status).toBe(200);
    expect(assigned.body.data.conversation).toMatchObject({ id: first, assignee: { email: ada }, previous_assignee: null });
    const moved = await s.api('put', `/v1/conversations/${first}/assignee`).send({ email: bob });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(moved.body.data.conversation).toMatchObject({ assignee: { email: bob }, previous_assignee: { email: ada } });

    const got = await s.api('get', `/v1/conversations/${first}`);
    expect(got.body.data.conversation.assignee).toMatchObject({ email: bob });
    const mine = await s.api('get', `/v1/conversations?assignee=${encodeURIComponent(bob)}`);
    expect(mine.body.data.conversations.map((c: any) => c.id)).toEqual([first]);
    const none = await s.api('get', '/v1/conversations?assignee=none');
    expect(none.body.data.conversations.map((c: any) => c.id)).toEqual([second]);
    const any = await s.api('get', '/v1/conversations?assignee=any');
    expect(any.body.data.conversations.map((c: any) => c.id)).toEqual([first]);

    const cleared = await s.api('delete', `/v1/conversations/${first}/assignee`);
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(cleared.status).toBe(200);
    expect(cleared.body.data.conversation).toMatchObject({ assignee: null, previous_assignee: { email: bob } });
    // Unassigning again changes nothing and writes no event.
    expect((await s.api('delete', `/v1/conversations/${first}/assignee`)).status).toBe(200);

    const events = await eventsOf(s.projectId, 'conversation.assigned');
    expect(events.map((e) => [e.assignee?.email ?? null, e.previous_assignee?.email ?? null])).toEqual([[ada, null], [bob, ada], [null, bob]]);
    expect(events[0].by).toMatchObject({ kind: 'api_key', name: 'test key' });
  });

  it('When the email is no member, missing, or the conversation unknown or malformed, then a clear 4xx and nothing changes', async () => {
    const s = await shop();
    const other = await t.admin.project();
    const outsider = email('outsider');
    await grant(t, other.id, outsider, 'owner'); // a member of another project only
    const id = await conversationWith(s, '14155550703');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: outsider }), 400, 'unknown_member');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: 'nobody@example.com' }), 400, 'unknown_member');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({}), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: 42 }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: 'a@b.c', extra: 1 }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).set('Content-Type', 'application/json').send('{"email":'), 400, 'invalid_json');
    const member = email('member');
    await grant(t, s.projectId, member, 'member');
    expectError(await s.api('put', '/v1/conversations/999999999/assignee').send({ email: member }), 404, 'not_found');
    expectError(await s.api('put', '/v1/conversations/abc/assignee').send({ email: member }), 400, 'invalid_id');
    expectError(await s.api('delete', '/v1/conversations/999999999/assignee'), 404, 'not_found');
    expect(await eventsOf(s.projectId, 'conversation.assigned')).toEqual([]);
    const { rows } = await t.db.pool.query('SELECT assignee_id FROM conversations WHERE id = $1', [id]);
    expect(rows[0].assignee_id).toBeNull();
  });

  it('When a member is removed from the team, then the conversations they held are unassigned, each with its event', async () => {
    const s = await shop();
    const ownerEmail = email('owner');
    const leaving = email('leaving');
    const owner = await person(t, s.projectId, ownerEmail, 'owner');
    await grant(t, s.projectId, leaving, 'member');
    const id = await conversationWith(s, '14155550705');
    expect((await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: leaving })).status).toBe(200);
    t.clock.advance(1000);
    const removed = await owner.agent.post(`/dashboard/projects/${s.projectId}/people/remove`).type('form').send({ _csrf: await owner.csrf(), email: leaving });
    expect(removed.status).toBe(303);
    expect((await s.api('get', `/v1/conversations/${id}`)).body.data.conversation.assignee).toBeNull();
    const events = await eventsOf(s.projectId, 'conversation.assigned');
    expect(events.map((e) => [e.assignee, e.previous_assignee?.email, e.by.kind, e.by.name])).toEqual([[{ id: expect.any(String), email: leaving }, undefined, 'api_key', 'test key'], [null, leaving, 'person', ownerEmail]]);
  });

  it('When the key may only read conversations, then every change is 403 insufficient_scope and reads still work', async () => {
    const s = await shop(['conversations:read']);
    const id = await conversationWith(s, '14155550704');
    expectError(await s.api('put', `/v1/conversations/${id}/assignee`).send({ email: 'a@example.com' }), 403, 'insufficient_scope');
    expectError(await s.api('delete', `/v1/conversations/${id}/assignee`), 403, 'insufficient_scope');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: ['x'] }), 403, 'insufficient_scope');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({ body: 'x' }), 403, 'insufficient_scope');
    expectError(await s.api('post', '/v1/canned-replies').send({ shortcut: 'x', text: 'x' }), 403, 'insufficient_scope');
    expect((await s.api('get', `/v1/conversations/${id}/notes`)).status).toBe(200);
    expect((await s.api('get', '/v1/canned-replies')).status).toBe(200);
  });
});

describe('setConversationLabels', () => {
  it('When labels are set, then they are stored lower case, sorted and once each (a leading space is refused by the contract pattern), the list filters by one, and the event carries both sets', async () => {
    const s = await shop();
    const a = await conversationWith(s, '14155550711');
    const b = await conversationWith(s, '14155550712');
    const set = await s.api('put', `/v1/conversations/${a}/labels`).send({ labels: ['VIP', 'Refund', 'vip'] });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(set.status).toBe(200);
    expect(set.body.data.conversation).toEqual({ id: a, labels: ['refund', 'vip'], previous_labels: [] });
    await s.api('put', `/v1/conversations/${b}/labels`).send({ labels: ['refund'] });
    const vip = await s.api('get', '/v1/conversations?label=Vip');
    expect(vip.body.data.conversations.map((c: any) => [c.id, c.labels])).toEqual([[a, ['refund', 'vip']]]);
    const refunds = await s.api('get', '/v1/conversations?label=refund');
    expect(refunds.body.data.conversations.map((c: any) => c.id).sort()).toEqual([a, b].sort());
    // The same set again: no event.
    await s.api('put', `/v1/conversations/${a}/labels`).send({ labels: ['vip', 'refund'] });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    const cleared = await s.api('put', `/v1/conversations/${a}/labels`).send({ labels: [] });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(cleared.body.data.conversation).toEqual({ id: a, labels: [], previous_labels: ['refund', 'vip'] });
    const events = (await eventsOf(s.projectId, 'conversation.labels_changed')).filter((e) => e.conversation_id === a);
    expect(events.map((e) => [e.labels, e.previous_labels])).toEqual([[['refund', 'vip'], []], [[], ['refund', 'vip']]]);
  });

  it('When a label is malformed, there are too many, or labels is missing, then 400 names the field and nothing changes', async () => {
    const s = await shop();
    const id = await conversationWith(s, '14155550713');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: ['!urgent'] }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: ['x'.repeat(41)] }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: 'vip' }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({}), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: [null] }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: [' vip'] }), 400, 'invalid_request');
    expectError(await s.api('put', '/v1/conversations/999999999/labels').send({ labels: ['vip'] }), 404, 'not_found');
    const got = await s.api('get', `/v1/conversations/${id}`);
    expect(got.body.data.conversation.labels).toEqual([]);
  });
});

describe('createConversationNote and listConversationNotes', () => {
  it('When a note is written, then it is listed with its author, its event is written, and nothing reaches the customer', async () => {
    const s = await shop();
    const id = await conversationWith(s, '14155550721');
    const created = await s.api('post', `/v1/conversations/${id}/notes`).send({ body: 'Refund approved; ship the label tomorrow.' });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    expect(created.status).toBe(201);
    expect(created.body.data.note).toMatchObject({ conversation_id: id, body: 'Refund approved; ship the label tomorrow.', author: { kind: 'api_key', name: 'test key' } });
    await s.api('post', `/v1/conversations/${id}/notes`).send({ body: 'Second note' });
    t.clock.advance(1000); // each change a second after the last: the events' order is theirs
    const page = await s.api('get', `/v1/conversations/${id}/notes?limit=1`);
    expect(page.body.data.notes.map((n: any) => n.body)).toEqual(['Second note']);
    const next = await s.api('get', `/v1/conversations/${id}/notes?limit=1&cursor=${encodeURIComponent(page.body.data.nextCursor)}`);
    expect(next.body.data.notes.map((n: any) => n.body)).toEqual(['Refund approved; ship the label tomorrow.']);
    const events = await eventsOf(s.projectId, 'conversation.note_added');
    expect(events.map((e) => e.note.body)).toEqual(['Refund approved; ship the label tomorrow.', 'Second note']);
    const sent = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${s.phoneNumberId}&to=14155550721`);
    expect(sent.body.data).toEqual([]);
    const { rows } = await t.db.pool.query("SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1 AND direction = 'outbound'", [id]);
    expect(rows[0].n).toBe(0);
  });

  it('When the note is blank, too long or not text, or the conversation unknown, then a clear 4xx', async () => {
    const s = await shop();
    const id = await conversationWith(s, '14155550722');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({ body: '   ' }), 400, 'invalid_request');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({ body: '' }), 400, 'invalid_request');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({ body: 'x'.repeat(4097) }), 400, 'invalid_request');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({ body: 7 }), 400, 'invalid_request');
    expectError(await s.api('post', `/v1/conversations/${id}/notes`).send({}), 400, 'invalid_request');
    expectError(await s.api('post', '/v1/conversations/999999999/notes').send({ body: 'x' }), 404, 'not_found');
    expectError(await s.api('get', '/v1/conversations/999999999/notes'), 404, 'not_found');
    expectError(await s.api('get', `/v1/conversations/${id}/notes?cursor=forged`), 400, 'invalid_cursor');
    expectError(await s.api('get', `/v1/conversations/${id}/notes?limit=0`), 400, 'invalid_request');
  });
});

describe('canned replies', () => {
  it('When canned replies are created, listed and deleted, then shortcuts are unique and bad input is refused', async () => {
    const s = await shop();
    const made = await s.api('post', '/v1/canned-replies').send({ shortcut: 'thanks', text: 'Thank you for your order!' });
    expect(made.status).toBe(201);
    expect(made.body.data.canned_reply).toMatchObject({ shortcut: 'thanks', text: 'Thank you for your order!' });
    await s.api('post', '/v1/canned-replies').send({ shortcut: 'address', text: 'Could you confirm your address?' });
    expectError(await s.api('post', '/v1/canned-replies').send({ shortcut: 'thanks', text: 'again' }), 409, 'canned_reply_exists');
    expectError(await s.api('post', '/v1/canned-replies').send({ shortcut: 'Thanks!', text: 'x' }), 400, 'invalid_request');
    expectError(await s.api('post', '/v1/canned-replies').send({ shortcut: 'blank', text: '  ' }), 400, 'invalid_request');
    expectError(await s.api('post', '/v1/canned-replies').send({ shortcut: 'x' }), 400, 'invalid_request');
    const list = await s.api('get', '/v1/canned-replies');
    expect(list.body.data.canned_replies.map((c: any) => c.shortcut)).toEqual(['address', 'thanks']);
    const id = made.body.data.canned_reply.id;
    expect((await s.api('delete', `/v1/canned-replies/${id}`)).body.data).toEqual({ deleted: id });
    expectError(await s.api('delete', `/v1/canned-replies/${id}`), 404, 'not_found');
    expectError(await s.api('delete', '/v1/canned-replies/zero'), 400, 'invalid_id');
    // Another project's canned reply is not found from here.
    const other = await shop();
    const theirs = await other.api('post', '/v1/canned-replies').send({ shortcut: 'thanks', text: 'Theirs' });
    expectError(await s.api('delete', `/v1/canned-replies/${theirs.body.data.canned_reply.id}`), 404, 'not_found');
  });
});

describe('authors and conversation events', () => {
  it('When the API sends, then the message names the key as its author and the customer\'s message names the customer', async () => {
    const s = await shop();
    const id = await conversationWith(s, '14155550731');
    const sent = await s.api('post', '/v1/messages').send({ type: 'text', phone: '+14155550731', content: 'It ships today.' });
    expect(sent.status).toBe(200);
    const msgs = await s.api('get', `/v1/conversations/${id}/messages`);
    expect(msgs.body.data.messages.map((m: any) => [m.direction, m.author.kind, m.author.name])).toEqual([
      ['outbound', 'api_key', 'test key'],
      ['inbound', 'customer', null],
    ]);
    const one = await s.api('get', `/v1/messages/${msgs.body.data.messages[0].id}`);
    expect(one.body.data.author).toMatchObject({ kind: 'api_key' });
  });

  it('When a registration subscribes to conversation events, then it needs conversations:read', async () => {
    const s = await shop(['webhooks:manage']);
    const res = await s.api('post', '/v1/webhooks').send({ url: 'https://example.com/hook', events: ['conversation.assigned'] });
    expectError(res, 403, 'insufficient_scope');
    const ok = await shop(['webhooks:manage', 'conversations:read']);
    const made = await ok.api('post', '/v1/webhooks').send({ url: 'https://example.com/hook', events: ['conversation.assigned', 'conversation.labels_changed', 'conversation.note_added'] });
    expect([400, 201]).toContain(made.status);
    if (made.status === 400) expect(made.body.error.code).toBe('webhook_target_forbidden'); // no DNS here
  });
});
