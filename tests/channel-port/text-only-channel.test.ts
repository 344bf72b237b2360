/**
 * The domain on a second channel with another capability set: a text-only channel
 * (tests/support/text-only-channel.ts) with a notification format of its own, served by the same
 * instance as WhatsApp projects (a project's channel settings name its kind). Through HTTP, a
 * customer's text arrives, the API answers it, the channel's receipts move the reply; and what the
 * channel does not offer (templates, media, groups, campaigns, thread control, any message but
 * text) is refused with 409 `unsupported_by_channel` before anything is stored or sent.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { TextOnlyChannel } from '../support/text-only-channel.js';
import { postNotification, projectOnChannel, type ChannelProject } from '../support/channel-project.js';

const APP_SECRET = 'text-only-secret';

let t: TestApp;
const channel = new TextOnlyChannel();
beforeAll(async () => {
  t = await startTestApp({ channels: { text_only: channel } });
});
afterAll(async () => {
  await t.close();
});

const project = () => projectOnChannel(t, {
  name: 'Text-only channel', kind: 'text_only', appSecret: APP_SECRET,
  scopes: ['messages:send', 'conversations:read', 'conversations:write', 'templates:manage', 'templates:read', 'media:write', 'broadcasts:manage'],
});

/** The channel's own notification. */
const notify = (p: ChannelProject, body: { inbound?: object[]; receipts?: object[] }) => postNotification(t, p.id, APP_SECRET, { number: p.phoneNumberId, ...body });

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const at = () => Math.floor(t.clock.now().getTime() / 1000);

describe('the domain on a text-only channel', () => {
  it('When an operator sets a channel, then its kind is stored and shown, and a kind the instance does not serve is refused with 400', async () => {
    const p = await project();
    const read = await t.admin.call('get', `/admin/projects/${p.id}/channel`);
    expect(read.channel).toMatchObject({ kind: 'text_only', phone_number_id: p.phoneNumberId });
    const other = await t.admin.project('WhatsApp beside it');
    await expect(t.admin.call('put', `/admin/projects/${other.id}/channel`, {
      kind: 'carrier_pigeon', phone_number_id: '5550001', waba_id: '1', app_id: '2', access_token: 'x', app_secret: 'y', verify_token: 'z',
    })).rejects.toThrow(/→ 400 .*"invalid_request".*whatsapp_cloud, text_only/);
    await expect(t.admin.call('get', `/admin/projects/${other.id}/channel`)).rejects.toThrow(/→ 404/);
    // Without a kind, a project's channel is WhatsApp's Cloud API (the instance's default adapter).
    await t.admin.call('put', `/admin/projects/${other.id}/channel`, { phone_number_id: '5550001', waba_id: '1', app_id: '2', access_token: 'x', app_secret: 'y', verify_token: 'z' });
    expect((await t.admin.call('get', `/admin/projects/${other.id}/channel`)).channel.kind).toBe('whatsapp_cloud');
  });

  it('When a customer texts and the API answers, then both are stored, the reply goes out as the channel\'s text, and its receipts move it', async () => {
    const p = await project();
    const inbound = await notify(p, { inbound: [{ id: 'txt-in-1', from: '14155550190', text: 'Is the shop open?', at: at() }] });
    expect(inbound.status).toBe(200);
    expect(inbound.body.data).toMatchObject({ messages: 1, statuses: 0 });

    const sent = await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'text', phone: '+14155550190', content: 'Until 6 pm' });
    expect(sent.status).toBe(200);
    const out = channel.sent.at(-1)!;
    expect(out).toEqual({ number: p.phoneNumberId, to: '14155550190', body: 'Until 6 pm', id: sent.body.data.id });

    const receipts = await notify(p, { receipts: [{ id: out.id, state: 'delivered', at: at() }, { id: out.id, state: 'read', at: at() }] });
    expect(receipts.body.data).toMatchObject({ messages: 0, statuses: 2 });
    const conversation = (await request(t.app).get('/v1/conversations').set(auth(p.key))).body.data.conversations[0];
    expect(conversation).toMatchObject({ contact: { phone: '+14155550190' }, window_open: true });
    const messages = (await request(t.app).get(`/v1/conversations/${conversation.id}/messages`).set(auth(p.key))).body.data.messages;
    expect(messages.map((m: any) => [m.direction, m.type, m.status])).toEqual(expect.arrayContaining([['inbound', 'text', 'received'], ['outbound', 'text', 'read']]));
  });

  it('When the API asks for what a text-only channel does not offer, then each is 409 unsupported_by_channel naming it, and nothing is stored or sent', async () => {
    const p = await project();
    await notify(p, { inbound: [{ id: 'txt-in-2', from: '14155550191', text: 'hello', at: at() }] });
    const conversation = (await request(t.app).get('/v1/conversations').set(auth(p.key))).body.data.conversations[0];
    const sentBefore = channel.sent.length;
    const storedBefore = await t.db.prisma.message.count({ where: { projectId: p.id } });
    const refusals: Array<[string, string, object, string]> = [
      ['post', '/v1/messages', { type: 'image', phone: '+14155550191', media: { link: 'https://example.com/box.jpg' } }, 'messages.image'],
      ['post', '/v1/messages', { type: 'template', phone: '+14155550191', template: { name: 'hello', language: 'en_US' } }, 'messages.template'],
      ['post', '/v1/templates', { name: 'hello', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello' }] }, 'templates'],
      ['post', '/v1/media', { data: Buffer.from('not sent').toString('base64'), filename: 'note.png', mime: 'image/png' }, 'media'],
      ['post', '/v1/groups', { subject: 'Regulars' }, 'groups'],
      ['post', '/v1/broadcasts', { name: 'Sale', template_name: 'hello', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } }, 'templates'],
      ['post', `/v1/conversations/${conversation.id}/thread-control`, { action: 'take' }, 'thread_control'],
    ];
    for (const [method, path, body, capability] of refusals) {
      const res = await (request(t.app) as any)[method](path).set(auth(p.key)).send(body);
      expect({ path, status: res.status, code: res.body.error?.code, details: res.body.error?.details }).toEqual({
        path, status: 409, code: 'unsupported_by_channel', details: { capability, channel_kind: 'text_only' },
      });
    }
    expect(channel.sent.length).toBe(sentBefore);
    expect(await t.db.prisma.message.count({ where: { projectId: p.id } })).toBe(storedBefore);
    expect(await t.db.prisma.template.count({ where: { projectId: p.id } })).toBe(0);
    expect(await t.db.prisma.mediaAsset.count({ where: { projectId: p.id } })).toBe(0);
    // A text still goes.
    expect((await request(t.app).post('/v1/messages').set(auth(p.key)).send({ type: 'text', phone: '+14155550191', content: 'Only text here' })).status).toBe(200);
  });
});
