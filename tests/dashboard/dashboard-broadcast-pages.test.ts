/**
 * The dashboard's broadcast, templates, audit and overview pages over HTTP (issue 47, item 10):
 * the approval page's message (the template filled with its first recipient's values, as text),
 * money and plurals, the test send to the approver's number (one send for a form posted twice,
 * refused without its token, with a bad number, by a member, after approval), the confirmation
 * step, a live campaign's hold, waves and cancellations (page and /progress alike), a template's
 * text, the audit trail's field-level changes, and the overview's figures for today.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, projectWithKey, runUntil, seedContacts, template } from '../support/broadcasts.js';
import { cookieOf, openStream } from '../support/live.js';
import { money } from '../../http/dashboard/html.js';
import { person } from '../support/dashboard.js';
import { HOSTILE, RATE_CARD } from '../support/console.js';
import { quotaHoldReason } from '../../lib/broadcasts/quota-hold.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  await t.admin.call('put', '/admin/rate-card', RATE_CARD);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

const onceOf = (page: string) => /name="_once" value="([a-f0-9]{32})"/.exec(page)![1];
const simSends = async (phoneNumberId: string) =>
  (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=100`)).body.data as Array<{ to: string; payload: any }>;

async function campaign() {
  const { project, key, phoneNumberId } = await projectWithKey(t);
  await template(t, project.id, 'spring_sale', 'Hello {{1}}, our spring sale starts today', 'MARKETING');
  await seedContacts(t, project.id, [
    { phone: '14155550101', name: `Ana ${HOSTILE}`, optedIn: true },
    { phone: '14155550102', name: 'Bo', optedIn: true },
  ]);
  const created = await api(t, key).post('/v1/broadcasts', {
    name: 'Spring sale', template_name: 'spring_sale', template_language: 'en_US',
    template_variables: { body: ['{{contact.name|friend}}'] }, audience: { filter: { match: 'all', conditions: [] } },
  });
  expect(created.status).toBe(201);
  const owner = await person(t, project.id, `owner-${project.id}@example.com`);
  return { project, key, phoneNumberId, id: created.body.data.broadcast.id as string, owner, base: `/dashboard/projects/${project.id}/broadcasts/${created.body.data.broadcast.id}` };
}

describe('approving a broadcast in the dashboard', () => {
  it('When an owner opens the approval page, then it shows the message its first recipient gets as text, money in cents and counted nouns, and confirms before approving', async () => {
    const { base, owner, project } = await campaign();
    const list = await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts`);
    // Approve on the list is a link to the confirmation page, not a form that approves at once.
    expect(list.text).toContain(`href="${base}/approve"`);
    expect(list.text).not.toContain(`action="${base}/approve"`);
    expect(list.text).toMatch(/<dd id="cost-estimate">about 0\.05 USD \(estimate from the rate card, marketing\); 2 recipients charged<\/dd>/);
    const page = await owner.agent.get(`${base}/approve`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Hello Ana &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;, our spring sale starts today');
    expect(page.text).not.toContain(HOSTILE);
    expect(page.text).toContain('for <strong>2 recipients</strong>');
    expect(page.text).toContain(`action="${base}/approve"`);
    expect(page.text).toContain('Approve and send to 2 recipients');
    expect(page.text).not.toMatch(/\b1 (users|recipients)\b/);
  });

  it('When an owner sends a test to their own number, then it goes once through the send path with the first recipient’s values and is audited; a bad number, no token, a member and an approved campaign are refused', async () => {
    const { base, owner, project, phoneNumberId } = await campaign();
    const page = (await owner.agent.get(`${base}/approve`)).text;
    const csrf = await owner.csrf();
    const form = { _csrf: csrf, _once: onceOf(page), phone: '+1 415 555 0199' };
    // A bad number: the send path's reason, nothing sent, and the token is free again.
    const bad = await owner.agent.post(`${base}/test-send`).type('form').send({ ...form, phone: 'not a number' });
    expect(bad.status).toBe(400);
    expect(await simSends(phoneNumberId)).toEqual([]);
    const noToken = await owner.agent.post(`${base}/test-send`).type('form').send({ _csrf: csrf, phone: form.phone });
    expect(noToken.status).toBe(400);
    const sent = await owner.agent.post(`${base}/test-send`).type('form').send(form);
    expect(sent.status).toBe(303);
    expect(sent.headers.location).toBe(`${base}/approve?done=test_sent`);
    // The same form again (a double click): the same answer, still one message.
    const again = await owner.agent.post(`${base}/test-send`).type('form').send(form);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(sent.headers.location);
    const sends = await simSends(phoneNumberId);
    expect(sends.map((m) => m.to)).toEqual(['14155550199']);
    expect(sends[0].payload.template.components[0].parameters[0].text).toBe(`Ana ${HOSTILE}`);
    expect((await owner.agent.get(sent.headers.location)).text).toContain('Test sent');
    const audit = await t.db.pool.query(`SELECT action, after FROM dashboard_audit WHERE project_id = $1 AND action = 'broadcast.test_send'`, [project.id]);
    expect(audit.rows).toHaveLength(1);
    expect(audit.rows[0].after).toMatchObject({ to: '+1 415 555 0199', template: 'spring_sale' });
    // A member reads the campaign but neither opens the confirmation nor sends a test.
    const member = await person(t, project.id, `member-${project.id}@example.com`, 'member');
    expect((await member.agent.get(`${base}/approve`)).status).toBe(403);
    const memberPage = (await member.agent.get(base)).text;
    expect(memberPage).toContain('The message that will go out');
    expect(memberPage).not.toContain('test-send');
    const refused = await member.agent.post(`${base}/test-send`).type('form').send({ _csrf: await member.csrf(), _once: onceOf(page), phone: form.phone });
    expect(refused.status).toBe(403);
    // Once approved there is no test and the confirmation page leads back to the campaign.
    expect((await owner.agent.post(`${base}/approve`).type('form').send({ _csrf: csrf })).status).toBe(303);
    expect((await owner.agent.get(`${base}/approve`)).headers.location).toBe(base);
    const late = await owner.agent.post(`${base}/test-send`).type('form').send({ ...form, _once: onceOf(page).replace(/^./, (c) => (c === 'a' ? 'b' : 'a')) });
    expect(late.status).toBe(409);
    expect(await simSends(phoneNumberId)).toHaveLength(1);
  });
});

describe('a carousel campaign’s test send', () => {
  it('When an owner sends a test of a carousel campaign, then the test carries the campaign’s cards (header links, the sample’s card variables), as the campaign sends them', async () => {
    const { project, key } = await projectWithKey(t);
    const card = (n: number) => ({ components: [{ type: 'HEADER', format: 'IMAGE' }, { type: 'BODY', text: `Plant ${n} for {{1}}` }, { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'More' }] }] });
    await t.db.prisma.template.create({
      data: {
        id: `tpl_${project.id}_plants`, projectId: project.id, name: 'spring_plants', language: 'en_US', category: 'MARKETING', status: 'APPROVED',
        components: [{ type: 'BODY', text: 'Our spring plants, {{1}}!' }, { type: 'CAROUSEL', cards: [card(1), card(2)] }],
      },
    });
    await seedContacts(t, project.id, [{ phone: '14155550111', name: 'Ana', optedIn: true }]);
    const created = await api(t, key).post('/v1/broadcasts', {
      name: 'Plants', template_name: 'spring_plants', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
      template_variables: {
        body: ['{{contact.name|friend}}'],
        cards: [{ header: { link: 'https://cdn.example.com/p1.jpg' }, body: ['{{contact.name|friend}}'] }, { header: { link: 'https://cdn.example.com/p2.jpg' }, body: ['you'] }],
      },
    });
    expect(created.status).toBe(201);
    const owner = await person(t, project.id, `owner-${project.id}@example.com`);
    const base = `/dashboard/projects/${project.id}/broadcasts/${created.body.data.broadcast.id}`;
    const page = (await owner.agent.get(`${base}/approve`)).text;
    const before = (await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data.length as number;
    const sent = await owner.agent.post(`${base}/test-send`).type('form').send({ _csrf: await owner.csrf(), _once: onceOf(page), phone: '+1 415 555 0198' });
    // Whatever the channel answers, the page says it (a redirect, or the refusal in words): never "0 were given (template.cards)".
    expect(sent.text ?? '').not.toContain('were given (template.cards)');
    const requests = ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ path: string; body: any }>).slice(before).filter((r) => r.path.endsWith('/messages'));
    expect(requests).toHaveLength(1);
    const carousel = requests[0].body.template.components.find((c: { type: string }) => c.type === 'carousel');
    expect(carousel.cards.map((c: any) => [c.card_index, c.components[0].parameters[0].image.link, c.components[1].parameters.map((p: any) => p.text)])).toEqual([
      [0, 'https://cdn.example.com/p1.jpg', ['Ana']],
      [1, 'https://cdn.example.com/p2.jpg', ['you']],
    ]);
  });

  it('When an owner sends a test of a campaign whose template has a copy-code button, then the button carries the campaign’s coupon code', async () => {
    const { project, key } = await projectWithKey(t);
    await t.db.prisma.template.create({
      data: {
        id: `tpl_${project.id}_code`, projectId: project.id, name: 'spring_code', language: 'en_US', category: 'MARKETING', status: 'APPROVED',
        components: [{ type: 'BODY', text: 'Your spring code, {{1}}' }, { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Stop' }, { type: 'COPY_CODE', example: 'SPRING25' }] }],
      },
    });
    await seedContacts(t, project.id, [{ phone: '14155550112', name: 'Ana', optedIn: true }]);
    const created = await api(t, key).post('/v1/broadcasts', {
      name: 'Code', template_name: 'spring_code', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } },
      template_variables: { body: ['{{contact.name|friend}}'], coupon_code: 'SPRING25' },
    });
    expect(created.status).toBe(201);
    const owner = await person(t, project.id, `owner-${project.id}@example.com`);
    const base = `/dashboard/projects/${project.id}/broadcasts/${created.body.data.broadcast.id}`;
    const page = (await owner.agent.get(`${base}/approve`)).text;
    const before = (await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data.length as number;
    await owner.agent.post(`${base}/test-send`).type('form').send({ _csrf: await owner.csrf(), _once: onceOf(page), phone: '+1 415 555 0197' });
    const requests = ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ path: string; body: any }>).slice(before).filter((r) => r.path.endsWith('/messages'));
    expect(requests).toHaveLength(1);
    expect(requests[0].body.template.components.filter((c: { type: string }) => c.type === 'button')).toEqual([
      { type: 'button', sub_type: 'copy_code', index: '1', parameters: [{ type: 'coupon_code', coupon_code: 'SPRING25' }] },
    ]);
  });
});

describe('a live campaign in the dashboard', () => {
  it('When the daily quota holds a campaign and a recipient opted out after approval, then the page and its live updates say which hold, the waves, and the cancellation with its reason', async () => {
    const { base, owner, id } = await campaign();
    expect((await owner.agent.post(`${base}/approve`).type('form').send({ _csrf: await owner.csrf() })).status).toBe(303);
    const now = t.clock.now();
    await t.db.pool.query(`UPDATE broadcasts SET status = 'sending', started_at = $2, status_reason = $3 WHERE id = $1`, [id, now, quotaHoldReason(new Date(now.getTime() + 3600_000))]);
    await t.db.pool.query(
      `UPDATE broadcast_recipients SET state = 'canceled', error_category = 'permanent', error_title = 'opted out after approval'
       WHERE id = (SELECT min(id) FROM broadcast_recipients WHERE broadcast_id = $1)`, [id]);
    const page = (await owner.agent.get(base)).text;
    expect(page).toContain('Held by the daily send quota: 1 recipient waits in the queue until it resets or is raised (counted as queued, not held).');
    expect(page).toMatch(/<dd id="broadcast-started">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/dd>/);
    expect(page).toMatch(/<td data-label="Reason">opted out after approval<\/td><td data-label="Recipients">1<\/td>/);
    expect(page).toContain('No failures.');
    expect(page).toContain('<th scope="col">held (wave or limit)</th>');
    const live = await owner.agent.get(`${base}/progress`);
    expect(live.status).toBe(200);
    expect(live.body.hold).toContain('Held by the daily send quota');
    expect(Object.keys(live.body.parts).sort()).toEqual(['broadcast-billing', 'broadcast-cancellations', 'broadcast-facts', 'broadcast-failures', 'broadcast-waves']);
    expect(live.body.parts['broadcast-cancellations']).toContain('opted out after approval');
    expect(live.body.parts['broadcast-facts']).toMatch(/<dd id="broadcast-started">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/dd>/);
    expect(live.body.parts['broadcast-waves']).toMatch(/canceled 1, queued 1/);
  });

  it('When a sending campaign completes, then its open page drops "Cancel the rest" and redraws its cost from the live update, without a reload', async () => {
    const { base, owner, id } = await campaign();
    expect((await owner.agent.post(`${base}/approve`).type('form').send({ _csrf: await owner.csrf() })).status).toBe(303);
    const now = t.clock.now();
    await t.db.pool.query(`UPDATE broadcasts SET status = 'sending', started_at = $2, status_reason = NULL WHERE id = $1`, [id, now]);
    const sending = (await owner.agent.get(base)).text;
    expect(sending).toMatch(/<div id="broadcast-actions">[\s\S]*Cancel the rest[\s\S]*?<\/div>/);
    expect(sending).toContain('<div id="broadcast-billing"><h2>Cost</h2>');
    expect((await owner.agent.get(`${base}/progress`)).body.parts['broadcast-actions']).toBeUndefined();
    await t.db.pool.query(`UPDATE broadcasts SET status = 'completed', completed_at = $2 WHERE id = $1`, [id, now]);
    const live = await owner.agent.get(`${base}/progress`);
    // The page's script replaces each part by its id: the actions with nothing, the cost with the channel's figures now.
    expect(live.body.parts['broadcast-actions']).toBe('');
    expect(live.body.parts['broadcast-billing']).toContain('<dt>Reported by the channel</dt>');
    expect((await owner.agent.get(base)).text).not.toContain('Cancel the rest');
  });

  it('When the dashboard script is served, then it polls nothing: the campaign page and the bot log are pushed by their streams', async () => {
    const js = await request(t.app).get('/dashboard/assets/dashboard.js').expect(200);
    // The one timer left waits for a focus to leave a part before swapping it (not a poll).
    expect(js.text).not.toMatch(/setInterval|fetch\(|\/progress|data-live-log|data-every|setTimeout\(tick/);
    expect(js.text.match(/setTimeout\(/g)).toHaveLength(1);
  });

  it('When a campaign page is open while it sends and the channel reports its prices, then its stream pushes the progress, drops "Cancel the rest" at completion, pushes the cost the API reports and ends', async () => {
    const { base, owner, id, project, key } = await campaign();
    expect((await owner.agent.post(`${base}/approve`).type('form').send({ _csrf: await owner.csrf() })).status).toBe(303);
    const page = (await owner.agent.get(base)).text;
    expect(/sse-connect="([^"]+)"/.exec(page)![1]).toBe(`${base}/events`);
    expect(page).toContain('Cancel the rest');
    const stream = await openStream(t.baseUrl!, `${base}/events`, cookieOf(owner.agent));
    expect(stream.status).toBe(200);
    await stream.until('hx-swap-oob="innerHTML:#progress"');
    expect(stream.text()).not.toContain('innerHTML:#broadcast-actions');
    const engine = await engineFor(t);
    try {
      expect(await runUntil(t, engine, id, ['completed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    // Completed: the progress says so and the actions go; the channel has not priced the sends yet, so the stream stays.
    await stream.until('2 of 2 recipients handed over or settled');
    await stream.until('<div hx-swap-oob="innerHTML:#broadcast-actions"></div>');
    await stream.until('0 charged, 0 free, 2 not reported yet');
    expect(stream.text()).not.toContain('event: end');
    // Each delivery comes with its price: the stream pushes the cost the API reports, then ends.
    const { rows } = await t.db.pool.query<{ wamid: string }>(
      'SELECT m.wamid FROM broadcast_recipients r JOIN messages m ON m.project_id = $2 AND m.send_ref = r.send_ref WHERE r.broadcast_id = $1', [id, project.id]);
    expect(rows).toHaveLength(2);
    for (const r of rows) expect((await request(t.sim!.url).post('/_sim/status').send({ wamid: r.wamid, status: 'delivered' })).body.status_code).toBe(200);
    await stream.until('event: end', 10_000);
    await stream.ended;
    const cost = (await api(t, key).get(`/v1/broadcasts/${id}`)).body.data.broadcast.billing.reported_cost;
    expect(cost.amount).toBeGreaterThan(0);
    const billing = stream.text().slice(stream.text().lastIndexOf('innerHTML:#broadcast-billing'));
    expect(billing).toContain(`2 charged, 0 free, 0 not reported yet; ${money(cost.amount, cost.currency)}`);
    // Opened once it is over, the page has no stream and no action.
    const over = (await owner.agent.get(base)).text;
    expect(over).not.toContain('sse-connect');
    expect(over).not.toContain('Cancel the rest');
  });
});

describe('templates, audit trail and overview', () => {
  it('When a template carries markup, then its header, body, footer and buttons are shown as text on the templates page', async () => {
    const { project } = await projectWithKey(t);
    await t.db.prisma.template.create({
      data: {
        id: `tpl_${project.id}_hostile`, projectId: project.id, name: 'order_ready', language: 'en_US', category: 'UTILITY', status: 'APPROVED',
        components: [
          { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}' }, { type: 'BODY', text: `Your order is ready ${HOSTILE}` },
          { type: 'FOOTER', text: 'Reply STOP to opt out' }, { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Track', url: 'https://shop.example.com/t/{{1}}' }] },
        ],
      },
    });
    const owner = await person(t, project.id, `owner-${project.id}@example.com`);
    const page = (await owner.agent.get(`/dashboard/projects/${project.id}/templates`)).text;
    expect(page).toContain('<p class="message-header">Order {{1}}</p>');
    expect(page).toContain('Your order is ready &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page).not.toContain(HOSTILE);
    expect(page).toContain('Reply STOP to opt out');
    expect(page).toContain('Track <span class="muted">(url: https://shop.example.com/t/{{1}})</span>');
  });

  it('When the owner reads the audit trail, then each row lists the fields that changed with before and after, as text', async () => {
    const { base, owner, project } = await campaign();
    await owner.agent.post(`${base}/approve`).type('form').send({ _csrf: await owner.csrf() });
    const page = (await owner.agent.get(`/dashboard/projects/${project.id}/audit`)).text;
    expect(page).toContain('<th scope="col">What changed</th>');
    expect(page).toMatch(/<li><code>status<\/code>: <del>pending_approval<\/del> → <ins>scheduled<\/ins><\/li>/);
    expect(page).toMatch(/<li><code>approved_by<\/code>: <span class="muted">\(added\)<\/span> → <ins>owner-[^<]+<\/ins><\/li>/);
    expect(page).not.toContain('{&quot;status&quot;');
  });

  it('When a person has two projects, then the overview shows each one’s sends, deliveries, failures, quota used and conversations waiting today', async () => {
    const { project: a } = await projectWithKey(t);
    const { project: b } = await projectWithKey(t);
    const email = `two-${a.id}@example.com`;
    const owner = await person(t, a.id, email);
    await t.admin.call('post', `/admin/projects/${b.id}/dashboard-members`, { email, role: 'member' });
    await t.admin.call('patch', `/admin/projects/${a.id}`, { daily_send_quota: 100 });
    await seedContacts(t, a.id, [{ phone: '14155550111' }, { phone: '14155550112' }]);
    const now = t.clock.now();
    const conv = async (phone: string, inboundLast: boolean) => (await t.db.pool.query<{ id: string }>(
      `INSERT INTO conversations (project_id, contact_id, state, last_message_at, last_inbound_at, created_at, updated_at)
       SELECT $1, id, 'unstructured', $3::timestamptz, CASE WHEN $4 THEN $3::timestamptz ELSE $3::timestamptz - interval '1 minute' END, $3, $3 FROM contacts WHERE project_id = $1 AND phone = $2 RETURNING id::text`,
      [a.id, phone, now, inboundLast])).rows[0].id;
    const waiting = await conv('14155550111', true);
    const answered = await conv('14155550112', false);
    const message = (conversation: string, direction: string, status: string, i: number) => t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, direction, type, content, status, sent_at, status_at) VALUES ($1, $2, $3, $4, 'text', '{}', $5, $6, $6)`,
      [a.id, conversation, `wamid.ov${a.id}${i}`, direction, status, now]);
    // Four sends today on the answered conversation; the other's newest message is the customer's.
    for (const [i, status] of ['sent', 'delivered', 'read', 'failed'].entries()) await message(answered, 'outbound', status, i);
    await message(waiting, 'inbound', 'received', 9);
    await t.db.pool.query(`INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, 4) ON CONFLICT (project_id, day) DO UPDATE SET count = 4`, [a.id, now.toISOString().slice(0, 10)]);
    const page = (await owner.agent.get('/dashboard/projects')).text;
    const row = (id: string) => page.slice(page.indexOf(`<small class="muted">${id}`), page.indexOf('</tr>', page.indexOf(`<small class="muted">${id}`)));
    expect(row(a.id)).toMatch(/data-figure="sent">4<\/td>[\s\S]*data-figure="delivered">2<\/td>[\s\S]*data-figure="failed" class="error-text">1<\/td>[\s\S]*data-figure="quota">4 of 100<\/td>[\s\S]*data-figure="waiting"><a [^>]+>1 conversation<\/a>/);
    expect(row(b.id)).toMatch(/data-figure="sent">0<\/td>[\s\S]*data-figure="failed">0<\/td>[\s\S]*data-figure="waiting">0<\/td>/);
  });
});
