/**
 * The inbox's words (issue 68, item 6) and a reply with an attachment (item 2), through HTTP:
 * history from the Business app listed at its own time and marked as history (inbox and API), a
 * contact with only history not told "the customer has never written", a call permission answer in
 * words, call markers and the missed-call view, and a photo or document sent from the inbox through
 * the API's media upload and send path (the simulator receives it).
 */
import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { person, uniqueEmail as email } from '../support/dashboard.js';

let t: TestApp;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => {
  t = app;
});

let seq = 0;
const wamid = (what: string) => `wamid.${what}${Date.now()}${++seq}`;
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');

async function shop() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['conversations:read', 'messages:send', 'contacts:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const owner = await person(t, project.id, email('owner'), 'owner');
  return { projectId: project.id, key, pnid: channel.phoneNumberId, owner };
}
type Shop = Awaited<ReturnType<typeof shop>>;

async function sim(path: string, body: object) {
  const res = await request(t.sim!.url).post(path).send(body);
  expect(res.status).toBe(200);
  return res.body;
}

async function conversationOf(s: Shop, phone: string): Promise<number> {
  const res = await request(t.app).get(`/v1/conversations?phone=%2B${phone}`).set('Authorization', `Bearer ${s.key}`);
  expect(res.status).toBe(200);
  return res.body.data.conversations[0].id;
}

const inboxPath = (s: Shop, id?: number) => `/dashboard/projects/${s.projectId}/conversations${id ? `/${id}` : ''}`;

describe('the inbox’s words', () => {
  it('When the Business app’s history arrives after the customer’s new message, then the API and the chat list it at its own time, marked history', async () => {
    const s = await shop();
    const phone = '14155550801';
    await sim('/_sim/inbound', { phone_number_id: s.pnid, from: phone, name: 'Ada', text: 'Is my order shipped?' });
    const now = Math.floor(t.clock.now().getTime() / 1000);
    const [a, b] = [wamid('HA'), wamid('HB')];
    await sim(`/_sim/phone-numbers/${s.pnid}/history`, {
      phase: 0, chunk_order: 1, progress: 100,
      threads: [{ id: phone, messages: [
        { id: a, text: 'Do you have it in blue?', timestamp: now - 3 * 86400 },
        { id: b, from_business: true, text: 'Yes, size M and L.', timestamp: now - 3 * 86400 + 60, status: 'READ' },
      ] }],
    });
    const id = await conversationOf(s, phone);

    // The API: newest first by the message's own time, across pages too.
    const first = await request(t.app).get(`/v1/conversations/${id}/messages?limit=1`).set('Authorization', `Bearer ${s.key}`);
    expect(first.status).toBe(200);
    expect(first.body.data.messages.map((m: { content: unknown; history?: boolean }) => [m.content, m.history])).toEqual([[{ text: { body: 'Is my order shipped?' } }, undefined]].map(([c, h]) => [expect.objectContaining(c as object), h]));
    const rest = await request(t.app).get(`/v1/conversations/${id}/messages?limit=5&cursor=${encodeURIComponent(first.body.data.nextCursor)}`).set('Authorization', `Bearer ${s.key}`);
    expect(rest.body.data.messages.map((m: { wamid: string; history?: boolean }) => [m.wamid, m.history])).toEqual([[b, true], [a, true]]);

    // The chat: oldest first, the history marked, the new message last; the list previews the new one.
    const page = await s.owner.agent.get(inboxPath(s, id));
    expect(page.status).toBe(200);
    const chat = page.text.slice(page.text.indexOf('<ol class="chat" id="messages"'));
    const order = ['Do you have it in blue?', 'Yes, size M and L.', 'Is my order shipped?'].map((x) => chat.indexOf(x));
    expect(order.every((i, k) => i > 0 && (k === 0 || i > order[k - 1]))).toBe(true);
    expect(page.text.match(/history \(from the Business app, before this app\)/g)).toHaveLength(2);
    expect(page.text).toContain('class="bubble inbound history"');
    const list = await s.owner.agent.get(`${inboxPath(s)}?filter=all`);
    expect(list.text).toMatch(/<span class="preview muted">Is my order shipped\?<\/span>/);
  });

  it('When a customer has only history from the Business app, then the window says when they last wrote there, not that they never wrote', async () => {
    const s = await shop();
    const phone = '14155550802';
    const now = Math.floor(t.clock.now().getTime() / 1000);
    await sim(`/_sim/phone-numbers/${s.pnid}/history`, {
      phase: 0, chunk_order: 1, progress: 100,
      threads: [{ id: phone, messages: [{ id: wamid('HC'), text: 'Thanks for the parcel', timestamp: now - 3 * 86400 }] }],
    });
    const id = await conversationOf(s, phone);
    const page = await s.owner.agent.get(inboxPath(s, id));
    expect(page.text).not.toContain('the customer has never written');
    expect(page.text).toContain('closed: the customer last wrote');
    expect(page.text).toContain('(Business app history, before this app), not to this app; only an approved template may be sent');
  });

  it('When a customer answers a call permission request, then the chat says the answer, not "interactive"', async () => {
    const s = await shop();
    const phone = '14155550803';
    await sim('/_sim/inbound', {
      phone_number_id: s.pnid, from: phone, name: 'Ada', type: 'interactive',
      interactive: { type: 'call_permission_reply', call_permission_reply: { response: 'accept', is_permanent: true } },
    });
    const id = await conversationOf(s, phone);
    const page = await s.owner.agent.get(inboxPath(s, id));
    expect(page.text).toContain('Call permission: granted, permanently (the business may call)');
    expect(page.text).toContain('call permission answer · received');
    expect(page.text).not.toContain('interactive · received');
  });

  it('When a customer’s call rings, then the list marks it; when it was missed, the missed-call view lists it and no other', async () => {
    const s = await shop();
    const ringing = await sim('/_sim/calls', { phone_number_id: s.pnid, from: '14155550804', name: 'Ada' });
    await sim('/_sim/inbound', { phone_number_id: s.pnid, from: '14155550805', name: 'Bob', text: 'Hello' });
    const list = await s.owner.agent.get(`${inboxPath(s)}?filter=all`);
    expect(list.text).toContain('<span class="badge" data-mark="call-ringing">call ringing</span>');
    const missedView = async () => (await s.owner.agent.get(`${inboxPath(s)}?filter=missed_call`)).text;
    expect(await missedView()).not.toContain('data-mark="call-');
    // WhatsApp ends a call nobody answered as missed (the stored call, as the channel's terminate sets it).
    await t.db.pool.query(`UPDATE calls SET status = 'missed' WHERE project_id = $1 AND call_id = $2`, [s.projectId, ringing.call_id]);
    const missed = await missedView();
    expect(missed).toContain('<span class="badge" data-mark="call-missed">missed call</span>');
    expect(missed).toContain('<option value="missed_call" selected>Missed calls</option>');
    expect(missed).not.toContain('Bob');
  });
});

