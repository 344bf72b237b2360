/**
 * What a channel notification stores is bounded as the API bounds the same field (issue 70, item 5;
 * lib/messaging/inbound-bounds.ts), through the signed channel webhook: oversized display fields
 * are cut at the API's maxLength and the notification is accepted whole (Meta would retry a refused
 * one for days); a call's SDP offer over the API's 20,000 characters is dropped (the call still
 * rings); a failed status's provider text and a template's rejection reason are cut; a message
 * full of unknown members stays within a budget. Every answer is checked against the contract.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { CONTENT_BUDGET, SDP_MAX } from '../../lib/messaging/inbound-bounds.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
}, 60_000);
afterAll(async () => t?.close());

const long = (n: number, unit = 'x') => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

async function shop() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['conversations:read', 'conversations:write', 'messages:send', 'contacts:read', 'templates:manage', 'templates:read'])).secret;
  const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
  const api = (method: 'get' | 'post' | 'patch', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
  /** One signed notification of `field` with `value`, as Meta posts it. */
  const notify = async (field: string, value: object) => {
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel.wabaId, changes: [{ field, value: { messaging_product: 'whatsapp', metadata: { phone_number_id: channel.phoneNumberId }, ...value } }] }] });
    const signature = 'sha256=' + createHmac('sha256', channel.appSecret).update(body).digest('hex');
    return request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', signature).send(body);
  };
  return { projectId: project.id, api, notify };
}

const ts = () => String(Math.floor(t.clock.now().getTime() / 1000));
const contacts = (phone: string, name: string) => [{ wa_id: phone, profile: { name } }];

