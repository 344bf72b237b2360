/**
 * The inbox's queue through HTTP (issue 68, item 1 and 3): "needs a reply" is every open
 * conversation whose customer waits for a person (the bot's and a campaign's messages are no
 * answer; a campaign-only conversation stays out until the customer writes), with the wait;
 * resolve, snooze (ended by the service's clock, not a sleep) and reopen in the API and the inbox;
 * labels changed by deltas; an inbox form drawn from a value a colleague changed since is refused
 * in words, and a stale labels form merges instead of dropping the colleague's label.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { csrfOf, person, uniqueEmail as email } from '../support/dashboard.js';
import { expectError } from '../support/expect-error.js';

let t: TestApp;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => {
  t = app;
});

async function shop(scopes = ['conversations:read', 'conversations:write', 'messages:send']) {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, scopes)).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const api = (method: 'get' | 'put' | 'post' | 'delete' | 'patch', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId, api };
}
type Shop = Awaited<ReturnType<typeof shop>>;

/** The customer writes (through the simulator's webhook); returns the conversation's id. */
async function customerWrites(s: Shop, from: string, text = 'Where is my order?'): Promise<number> {
  const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: s.phoneNumberId, from, name: 'Ada', text });
  expect(res.status).toBe(200);
  const { rows } = await t.db.pool.query<{ id: string }>(
    'SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2',
    [s.projectId, from],
  );
  return Number(rows[0].id);
}

/**
 * An outbound message recorded as the bot's or a campaign's send would be (their send references,
 * lib/conversations/authors.ts): the test needs their authorship, not a deployed bot or a campaign run.
 */
async function recordedSend(s: Shop, conversationId: number, ref: string): Promise<void> {
  await t.db.pool.query(
    `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, send_ref, sent_at, status_at)
     VALUES ($1, $2, $3, 'outbound', 'text', '{"text":{"body":"A colleague will answer you shortly."}}', 'sent', $3, $4, $4)`,
    [s.projectId, conversationId, ref, t.clock.now()],
  );
}

/** A conversation with only a campaign's message: no customer message. */
async function campaignOnly(s: Shop, phone: string): Promise<number> {
  const { rows } = await t.db.pool.query<{ id: string }>(
    `WITH ct AS (INSERT INTO contacts (project_id, phone, created_at, updated_at) VALUES ($1, $2, $3, $3) RETURNING id)
     INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at) SELECT $1, id, $3, $3, $3 FROM ct RETURNING id::text`,
    [s.projectId, phone, t.clock.now()],
  );
  const id = Number(rows[0].id);
  await recordedSend(s, id, `snd_cmp${phone}`);
  return id;
}

async function customerConversation(s: Shop, phone: string): Promise<number> {
  const { rows } = await t.db.pool.query<{ id: string }>(
    'SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2', [s.projectId, phone]);
  return Number(rows[0].id);
}

async function queue(s: Shop, extra = ''): Promise<number[]> {
  const res = await s.api('get', `/v1/conversations?needs_reply=true${extra}`);
  expect(res.status).toBe(200);
  return res.body.data.conversations.map((c: any) => c.id).sort();
}

