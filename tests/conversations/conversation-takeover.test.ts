/**
 * A person takes over a conversation in the dashboard (issue 47, item 9), over HTTP against the
 * simulated channel and the deployed bot: a reply goes through the API's send path (one message
 * per form however often it is posted), outside the 24-hour window only an approved template goes
 * (a text is refused with the spec's reason), the hand-over to a person keeps the bot silent until
 * the conversation is given back, and every refusal (no or stale CSRF token, a member) sends nothing.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { QUICK_BOT_APP } from '../support/bots.js';
import { inbound } from '../support/inbound.js';
import { csrfOf, person, uniqueEmail as email } from '../support/dashboard.js';
import { template } from '../support/broadcasts.js';

let t: TestApp;
useTestApp(QUICK_BOT_APP, (app) => (t = app));

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

async function shop() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'conversations:read', 'messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
}

/** The texts the simulated channel received for `to`, in order. */
async function sentTo(phoneNumberId: string, to: string): Promise<string[]> {
  const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&to=${to}`);
  return (res.body.data as Array<{ payload: any }>).map((m) => m.payload.text?.body ?? `template ${m.payload.template?.name}`);
}

async function conversationId(projectId: string, phone: string): Promise<string> {
  const { rows } = await t.db.pool.query<{ id: string }>(
    'SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2',
    [projectId, phone],
  );
  return rows[0].id;
}

/** The fields of the form whose action ends with `action` on the page (hidden ones and the textarea). */
function formOf(page: string, action: string): Record<string, string> {
  const start = page.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form ${action} on the page`);
  const form = page.slice(start, page.indexOf('</form>', start));
  const fields: Record<string, string> = {};
  for (const m of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields[m[1]] = m[2].replace(/&amp;/g, '&');
  return fields;
}

