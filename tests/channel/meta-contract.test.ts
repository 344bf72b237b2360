/**
 * The service's Graph calls against Meta's published contract (../shared/meta, repaired by
 * simulator/meta/repair.ts): the service drives the bundled simulator through its own API (sends
 * of every type, templates, media, flows) and its Cloud API client (template list, media read);
 * every request the simulator received and every answer it gave is validated against Meta's
 * schema for that call, a send against the schema of its `type`. Callbacks (inbound text, button
 * reply, image; statuses sent, delivered, read) are validated against Meta's webhook schema, and
 * their signatures checked. Without ../shared/meta the suite says so and skips.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import YAML from 'yaml';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey } from '../support/uploads.js';
import { Receiver } from '../support/receiver.js';
import * as S from '../support/samples.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { loadMetaSchemas, type MetaSchemas } from '../../simulator/meta/validator.js';
import { vendor, type Operation } from '../../simulator/meta/repair.js';
import { DEFAULT_SOURCE } from '../../simulator/meta/vendor.js';
import type { GraphRequestEntry } from '../../simulator/request-log.js';

const present = fs.existsSync(DEFAULT_SOURCE);
if (!present) console.warn(`meta-contract: ${DEFAULT_SOURCE} is absent; the contract test against Meta's published schema is skipped.`);
const suite = present ? describe : describe.skip;

const CUSTOMER = '+14155550142';
const SECRET = 'contract-app-secret';

let t: TestApp;
let meta: MetaSchemas;
let key: string;
let projectId: string;
let phoneNumberId: string;
let receiver: Receiver;

/** Meta's operation for a request the simulator logged (by path shape and the ids the simulator issued). */
function operationOf(e: GraphRequestEntry, ids: { media: Set<string>; templates: Set<string>; flows: Set<string> }): Operation | null {
  const [node, edge] = e.path.split('/').filter(Boolean).map(decodeURIComponent);
  const m = e.method;
  if (edge === 'messages' && m === 'POST') return 'POST /{Version}/{Phone-Number-ID}/messages';
  if (edge === 'media' && m === 'POST') return 'POST /{Version}/{Phone-Number-ID}/media';
  if (edge === 'message_templates') return `${m} /{Version}/{WABA-ID}/message_templates` as Operation;
  if (edge === 'flows' && m === 'POST') return 'POST /{Version}/{WABA-ID}/flows';
  if (edge && ['assets', 'publish', 'deprecate'].includes(edge) && m === 'POST') return `POST /{Version}/{Flow-ID}/${edge}` as Operation;
  if (!edge && ids.media.has(node)) return `${m} /{Version}/{Media-ID}` as Operation;
  if (!edge && ids.templates.has(node) && m === 'GET') return 'GET /{Version}/{TEMPLATE_ID}';
  if (!edge && ids.flows.has(node) && m === 'GET') return 'GET /{Version}/{Flow-ID}';
  return null;
}

const auth = () => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });
const send = async (body: object) => {
  const res = await request(t.app).post('/v1/messages').set(auth()).send({ phone: CUSTOMER, ...body });
  expect({ body, status: res.status, answer: res.body }).toMatchObject({ status: 200 });
  return res.body.data.id as string;
};
const upload = async (data: Buffer, filename: string, mime: string) => {
  const res = await request(t.app).post('/v1/media').set(auth()).send({ data: S.b64(data), filename, mime });
  expect(res.status).toBe(201);
  return res.body.data.media as { slug: string; media_id: string };
};
const decide = async (name: string) => {
  const row = await t.db.prisma.template.findFirstOrThrow({ where: { projectId, name } });
  expect((await request(t.sim!.url).post(`/_sim/templates/${row.channelTemplateId}/decision`).send({ decision: 'APPROVED' })).status).toBe(200);
};

// Only where the suite runs (it is skipped otherwise).
if (present) {
  beforeAll(async () => {
    meta = loadMetaSchemas(vendor(YAML.parse(fs.readFileSync(DEFAULT_SOURCE, 'utf8')), 'business-messaging-api_v23.0.yaml'));
    t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
    const p = await projectWithKey(t, ['messages:send', 'media:write', 'media:read', 'templates:manage', 'templates:read', 'flows:read', 'flows:write']);
    key = p.key;
    projectId = p.project.id;
    phoneNumberId = p.phoneNumberId;
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });
}