describe('needs a reply', () => {
  it('When the bot hands over or answers with its menu, then the customer still waits; an API key\'s answer takes them out; a campaign-only conversation stays out until the customer writes', async () => {
    const s = await shop();
    const handedOver = await customerWrites(s, '14155550801', 'I want a human');
    await recordedSend(s, handedOver, `snd_bot${Date.now()}a`);
    const photo = await customerWrites(s, '14155550802', 'My box arrived broken');
    await recordedSend(s, photo, `snd_bot${Date.now()}b`);
    const answered = await customerWrites(s, '14155550803');
    expect((await s.api('post', '/v1/messages').send({ type: 'text', phone: '+14155550803', content: 'It ships today.' })).status).toBe(200);
    const campaign = await campaignOnly(s, '14155550804');

    expect(await queue(s)).toEqual([handedOver, photo].sort());
    const others = await s.api('get', '/v1/conversations?needs_reply=false');
    expect(others.body.data.conversations.map((c: any) => c.id).sort()).toEqual([answered, campaign].sort());

    // The customer of the campaign answers: now they wait.
    await customerWrites(s, '14155550804', 'Is the offer still on?');
    expect(await queue(s)).toEqual([handedOver, photo, campaign].sort());
  });

  it('When a conversation is resolved or snoozed, then it leaves the queue; the customer\'s message reopens it and a snooze ends when the clock passes its time', async () => {
    const s = await shop();
    const a = await customerWrites(s, '14155550811');
    const b = await customerWrites(s, '14155550812');

    const resolved = await s.api('put', `/v1/conversations/${a}/resolution`).send({ resolution: 'resolved' });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data.conversation).toEqual({ id: a, resolution: 'resolved', snoozed_until: null, previous_resolution: 'open' });
    const until = new Date(t.clock.now().getTime() + 3_600_000).toISOString();
    const snoozed = await s.api('put', `/v1/conversations/${b}/resolution`).send({ resolution: 'snoozed', snoozed_until: until });
    expect(snoozed.body.data.conversation).toMatchObject({ resolution: 'snoozed', snoozed_until: until });
    expect(await queue(s)).toEqual([]);
    expect((await s.api('get', `/v1/conversations/${b}`)).body.data.conversation).toMatchObject({ resolution: 'snoozed', snoozed_until: until });
    expect((await s.api('get', '/v1/conversations?resolution=resolved')).body.data.conversations.map((c: any) => c.id)).toEqual([a]);

    await customerWrites(s, '14155550811', 'One more thing');
    expect(await queue(s)).toEqual([a]);
    expect((await s.api('get', `/v1/conversations/${a}`)).body.data.conversation.resolution).toBe('open');

    t.clock.advance(3_600_000 + 1000);
    expect(await queue(s)).toEqual([a, b].sort());
    expect((await s.api('get', `/v1/conversations/${b}`)).body.data.conversation).toMatchObject({ resolution: 'open', snoozed_until: null });
  });

  it('When the resolution is malformed, the snooze has no time, a past time or a time too far, or the conversation is unknown, then a clear 4xx and nothing changes', async () => {
    const s = await shop();
    const id = await customerWrites(s, '14155550821');
    const past = new Date(t.clock.now().getTime() - 1000).toISOString();
    const far = new Date(t.clock.now().getTime() + 91 * 86_400_000).toISOString();
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'snoozed' }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'snoozed', snoozed_until: past }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'snoozed', snoozed_until: far }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'resolved', snoozed_until: far }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'closed' }), 400, 'invalid_request');
    expectError(await s.api('put', `/v1/conversations/${id}/resolution`).send({}), 400, 'invalid_request');
    expectError(await s.api('put', '/v1/conversations/999999999/resolution').send({ resolution: 'resolved' }), 404, 'not_found');
    expectError(await s.api('put', '/v1/conversations/abc/resolution').send({ resolution: 'resolved' }), 400, 'invalid_id');
    const reader = await shop(['conversations:read']);
    expectError(await reader.api('put', `/v1/conversations/${id}/resolution`).send({ resolution: 'resolved' }), 403, 'insufficient_scope');
    expect(await queue(s)).toEqual([id]);
  });
});

describe('changeConversationLabels', () => {
  it('When two callers change labels from the same read, then both changes are kept; a label both added and removed is refused', async () => {
    const s = await shop();
    const id = await customerWrites(s, '14155550831');
    await s.api('put', `/v1/conversations/${id}/labels`).send({ labels: ['new'] });
    const one = await s.api('patch', `/v1/conversations/${id}/labels`).send({ add: ['VIP'] });
    expect(one.body.data.conversation).toEqual({ id, labels: ['new', 'vip'], previous_labels: ['new'] });
    const two = await s.api('patch', `/v1/conversations/${id}/labels`).send({ add: ['refund'], remove: ['new'] });
    expect(two.body.data.conversation).toEqual({ id, labels: ['refund', 'vip'], previous_labels: ['new', 'vip'] });
    expectError(await s.api('patch', `/v1/conversations/${id}/labels`).send({ add: ['x'], remove: ['x'] }), 400, 'invalid_request');
    expectError(await s.api('patch', `/v1/conversations/${id}/labels`).send({}), 400, 'invalid_request');
    expectError(await s.api('patch', `/v1/conversations/${id}/labels`).send({ add: ['!bad'] }), 400, 'invalid_request');
    expectError(await s.api('patch', '/v1/conversations/999999999/labels').send({ add: ['x'] }), 404, 'not_found');
  });
});

