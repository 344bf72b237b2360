/**
 * The dashboard's read-only Contacts and Conversations pages over HTTP: every role may look,
 * someone without a role gets 404, a search finds by phone digits, name or username, markup in a
 * name or a message is shown as text, another project's conversation is 404, and the live
 * progress of a campaign is JSON for the same roles.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from './support/app.js';
import { person } from './support/dashboard.js';
import { api, projectWithKey, seedContacts } from './support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

const email = (who: string) => `${who}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}@example.com`;

async function conversation(projectId: string, phone: string, text: string) {
  const c = (await t.db.pool.query<{ id: string }>('SELECT id FROM contacts WHERE project_id = $1 AND phone = $2', [projectId, phone])).rows[0];
  const v = await t.db.pool.query<{ id: string }>(
    `INSERT INTO conversations (project_id, contact_id, state, last_message_at, created_at, updated_at) VALUES ($1, $2, 'unstructured', now(), now(), now()) RETURNING id::text`,
    [projectId, c.id],
  );
  await t.db.pool.query(
    `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at)
     VALUES ($1, $2, $3, 'inbound', 'text', $4, 'received', now(), now())`,
    [projectId, v.rows[0].id, `wamid.${Math.random().toString(36).slice(2)}`, JSON.stringify({ text })],
  );
  return v.rows[0].id;
}

describe('Contacts and Conversations pages', () => {
  it('When a member looks, then contacts are searchable by phone, name and username, consent and tags show, and markup is text', async () => {
    const { project } = await projectWithKey(t);
    await seedContacts(t, project.id, [
      { phone: '14155550301', name: 'Ada <b>Lovelace</b>', tags: ['vip'], optedIn: true },
      { phone: '14155550302', name: 'Bo', attributes: { username: 'bo_the_cat' }, optedOut: true },
      { phone: '4915112345678', name: 'Cy' },
    ]);
    const member = await person(t, project.id, email('member'), 'member');
    const all = await member.agent.get(`/dashboard/projects/${project.id}/contacts`);
    expect(all.status).toBe(200);
    expect(all.text).toContain('Ada &lt;b&gt;Lovelace&lt;/b&gt;');
    expect(all.text).not.toContain('<b>Lovelace</b>');
    const search = async (q: string) => (await member.agent.get(`/dashboard/projects/${project.id}/contacts?q=${encodeURIComponent(q)}`)).text;
    expect(await search('+1 415-555-0301')).toContain('+14155550301');
    expect(await search('+1 415-555-0301')).not.toContain('+14155550302');
    expect(await search('bo_the')).toMatch(/\+14155550302[\s\S]*opted out/);
    expect(await search('ada')).toMatch(/vip/);
    expect(await search('%')).toContain('No contact matches.');
    expect(await search('nobody')).toContain('No contact matches.');
  });

  it('When a conversation is opened, then its messages show with statuses; another project’s conversation and a stranger are 404', async () => {
    const { project } = await projectWithKey(t);
    await seedContacts(t, project.id, [{ phone: '14155550311', name: 'Dee' }]);
    const id = await conversation(project.id, '14155550311', 'Hi <script>alert(1)</script>');
    const owner = await person(t, project.id, email('owner'));
    const list = await owner.agent.get(`/dashboard/projects/${project.id}/conversations`);
    expect(list.text).toContain(`/conversations/${id}`);
    const one = await owner.agent.get(`/dashboard/projects/${project.id}/conversations/${id}`);
    expect(one.status).toBe(200);
    expect(one.text).toContain('Hi &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(one.text).toMatch(/from the customer<\/td><td data-label="Type">text<\/td>/);
    const other = await projectWithKey(t);
    const outsider = await person(t, other.project.id, email('other'));
    expect((await outsider.agent.get(`/dashboard/projects/${other.project.id}/conversations/${id}`)).status).toBe(404);
    expect((await outsider.agent.get(`/dashboard/projects/${project.id}/conversations`)).status).toBe(404);
    expect((await owner.agent.get(`/dashboard/projects/${project.id}/conversations/not-a-number`)).status).toBe(404);
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
