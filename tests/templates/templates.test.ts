/**
 * Templates against the simulator: create (media header handle rules, template_exists,
 * invalid_template), approval and rejection arriving from the channel (status and events), list
 * with filters and paging, read one, delete by name or by name and language, scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey } from '../support/uploads.js';
import * as S from '../support/samples.js';

let t: TestApp;
let dataDir: string;
beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-data-'));
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, config: { dataDir } });
});
afterAll(async () => {
  await t.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const create = (key: string, body: object) => request(t.app).post('/v1/templates').set(auth(key)).send(body);

async function manager() {
  return projectWithKey(t, ['templates:manage', 'templates:read', 'media:write']);
}

async function handle(key: string, format: 'IMAGE' | 'VIDEO' | 'DOCUMENT' = 'IMAGE'): Promise<string> {
  const [data, mime] = format === 'IMAGE' ? [S.png(), 'image/png'] : format === 'VIDEO' ? [S.mp4(), 'video/mp4'] : [S.pdf(), 'application/pdf'];
  const res = await request(t.app).post('/v1/templates/header-sample').set(auth(key)).send({ format, data: S.b64(data), filename: 'sample', mime });
  expect(res.status).toBe(201);
  return res.body.data.handle;
}

const body = (name: string, header?: object, language = 'en_US') => ({
  name,
  language,
  category: 'UTILITY',
  components: [
    ...(header ? [header] : []),
    { type: 'BODY', text: 'Hi {{1}}, your order has shipped.', example: { body_text: [['Ada']] } },
    { type: 'FOOTER', text: 'Thanks' },
    { type: 'BUTTONS', buttons: [{ type: 'QUICK_REPLY', text: 'Track it' }] },
  ],
});

async function decide(templateName: string, projectId: string, decision: 'APPROVED' | 'REJECTED', reason?: string) {
  const row = await t.db.prisma.template.findFirstOrThrow({ where: { projectId, name: templateName } });
  const res = await request(t.sim!.url).post(`/_sim/templates/${row.channelTemplateId}/decision`).send({ decision, reason });
  expect(res.status).toBe(200);
  expect(res.body.status_code).toBe(200);
}

describe('createTemplate', () => {
  it('When a template with an image header and its handle is created, then 201 PENDING; the channel approves it, the status follows and template.approved is raised', async () => {
    const { project, key } = await manager();
    const h = await handle(key);
    const res = await create(key, body('order_shipped', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [h] } }));
    expect(res.status).toBe(201);
    expect(res.body.data.template).toMatchObject({ name: 'order_shipped', language: 'en_US', category: 'UTILITY', status: 'PENDING', rejected_reason: null });
    expect(res.body.data.template.components[0].example.header_handle).toEqual([h]);
    await decide('order_shipped', project.id, 'APPROVED');
    const got = await request(t.app).get('/v1/templates/order_shipped').set(auth(key));
    expect(got.status).toBe(200);
    expect(got.body.data.template.status).toBe('APPROVED');
    const events = await t.db.prisma.event.findMany({ where: { projectId: project.id, name: { startsWith: 'template.' } } });
    expect(events.map((e) => [e.name, e.data])).toEqual([
      ['template.approved', { name: 'order_shipped', language: 'en_US', category: 'UTILITY', status: 'APPROVED' }],
    ]);
  });

  it('When the channel rejects a template, then its status is REJECTED with the reason and template.rejected is raised', async () => {
    const { project, key } = await manager();
    expect((await create(key, body('promo_text', { type: 'HEADER', format: 'TEXT', text: 'Sale!' }))).status).toBe(201);
    await decide('promo_text', project.id, 'REJECTED', 'INVALID_FORMAT');
    const got = await request(t.app).get('/v1/templates/promo_text?language=en_US').set(auth(key));
    expect(got.body.data.template).toMatchObject({ status: 'REJECTED', rejected_reason: 'INVALID_FORMAT' });
    const event = await t.db.prisma.event.findFirstOrThrow({ where: { projectId: project.id, name: 'template.rejected' } });
    expect(event.data).toMatchObject({ name: 'promo_text', status: 'REJECTED', reason: 'INVALID_FORMAT' });
  });

  it('When the name and language already exist, then 409 template_exists; another language is fine', async () => {
    const { key } = await manager();
    expect((await create(key, body('welcome'))).status).toBe(201);
    const again = await create(key, body('welcome'));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('template_exists');
    expect((await create(key, body('welcome', undefined, 'pt_BR'))).status).toBe(201);
  });

  it('When the template exists at the channel but not here (made elsewhere), then the channel\'s duplicate is 409 template_exists too', async () => {
    const { project, key } = await manager();
    expect((await create(key, body('elsewhere'))).status).toBe(201);
    await t.db.prisma.template.deleteMany({ where: { projectId: project.id, name: 'elsewhere' } });
    const res = await create(key, body('elsewhere'));
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('template_exists');
    expect(await t.db.prisma.template.count({ where: { projectId: project.id, name: 'elsewhere' } })).toBe(0);
  });

  it('When the channel rejects the payload, then 400 invalid_template with the provider\'s detail and nothing is stored', async () => {
    const { project, key } = await manager();
    const res = await create(key, { name: 'no_body', language: 'en_US', category: 'UTILITY', components: [{ type: 'FOOTER', text: 'Only a footer' }] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_template');
    expect(res.body.error.message).toMatch(/BODY/);
    expect(res.body.error.details.provider_code).toBe(100);
    expect(await t.db.prisma.template.count({ where: { projectId: project.id } })).toBe(0);
  });

  it('When a media header has no example.header_handle, then 400 invalid_request naming the field, without calling the channel', async () => {
    const { key } = await manager();
    for (const header of [{ type: 'HEADER', format: 'VIDEO' }, { type: 'HEADER', format: 'DOCUMENT', example: { header_handle: [] } }, { type: 'HEADER', format: 'IMAGE', example: {} }]) {
      const res = await create(key, body('needs_handle', header));
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.fields[0].field).toMatch(/components(\[0\]|\.0)\.example\.header_handle|header_handle/);
    }
  });

  it('When the handle is a media id, another project\'s handle, unknown, of another format or already used, then 400 invalid_header_handle', async () => {
    const { key } = await manager();
    const other = await manager();
    const media = await request(t.app).post('/v1/media').set(auth(key)).attach('file', S.png(), { filename: 'a.png', contentType: 'image/png' });
    expect(media.status).toBe(201);
    const mine = await handle(key);
    const cases: Array<[string, object, RegExp]> = [
      ['media id', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [media.body.data.media.media_id] } }, /media id/],
      ['other project', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [await handle(other.key)] } }, /not issued to this project/],
      ['unknown', { type: 'HEADER', format: 'IMAGE', example: { header_handle: ['4::aW1hZ2UvcG5n:ARfake'] } }, /not issued/],
      ['format', { type: 'HEADER', format: 'VIDEO', example: { header_handle: [mine] } }, /IMAGE sample/],
    ];
    for (const [what, header, message] of cases) {
      const res = await create(key, body(`bad_handle_${what.replace(/\W/g, '_')}`, header));
      expect([what, res.status, res.body.error?.code]).toEqual([what, 400, 'invalid_header_handle']);
      expect(res.body.error.message).toMatch(message);
    }
    expect((await create(key, body('first_use', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [mine] } }))).status).toBe(201);
    const reuse = await create(key, body('second_use', { type: 'HEADER', format: 'IMAGE', example: { header_handle: [mine] } }));
    expect(reuse.status).toBe(400);
    expect(reuse.body.error).toMatchObject({ code: 'invalid_header_handle', message: expect.stringMatching(/already used by template first_use/) });
  });

  it.each([
    ['a name with capitals', { ...body('x'), name: 'Order' }],
    ['an unknown category', { ...body('x'), category: 'PROMO' }],
    ['no components', { ...body('x'), components: [] }],
    ['an unknown component type', { ...body('x'), components: [{ type: 'SIDEBAR' }] }],
    ['an unknown member', { ...body('x'), extra: 1 }],
  ])('When the body has %s, then 400 invalid_request', async (_what, b) => {
    const { key } = await manager();
    const res = await create(key, b);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });

  it('When the key has only templates:read, then creating is 403 insufficient_scope', async () => {
    const { key } = await projectWithKey(t, ['templates:read']);
    expect((await create(key, body('nope'))).body.error.code).toBe('insufficient_scope');
  });
});

describe('listTemplates, getTemplate, deleteTemplate', () => {
  it('When listing, then newest first with filters by name, language, category and status, and a cursor pages through', async () => {
    const { project, key } = await manager();
    for (const [name, lang] of [['alpha', 'en_US'], ['alpha', 'es'], ['beta', 'en_US'], ['gamma', 'en_US']]) {
      expect((await create(key, body(name, undefined, lang))).status).toBe(201);
      t.clock.advance(1000);
    }
    await decide('beta', project.id, 'APPROVED');
    const list = (q = '') => request(t.app).get(`/v1/templates${q}`).set(auth(key));
    expect((await list()).body.data.templates.map((x: any) => `${x.name}/${x.language}`)).toEqual(['gamma/en_US', 'beta/en_US', 'alpha/es', 'alpha/en_US']);
    expect((await list('?name=alpha')).body.data.templates).toHaveLength(2);
    expect((await list('?language=es')).body.data.templates.map((x: any) => x.name)).toEqual(['alpha']);
    expect((await list('?status=APPROVED')).body.data.templates.map((x: any) => x.name)).toEqual(['beta']);
    expect((await list('?category=MARKETING')).body.data.templates).toEqual([]);
    const first = await list('?limit=3');
    expect(first.body.data.templates).toHaveLength(3);
    const second = await list(`?limit=3&cursor=${encodeURIComponent(first.body.data.nextCursor)}`);
    expect(second.body.data).toMatchObject({ templates: [{ name: 'alpha', language: 'en_US' }], nextCursor: null });
    expect((await list(`?limit=3&status=PENDING&cursor=${encodeURIComponent(first.body.data.nextCursor)}`)).body.error.code).toBe('invalid_cursor');
    expect((await list('?category=PROMO')).status).toBe(400);
  });

  it('When a name exists in several languages, then reading it without a language is 400 listing them; with a language it is the one', async () => {
    const { key } = await manager();
    await create(key, body('multi', undefined, 'en_US'));
    await create(key, body('multi', undefined, 'pt_BR'));
    const res = await request(t.app).get('/v1/templates/multi').set(auth(key));
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'bad_request', details: { languages: ['en_US', 'pt_BR'] } });
    expect((await request(t.app).get('/v1/templates/multi?language=pt_BR').set(auth(key))).body.data.template.language).toBe('pt_BR');
    expect((await request(t.app).get('/v1/templates/nothing_here').set(auth(key))).status).toBe(404);
    expect((await request(t.app).get('/v1/templates/Bad-Name').set(auth(key))).status).toBe(400);
  });

  it('When deleting by name and language, then only that one goes (here and at the channel); by name alone, every language', async () => {
    const { project, key, phoneNumberId: _ } = await manager();
    await create(key, body('bye', undefined, 'en_US'));
    await create(key, body('bye', undefined, 'es'));
    await create(key, body('bye', undefined, 'pt_BR'));
    const simCount = async () => {
      const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
      const res = await request(t.sim!.url).get(`/_sim/templates?waba_id=${channel.wabaId}`);
      return res.body.data.filter((x: any) => x.name === 'bye').length;
    };
    expect(await simCount()).toBe(3);
    const one = await request(t.app).delete('/v1/templates/bye?language=es').set(auth(key));
    expect(one.status).toBe(200);
    expect(one.body.data.deleted).toEqual([{ name: 'bye', language: 'es' }]);
    expect(await simCount()).toBe(2);
    const all = await request(t.app).delete('/v1/templates/bye').set(auth(key));
    expect(all.body.data.deleted).toHaveLength(2);
    expect(await simCount()).toBe(0);
    expect(await t.db.prisma.template.count({ where: { projectId: project.id, name: 'bye' } })).toBe(0);
    expect((await request(t.app).delete('/v1/templates/bye').set(auth(key))).status).toBe(404);
  });

  it('When the key has only templates:read, then deleting is 403', async () => {
    const { key } = await projectWithKey(t, ['templates:read']);
    expect((await request(t.app).delete('/v1/templates/x').set(auth(key))).body.error.code).toBe('insufficient_scope');
  });
});