const pageOf = (projectId: string, path = '') => `/dashboard/projects/${projectId}/conversations${path}`;

/** A form's fields as the page drew them (the hidden ones included), from its action. */
function formFields(html: string, action: string, nth = 0): Record<string, string> {
  const forms = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].filter((m) => m[1].endsWith(action));
  const form = forms[nth];
  if (!form) throw new Error(`no form ${action}`);
  const fields: Record<string, string> = {};
  for (const m of form[2].matchAll(/<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"/g)) fields[m[1]] = m[2].replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&quot;/g, '"');
  return fields;
}

describe('the inbox', () => {
  it('When the inbox opens, then the default view is who waits, with the wait; a campaign-only conversation is under All only', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const waiting = await customerWrites(s, '14155550841');
    await recordedSend(s, waiting, `snd_bot${Date.now()}c`);
    const campaign = await campaignOnly(s, '14155550842');
    t.clock.advance(12 * 60_000);
    const page = await owner.agent.get(pageOf(s.projectId));
    expect(page.status).toBe(200);
    expect(page.text).toContain(`data-conversation="${waiting}"`);
    expect(page.text).not.toContain(`data-conversation="${campaign}"`);
    expect(page.text).toMatch(/needs a reply, <span data-wait>waiting 12 min<\/span>/);
    const all = await owner.agent.get(pageOf(s.projectId, '?filter=all'));
    expect(all.text).toContain(`data-conversation="${campaign}"`);
  });

  it('When a person resolves or snoozes from the inbox, then it leaves the queue and comes back when the snooze ends', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const id = await customerWrites(s, '14155550851');
    const page = await owner.agent.get(pageOf(s.projectId, `/${id}`));
    const csrf = formFields(page.text, '/resolution')._csrf;
    const snooze = { ...formFields(page.text, '/resolution', 1), hours: '1'};
    expect(csrf).toBeTruthy();
    const res = await owner.agent.post(pageOf(s.projectId, `/${id}/resolution`)).type('form').send(snooze);
    expect(res.status).toBe(303);
    expect(await queue(s)).toEqual([]);
    const snoozedPage = await owner.agent.get(pageOf(s.projectId, `/${id}`));
    expect(snoozedPage.text).toContain('snoozed until');
    t.clock.advance(3_600_000 + 1000);
    expect(await queue(s)).toEqual([id]);
  });

  it('When a colleague changed the labels and the assignment meanwhile, then a stale labels form merges (the colleague\'s label survives) and a stale assignment is refused in words with the current value', async () => {
    const s = await shop();
    const ownerEmail = email('owner');
    const colleagueEmail = email('colleague');
    const owner = await person(t, s.projectId, ownerEmail, 'owner');
    const colleague = await person(t, s.projectId, colleagueEmail, 'member');
    const id = await customerWrites(s, '14155550861');
    const ownersPage = (await owner.agent.get(pageOf(s.projectId, `/${id}`))).text;
    const colleaguesPage = (await colleague.agent.get(pageOf(s.projectId, `/${id}`))).text;

    // The colleague labels and takes the conversation.
    const theirLabels = await colleague.agent.post(pageOf(s.projectId, `/${id}/labels`)).type('form')
      .send({ ...formFields(colleaguesPage, '/labels'), labels: 'vip'});
    expect(theirLabels.status).toBe(303);
    const theirAssign = await colleague.agent.post(pageOf(s.projectId, `/${id}/assign`)).type('form')
      .send({ ...formFields(colleaguesPage, '/assign'), email: colleagueEmail});
    expect(theirAssign.status).toBe(303);

    // The owner saves the forms of the page drawn before.
    const mine = await owner.agent.post(pageOf(s.projectId, `/${id}/labels`)).type('form')
      .send({ ...formFields(ownersPage, '/labels'), labels: 'refund'});
    expect(mine.status).toBe(303);
    expect(mine.headers.location).toContain('done=labels_merged');
    expect((await s.api('get', `/v1/conversations/${id}`)).body.data.conversation.labels).toEqual(['refund', 'vip']);

    const stale = await owner.agent.post(pageOf(s.projectId, `/${id}/assign`)).type('form')
      .send({ ...formFields(ownersPage, '/assign'), email: ownerEmail});
    expect(stale.status).toBe(409);
    expect(stale.text).toContain(`Not saved: someone changed the assignment while your page was open. It is now ${colleagueEmail} (your page showed nobody).`);
    expect(stale.text).toContain(`<span id="conversation-assignee">${colleagueEmail}</span>`);
    expect((await s.api('get', `/v1/conversations/${id}`)).body.data.conversation.assignee.email).toBe(colleagueEmail);

    // Drawn again, the same change is saved.
    const fresh = (await owner.agent.get(pageOf(s.projectId, `/${id}`))).text;
    const again = await owner.agent.post(pageOf(s.projectId, `/${id}/assign`)).type('form')
      .send({ ...formFields(fresh, '/assign'), email: ownerEmail});
    expect(again.status).toBe(303);
  });

  it('When a colleague took over or resolved meanwhile, or the thread changed hands, then the stale "Who answers", status and thread forms are refused in words and nothing changes', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const admin = await person(t, s.projectId, email('admin'), 'admin');
    const id = await customerWrites(s, '14155550891');
    const ownersPage = (await owner.agent.get(pageOf(s.projectId, `/${id}`))).text;
    const adminsPage = (await admin.agent.get(pageOf(s.projectId, `/${id}`))).text;

    expect((await admin.agent.post(pageOf(s.projectId, `/${id}/handover`)).type('form').send(formFields(adminsPage, '/handover'))).status).toBe(303);
    const handover = await owner.agent.post(pageOf(s.projectId, `/${id}/handover`)).type('form').send(formFields(ownersPage, '/handover'));
    expect(handover.status).toBe(409);
    expect(handover.text).toContain('Not saved: someone changed who answers while your page was open. It is now handover (a person answers) (your page showed unstructured).');

    expect((await admin.agent.post(pageOf(s.projectId, `/${id}/resolution`)).type('form').send(formFields(adminsPage, '/resolution'))).status).toBe(303);
    const resolve = await owner.agent.post(pageOf(s.projectId, `/${id}/resolution`)).type('form').send({ ...formFields(ownersPage, '/resolution', 1), hours: '4' });
    expect(resolve.status).toBe(409);
    expect(resolve.text).toContain('Not saved: someone changed the status while your page was open. It is now resolved (your page showed open).');
    expect((await s.api('get', `/v1/conversations/${id}`)).body.data.conversation).toMatchObject({ state: 'handover', resolution: 'resolved', snoozed_until: null });

    // The thread's forms carry what they were drawn from too: a page showing another app's hold is stale once this app holds it.
    const thread = await owner.agent.post(pageOf(s.projectId, `/${id}/thread`)).type('form').send({ ...formFields(ownersPage, '/thread', 1), drawn_thread: '1234567890' });
    expect(thread.status).toBe(409);
    expect(thread.text).toContain('It is now this app (your page showed app 1234567890)');
  });
});

