/**
 * Media in the inbox through HTTP (issue 68, item 2): a customer's photo, sticker, video, voice
 * note, document, location and contacts are drawn in the chat (thumbnails, players, a download
 * with name and size, words), and every file is served by the service's own route, checked by the
 * project's membership and the conversation, never from the channel's URL.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { person, uniqueEmail as email } from '../support/dashboard.js';

let t: TestApp;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => {
  t = app;
});

const PDF = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n');

async function shop() {
  const project = await t.admin.project();
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { projectId: project.id, phoneNumberId: channel.phoneNumberId };
}

async function messagesOf(projectId: string, phone: string): Promise<{ conversation: number; byType: Record<string, number> }> {
  const { rows } = await t.db.pool.query<{ id: string; type: string; conversation_id: string }>(
    `SELECT m.id::text, m.type, m.conversation_id::text FROM messages m JOIN conversations v ON v.id = m.conversation_id JOIN contacts c ON c.id = v.contact_id
      WHERE m.project_id = $1 AND c.phone = $2 ORDER BY m.id`,
    [projectId, phone],
  );
  return { conversation: Number(rows[0].conversation_id), byType: Object.fromEntries(rows.map((r) => [r.type, Number(r.id)])) };
}

describe('media in the inbox', () => {
  it('When a customer sends a photo, sticker, video, audio, document, location and contacts, then the chat shows each, and the files come through the service', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const phone = '14155550901';
    await inbound(t, s.phoneNumberId, phone, { type: 'image', image: { caption: 'The box arrived broken' } });
    await inbound(t, s.phoneNumberId, phone, { type: 'sticker', sticker: {} });
    await inbound(t, s.phoneNumberId, phone, { type: 'video', video: {} });
    await inbound(t, s.phoneNumberId, phone, { type: 'audio', audio: {} });
    await inbound(t, s.phoneNumberId, phone, { type: 'document', document: { filename: 'receipt <1>.pdf' }, media: { data_base64: PDF.toString('base64'), mime_type: 'application/pdf' } });
    await inbound(t, s.phoneNumberId, phone, { type: 'location', location: { latitude: 52.52, longitude: 13.405, name: 'Shop', address: 'Main St 1' } });
    await inbound(t, s.phoneNumberId, phone, { type: 'contacts', contacts: [{ name: { formatted_name: 'Bob Builder' }, phones: [{ phone: '+1 415 555 0100' }] }] });
    const { conversation, byType } = await messagesOf(s.projectId, phone);
    const base = `/dashboard/projects/${s.projectId}/conversations/${conversation}`;
    const media = (type: string) => `${base}/media/${byType[type]}`;

    const page = await owner.agent.get(base);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<a class="media-thumb" href="${media('image')}" target="_blank" rel="noopener"><img src="${media('image')}" alt="Photo from Customer (opens the full size)"`);
    expect(page.text).toContain(`<img src="${media('sticker')}" alt="Sticker from Customer`);
    expect(page.text).toContain(`<video class="media-player" controls preload="metadata" src="${media('video')}"`);
    expect(page.text).toContain(`<audio class="media-player" controls preload="none" src="${media('audio')}"`);
    expect(page.text).toContain(`<a href="${media('document')}" download="receipt &lt;1&gt;.pdf">receipt &lt;1&gt;.pdf</a> <span class="muted">(${PDF.length} B)</span>`);
    expect(page.text).toContain('Location: Shop, Main St 1 <a href="https://www.openstreetmap.org/?mlat=52.52&amp;mlon=13.405');
    expect(page.text).toContain('<li>Bob Builder: +1 415 555 0100</li>');
    expect(page.text).toContain('The box arrived broken');
    // No channel URL reaches the page.
    expect(page.text).not.toContain(t.sim!.url);
    expect(page.text).not.toContain('whatsapp_business/attachments');

    const image = await owner.agent.get(media('image')).buffer(true);
    expect(image.status).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.headers['x-content-type-options']).toBe('nosniff');
    expect(image.headers['content-security-policy']).toContain('sandbox');
    expect(image.body.subarray(1, 4).toString()).toBe('PNG');
    const doc = await owner.agent.get(media('document')).buffer(true);
    expect(doc.status).toBe(200);
    expect(doc.headers['content-type']).toBe('application/pdf');
    expect(doc.headers['content-disposition']).toContain("filename*=UTF-8''receipt%20%3C1%3E.pdf");
    expect(Buffer.compare(doc.body, PDF)).toBe(0);

    // The live chat carries the same media for the script to draw.
    const live = await owner.agent.get(`${base}/live`);
    const items = live.body.items.filter((i: any) => i.media);
    expect(items.map((i: any) => i.media.kind)).toEqual(['image', 'sticker', 'video', 'audio', 'document', 'location', 'contacts']);
    expect(JSON.stringify(live.body)).not.toContain('whatsapp_business/attachments');
  });

  it('When a stranger, another project\'s member, another conversation\'s path or a message without a file asks, then 404 and no bytes', async () => {
    const s = await shop();
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    await inbound(t, s.phoneNumberId, '14155550911', { type: 'image', image: {} });
    await inbound(t, s.phoneNumberId, '14155550912', { text: 'Just text' });
    const a = await messagesOf(s.projectId, '14155550911');
    const b = await messagesOf(s.projectId, '14155550912');
    const path = `/dashboard/projects/${s.projectId}/conversations/${a.conversation}/media/${a.byType.image}`;
    expect((await owner.agent.get(path)).status).toBe(200);

    const other = await shop();
    const outsider = await person(t, other.projectId, email('outsider'), 'owner');
    const theirs = await outsider.agent.get(path);
    expect(theirs.status).toBe(404);
    expect(theirs.headers['content-type']).toContain('text/html');
    expect((await request(t.app).get(path)).status).toBeGreaterThanOrEqual(300); // no session: to the sign-in
    expect((await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${b.conversation}/media/${a.byType.image}`)).status).toBe(404);
    expect((await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${b.conversation}/media/${b.byType.text}`)).status).toBe(404);
    expect((await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${a.conversation}/media/abc`)).status).toBe(404);
  });

  it('When WhatsApp no longer has the media (after its 30 days), then the route answers a 404 page that says so', async () => {
    const s = await shop();
    await inbound(t, s.phoneNumberId, '14155550921', { type: 'document', document: { filename: 'old.pdf' } });
    const { conversation, byType } = await messagesOf(s.projectId, '14155550921');
    const path = `/dashboard/projects/${s.projectId}/conversations/${conversation}/media/${byType.document}`;
    t.clock.advance(31 * 86_400_000);
    // Signed in after the month (a session of a month ago has expired).
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    const gone = await owner.agent.get(path);
    expect(gone.status).toBe(404);
    expect(gone.text).toContain('no longer available at WhatsApp');
  });

  it('When the business sent a document by its media asset, then the inbox serves it from the project\'s own store, not the channel', async () => {
    const s = await shop();
    const key = (await t.admin.key(s.projectId, ['media:write', 'messages:send'])).secret;
    await inbound(t, s.phoneNumberId, '14155550931', { text: 'Can I have the menu?' });
    const made = await request(t.app).post('/v1/media').set('Authorization', `Bearer ${key}`).send({ data: PDF.toString('base64'), filename: 'menu.pdf', mime: 'application/pdf', slug: 'menu' });
    expect(made.status).toBe(201);
    const sent = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'document', phone: '+14155550931', media: { slug: 'menu', filename: 'menu.pdf' } });
    expect(sent.status).toBe(200);
    const { conversation, byType } = await messagesOf(s.projectId, '14155550931');
    const owner = await person(t, s.projectId, email('owner'), 'owner');
    // The channel's media calls fail from now on: the bytes still come, from the blob store.
    expect((await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: s.phoneNumberId, operation: 'media', http_status: 500, count: 10 })).status).toBe(201);
    const file = await owner.agent.get(`/dashboard/projects/${s.projectId}/conversations/${conversation}/media/${byType.document}`).buffer(true);
    expect(file.status).toBe(200);
    expect(Buffer.compare(file.body, PDF)).toBe(0);
  });
  afterAll(async () => {
    await request(t.sim!.url).delete('/_sim/faults');
  });
});