suite("the service's Graph calls, validated against Meta's published schema", () => {
  it('When the service makes each of its Graph calls, then every request and answer matches Meta’s schema for the call', async () => {
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: CUSTOMER.slice(1), name: 'Ada', text: 'hi' }).expect(200);

    // Media: upload (multipart at the channel), then every media type by slug, media id and link.
    const media = {
      image: await upload(S.png(), 'a.png', 'image/png'),
      video: await upload(S.mp4(2000), 'clip.mp4', 'video/mp4'),
      document: await upload(S.pdf(), 'menu.pdf', 'application/pdf'),
      audio: await upload(S.isoMedia(2000, 'M4A '), 'voice.m4a', 'audio/mp4'),
    };
    const links = { image: 'https://example.com/a.png', video: 'https://example.com/clip.mp4', document: 'https://example.com/menu.pdf', audio: 'https://example.com/voice.m4a' };
    await send({ type: 'text', content: 'Your order shipped' });
    for (const type of ['image', 'video', 'document', 'audio'] as const) {
      const extra = type === 'audio' ? {} : type === 'document' ? { caption: 'The menu', filename: 'menu.pdf' } : { caption: `A ${type}` };
      await send({ type, media: { slug: media[type].slug, ...extra } });
      await send({ type, media: { media_id: media[type].media_id, ...extra } });
      await send({ type, media: { link: links[type], ...extra } });
    }
    await send({ type: 'interactive', interactive: { body: 'Pick one', header: 'Order 42', footer: 'Thanks', buttons: [{ id: 'yes', title: 'Yes' }, { id: 'no', title: 'No' }] } });
    await send({ type: 'interactive', interactive: { body: 'Menu', list: { button: 'Open', sections: [{ title: 'Mains', rows: [{ id: 'r1', title: 'Soup', description: 'Hot' }] }] } } });

    // Templates: a text header, and a media header with its sample handle; sent with header, body and button parameters.
    const components = (header: object) => [
      header,
      { type: 'BODY', text: 'Hi {{1}}, your order has shipped.', example: { body_text: [['Ada']] } },
      { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Track it' }] },
    ];
    const sample = await request(t.app).post('/v1/templates/header-sample').set(auth()).send({ format: 'IMAGE', data: S.b64(S.png()), filename: 'sample', mime: 'image/png' });
    expect(sample.status).toBe(201);
    for (const [name, header] of [
      ['text_header', { type: 'HEADER', format: 'TEXT', text: 'Order {{1}}', example: { header_text: ['42'] } }],
      ['image_header', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [sample.body.data.handle] } }],
    ] as const) {
      const res = await request(t.app).post('/v1/templates').set(auth()).send({ name, language: 'en_US', category: 'UTILITY', components: components(header) });
      expect(res.status).toBe(201);
      await decide(name);
    }
    // URL and copy-code buttons take their own parameter types.
    const more = await request(t.app).post('/v1/templates').set(auth()).send({
      name: 'all_buttons', language: 'en_US', category: 'MARKETING',
      components: [
        { type: 'BODY', text: 'Hi {{1}}, here is your code.', example: { body_text: [['Ada']] } },
        { type: 'BUTTONS', buttons: [{ type: 'URL', text: 'Track', url: 'https://example.com/t/{{1}}', example: ['abc'] }, { type: 'COPY_CODE', example: 'SAVE10' }] },
      ],
    });
    expect(more.status).toBe(201);
    await decide('all_buttons');
    await send({ type: 'template', template: { name: 'all_buttons', language: 'en_US', variables: ['Ada'], buttons: [{ index: 0, sub_type: 'url', payload: 'abc' }, { index: 1, sub_type: 'copy_code', payload: 'SAVE10' }] } });
    const button = [{ index: 0, sub_type: 'quick_reply', payload: 'track' }];
    await send({ type: 'template', template: { name: 'text_header', language: 'en_US', header: { variables: ['42'] }, variables: ['Ada'], buttons: button } });
    await send({ type: 'template', template: { name: 'image_header', language: 'en_US', header: { media: { slug: media.image.slug } }, variables: ['Ada'], buttons: button } });
    await send({ type: 'template', template: { name: 'image_header', language: 'en_US', header: { media: { link: links.image } }, variables: ['Ada'], buttons: button } });

    // The client's reads: template list, media read.
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, projectId))!;
    const creds = { phoneNumberId: channel.phoneNumberId, wabaId: channel.wabaId, appId: channel.appId, accessToken: channel.accessToken };
    const client = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 5000 });
    expect((await client.listTemplates(creds)).map((x) => x.name).sort()).toEqual(['all_buttons', 'image_header', 'text_header']);
    expect((await client.getMedia(creds, media.image.media_id)).id).toBe(media.image.media_id);

    // Deletes: a template, a media asset.
    expect((await request(t.app).delete('/v1/templates/text_header').set(auth())).status).toBe(200);
    expect((await request(t.app).delete(`/v1/media/${media.video.slug}`).set(auth())).status).toBe(200);

    // Flows: create, upload the Flow JSON, read, publish; a later version deprecates the first.
    const description = { screens: [{ title: 'Contact', fields: [{ name: 'email', label: 'Email', type: 'email', required: true }] }] };
    expect((await request(t.app).post('/v1/flows/generate').set(auth()).send({ name: 'contact_form', categories: ['CONTACT_US'], description })).status).toBe(201);
    expect((await request(t.app).post(`/admin/projects/${projectId}/flows/contact_form/publish`).set(admin()).send({})).status).toBe(200);
    await send({ type: 'interactive', interactive: { body: 'Tell us', flow: { name: 'contact_form', cta: 'Open' } } });
    expect((await request(t.app).post(`/admin/projects/${projectId}/flows/contact_form/deprecate`).set(admin()).send()).status).toBe(200);

    // Everything the simulator received, against Meta's schemas.
    const log = (await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as GraphRequestEntry[];
    const ids = { media: new Set<string>(), templates: new Set<string>(), flows: new Set<string>() };
    for (const e of log) {
      const id = (e.answer as { id?: unknown } | null)?.id;
      if (typeof id !== 'string') continue;
      if (e.path.endsWith('/media')) ids.media.add(id);
      else if (e.path.endsWith('/message_templates')) ids.templates.add(id);
      else if (e.path.endsWith('/flows')) ids.flows.add(id);
    }
    const seen = new Map<string, number>();
    const sendTypes = new Set<string>();
    const problems: unknown[] = [];
    for (const e of log) {
      if (e.path.includes('upload:') || e.path.endsWith('/uploads')) continue; // Resumable Upload: not in Meta's document
      const op = operationOf(e, ids);
      if (!op) {
        problems.push({ unmatched: `${e.method} ${e.path}` });
        continue;
      }
      seen.set(op, (seen.get(op) ?? 0) + 1);
      if (e.status !== 200) problems.push({ op, status: e.status, answer: e.answer });
      const hasBody = e.method === 'POST' && !['publish', 'deprecate'].some((x) => e.path.endsWith(x));
      if (hasBody) {
        const issues = meta.request(op, e.body, e.content_type ?? 'application/json');
        if (issues.length) problems.push({ op, body: e.body, issues });
      }
      if (op === 'POST /{Version}/{Phone-Number-ID}/messages') {
        const body = e.body as { type: string; template?: { components?: { type: string; parameters: { type: string }[] }[] }; interactive?: { type: string } };
        const byType = { text: 'TextMessage', image: 'ImageMessage', video: 'VideoMessage', document: 'DocumentMessage', audio: 'AudioMessage', interactive: 'InteractiveMessage', template: 'TemplateMessage' }[body.type];
        expect(byType).toBeDefined();
        const issues = meta.named(byType!, body);
        if (issues.length) problems.push({ type: body.type, body, issues });
        const kind = body.type === 'interactive' ? `interactive:${body.interactive!.type}` : body.type === 'template' ? `template:${body.template!.components!.map((c) => c.type + (c.type === 'header' ? `(${c.parameters[0].type})` : '')).join('+')}` : body.type;
        sendTypes.add(kind);
      }
      const answerIssues = e.status === 200 ? meta.response(op, e.answer) : meta.error(e.answer);
      if (answerIssues.length) problems.push({ op, answer: e.answer, answerIssues });
    }
    expect(problems).toEqual([]);
    // The validation is not vacuous: the first send with an unknown type is refused.
    const first = log.find((e) => e.path.endsWith('/messages'))!.body as object;
    expect(meta.request('POST /{Version}/{Phone-Number-ID}/messages', { ...first, type: 'fax' })).not.toEqual([]);
    // Every kind of call was made, each send type among them.
    expect([...seen.keys()].sort()).toEqual(
      [
        'POST /{Version}/{Phone-Number-ID}/messages',
        'POST /{Version}/{Phone-Number-ID}/media',
        'GET /{Version}/{Media-ID}',
        'DELETE /{Version}/{Media-ID}',
        'POST /{Version}/{WABA-ID}/message_templates',
        'GET /{Version}/{WABA-ID}/message_templates',
        'DELETE /{Version}/{WABA-ID}/message_templates',
        'POST /{Version}/{WABA-ID}/flows',
        'GET /{Version}/{Flow-ID}',
        'POST /{Version}/{Flow-ID}/assets',
        'POST /{Version}/{Flow-ID}/publish',
        'POST /{Version}/{Flow-ID}/deprecate',
      ].sort(),
    );
    expect([...sendTypes].sort()).toEqual(
      ['audio', 'document', 'image', 'interactive:button', 'interactive:flow', 'interactive:list', 'template:body+button+button', 'template:header(image)+body+button', 'template:header(text)+body+button', 'text', 'video'].sort(),
    );
    // Media by slug, id and link: 4 types × 3.
    const mediaSends = log.filter((e) => e.path.endsWith('/messages') && ['image', 'video', 'document', 'audio'].includes((e.body as { type: string }).type));
    expect(mediaSends.map((e) => Object.keys((e.body as Record<string, Record<string, unknown>>)[(e.body as { type: string }).type]).filter((k) => k === 'id' || k === 'link')[0]).sort()).toEqual([...Array(8).fill('id'), ...Array(4).fill('link')]);
  });
});