describe('the inbox', () => {
  it('When auto-assignment is on, then each waiting customer goes to the available owner or admin with the fewest open conversations, up to the cap; past it the conversation stays unassigned', async () => {
    const s = await shop();
    const ownerEmail = email('owner');
    const adminEmail = email('admin');
    const owner = await person(t, s.projectId, ownerEmail, 'owner');
    const admin = await person(t, s.projectId, adminEmail, 'admin');
    const member = await person(t, s.projectId, email('member'), 'member');
    const assigneeOf = async (id: number) => (await s.api('get', `/v1/conversations/${id}`)).body.data.conversation.assignee?.email ?? null;
    const post = async (who: typeof owner, path: string, fields: Record<string, string>) => {
      const page = await who.agent.get(pageOf(s.projectId));
      const form = formFields(page.text, path);
      return who.agent.post(pageOf(s.projectId, path)).type('form').send({ ...form, ...fields });
    };

    // Off: nobody is given the conversation.
    const before = await customerWrites(s, '14155550871');
    expect(await assigneeOf(before)).toBeNull();

    expect((await post(owner, '/auto-assign', { auto_assign: 'on', cap: '1' })).status).toBe(303);
    expect((await post(owner, '/availability', {})).status).toBe(303);
    expect((await post(admin, '/availability', {})).status).toBe(303);
    // A member looks on: the forms are not theirs.
    const memberPage = await member.agent.get(pageOf(s.projectId));
    expect(memberPage.text).toContain('Owners and admins change it.');
    expect((await member.agent.post(pageOf(s.projectId, '/availability')).type('form').send({ _csrf: csrfOf(memberPage.text), available: '1' })).status).toBeGreaterThanOrEqual(400);

    const first = await customerWrites(s, '14155550872');
    const second = await customerWrites(s, '14155550873');
    const third = await customerWrites(s, '14155550874');
    expect([await assigneeOf(first), await assigneeOf(second)].sort()).toEqual([adminEmail, ownerEmail].sort());
    expect(await assigneeOf(third)).toBeNull(); // both at the cap: in everyone's "Unassigned"
    // The customer writing again in a conversation someone holds changes nothing.
    const held = await assigneeOf(first);
    await customerWrites(s, '14155550872', 'Still there?');
    expect(await assigneeOf(first)).toBe(held);

    // The one who resolves a conversation has room again: the unassigned customer's next message (one statement's path) goes to them.
    expect((await s.api('put', `/v1/conversations/${first}/resolution`).send({ resolution: 'resolved' })).status).toBe(200);
    await customerWrites(s, '14155550874', 'Hello?');
    expect(await assigneeOf(third)).toBe(held);
    const { rows } = await t.db.pool.query<{ data: any }>(
      `SELECT data FROM events WHERE project_id = $1 AND name = 'conversation.assigned' AND (data->>'conversation_id')::bigint = $2`, [s.projectId, third]);
    expect(rows.map((r) => r.data.by)).toEqual([{ kind: 'automation', id: null, name: 'auto_assignment' }]);
  });

  it('When the inbox is listed, then the tab counts who waits, each row previews its newest message and state, and the search finds words of a message', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const box = await customerWrites(s, '14155550881', 'The parcel came with a broken box, order 4471');
    const human = await customerWrites(s, '14155550882', 'Can I talk to someone?');
    expect((await s.api('patch', `/v1/conversations/${human}`).send({ state: 'handover' })).status).toBe(200);
    await customerWrites(s, '14155550883', 'Thanks');
    expect((await s.api('post', '/v1/messages').send({ type: 'text', phone: '+14155550883', content: 'You are welcome <b>!</b>' })).status).toBe(200);

    const page = await owner.agent.get(pageOf(s.projectId));
    expect(page.text).toContain('<title>(2) Inbox · Dashboard</title>');
    expect(page.text).toContain('<h1>Inbox</h1>');
    expect(page.text).toContain('<span class="preview muted">The parcel came with a broken box, order 4471</span>');
    expect(page.text).toMatch(/data-conversation="\d+"><td data-label="Customer"><a [^>]+>Ada<\/a>[^]*?data-mark="handover">a person holds it</);
    const all = await owner.agent.get(pageOf(s.projectId, '?filter=all'));
    expect(all.text).toContain('<span class="preview muted">Sent: You are welcome &lt;b&gt;!&lt;/b&gt;</span>');
    const live = await owner.agent.get(pageOf(s.projectId, '/list'));
    expect(live.body.tab).toBe('(2) ');

    const ids = (html: string) => [...html.matchAll(/data-conversation="(\d+)"/g)].map((m) => Number(m[1]));
    expect(ids((await owner.agent.get(pageOf(s.projectId, `?filter=all&q=${encodeURIComponent('broken box')}`))).text)).toEqual([box]);
    expect(ids((await owner.agent.get(pageOf(s.projectId, `?filter=all&q=${encodeURIComponent('4471')}`))).text)).toEqual([box]);
    expect(ids((await owner.agent.get(pageOf(s.projectId, `?filter=all&q=${encodeURIComponent('welcome')}`))).text)).toEqual([await customerConversation(s, '14155550883')]);
    expect(ids((await owner.agent.get(pageOf(s.projectId, `?filter=all&q=${encodeURIComponent('nothing like this')}`))).text)).toEqual([]);
    // Another project's words are not found here.
    const other = await shop();
    await customerWrites(other, '14155550884', 'broken box elsewhere');
    expect(ids((await owner.agent.get(pageOf(s.projectId, `?filter=all&q=${encodeURIComponent('elsewhere')}`))).text)).toEqual([]);
  });
});