describe('a person takes over a conversation', () => {
  it('When an owner replies inside the window, then one message goes through the send path however often the form is posted; no or a stale CSRF token and a member send nothing', async () => {
    const s = await shop();
    await inbound(t, s.phoneNumberId, '14155550601', 'Where is my order?');
    const id = await conversationId(s.projectId, '14155550601');
    const owner = await person(t, s.projectId, email('owner'));
    const base = `/dashboard/projects/${s.projectId}/conversations/${id}`;
    const page = await owner.agent.get(base);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Where is my order?');
    const fields: Record<string, string> = { ...formOf(page.text, `${base}/reply`), text: 'It left today <b>by post</b>.' };

    // Refused before anything is sent: no CSRF token, a stale one, a member.
    const { _csrf: _dropped, ...noToken } = fields;
    expect((await owner.agent.post(`${base}/reply`).type('form').send(noToken)).status).toBe(403);
    expect((await owner.agent.post(`${base}/reply`).type('form').send({ ...fields, _csrf: 'stale-token-of-an-old-session' })).status).toBe(403);
    const member = await person(t, s.projectId, email('member'), 'member');
    const memberPage = await member.agent.get(base);
    expect(memberPage.text).not.toContain(`${base}/reply`);
    expect(memberPage.text).not.toContain(`${base}/handover`);
    const refused = await member.agent.post(`${base}/reply`).type('form').send({ ...fields, _csrf: csrfOf(memberPage.text) });
    expect(refused.status).toBe(403);
    // An empty message and one over 4,096 characters: refused with the reason, nothing sent.
    const empty = await owner.agent.post(`${base}/reply`).type('form').send({ ...fields, text: '   ' });
    expect([empty.status, empty.text.includes('Write the message first; nothing was sent.')]).toEqual([400, true]);
    const long = await owner.agent.post(`${base}/reply`).type('form').send({ ...fields, text: '€'.repeat(4097) });
    expect([long.status, long.text.includes('A message has at most 4096 characters; nothing was sent.')]).toEqual([400, true]);
    expect(await sentTo(s.phoneNumberId, '14155550601')).toEqual([]);

    // Sent once, then the same form again (a double click, a reload): the same answer, one message.
    const first = await owner.agent.post(`${base}/reply`).type('form').send(fields);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe(`${base}?done=reply_sent`);
    const again = await owner.agent.post(`${base}/reply`).type('form').send(fields);
    expect([again.status, again.headers.location]).toEqual([303, `${base}?done=reply_sent`]);
    expect(await sentTo(s.phoneNumberId, '14155550601')).toEqual(['It left today <b>by post</b>.']);
    const after = await owner.agent.get(`${base}?done=reply_sent`);
    expect(after.text).toContain('It left today &lt;b&gt;by post&lt;/b&gt;.');
    expect(after.text).not.toContain('<b>by post</b>');
    const stored = await t.db.pool.query('SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1 AND direction = $2', [id, 'outbound']);
    expect(stored.rows[0].n).toBe(1);
    // As the API shows it: one text shape in both directions.
    const api = await request(t.app).get(`/v1/conversations/${id}/messages`).set(auth(s.key));
    expect(api.body.data.messages.map((m: any) => [m.direction, m.content.text.body])).toEqual([
      ['outbound', 'It left today <b>by post</b>.'],
      ['inbound', 'Where is my order?'],
    ]);
    const audit = await t.db.pool.query(`SELECT action, subject FROM dashboard_audit WHERE project_id = $1 AND action = 'conversation.reply'`, [s.projectId]);
    expect(audit.rows).toEqual([{ action: 'conversation.reply', subject: `conversation ${id}` }]);
  });

  it('When the window has closed, then a text is refused with the spec’s reason and nothing is sent, and an approved template with its variables goes', async () => {
    const s = await shop();
    await template(t, s.projectId, 'order_followup', 'Hi {{1}}, your order {{2}} is on its way.', 'UTILITY');
    await inbound(t, s.phoneNumberId, '14155550611', 'hello');
    const id = await conversationId(s.projectId, '14155550611');
    const owner = await person(t, s.projectId, email('owner'));
    const base = `/dashboard/projects/${s.projectId}/conversations/${id}`;
    const open = await owner.agent.get(base);
    const textForm = { ...formOf(open.text, `${base}/reply`), text: 'Still there?' };
    // 25 hours later for the window (the session's own clock is left alone).
    await t.db.pool.query(`UPDATE conversations SET last_inbound_at = last_inbound_at - interval '25 hours', last_message_at = last_message_at - interval '25 hours' WHERE id = $1`, [id]);
    // The text form of a page loaded while the window was open: refused with the reason, the text kept.
    const late = await owner.agent.post(`${base}/reply`).type('form').send(textForm);
    expect(late.status).toBe(409);
    expect(late.text).toContain('Not sent: The customer has not written in the last 24 hours, so only an approved template can be sent. (outside_24h_window)');
    expect(late.text).toContain('<span class="message-text" id="unsent-text">Still there?</span>');
    expect(await sentTo(s.phoneNumberId, '14155550611')).toEqual([]);

    const closed = await owner.agent.get(base);
    expect(closed.text).not.toContain('name="kind" value="text"');
    expect(closed.text).toContain('order_followup (en_US, utility)');
    const chosen = await owner.agent.get(`${base}?template=${encodeURIComponent('order_followup@en_US')}`);
    expect(chosen.text).toContain('Hi {{1}}, your order {{2}} is on its way.');
    const fields = { ...formOf(chosen.text, `${base}/reply`), var1: 'Ada', var2: '#1042' };
    // A variable missing: the send path's reason (template_variable_mismatch), nothing sent.
    const { var2: _missing, ...short2 } = fields;
    const short = await owner.agent.post(`${base}/reply`).type('form').send(short2);
    expect(short.status).toBe(400);
    expect(short.text).toContain('template_variable_mismatch');
    const sent = await owner.agent.post(`${base}/reply`).type('form').send(fields);
    expect([sent.status, /role="alert">([^<]*)/.exec(sent.text)?.[1]]).toEqual([303, undefined]);
    expect(await sentTo(s.phoneNumberId, '14155550611')).toEqual(['template order_followup']);
  });

  it('When a person takes over, then the bot is not handed the customer’s messages until the conversation is given back', async () => {
    const s = await shop();
    expect((await request(t.app).post('/v1/deployments').set(auth(s.key)).send({})).status).toBeLessThan(300);
    await inbound(t, s.phoneNumberId, '14155550621', 'hello');
    await t.bot!.whenIdle();
    const said = (text: string) => `You said: ${text}. Write "menu" for options.`;
    expect(await sentTo(s.phoneNumberId, '14155550621')).toEqual([said('hello')]);
    const id = await conversationId(s.projectId, '14155550621');
    const owner = await person(t, s.projectId, email('owner'));
    const base = `/dashboard/projects/${s.projectId}/conversations/${id}`;
    const page = await owner.agent.get(base);
    const take = await owner.agent.post(`${base}/handover`).type('form').send(formOf(page.text, `${base}/handover`));
    expect([take.status, take.headers.location]).toEqual([303, `${base}?done=handed_to_human`]);
    const held = await owner.agent.get(take.headers.location);
    expect(held.text).toMatch(/id="conversation-state">handover/);
    expect(held.text).toContain('Give back to the bot');

    await inbound(t, s.phoneNumberId, '14155550621', 'I want a person');
    await t.bot!.whenIdle();
    expect(await sentTo(s.phoneNumberId, '14155550621')).toEqual([said('hello')]);
    const log = await t.db.pool.query(`SELECT message FROM bot_logs WHERE project_id = $1 AND message LIKE '%not handed to the bot%'`, [s.projectId]);
    expect(log.rows).toHaveLength(1);
    const reply = await owner.agent.post(`${base}/reply`).type('form').send({ ...formOf(held.text, `${base}/reply`), text: 'Hi, Sam here.' });
    expect(reply.status).toBe(303);

    const back = await owner.agent.post(`${base}/handover`).type('form').send(formOf(held.text, `${base}/handover`));
    expect(back.headers.location).toBe(`${base}?done=handed_to_bot`);
    await inbound(t, s.phoneNumberId, '14155550621', 'thanks');
    await t.bot!.whenIdle();
    expect(await sentTo(s.phoneNumberId, '14155550621')).toEqual([said('hello'), 'Hi, Sam here.', said('thanks')]);
    const audit = await t.db.pool.query(`SELECT before, after FROM dashboard_audit WHERE project_id = $1 AND action = 'conversation.state' ORDER BY id`, [s.projectId]);
    expect(audit.rows).toEqual([
      { before: { state: 'unstructured' }, after: { state: 'handover' } },
      { before: { state: 'handover' }, after: { state: 'unstructured' } },
    ]);
    // A member cannot hand it over.
    const member = await person(t, s.projectId, email('member'), 'member');
    const csrf = csrfOf((await member.agent.get(base)).text);
    expect((await member.agent.post(`${base}/handover`).type('form').send({ _csrf: csrf, _once: 'a'.repeat(32), to: 'human' })).status).toBe(403);
    expect((await t.db.pool.query('SELECT state FROM conversations WHERE id = $1', [id])).rows[0].state).toBe('unstructured');
  });

  it('When the page polls /live, then it gets the state, the window and the newest messages as JSON; a stranger gets 404', async () => {
    const s = await shop();
    await inbound(t, s.phoneNumberId, '14155550631', 'first <img src=x onerror=alert(1)>');
    const id = await conversationId(s.projectId, '14155550631');
    const member = await person(t, s.projectId, email('member'), 'member');
    const live = await member.agent.get(`/dashboard/projects/${s.projectId}/conversations/${id}/live`);
    expect(live.status).toBe(200);
    // The inbox's chat (issue 60): items oldest first, each with its author.
    expect(live.body).toMatchObject({ state: 'unstructured', assignee: 'nobody', labels: '—', items: [{ kind: 'inbound', author: 'Customer', authorKind: 'customer', text: 'first <img src=x onerror=alert(1)>', meta: 'text · received' }] });
    expect(live.body.window).toMatch(/^open until /);
    const other = await shop();
    const outsider = await person(t, other.projectId, email('x'));
    expect((await outsider.agent.get(`/dashboard/projects/${s.projectId}/conversations/${id}/live`)).status).toBe(404);
  });
});