suite("the service's Graph calls, validated against Meta's published schema", () => {
  it('When the simulator calls back (inbound text, button reply, image; statuses sent, delivered, read, failed), then each body matches Meta’s webhook schema and is signed', async () => {
    const reg = await request(t.sim!.url).post('/_sim/phone-numbers').send({ callback_url: `${receiver.url}/hook`, app_secret: SECRET });
    expect(reg.status).toBe(201);
    const pn = reg.body;
    const client = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 5000 });
    const creds = { phoneNumberId: pn.phone_number_id, wabaId: pn.waba_id, appId: pn.app_id, accessToken: pn.access_token };
    const { channelMessageId: wamid } = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: '14155550143' }, content: { type: 'text', text: { body: 'hello' } } });
    for (const status of ['sent', 'delivered', 'read']) expect((await request(t.sim!.url).post('/_sim/status').send({ wamid, status })).body.status_code).toBe(200);
    const second = await client.sendMessage(creds, { recipient: { kind: 'customer', phone: '14155550143' }, content: { type: 'text', text: { body: 'again' } } });
    const failed = await request(t.sim!.url).post('/_sim/status').send({ wamid: second.channelMessageId, status: 'failed', errors: [{ code: 131026, title: 'Message undeliverable', error_data: { details: 'Unknown recipient' } }] });
    expect(failed.body.status_code).toBe(200);
    const inbound = (b: object) => request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: pn.phone_number_id, from: '14155550143', ...b }).expect(200);
    await inbound({ name: 'Ada', text: 'Oi!' });
    await inbound({ type: 'interactive', object: { type: 'button_reply', button_reply: { id: 'yes', title: 'Yes' } }, context: { from: pn.display_phone_number, id: wamid } });
    await inbound({ type: 'image', object: { caption: 'look' }, media: { data_base64: S.png().toString('base64'), mime_type: 'image/png', filename: 'a.png' } });

    const got = await receiver.waitFor('/hook', 7);
    const kinds: string[] = [];
    for (const r of got) {
      expect(r.headers['x-hub-signature-256']).toBe(`sha256=${createHmac('sha256', SECRET).update(r.raw).digest('hex')}`);
      expect(meta.request('POST /whatsapp/webhooks', r.body)).toEqual([]);
      const value = r.body.entry[0].changes[0].value;
      for (const s of value.statuses ?? []) {
        expect(meta.named('Statuses', s)).toEqual([]);
        kinds.push(`status:${s.status}`);
      }
      for (const m of value.messages ?? []) {
        const schema = { text: 'TextMessage_2', interactive: 'InteractiveMessageReply', image: 'ImageMessage_1' }[m.type as string];
        expect(meta.named(schema!, m)).toEqual([]);
        expect(meta.named('IncomingMessage', m)).toEqual([]);
        kinds.push(`inbound:${m.type}`);
      }
    }
    expect(kinds.sort()).toEqual(['inbound:image', 'inbound:interactive', 'inbound:text', 'status:delivered', 'status:failed', 'status:read', 'status:sent']);
    // A callback Meta's schema refuses is refused here too (the validation is not vacuous).
    const bad = structuredClone(got.find((r) => r.body.entry[0].changes[0].value.messages?.[0]?.type === 'text')!.body);
    delete bad.entry[0].changes[0].value.messages[0].text;
    expect(meta.named('IncomingMessage', bad.entry[0].changes[0].value.messages[0])).not.toEqual([]);
  });
  it('When the Flows endpoints are called as Meta publishes them (multipart create and asset upload, read, publish, deprecate), then each answer matches Meta’s schema; a refused step answers GraphAPIError', async () => {
    const reg = (await request(t.sim!.url).post('/_sim/phone-numbers').send({ callback_url: `${receiver.url}/flows`, app_secret: SECRET }).expect(201)).body;
    const graph = (path: string) => `/v26.0/${path}`;
    const as = (r: request.Test) => r.set('Authorization', `Bearer ${reg.access_token}`);
    const check = (op: Operation, res: request.Response) => {
      expect(res.status).toBe(200);
      expect(meta.response(op, res.body)).toEqual([]);
      return res.body;
    };
    const created = check('POST /{Version}/{WABA-ID}/flows', await as(request(t.sim!.url).post(graph(`${reg.waba_id}/flows`))).field('name', 'my_first_flow').field('categories', '["SURVEY"]'));
    expect(meta.request('POST /{Version}/{WABA-ID}/flows', { name: 'my_first_flow', categories: '["SURVEY"]' }, 'multipart/form-data')).toEqual([]);
    const json = { version: '7.0', screens: [{ id: 'START', title: 'Start', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Footer', label: 'Done', 'on-click-action': { name: 'complete', payload: {} } }] } }] };
    const uploaded = check(
      'POST /{Version}/{Flow-ID}/assets',
      await as(request(t.sim!.url).post(graph(`${created.id}/assets`))).field('name', 'flow.json').field('asset_type', 'FLOW_JSON').attach('file', Buffer.from(JSON.stringify(json)), { filename: 'flow.json', contentType: 'application/json' }),
    );
    expect(uploaded).toEqual({ success: true, validation_errors: [] });
    const fields = 'id,name,categories,preview,status,validation_errors,json_version,data_api_version,whatsapp_business_account';
    const read = check('GET /{Version}/{Flow-ID}', await as(request(t.sim!.url).get(graph(`${created.id}?fields=${fields}`))));
    expect(read).toMatchObject({ id: created.id, name: 'my_first_flow', categories: ['SURVEY'], status: 'DRAFT', json_version: '7.0', whatsapp_business_account: { id: reg.waba_id } });
    expect(check('POST /{Version}/{Flow-ID}/publish', await as(request(t.sim!.url).post(graph(`${created.id}/publish`))))).toEqual({ success: true });
    expect(check('POST /{Version}/{Flow-ID}/deprecate', await as(request(t.sim!.url).post(graph(`${created.id}/deprecate`))))).toEqual({ success: true });
    const again = await as(request(t.sim!.url).post(graph(`${created.id}/publish`)));
    expect(again.status).toBe(400);
    expect(meta.error(again.body)).toEqual([]);
    expect(again.body.error).toMatchObject({ code: 139002 });
  });
});