describe('a reply with an attachment', () => {
  async function waiting(s: Shop, phone: string) {
    await sim('/_sim/inbound', { phone_number_id: s.pnid, from: phone, name: 'Ada', text: 'Send me the invoice please' });
    const id = await conversationOf(s, phone);
    const page = await s.owner.agent.get(inboxPath(s, id));
    const form = /<form method="post" action="([^"]+\/attachment)" enctype="multipart\/form-data"><input type="hidden" name="_csrf" value="([^"]+)"><input type="hidden" name="_once" value="([^"]+)">/.exec(page.text);
    expect(form).not.toBeNull();
    return { id, action: form![1], csrf: form![2], once: form![3] };
  }
  const sentTo = async (s: Shop, phone: string) =>
    (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${s.pnid}&to=${phone}`)).body.data as Array<{ payload: any }>;

  it('When an owner attaches a photo and a document with captions, then each is uploaded as media and sent to the customer once, and the chat shows it', async () => {
    const s = await shop();
    const phone = '14155550811';
    const f = await waiting(s, phone);
    const photo = await s.owner.agent.post(f.action).field('_csrf', f.csrf).field('_once', f.once).field('caption', 'Your parcel').attach('file', PNG, { filename: 'parcel.png', contentType: 'image/png' });
    expect(photo.status).toBe(303);
    expect(photo.headers.location).toContain('done=attachment_sent');
    // The same form again: answered from its record, not sent twice.
    const again = await s.owner.agent.post(f.action).field('_csrf', f.csrf).field('_once', f.once).field('caption', 'Your parcel').attach('file', PNG, { filename: 'parcel.png', contentType: 'image/png' });
    expect(again.status).toBe(303);
    const g = await waiting(s, phone);
    const doc = await s.owner.agent.post(g.action).field('_csrf', g.csrf).field('_once', g.once).attach('file', PDF, { filename: 'invoice-42.pdf', contentType: 'application/pdf' });
    expect(doc.status).toBe(303);

    const sent = (await sentTo(s, phone)).map((m) => m.payload);
    expect(sent.filter((p) => p.type === 'image')).toHaveLength(1);
    expect(sent.find((p) => p.type === 'image').image).toEqual({ id: expect.any(String), caption: 'Your parcel' });
    expect(sent.find((p) => p.type === 'document').document).toEqual({ id: expect.any(String), filename: 'invoice-42.pdf' });
    const page = await s.owner.agent.get(inboxPath(s, f.id));
    expect(page.text).toContain('Your parcel');
    expect(page.text).toContain('download="invoice-42.pdf"');
  });

  it('When the file is neither a photo nor a document, or a member tries, then nothing is sent and the page says why', async () => {
    const s = await shop();
    const phone = '14155550812';
    const f = await waiting(s, phone);
    const exe = await s.owner.agent.post(f.action).field('_csrf', f.csrf).field('_once', f.once).attach('file', Buffer.from('MZ\x90\x00 not a document'), { filename: 'tool.exe', contentType: 'application/octet-stream' });
    expect(exe.status).toBe(400);
    expect(exe.text).toContain('Attach a photo (JPEG or PNG, up to 5 MB) or a document');
    const forged = await s.owner.agent.post(f.action).field('_csrf', 'forged').field('_once', f.once).attach('file', PNG, { filename: 'a.png', contentType: 'image/png' });
    expect(forged.status).toBe(403);
    const member = await person(t, s.projectId, email('member'), 'member');
    const csrf = await member.csrf(inboxPath(s, f.id));
    const refused = await member.agent.post(f.action).field('_csrf', csrf).field('_once', f.once).attach('file', PNG, { filename: 'a.png', contentType: 'image/png' });
    expect(refused.status).toBe(403);
    expect((await sentTo(s, phone)).filter((m) => m.payload.type !== 'text')).toEqual([]);
  });
});

describe('an @mention in a note', () => {
  it('When an owner @mentions a colleague in a note, then the colleague (and nobody else) is told in their inbox until they open the conversation', async () => {
    const s = await shop();
    const anaEmail = email('ana');
    const ana = await person(t, s.projectId, anaEmail, 'member');
    const bob = await person(t, s.projectId, email('bob'), 'admin');
    await sim('/_sim/inbound', { phone_number_id: s.pnid, from: '14155550821', name: 'Ada', text: 'My box is broken' });
    const id = await conversationOf(s, '14155550821');
    const csrf = await s.owner.csrf(inboxPath(s, id));
    const noted = await s.owner.agent.post(`${inboxPath(s, id)}/notes`).type('form').send({ _csrf: csrf, _once: randomBytes(16).toString('hex'), note: `@${anaEmail} can you check the photo? (cc @nobody)` });
    expect(noted.status).toBe(303);

    const anaInbox = await ana.agent.get(inboxPath(s));
    expect(anaInbox.text).toContain('<h2 id="mentions-title">Mentioned you <span class="badge" data-mark="mentions">1</span></h2>');
    expect(anaInbox.text).toContain(`href="/dashboard/projects/${s.projectId}/conversations/${id}"`);
    expect(anaInbox.text).toContain('can you check the photo?');
    // Nobody else is told: not the colleague who was not named, not the writer.
    expect((await bob.agent.get(inboxPath(s))).text).not.toContain('id="mentions"');
    expect((await s.owner.agent.get(inboxPath(s))).text).not.toContain('id="mentions"');
    // Opening the conversation is seeing it.
    expect((await ana.agent.get(inboxPath(s, id))).status).toBe(200);
    expect((await ana.agent.get(inboxPath(s))).text).not.toContain('id="mentions"');
  });
});

describe('an @mention in a note written through the API', () => {
  it('When an API key writes a note that @mentions a colleague, then the colleague is told in their inbox as for a note written there', async () => {
    const s = await shop();
    const writer = (await t.admin.key(s.projectId, ['conversations:write'])).secret;
    const anaEmail = email('ana-api');
    const ana = await person(t, s.projectId, anaEmail, 'member');
    await sim('/_sim/inbound', { phone_number_id: s.pnid, from: '14155550822', name: 'Ada', text: 'Where is my parcel?' });
    const id = await conversationOf(s, '14155550822');
    const noted = await request(t.app).post(`/v1/conversations/${id}/notes`).set('Authorization', `Bearer ${writer}`).send({ body: `@${anaEmail.split('@')[0]} the carrier says Tuesday` });
    expect(noted.status).toBe(201);
    const anaInbox = await ana.agent.get(inboxPath(s));
    expect(anaInbox.text).toContain('<h2 id="mentions-title">Mentioned you <span class="badge" data-mark="mentions">1</span></h2>');
    expect(anaInbox.text).toContain('the carrier says Tuesday');
    // The tab title counts it too (dashboard.js reads the counts the page carries).
    expect(anaInbox.text).toContain('data-mentions="1"');
    expect((await s.owner.agent.get(inboxPath(s))).text).not.toContain('id="mentions"');
  });
});

describe('a project’s link', () => {
  it('When a person opens a project from the list, then it lands on its Overview, and the invite form says which roles reply', async () => {
    const s = await shop();
    const projects = await s.owner.agent.get('/dashboard/projects');
    expect(projects.text).toContain(`href="/dashboard/projects/${s.projectId}/overview"`);
    const bare = await s.owner.agent.get(`/dashboard/projects/${s.projectId}`);
    expect([bare.status, bare.headers.location]).toEqual([303, `/dashboard/projects/${s.projectId}/overview`]);
    const people = await s.owner.agent.get(`/dashboard/projects/${s.projectId}/people`);
    expect(people.text).toContain('Who replies to customers from the inbox: owners and admins.');
  });
});
