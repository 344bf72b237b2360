/**
 * The dashboard's Contacts and Conversations pages over HTTP (their changes: conversation-takeover.test.ts):
 * every role may look, someone without a role gets 404, a search finds by phone digits, name,
 * username or BSUID, a username customer shows username and BSUID (never "+null"), texts show in
 * both directions, markup in a name, username or message is shown as text, lists page by keyset
 * with their search and filters (needs a reply, unread), another project's conversation is 404,
 * and the live progress of a campaign is JSON for the same roles.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { person, uniqueEmail as email } from '../support/dashboard.js';
import { api, projectWithKey, seedContacts } from '../support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

async function conversation(projectId: string, phone: string, text: string, at = t.clock.now()) {
  const c = (await t.db.pool.query<{ id: string }>('SELECT id FROM contacts WHERE project_id = $1 AND phone = $2', [projectId, phone])).rows[0];
  const v = await t.db.pool.query<{ id: string }>(
    `INSERT INTO conversations (project_id, contact_id, state, last_message_at, last_inbound_at, created_at, updated_at) VALUES ($1, $2, 'unstructured', $3, $3, $3, $3) RETURNING id::text`,
    [projectId, c.id, at],
  );
  await message(projectId, v.rows[0].id, 'inbound', { type: 'text', text: { body: text } }, at);
  return v.rows[0].id;
}

/** A message as the service stores it: inbound in the channel's shape, outbound in the request's. */
async function message(projectId: string, conversationId: string, direction: 'inbound' | 'outbound', content: object, at = t.clock.now()) {
  await t.db.pool.query(
    `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
    [projectId, conversationId, `wamid.${Math.random().toString(36).slice(2)}`, direction, (content as { type: string }).type, JSON.stringify(content), direction === 'inbound' ? 'received' : 'delivered', at],
  );
  if (direction === 'outbound') await t.db.pool.query('UPDATE conversations SET last_message_at = $2 WHERE id = $1', [conversationId, at]);
}

/** A customer known by username and BSUID only (WhatsApp withholds the phone). */
async function usernameCustomer(projectId: string, username: string, userId: string, name: string | null = null) {
  const { rows } = await t.db.pool.query<{ id: string }>(
    `INSERT INTO contacts (project_id, phone, user_id, username, name, created_at, updated_at) VALUES ($1, NULL, $2, $3, $4, now(), now()) RETURNING id::text`,
    [projectId, userId, username, name],
  );
  return rows[0].id;
}

describe('Contacts and Conversations pages', () => {
  it('When a member looks, then contacts are searchable by phone, name, username and BSUID, a username customer has no "+null", consent and tags show, and markup is text', async () => {
    const { project } = await projectWithKey(t);
    await seedContacts(t, project.id, [
      { phone: '14155550301', name: 'Ada <b>Lovelace</b>', tags: ['vip'], optedIn: true },
      { phone: '14155550302', name: 'Bo', optedOut: true },
      { phone: '4915112345678', name: 'Cy' },
    ]);
    await usernameCustomer(project.id, 'bo_the_<i>cat</i>', 'US.13491208655302741918');
    const member = await person(t, project.id, email('member'), 'member');
    const all = await member.agent.get(`/dashboard/projects/${project.id}/contacts`);
    expect(all.status).toBe(200);
    expect(all.text).toContain('Ada &lt;b&gt;Lovelace&lt;/b&gt;');
    expect(all.text).not.toContain('<b>Lovelace</b>');
    expect(all.text).not.toContain('+null');
    expect(all.text).toContain('@bo_the_&lt;i&gt;cat&lt;/i&gt;');
    expect(all.text).toContain('<code>US.13491208655302741918</code>');
    const search = async (q: string) => (await member.agent.get(`/dashboard/projects/${project.id}/contacts?q=${encodeURIComponent(q)}`)).text;
    expect(await search('+1 415-555-0301')).toContain('+14155550301');
    expect(await search('+1 415-555-0301')).not.toContain('+14155550302');
    expect(await search('@bo_the')).toContain('US.13491208655302741918');
    expect(await search('bo_the')).not.toContain('+14155550302');
    expect(await search('US.1349120865')).toContain('@bo_the_');
    expect(await search('bo')).toMatch(/\+14155550302[\s\S]*opted out/);
    expect(await search('ada')).toMatch(/vip/);
    expect(await search('%')).toContain('No contact matches.');
    expect(await search('nobody')).toContain('No contact matches.');
  });

  it('When a conversation is opened, then inbound and outbound texts show as text, a username customer shows username and BSUID; another project’s conversation and a stranger are 404', async () => {
    const { project } = await projectWithKey(t);
    await seedContacts(t, project.id, [{ phone: '14155550311', name: 'Dee' }]);
    const id = await conversation(project.id, '14155550311', 'Hi <script>alert(1)</script>');
    await message(project.id, id, 'outbound', { type: 'text', content: 'Hello Dee, how can we help?' });
    const owner = await person(t, project.id, email('owner'));
    const list = await owner.agent.get(`/dashboard/projects/${project.id}/conversations?filter=all`);
    expect(list.text).toContain(`/conversations/${id}`);
    const one = await owner.agent.get(`/dashboard/projects/${project.id}/conversations/${id}`);
    expect(one.status).toBe(200);
    expect(one.text).toContain('Hi &lt;script&gt;alert(1)&lt;/script&gt;');
    // The inbox's chat (issue 60): one bubble per message, its author named.
    expect(one.text).toContain('<p class="message-text">Hello Dee, how can we help?</p>');
    expect(one.text).not.toContain('{&quot;body&quot;');
    expect(one.text).toMatch(/<li class="bubble inbound"[^>]*><p class="by"><span class="author">Customer<\/span>/);

    const contact = await usernameCustomer(project.id, 'eve.<b>x</b>', 'US.99991208655302741918', 'Eve');
    const v = await t.db.pool.query<{ id: string }>(
      `INSERT INTO conversations (project_id, contact_id, state, last_message_at, last_inbound_at, created_at, updated_at) VALUES ($1, $2, 'unstructured', now(), now(), now(), now()) RETURNING id::text`,
      [project.id, contact],
    );
    const eve = await owner.agent.get(`/dashboard/projects/${project.id}/conversations/${v.rows[0].id}`);
    expect(eve.text).not.toContain('+null');
    expect(eve.text).toContain('<dt>Username</dt><dd>@eve.&lt;b&gt;x&lt;/b&gt;</dd>');
    expect(eve.text).toContain('<dt>BSUID</dt><dd><code>US.99991208655302741918</code></dd>');
    expect(eve.text).not.toContain('<dt>Phone</dt>');

    const other = await projectWithKey(t);
    const outsider = await person(t, other.project.id, email('other'));
    expect((await outsider.agent.get(`/dashboard/projects/${other.project.id}/conversations/${id}`)).status).toBe(404);
    expect((await outsider.agent.get(`/dashboard/projects/${project.id}/conversations`)).status).toBe(404);
    expect((await owner.agent.get(`/dashboard/projects/${project.id}/conversations/not-a-number`)).status).toBe(404);
  });

  it('When a customer wrote again after days of silence, then the contact pane lists the earlier exchanges as past conversations, newest first', async () => {
    const { project } = await projectWithKey(t);
    await seedContacts(t, project.id, [{ phone: '14155550321', name: 'Fay' }]);
    const day = 24 * 3600_000;
    const now = t.clock.now().getTime();
    const id = await conversation(project.id, '14155550321', 'Is my order shipped?', new Date(now - 10 * day));
    await message(project.id, id, 'outbound', { type: 'text', text: { body: 'Yes, today.' } }, new Date(now - 10 * day + 60_000));
    await message(project.id, id, 'inbound', { type: 'text', text: { body: 'Can I return it?' } }, new Date(now - 3 * day));
    // 23 hours later: the same exchange (the window had not closed).
    await message(project.id, id, 'outbound', { type: 'text', text: { body: 'Within 30 days.' } }, new Date(now - 3 * day + 23 * 3600_000));
    await message(project.id, id, 'inbound', { type: 'text', text: { body: 'Hello again' } }, new Date(now - 60_000));
    const owner = await person(t, project.id, email('owner'), 'owner');
    const page = (await owner.agent.get(`/dashboard/projects/${project.id}/conversations/${id}`)).text;
    const past = page.match(/<ol class="history past"[^>]*>([\s\S]*?)<\/ol>/)?.[1] ?? '';
    expect([...past.matchAll(/<li>[^<]*: (\d+ messages?)<\/li>/g)].map((m) => m[1])).toEqual(['2 messages', '2 messages']);

    // A customer of one exchange has no past.
    await seedContacts(t, project.id, [{ phone: '14155550322', name: 'Gus' }]);
    const fresh = await conversation(project.id, '14155550322', 'First words', new Date(now));
    const one = (await owner.agent.get(`/dashboard/projects/${project.id}/conversations/${fresh}`)).text;
    expect(one).toContain('id="no-past"');
    expect(one).not.toContain('class="history past"');
  });
});

describe('Contacts and Conversations pages', () => {
  it('When there are more than a page, then conversations and contacts page on by keyset with the search and filter kept; a cursor of another search is refused', async () => {
    const { project } = await projectWithKey(t);
    const phones = Array.from({ length: 30 }, (_, i) => `1415555${String(4000 + i)}`);
    await seedContacts(t, project.id, phones.map((phone, i) => ({ phone, name: `Customer ${i}` })));
    const start = t.clock.now().getTime() - 3600_000;
    const ids: string[] = [];
    for (const [i, phone] of phones.entries()) ids.push(await conversation(project.id, phone, `message ${i}`, new Date(start + i * 1000)));
    // Replied to: every third conversation (it no longer needs a reply).
    for (let i = 0; i < 30; i += 3) await message(project.id, ids[i], 'outbound', { type: 'text', content: 'answered' }, new Date(start + i * 1000 + 500));
    const owner = await person(t, project.id, email('pager'));
    const base = `/dashboard/projects/${project.id}`;
    const customers = (page: string) => [...page.matchAll(/>Customer (\d+)</g)].map((m) => Number(m[1]));
    const next = (page: string) => /href="([^"]+)" rel="next"/.exec(page)?.[1].replace(/&amp;/g, '&');

    const first = await owner.agent.get(`${base}/conversations?filter=all`);
    expect(customers(first.text)).toEqual(Array.from({ length: 25 }, (_, i) => 29 - i));
    const second = await owner.agent.get(next(first.text)!);
    expect(customers(second.text)).toEqual([4, 3, 2, 1, 0]);
    expect(next(second.text)).toBeUndefined();

    // Needs a reply: the 20 the shop has not answered; the filter and the search stay in the next link.
    const needs = await owner.agent.get(`${base}/conversations?filter=needs_reply`);
    expect(customers(needs.text)).toHaveLength(20);
    expect(needs.text).toContain('needs a reply');
    const searched = await owner.agent.get(`${base}/conversations?q=${encodeURIComponent('Customer 1')}&filter=needs_reply`);
    expect(customers(searched.text).sort((a, b) => a - b)).toEqual([1, 10, 11, 13, 14, 16, 17, 19]);
    // Unread until a person opens it; opened, it is read.
    expect(customers((await owner.agent.get(`${base}/conversations?filter=unread`)).text)).toHaveLength(25);
    await owner.agent.get(`${base}/conversations/${ids[29]}`);
    const unread = await owner.agent.get(`${base}/conversations?filter=unread`);
    expect(customers(unread.text)).not.toContain(29);
    expect(customers(unread.text)[0]).toBe(28);

    // Contacts: the same paging (newest first) and filters.
    const contacts = await owner.agent.get(`${base}/contacts`);
    expect(customers(contacts.text)).toHaveLength(25);
    const more = await owner.agent.get(next(contacts.text)!);
    expect(customers(more.text)).toHaveLength(5);
    expect(customers((await owner.agent.get(`${base}/contacts?filter=needs_reply`)).text)).toHaveLength(20);
    expect(customers((await owner.agent.get(`${base}/contacts?filter=unread`)).text)).not.toContain(29);

    // A cursor taken to another search: refused with a page that says so (never a 500).
    const cursor = new URL(next(first.text)!, 'http://x').searchParams.get('cursor')!;
    const stale = await owner.agent.get(`${base}/conversations?filter=unread&cursor=${encodeURIComponent(cursor)}`);
    expect(stale.status).toBe(400);
    expect(stale.text).toContain('This page link is out of date');
    expect((await owner.agent.get(`${base}/contacts?cursor=garbage`)).status).toBe(400);
  });

  it('When a campaign page polls its progress, then it gets JSON with the status line; a stranger gets 404', async () => {
    const { project, key } = await projectWithKey(t);
    await seedContacts(t, project.id, [{ phone: '14155550321', name: 'Eve', optedIn: true }]);
    await t.db.prisma.template.create({ data: { id: `tpl_${project.id}_p`, projectId: project.id, name: 'p', language: 'en_US', category: 'UTILITY', status: 'APPROVED', components: [{ type: 'BODY', text: 'Hi' }] } });
    const b = await api(t, key).post('/v1/broadcasts', { name: 'P', template_name: 'p', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } });
    expect(b.status).toBe(201);
    const id = b.body.data.broadcast.id;
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
    const owner = await person(t, project.id, email('poll'));
    const res = await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}/progress`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'scheduled', status_line: 'scheduled', live: true, total: 1, done: 0 });
    const other = await projectWithKey(t);
    const outsider = await person(t, other.project.id, email('x'));
    expect((await outsider.agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}/progress`)).status).toBe(404);
  });
});
