/**
 * The template kinds of late 2026 (issue 56, item 3), created through POST /v1/templates against the
 * simulator: a media card carousel (each card's header sample checked like a header's), a
 * limited-time offer, the call button and the call permission request, REQUEST_CONTACT_INFO,
 * supported_apps on an authentication template's one-tap button; each created, approved by the
 * channel; and each of Meta's rules refused before Graph (400 invalid_template naming the rule, no
 * Graph call), the simulator refusing the same payloads as Meta does.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, runUntil, seedMany } from '../support/broadcasts.js';
import { projectWithKey } from '../support/uploads.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import * as S from '../support/samples.js';
import { renderTemplate } from '../../lib/templates/render.js';
import { messagePreview } from '../../http/dashboard/broadcast-pages.js';
import { messageText } from '../../lib/dashboard/customer-reads.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
}, 60_000);
afterAll(async () => t?.close());

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const create = (key: string, body: object) => request(t.app).post('/v1/templates').set(auth(key)).send(body);
const graphCalls = async () => ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ path: string; method: string }>)
  .filter((r) => r.method === 'POST' && r.path.endsWith('/message_templates')).length;

async function manager() {
  return projectWithKey(t, ['templates:manage', 'templates:read', 'media:write']);
}

async function handle(key: string, format: 'IMAGE' | 'VIDEO' = 'IMAGE'): Promise<string> {
  const [data, mime] = format === 'IMAGE' ? [S.png(), 'image/png'] : [S.mp4(), 'video/mp4'];
  const res = await request(t.app).post('/v1/templates/header-sample').set(auth(key)).send({ format, data: S.b64(data), filename: 'sample', mime });
  expect(res.status).toBe(201);
  return res.body.data.handle;
}

async function approve(projectId: string, name: string) {
  const row = await t.db.prisma.template.findFirstOrThrow({ where: { projectId, name } });
  const res = await request(t.sim!.url).post(`/_sim/templates/${row.channelTemplateId}/decision`).send({ decision: 'APPROVED' });
  expect(res.body.status_code).toBe(200);
  expect((await t.db.prisma.template.findUniqueOrThrow({ where: { id: row.id } })).status).toBe('APPROVED');
}

const card = (h: string, n: number, over: object = {}) => ({
  components: [
    { type: 'HEADER', format: 'IMAGE', example: { header_handle: [h] } },
    { type: 'BODY', text: `Plant ${n}: {{1}}`, example: { body_text: [[`pot ${n}`]] } },
    { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'More' }, { type: 'URL', text: 'Buy', url: 'https://shop.example.com/p/{{1}}', example: ['succulent'] }] },
  ],
  ...over,
});
const carousel = (name: string, cards: object[], category = 'MARKETING') => ({
  name, language: 'en_US', category,
  components: [{ type: 'BODY', text: 'Our spring plants, {{1}}!', example: { body_text: [['Ada']] } }, { type: 'CAROUSEL', cards }],
});
const lto = (name: string, over: { offer?: object; buttons?: object[]; extra?: object[] } = {}) => ({
  name, language: 'en_US', category: 'MARKETING',
  components: [
    { type: 'LIMITED_TIME_OFFER', limited_time_offer: { text: 'Expiring offer!', has_expiration: true, ...over.offer } },
    { type: 'BODY', text: 'Good news, {{1}}! Use code {{2}} for 25% off.', example: { body_text: [['Ada', 'SPRING25']] } },
    ...(over.extra ?? []),
    { type: 'BUTTONS', buttons: over.buttons ?? [{ type: 'COPY_CODE', example: 'SPRING25' }, { type: 'URL', text: 'Book now!', url: 'https://shop.example.com/{{1}}', example: ['spring'] }] },
  ],
});

describe('the newer template kinds: created and approved', () => {
  it('a carousel of two cards, each with its own image sample, is created (PENDING), reaches the channel whole, and is approved', async () => {
    const { project, key } = await manager();
    const res = await create(key, carousel('spring_plants', [card(await handle(key), 1), card(await handle(key), 2)]));
    expect(res.status).toBe(201);
    expect(res.body.data.template).toMatchObject({ name: 'spring_plants', status: 'PENDING', category: 'MARKETING' });
    expect(res.body.data.template.components[1].cards).toHaveLength(2);
    const channel = (await openChannel(t.services.deps, project.id))!;
    const listed = await request(t.sim!.url).get(`/v26.0/${channel.wabaId}/message_templates`).query({ name: 'spring_plants' }).set('Authorization', `Bearer ${channel.accessToken}`).expect(200);
    expect(listed.body.data[0].components[1]).toMatchObject({ type: 'CAROUSEL', cards: [expect.anything(), expect.anything()] });
    await approve(project.id, 'spring_plants');
  });

  it('a limited-time offer, a template with the call button and the call permission request, one with REQUEST_CONTACT_INFO, and an authentication template with supported_apps', async () => {
    const { project, key } = await manager();
    expect((await create(key, lto('spring_offer'))).status).toBe(201);
    expect((await create(key, lto('open_offer', { offer: { has_expiration: false }, buttons: [{ type: 'URL', text: 'Shop', url: 'https://shop.example.com' }] }))).status).toBe(201);
    expect((await create(key, {
      name: 'call_us', language: 'en_US', category: 'MARKETING',
      components: [{ type: 'BODY', text: 'Questions? Call us on WhatsApp.' }, { type: 'CALL_PERMISSION_REQUEST' }, { type: 'BUTTONS', buttons: [{ type: 'VOICE_CALL', text: 'Call now' }] }],
    })).status).toBe(201);
    expect((await create(key, {
      name: 'share_number', language: 'en_US', category: 'UTILITY',
      components: [{ type: 'BODY', text: 'To send you delivery updates by SMS too, share your number.' }, { type: 'BUTTONS', buttons: [{ type: 'REQUEST_CONTACT_INFO', text: 'Share number' }] }],
    })).status).toBe(201);
    expect((await create(key, {
      name: 'login_code', language: 'en_US', category: 'AUTHENTICATION',
      components: [
        { type: 'BODY', text: '{{1}} is your verification code.', example: { body_text: [['123456']] } },
        { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ONE_TAP', text: 'Copy code', autofill_text: 'Autofill', supported_apps: [{ package_name: 'com.example.shop', signature_hash: 'K8a/AINcGX7' }, { package_name: 'com.example.shop.beta', signature_hash: 'AbCdEfGhIj0' }] }] },
      ],
    })).status).toBe(201);
    for (const name of ['spring_offer', 'open_offer', 'call_us', 'share_number', 'login_code']) await approve(project.id, name);
  });
});

describe("Meta's rules, before Graph", () => {
  it('each refusal is 400 invalid_template naming the rule and the place, and nothing reaches the channel', async () => {
    const { key } = await manager();
    const h = [await handle(key), await handle(key), await handle(key)];
    const video = await handle(key, 'VIDEO');
    const cases: Array<[string, object, string, string]> = [
      ['utility carousel', carousel('c2', [card(h[0], 1), card(h[1], 2)], 'UTILITY'), 'carousel_marketing_only', 'category'],
      ['three buttons on a card', carousel('c3', [card(h[0], 1), { components: [...card(h[1], 2).components.slice(0, 2), { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'a' }, { type: 'QUICK_REPLY', text: 'b' }, { type: 'QUICK_REPLY', text: 'c' }] }] }]), 'carousel_card_buttons', 'components[1].cards[1].components'],
      ['a copy-code button on a card', carousel('c4', [card(h[0], 1), { components: [...card(h[1], 2).components.slice(0, 2), { type: 'BUTTONS', buttons: [{ type: 'COPY_CODE', example: 'X' }] }] }]), 'carousel_card_button_kind', 'components[1].cards[1].components'],
      ['cards not alike (video header)', carousel('c5', [card(h[0], 1), { components: [{ type: 'HEADER', format: 'VIDEO', example: { header_handle: [video] } }, ...card(h[1], 2).components.slice(1)] }]), 'carousel_cards_alike', 'components[1].cards[1]'],
      ['a card without a header', carousel('c6', [card(h[0], 1), { components: card(h[1], 2).components.slice(1) }]), 'carousel_card_header', 'components[1].cards[1].components'],
      ['a header beside the carousel', { ...carousel('c7', [card(h[0], 1), card(h[1], 2)]), components: [{ type: 'HEADER', format: 'TEXT', text: 'Hi' }, ...carousel('c7', [card(h[0], 1), card(h[1], 2)]).components] }, 'carousel_components', 'components[0]'],
      ['an offer with a footer', lto('o2', { extra: [{ type: 'FOOTER', text: 'Terms apply' }] }), 'lto_no_footer', 'components[2]'],
      ['an expiring offer without its code first', lto('o3', { buttons: [{ type: 'URL', text: 'Go', url: 'https://shop.example.com' }, { type: 'COPY_CODE', example: 'X' }] }), 'lto_copy_code', 'components[2].buttons'],
      ['an offer without a URL button', lto('o4', { buttons: [{ type: 'COPY_CODE', example: 'X' }] }), 'lto_url_button', 'components[2].buttons'],
      ['two call buttons', { name: 'v1', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'Call' }, { type: 'BUTTONS', buttons: [{ type: 'VOICE_CALL', text: 'Call' }, { type: 'VOICE_CALL', text: 'Call again' }] }] }, 'voice_call_once', 'components'],
      ['REQUEST_CONTACT_INFO in an authentication template', { name: 'r1', language: 'en_US', category: 'AUTHENTICATION', components: [{ type: 'BODY', text: 'Code {{1}}', example: { body_text: [['1']] } }, { type: 'BUTTONS', buttons: [{ type: 'REQUEST_CONTACT_INFO', text: 'Share' }] }] }, 'request_contact_info_category', 'components[1].buttons[0]'],
      ['supported_apps on a copy-code OTP', { name: 'a1', language: 'en_US', category: 'AUTHENTICATION', components: [{ type: 'BODY', text: 'Code {{1}}', example: { body_text: [['1']] } }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'COPY_CODE', supported_apps: [{ package_name: 'com.example.app', signature_hash: 'K8a/AINcGX7' }] }] }] }, 'supported_apps_otp', 'components[1].buttons[0].supported_apps'],
    ];
    const before = await graphCalls();
    for (const [what, body, rule, field] of cases) {
      const res = await create(key, body);
      expect({ what, status: res.status, code: res.body.error?.code, rule: res.body.error?.details?.rule, field: res.body.error?.details?.fields?.[0]?.field })
        .toEqual({ what, status: 400, code: 'invalid_template', rule, field });
    }
    // The contract's own bounds (invalid_request, before any rule): one card or eleven, an offer text of 17 characters, a bad signature hash, six apps.
    expect((await create(key, carousel('c1', [card(h[0], 1)]))).body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'components.1.cards' }] } });
    expect((await create(key, carousel('c1', Array.from({ length: 11 }, (_, i) => card(h[i % 3], i))))).body.error.code).toBe('invalid_request');
    expect((await create(key, lto('o1', { offer: { text: 'Seventeen chars!!' } }))).body.error.code).toBe('invalid_request');
    const app = (signature_hash: string) => ({ package_name: 'com.example.app', signature_hash });
    const otp = (apps: object[]) => ({ name: 'a2', language: 'en_US', category: 'AUTHENTICATION', components: [{ type: 'BODY', text: 'Code {{1}}', example: { body_text: [['1']] } }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ONE_TAP', supported_apps: apps }] }] });
    expect((await create(key, otp([app('short')]))).body.error.code).toBe('invalid_request');
    expect((await create(key, otp(Array.from({ length: 6 }, () => app('K8a/AINcGX7'))))).body.error.code).toBe('invalid_request');
    expect(await graphCalls()).toBe(before);
    // Nothing was kept of a refused template.
    expect(await t.db.prisma.template.count({ where: { name: { in: ['c1', 'o1', 'v1', 'r1', 'a1'] } } })).toBe(0);
  });

  it("a card's header sample is checked like a header's: each card needs one, issued to this project, used once", async () => {
    const { key } = await manager();
    const h = await handle(key);
    const missing = await create(key, carousel('m1', [card(h, 1), { components: [{ type: 'HEADER', format: 'IMAGE' }, ...card(h, 2).components.slice(1)] }]));
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'components[1].cards[1].components[0].example.header_handle' }] } });
    const twice = await create(key, carousel('m2', [card(h, 1), card(h, 2)]));
    expect(twice.body.error).toMatchObject({ code: 'invalid_header_handle', details: { fields: [{ field: 'components[1].cards[1].components[0].example.header_handle' }] } });
    expect((await create(key, carousel('m3', [card(h, 1), card(await handle(key), 2)]))).status).toBe(201);
    const reused = await create(key, carousel('m4', [card(h, 1), card(await handle(key), 2)]));
    expect(reused.body.error.code).toBe('invalid_header_handle');
    expect(reused.body.error.message).toMatch(/already used by template m3/);
  });

  it('the simulator refuses the same payloads as Meta does (Graph code 100, a user title and message)', async () => {
    const { project } = await manager();
    const channel = (await openChannel(t.services.deps, project.id))!;
    const graph = (body: object) => request(t.sim!.url).post(`/v26.0/${channel.wabaId}/message_templates`).set('Authorization', `Bearer ${channel.accessToken}`).send(body);
    const one = await graph(carousel('s1', [{ components: [{ type: 'HEADER', format: 'IMAGE', example: { header_handle: ['x'] } }, { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'a' }] }] }]));
    expect(one.status).toBe(400);
    expect(one.body.error).toMatchObject({ code: 100, error_user_title: 'Invalid number of cards' });
    expect((await graph(lto('s2', { offer: { text: 'Seventeen chars!!' } }))).body.error).toMatchObject({ code: 100, error_user_title: 'Invalid limited-time offer' });
    const unknownHandle = await graph(carousel('s3', [card('not-a-handle', 1), card('not-a-handle-2', 2)]));
    expect(unknownHandle.body.error).toMatchObject({ code: 100, error_subcode: 2494102 });
  });
});

describe('sending the newer kinds through POST /v1/messages', () => {
  it('a carousel is sent with a card for each of the template\'s cards (header media, body variables, button parameters), as the channel takes it; a wrong number of cards is refused before the channel', async () => {
    const { project, key } = await projectWithKey(t, ['templates:manage', 'templates:read', 'media:write', 'messages:send']);
    expect((await create(key, carousel('plants_send', [card(await handle(key), 1), card(await handle(key), 2)]))).status).toBe(201);
    await approve(project.id, 'plants_send');
    const send = (cards: object[]) => request(t.app).post('/v1/messages').set(auth(key)).send({
      type: 'template', phone: '+15550101010', template: { name: 'plants_send', language: 'en_US', variables: ['Ada'], cards },
    });
    const cardSend = (n: number) => ({ header: { media: { link: `https://cdn.example.com/plant-${n}.png` } }, variables: [`pot ${n}`], buttons: [{ index: 1, sub_type: 'url', payload: `plant-${n}` }] });
    const sent = await send([cardSend(1), cardSend(2)]);
    expect(sent.status).toBe(200);
    const atChannel = (await request(t.sim!.url).get('/_sim/messages').query({ to: '15550101010', limit: 10 })).body.data.find((m: any) => m.wamid === sent.body.data.id);
    expect(atChannel.payload.template.components).toEqual([
      { type: 'body', parameters: [{ type: 'text', text: 'Ada' }] },
      { type: 'carousel', cards: [1, 2].map((n, i) => ({
        card_index: i,
        components: [
          { type: 'header', parameters: [{ type: 'image', image: { link: `https://cdn.example.com/plant-${n}.png` } }] },
          { type: 'body', parameters: [{ type: 'text', text: `pot ${n}` }] },
          { type: 'button', sub_type: 'url', index: '1', parameters: [{ type: 'text', text: `plant-${n}` }] },
        ],
      })) },
    ]);
    const before = (await request(t.sim!.url).get('/_sim/stats')).body.graph_requests;
    const one = await send([cardSend(1)]);
    expect(one.status).toBe(400);
    expect(one.body.error).toMatchObject({ code: 'template_variable_mismatch', details: { expected_cards: 2, given_cards: 1 } });
    const vars = await send([cardSend(1), { ...cardSend(2), variables: [] }]);
    expect(vars.body.error).toMatchObject({ code: 'template_variable_mismatch', details: { card: 1, expected: 1, given: 0 } });
    expect((await request(t.sim!.url).get('/_sim/stats')).body.graph_requests).toBe(before);
  });

  it('a limited-time offer is sent with its expiry and its code; without the expiry it is refused before the channel', async () => {
    const { project, key } = await projectWithKey(t, ['templates:manage', 'templates:read', 'messages:send']);
    expect((await create(key, lto('offer_send'))).status).toBe(201);
    await approve(project.id, 'offer_send');
    const send = (extra: object) => request(t.app).post('/v1/messages').set(auth(key)).send({
      type: 'template', phone: '+15550101011',
      template: { name: 'offer_send', language: 'en_US', variables: ['Ada', 'SPRING25'], buttons: [{ index: 0, sub_type: 'copy_code', payload: 'SPRING25' }, { index: 1, sub_type: 'url', payload: 'spring' }], ...extra },
    });
    const expiry = Date.parse('2026-12-31T23:59:59Z');
    const sent = await send({ limited_time_offer: { expiration_time_ms: expiry } });
    expect(sent.status).toBe(200);
    const atChannel = (await request(t.sim!.url).get('/_sim/messages').query({ to: '15550101011', limit: 10 })).body.data.find((m: any) => m.wamid === sent.body.data.id);
    expect(atChannel.payload.template.components).toEqual(expect.arrayContaining([
      { type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: expiry } }] },
      { type: 'button', sub_type: 'copy_code', index: '0', parameters: [{ type: 'coupon_code', coupon_code: 'SPRING25' }] },
    ]));
    const without = await send({});
    expect(without.status).toBe(400);
    expect(without.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'template.limited_time_offer' }] } });
  });

  it('the simulator, like Meta, refuses a carousel send with the wrong number of cards (132000) and an expiring offer without its expiry (131008)', async () => {
    const { project, key } = await projectWithKey(t, ['templates:manage', 'templates:read', 'media:write']);
    expect((await create(key, carousel('plants_sim', [card(await handle(key), 1), card(await handle(key), 2)]))).status).toBe(201);
    expect((await create(key, lto('offer_sim'))).status).toBe(201);
    await approve(project.id, 'plants_sim');
    await approve(project.id, 'offer_sim');
    const channel = (await openChannel(t.services.deps, project.id))!;
    const graph = (template: object) => request(t.sim!.url).post(`/v26.0/${channel.phoneNumberId}/messages`).set('Authorization', `Bearer ${channel.accessToken}`)
      .send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: '15550101012', type: 'template', template });
    const header = (n: number) => ({ type: 'header', parameters: [{ type: 'image', image: { link: `https://cdn.example.com/${n}.png` } }] });
    const oneCard = await graph({ name: 'plants_sim', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ada' }] }, { type: 'carousel', cards: [{ card_index: 0, components: [header(1), { type: 'body', parameters: [{ type: 'text', text: 'x' }] }] }] }] });
    expect(oneCard.body.error).toMatchObject({ code: 132000, error_data: { details: expect.stringContaining('number of cards (1)') } });
    const noExpiry = await graph({ name: 'offer_sim', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ada' }, { type: 'text', text: 'X' }] }] });
    expect(noExpiry.body.error).toMatchObject({ code: 131008 });
  });
});

describe('REQUEST_CONTACT_INFO: a username customer shares their number', () => {
  it('the customer known only by BSUID answers the button with their number: one contact, its phone filled, the conversation kept', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t, ['templates:manage', 'templates:read', 'messages:send', 'contacts:read', 'conversations:read']);
    expect((await create(key, {
      name: 'ask_number', language: 'en_US', category: 'UTILITY',
      components: [{ type: 'BODY', text: 'To reach you by phone too, share your number.' }, { type: 'BUTTONS', buttons: [{ type: 'REQUEST_CONTACT_INFO', text: 'Share number' }] }],
    })).status).toBe(201);
    await approve(project.id, 'ask_number');
    const user = (await request(t.sim!.url).post('/_sim/users').send({ phone_number_id: phoneNumberId, username: 'nora.k', phone: '+14155550909', name: 'Nora' }).expect(201)).body;
    expect(user.phone_shared).toBe(false);
    expect((await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, user_id: user.user_id, text: 'hi' })).body.status_code).toBe(200);
    const contacts = async () => (await t.db.pool.query('SELECT id, phone, user_id, username FROM contacts WHERE project_id = $1', [project.id])).rows;
    const [before] = await contacts();
    expect(before).toMatchObject({ phone: null, user_id: user.user_id, username: 'nora.k' });

    const asked = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'template', user_id: user.user_id, template: { name: 'ask_number', language: 'en_US' } });
    expect(asked.status).toBe(200);
    const shared = await request(t.sim!.url).post(`/_sim/users/${user.user_id}/share-contact-info`).send({ phone_number_id: phoneNumberId, context: asked.body.data.id });
    expect(shared.status).toBe(200);
    expect(shared.body).toMatchObject({ phone_shared: true, status_code: 200 });

    const after = await contacts();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: before.id, phone: '14155550909', user_id: user.user_id, username: 'nora.k' });
    const messages = (await t.db.pool.query(`SELECT m.direction, m.type FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.contact_id = $1 ORDER BY m.id`, [before.id])).rows;
    expect(messages.map((m) => `${m.direction}:${m.type}`)).toEqual(['inbound:text', 'outbound:template', 'inbound:contacts']);
    // The conversation view says what the customer shared.
    const conv = (await t.db.pool.query('SELECT id FROM conversations WHERE contact_id = $1', [before.id])).rows[0];
    const listed = await request(t.app).get(`/v1/conversations/${conv.id}/messages`).set(auth(key)).expect(200);
    const answer = listed.body.data.messages.find((m: any) => m.type === 'contacts');
    expect(messageText(answer)).toBe('Shared contact: Nora +14155550909');
  });
});

describe('rendering the newer kinds (the approval page, the templates page, the conversation view)', () => {
  it('a carousel shows its cards, an offer its headline, the call and contact buttons what they do', () => {
    const c = carousel('r', [card('h1', 1), card('h2', 2)]).components;
    const r = renderTemplate(c, { body: ['Ada'] });
    expect(r.body).toBe('Our spring plants, Ada!');
    expect(r.cards).toEqual([1, 2].map((n) => ({ header: { media: 'IMAGE' }, body: `Plant ${n}: {{1}}`, buttons: [{ type: 'QUICK_REPLY', text: 'More' }, { type: 'URL', text: 'Buy', detail: 'https://shop.example.com/p/{{1}}' }] })));
    const page = String(messagePreview(r));
    expect(page).toContain('aria-label="2 carousel cards"');
    expect(page).toContain('[image]</span> Plant 2: {{1}}');
    const offer = renderTemplate(lto('o').components);
    expect(offer.offer).toEqual({ text: 'Expiring offer!', expires: true });
    expect(offer.buttons[0]).toEqual({ type: 'COPY_CODE', text: 'Copy code', detail: 'copies the code' });
    expect(String(messagePreview(offer))).toContain(`<strong>Expiring offer!</strong> <span class="muted">(with the offer's countdown)</span>`);
    const call = renderTemplate([{ type: 'BODY', text: 'Call us' }, { type: 'CALL_PERMISSION_REQUEST' }, { type: 'BUTTONS', buttons: [{ type: 'VOICE_CALL', text: 'Call now' }, { type: 'REQUEST_CONTACT_INFO', text: 'Share number' }] }]);
    expect(call.callPermissionRequest).toBe(true);
    expect(String(messagePreview(call))).toContain('Share number <span class="muted">(request contact info: asks for the phone number)</span>');
    // The conversation view: a carousel send and an offer's expiry.
    expect(messageText({ type: 'template', content: { type: 'template', template: { name: 'plants', language: 'en_US', variables: ['Ada'], cards: [{}, {}], limited_time_offer: { expiration_time_ms: Date.parse('2026-12-31T23:59:59Z') } } } } as any))
      .toBe('Template plants (Ada); 2 carousel cards; offer ends 2026-12-31T23:59:59.000Z');
  });
});

describe('campaigns of the newer kinds', () => {
  it('a carousel campaign: a card for each of the template\'s cards (header link, body variables resolved per recipient); an offer campaign with its expiry and code; both sent as the channel takes them', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t, ['templates:manage', 'templates:read', 'media:write', 'broadcasts:read', 'broadcasts:manage', 'contacts:read']);
    expect((await create(key, carousel('plants_campaign', [card(await handle(key), 1), card(await handle(key), 2)]))).status).toBe(201);
    expect((await create(key, lto('offer_campaign'))).status).toBe(201);
    await approve(project.id, 'plants_campaign');
    await approve(project.id, 'offer_campaign');
    await seedMany(t, project.id, 3, 15570000000 + Math.floor(Math.random() * 1e5) * 100);
    const call = api(t, key);
    const audience = { filter: { match: 'all', conditions: [] } };
    const cards = [
      { header: { link: 'https://cdn.example.com/plant-1.png' }, body: ['pot 1'] },
      { header: { link: 'https://cdn.example.com/plant-2.png' }, body: ['{{contact.phone}}'] },
    ];
    const campaign = (template_name: string, template_variables: object) => call.post('/v1/broadcasts', { name: template_name, template_name, template_language: 'en_US', audience, template_variables });

    const one = await campaign('plants_campaign', { body: ['{{contact.name|friend}}'], cards: cards.slice(0, 1) });
    expect(one.body.error).toMatchObject({ code: 'template_variable_mismatch', details: { expected_cards: 2, given_cards: 1 } });
    const noLink = await campaign('plants_campaign', { body: ['x'], cards: [cards[0], { body: ['x'] }] });
    expect(noLink.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'template_variables.cards[1].header.link' }] } });
    const noExpiry = await campaign('offer_campaign', { body: ['{{contact.name|friend}}', 'SPRING25'], coupon_code: 'SPRING25' });
    expect(noExpiry.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'template_variables.limited_time_offer' }] } });
    const noCode = await campaign('offer_campaign', { body: ['x', 'y'], limited_time_offer: { expiration_time_ms: 1 } });
    expect(noCode.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'template_variables.coupon_code' }] } });

    const plants = await campaign('plants_campaign', { body: ['{{contact.name|friend}}'], cards });
    expect(plants.status).toBe(201);
    const expiry = Date.parse('2026-12-31T23:59:59Z');
    const offer = await campaign('offer_campaign', { body: ['{{contact.name|friend}}', 'SPRING25'], limited_time_offer: { expiration_time_ms: expiry }, coupon_code: 'SPRING25' });
    expect(offer.status).toBe(201);
    const engine = await engineFor(t);
    try {
      for (const id of [plants.body.data.broadcast.id, offer.body.data.broadcast.id]) {
        await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
        expect(await runUntil(t, engine, id, ['completed', 'failed'])).toBe('completed');
      }
    } finally {
      await engine.stop();
    }
    const sent = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&limit=100`)).body.data as Array<{ to: string; payload: any }>;
    const carousels = sent.filter((m) => m.payload.template.name === 'plants_campaign');
    expect(carousels).toHaveLength(3);
    for (const m of carousels) {
      expect(m.payload.template.components).toEqual([
        { type: 'body', parameters: [{ type: 'text', text: 'friend' }] },
        { type: 'carousel', cards: [
          { card_index: 0, components: [{ type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/plant-1.png' } }] }, { type: 'body', parameters: [{ type: 'text', text: 'pot 1' }] }] },
          { card_index: 1, components: [{ type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/plant-2.png' } }] }, { type: 'body', parameters: [{ type: 'text', text: `+${m.to}` }] }] },
        ] },
      ]);
    }
    const offers = sent.filter((m) => m.payload.template.name === 'offer_campaign');
    expect(offers).toHaveLength(3);
    expect(offers[0].payload.template.components).toEqual([
      { type: 'body', parameters: [{ type: 'text', text: 'friend' }, { type: 'text', text: 'SPRING25' }] },
      { type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: expiry } }] },
      { type: 'button', sub_type: 'copy_code', index: '0', parameters: [{ type: 'coupon_code', coupon_code: 'SPRING25' }] },
    ]);
    // A recipient's resolved variables carry each card's body.
    const recipients = (await call.get(`/v1/broadcasts/${plants.body.data.broadcast.id}/recipients`)).body.data.recipients;
    expect(recipients[0].variables.cards).toEqual([{ body: ['pot 1'] }, { body: [`+${recipients[0].phone.replace(/\D/g, '')}`] }]);
  }, 60_000);
});