describe('a notification with oversized fields', () => {
  it('When every display field of the messages is longer than the API allows, then the notification is taken whole and each field is stored cut at the API\'s bound', async () => {
    const s = await shop();
    const phone = '5511955550001';
    const m = (id: string, type: string, body: object) => ({ id: `wamid.bounds.${id}`, from: phone, timestamp: ts(), type, ...body });
    const res = await s.notify('messages', {
      contacts: contacts(phone, long(5000, 'Ada ')),
      messages: [
        m('text', 'text', { text: { body: long(10_000, 'hello ') } }),
        m('image', 'image', { image: { id: '1234', mime_type: 'image/jpeg', sha256: 'abc', caption: long(5000) } }),
        m('document', 'document', { document: { id: '1235', mime_type: 'application/pdf', filename: `${long(1000)}.pdf`, caption: long(3000) } }),
        m('reaction', 'reaction', { reaction: { message_id: 'wamid.other', emoji: long(500, '👍') } }),
        m('location', 'location', { location: { latitude: 1, longitude: 2, name: long(5000), address: long(5000), url: `https://example.com/${long(5000)}` } }),
        m('contacts', 'contacts', { contacts: [{ name: { formatted_name: long(5000), first_name: long(5000) }, phones: [{ phone: long(3000, '1'), type: 'CELL' }] }] }),
        m('button', 'button', { button: { payload: long(5000), text: long(500) } }),
        m('interactive', 'interactive', { interactive: { type: 'button_reply', button_reply: { id: long(1000), title: long(1000) } } }),
        m('junk', 'text', { text: { body: 'hi' }, extra: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, long(200)])) }),
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ messages: 9 });

    const msg = async (id: string) => (await s.api('get', `/v1/messages/wamid.bounds.${id}`)).body.data.content;
    expect((await msg('text')).text.body).toBe(long(4096, 'hello '));
    expect((await msg('image')).image.caption).toHaveLength(1024);
    const doc = (await msg('document')).document;
    expect([doc.filename.length, doc.caption.length]).toEqual([255, 1024]);
    // An emoji is never split in half (a surrogate pair stays whole).
    const emoji = (await msg('reaction')).reaction.emoji;
    expect(emoji.length).toBeLessThanOrEqual(64);
    expect(emoji).toBe(long(emoji.length, '👍'));
    const location = (await msg('location')).location;
    expect([location.name.length, location.address.length, location.url.length, location.latitude]).toEqual([1024, 1024, 2048, 1]);
    const card = (await msg('contacts')).contacts[0];
    expect([card.name.formatted_name.length, card.name.first_name.length, card.phones[0].phone.length]).toEqual([1024, 1024, 1024]);
    const button = (await msg('button')).button;
    expect([button.payload.length, button.text.length]).toEqual([1000, 25]);
    const reply = (await msg('interactive')).interactive.button_reply;
    expect([reply.id.length, reply.title.length]).toEqual([256, 20]);
    const junk = await s.api('get', '/v1/messages/wamid.bounds.junk');
    expect(junk.body.data.content.text.body).toBe('hi');
    expect(JSON.stringify(junk.body.data.content).length).toBeLessThan(CONTENT_BUDGET + 16 * 1024);

    // The sender's profile name is the contact's name, at most 200 characters (as PATCH /v1/contacts takes it).
    const contact = await s.api('get', `/v1/contacts?phone=%2B${phone}`);
    expect(contact.body.data.contacts[0].name).toBe(long(200, 'Ada '));
  });

  it('When a customer\'s call carries a 2.7 MB SDP offer, then the call rings without it (the API caps an SDP at 20,000 characters), and an offer within the cap is kept', async () => {
    const s = await shop();
    const phone = '5511955550002';
    const call = (id: string, sdp: string) => ({ contacts: contacts(phone, 'Ada'), calls: [{ id, from: phone, to: '15550001111', event: 'connect', timestamp: ts(), direction: 'USER_INITIATED', session: { sdp_type: 'offer', sdp } }] });
    const huge = await s.notify('calls', call('wacid.bounds.huge', long(2_700_000, 'a=candidate:1 1 udp 2122260223 10.0.0.1 51000 typ host\r\n')));
    expect(huge.status).toBe(200);
    const got = await s.api('get', '/v1/calls/wacid.bounds.huge');
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ call_id: 'wacid.bounds.huge', status: 'ringing', offer_sdp: null });
    const list = await s.api('get', '/v1/calls');
    expect(list.text.length).toBeLessThan(10_000);

    const fits = long(SDP_MAX, 'v=0\r\n');
    expect((await s.notify('calls', call('wacid.bounds.fits', fits))).status).toBe(200);
    expect((await s.api('get', '/v1/calls/wacid.bounds.fits')).body.data.offer_sdp).toBe(fits);
  });

  it('When a failed status carries a provider error of 100,000 characters, then the message\'s error keeps 1,000 of each text', async () => {
    const s = await shop();
    const phone = '5511955550003';
    await s.notify('messages', { contacts: contacts(phone, 'Ada'), messages: [{ id: 'wamid.bounds.in', from: phone, timestamp: ts(), type: 'text', text: { body: 'hi' } }] });
    const sent = await s.api('post', '/v1/messages').send({ type: 'text', phone: `+${phone}`, content: 'hello' });
    expect(sent.status).toBe(200);
    const wamid = sent.body.data.id;
    const res = await s.notify('messages', { statuses: [{ id: wamid, status: 'failed', timestamp: ts(), recipient_id: phone, errors: [{ code: 131026, title: long(100_000), message: long(100_000), error_data: { details: long(100_000) }, extra: long(100_000) }] }] });
    expect(res.status).toBe(200);
    const error = (await s.api('get', `/v1/messages/${wamid}`)).body.data.error;
    expect(error.code).toBe(131026);
    expect([error.title.length, error.message.length, error.error_data.details.length, error.extra.length]).toEqual([1000, 1000, 1000, 1000]);
  });

  it('When a template\'s rejection comes with a reason of 100,000 characters, then the template is rejected with 1,000 of them', async () => {
    const s = await shop();
    const created = await s.api('post', '/v1/templates').send({ name: 'bounded_reason', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello' }] });
    expect(created.status).toBe(201);
    const row = await t.db.prisma.template.findFirstOrThrow({ where: { projectId: s.projectId, name: 'bounded_reason' } });
    const res = await s.notify('message_template_status_update', { event: 'REJECTED', message_template_id: Number(row.channelTemplateId), message_template_name: 'bounded_reason', message_template_language: 'en_US', reason: long(100_000) });
    expect(res.status).toBe(200);
    const template = (await s.api('get', '/v1/templates/bounded_reason')).body.data.template;
    expect(template.status).toBe('REJECTED');
    expect(template.rejected_reason).toHaveLength(1000);
  });

  it('When a group\'s settings change comes with a 5,000-character subject and a 10,000-character description, then the group keeps 128 and 2,048 of them (as PATCH /v1/groups/{id} takes them)', async () => {
    const s = await shop();
    const created = await s.api('post', '/v1/groups').send({ subject: 'Order 7' });
    expect(created.status).toBe(201);
    const id = created.body.data.group.id;
    const group = (await eventually(() => s.api('get', `/v1/groups/${id}`), (r) => r.body.data?.group?.status === 'active', 20_000, 'the group confirmed')).body.data.group;
    const res = await s.notify('group_settings_update', { groups: [{ timestamp: ts(), group_id: group.group_id, type: 'group_settings_update', subject: long(5000, 'Order '), description: long(10_000) }] });
    expect(res.status).toBe(200);
    const after = await eventually(() => s.api('get', `/v1/groups/${id}`), (r) => r.body.data?.group?.subject !== 'Order 7', 10_000, 'the new subject');
    expect(after.body.data.group.subject).toBe(long(128, 'Order '));
    expect(after.body.data.group.description).toBe(long(2048));
  }, 60_000);
});
