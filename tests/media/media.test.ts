/**
 * Media assets against the simulator: multipart, inline and URL uploads with verified types and
 * per-kind ceilings, list/read/delete, the blob store, sending by slug (session media and template
 * headers), handle/media-id confusion refused both ways, and MEDIA_EXPIRED by the injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { channelSecretPlace } from '../../lib/channel-settings/settings.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { expectNoTempFiles, projectWithKey } from '../support/uploads.js';
import * as S from '../support/samples.js';

const MB = 1024 * 1024;
let t: TestApp;
let files: FileServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-data-'));
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    config: { devAllowPrivateTargets: true, downloadTimeoutMs: 20_000, dataDir },
  });
  files = await startFileServer();
  files.file('/clip.mp4', S.mp4(300_000), { type: 'video/mp4' });
  files.file('/menu.pdf', S.pdf(5000), { type: 'application/pdf', disposition: 'attachment; filename="Menu 2026.pdf"' });
  files.file('/big-image.png', S.png(5 * MB + 10), { type: 'application/octet-stream', chunked: true });
});
afterAll(async () => {
  await files?.close();
  await t?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const SCOPES = ['media:read', 'media:write', 'messages:send', 'templates:manage', 'templates:read'];

async function lastSent(phoneNumberId: string) {
  const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}`);
  return res.body.data[res.body.data.length - 1]?.payload;
}

const blobPath = (projectId: string, id: string) => path.join(dataDir, 'media', projectId, id);

describe('uploadMedia', () => {
  it('When a PNG is sent as multipart, then 201 with a slug, the channel media id and the verified type; the bytes are stored', async () => {
    const { project, key } = await projectWithKey(t, SCOPES);
    const png = S.png(4000);
    const res = await request(t.app).post('/v1/media').set(auth(key)).attach('file', png, { filename: 'Hero Banner.png', contentType: 'image/png' });
    expect(res.status).toBe(201);
    const m = res.body.data.media;
    expect(m).toMatchObject({ kind: 'image', filename: 'Hero Banner.png', mime_type: 'image/png', size: png.length, expired: false, slug: expect.stringMatching(/^hero-banner-[0-9a-f]{8}$/) });
    expect(m.media_id).toMatch(/^\d{16}$/);
    expect(Date.parse(m.expires_at) - Date.parse(m.channel_uploaded_at)).toBe(30 * 24 * 3600 * 1000);
    const row = await t.db.prisma.mediaAsset.findFirstOrThrow({ where: { projectId: project.id, slug: m.slug } });
    expect((await fs.readFile(blobPath(project.id, row.id))).equals(png)).toBe(true);
    expect(row.sha256).toBe(m.sha256);
    await expectNoTempFiles();
  });

  it('When inline base64 is sent with a slug, then that slug is used; taking it again is 409 conflict', async () => {
    const { key } = await projectWithKey(t, SCOPES);
    const res = await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.pdf(3000)), filename: 'menu.pdf', mime: 'application/pdf', slug: 'menu' });
    expect(res.status).toBe(201);
    expect(res.body.data.media).toMatchObject({ slug: 'menu', kind: 'document', mime_type: 'application/pdf' });
    const again = await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.pdf(3000)), filename: 'menu.pdf', mime: 'application/pdf', slug: 'menu' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('When a source_url is given, then it is downloaded (name from Content-Disposition) and a multipart mime field overrides the part type', async () => {
    const { key } = await projectWithKey(t, SCOPES);
    const byUrl = await request(t.app).post('/v1/media').set(auth(key)).send({ source_url: `${files.url}/menu.pdf` });
    expect(byUrl.status).toBe(201);
    expect(byUrl.body.data.media).toMatchObject({ filename: 'Menu 2026.pdf', mime_type: 'application/pdf' });
    const video = await request(t.app).post('/v1/media').set(auth(key)).send({ source_url: `${files.url}/clip.mp4`, slug: 'clip' });
    expect(video.body.data.media).toMatchObject({ kind: 'video', slug: 'clip' });
    const audio = await request(t.app).post('/v1/media').set(auth(key))
      .field('mime', 'audio/mp4').attach('file', S.isoMedia(2000, 'M4A '), { filename: 'voice.m4a', contentType: 'application/octet-stream' });
    expect(audio.status).toBe(201);
    expect(audio.body.data.media).toMatchObject({ kind: 'audio', mime_type: 'audio/mp4' });
  });

  it.each([
    ['a PDF declared image/png (multipart)', 415, 'unsupported_media_type', (r: request.Test) => r.attach('file', S.pdf(), { filename: 'a.png', contentType: 'image/png' })],
    ['a GIF', 415, 'unsupported_media_type', (r: request.Test) => r.attach('file', Buffer.from('GIF89a' + 'x'.repeat(100)), { filename: 'a.gif', contentType: 'image/gif' })],
    ['an empty file', 400, 'empty_file', (r: request.Test) => r.attach('file', Buffer.alloc(0), { filename: 'a.png', contentType: 'image/png' })],
    ['an image over 5 MB (cut once its first bytes show an image)', 413, 'file_too_large', (r: request.Test) => r.attach('file', S.png(5 * MB + 1), { filename: 'a.bin', contentType: 'application/octet-stream' })],
    ['no file part', 400, 'invalid_request', (r: request.Test) => r.field('slug', 'x')],
    ['a file in another part', 400, 'invalid_request', (r: request.Test) => r.attach('upload', S.png(), 'a.png')],
    ['two files', 400, 'invalid_request', (r: request.Test) => r.attach('file', S.png(), 'a.png').attach('file', S.png(), 'b.png')],
    ['an unknown field', 400, 'invalid_request', (r: request.Test) => r.field('color', 'red').attach('file', S.png(), 'a.png')],
    ['a bad slug', 400, 'invalid_request', (r: request.Test) => r.field('slug', 'Not A Slug').attach('file', S.png(), 'a.png')],
    ['inline base64 that is not base64', 400, 'invalid_request', (r: request.Test) => r.send({ data: '%%%', filename: 'a.png', mime: 'image/png' })],
    ['a chunked URL image over 5 MB declared octet-stream', 413, 'file_too_large', (r: request.Test) => r.send({ source_url: `${files.url}/big-image.png` })],
    ['an ftp URL', 400, 'source_url_forbidden', (r: request.Test) => r.send({ source_url: 'ftp://example.com/x' })],
  ])('When the upload is %s, then %i %s and nothing is stored', async (_what, status, code, build) => {
    const { project, key } = await projectWithKey(t, SCOPES);
    const res = await build(request(t.app).post('/v1/media').set(auth(key)));
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(await t.db.prisma.mediaAsset.count({ where: { projectId: project.id } })).toBe(0);
    await expect(fs.readdir(path.join(dataDir, 'media', project.id))).rejects.toThrow();
    await expectNoTempFiles();
  });

  it('When the key has only media:read, then uploading is 403 insufficient_scope', async () => {
    const { key } = await projectWithKey(t, ['media:read']);
    const res = await request(t.app).post('/v1/media').set(auth(key)).attach('file', S.png(), 'a.png');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });

  it('When media and header samples share a key, then they share one upload budget', async () => {
    const { key } = await projectWithKey(t, SCOPES);
    const saved = t.config.uploadBytesPerMinute;
    t.config.uploadBytesPerMinute = 50_000;
    try {
      t.clock.advance(60_000);
      expect((await request(t.app).post('/v1/templates/header-sample').set(auth(key)).send({ format: 'IMAGE', data: S.b64(S.png(30_000)), filename: 'a.png', mime: 'image/png' })).status).toBe(201);
      const res = await request(t.app).post('/v1/media').set(auth(key)).attach('file', S.png(30_000), { filename: 'b.png', contentType: 'image/png' });
      expect(res.status).toBe(429);
      expect(res.body.error.code).toBe('rate_limited');
    } finally {
      t.config.uploadBytesPerMinute = saved;
      t.clock.advance(60_000);
    }
  });
});

describe('listMedia, getMedia, deleteMedia', () => {
  it('When listing, then newest first with a cursor; reading by slug; deleting removes row, bytes and the channel copy', async () => {
    const { project, key } = await projectWithKey(t, SCOPES);
    for (const slug of ['one', 'two', 'three']) {
      expect((await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.png()), filename: `${slug}.png`, mime: 'image/png', slug })).status).toBe(201);
      t.clock.advance(1000);
    }
    const first = await request(t.app).get('/v1/media?limit=2').set(auth(key));
    expect(first.body.data.media.map((m: any) => m.slug)).toEqual(['three', 'two']);
    const second = await request(t.app).get(`/v1/media?limit=2&cursor=${encodeURIComponent(first.body.data.nextCursor)}`).set(auth(key));
    expect(second.body.data).toMatchObject({ media: [{ slug: 'one' }], nextCursor: null });
    const one = await request(t.app).get('/v1/media/one').set(auth(key));
    expect(one.body.data.media).toMatchObject({ slug: 'one', kind: 'image' });
    const row = await t.db.prisma.mediaAsset.findFirstOrThrow({ where: { projectId: project.id, slug: 'one' } });
    const del = await request(t.app).delete('/v1/media/one').set(auth(key));
    expect(del.body.data).toEqual({ slug: 'one', deleted: true });
    expect((await request(t.app).get('/v1/media/one').set(auth(key))).status).toBe(404);
    await expect(fs.stat(blobPath(project.id, row.id))).rejects.toThrow();
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const gone = await request(t.sim!.url).get(`/v26.0/${row.channelMediaId}`).set('Authorization', `Bearer ${t.secretBox.open(channel.accessTokenEnc, channelSecretPlace(channel.projectId, 'access_token'))}`);
    expect(gone.status).toBe(400);
    expect((await request(t.app).delete('/v1/media/one').set(auth(key))).status).toBe(404);
    expect((await request(t.app).get('/v1/media/Bad%20Slug').set(auth(key))).status).toBe(400);
  });

  it('When another project asks for the slug, then 404', async () => {
    const a = await projectWithKey(t, SCOPES);
    const b = await projectWithKey(t, SCOPES);
    await request(t.app).post('/v1/media').set(auth(a.key)).send({ data: S.b64(S.png()), filename: 'x.png', mime: 'image/png', slug: 'private' });
    expect((await request(t.app).get('/v1/media/private').set(auth(b.key))).status).toBe(404);
  });
});

describe('sending by slug', () => {
  it('When an image is sent by slug, then the channel gets the asset\'s media id', async () => {
    const { key, phoneNumberId } = await projectWithKey(t, SCOPES);
    const up = await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.png()), filename: 'x.png', mime: 'image/png', slug: 'photo' });
    await inbound(t, phoneNumberId, '14155550301', 'hi', { name: null });
    const res = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550301', media: { slug: 'photo', caption: 'Look' } });
    expect(res.status).toBe(200);
    expect((await lastSent(phoneNumberId)).image).toEqual({ id: up.body.data.media.media_id, caption: 'Look' });
  });

  it('When a template with a media header is sent with the header by slug, then the header parameter carries the media id with the template\'s format', async () => {
    const { project, key, phoneNumberId } = await projectWithKey(t, SCOPES);
    const sample = await request(t.app).post('/v1/templates/header-sample').set(auth(key)).send({ format: 'DOCUMENT', data: S.b64(S.pdf()), filename: 'x.pdf', mime: 'application/pdf' });
    const created = await request(t.app).post('/v1/templates').set(auth(key)).send({
      name: 'invoice', language: 'en_US', category: 'UTILITY',
      components: [{ type: 'HEADER', format: 'DOCUMENT', example: { header_handle: [sample.body.data.handle] } }, { type: 'BODY', text: 'Your invoice' }],
    });
    expect(created.status).toBe(201);
    const row = await t.db.prisma.template.findFirstOrThrow({ where: { projectId: project.id, name: 'invoice' } });
    await request(t.sim!.url).post(`/_sim/templates/${row.channelTemplateId}/decision`).send({ decision: 'APPROVED' });
    const doc = await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.pdf(2000)), filename: 'inv-1042.pdf', mime: 'application/pdf', slug: 'inv-1042' });
    const res = await request(t.app).post('/v1/messages').set(auth(key)).send({
      type: 'template', phone: '+14155550302',
      template: { name: 'invoice', language: 'en_US', header: { media: { slug: 'inv-1042', filename: 'Invoice 1042.pdf' } } },
    });
    expect(res.status).toBe(200);
    expect((await lastSent(phoneNumberId)).template.components[0]).toEqual({
      type: 'header',
      parameters: [{ type: 'document', document: { id: doc.body.data.media.media_id, filename: 'Invoice 1042.pdf' } }],
    });
  });

  it('When a slug is unknown or of another kind, then 404 not_found or 400, and nothing is sent', async () => {
    const { key, phoneNumberId } = await projectWithKey(t, SCOPES);
    await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.pdf()), filename: 'x.pdf', mime: 'application/pdf', slug: 'doc' });
    await inbound(t, phoneNumberId, '14155550303', 'hi', { name: null });
    const before = await lastSent(phoneNumberId);
    expect((await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550303', media: { slug: 'nope' } })).body.error.code).toBe('not_found');
    const wrongKind = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550303', media: { slug: 'doc' } });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.error.message).toMatch(/is a document, not an image/);
    expect(await lastSent(phoneNumberId)).toEqual(before);
  });

  it('When a header-sample handle is sent as media_id, then 400 invalid_media_id (session media and template header)', async () => {
    const { key, phoneNumberId } = await projectWithKey(t, SCOPES);
    const sample = await request(t.app).post('/v1/templates/header-sample').set(auth(key)).send({ format: 'IMAGE', data: S.b64(S.png()), filename: 'x.png', mime: 'image/png' });
    await inbound(t, phoneNumberId, '14155550304', 'hi', { name: null });
    const session = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550304', media: { media_id: sample.body.data.handle } });
    expect(session.status).toBe(400);
    expect(session.body.error.code).toBe('invalid_media_id');
    const header = await request(t.app).post('/v1/messages').set(auth(key)).send({
      type: 'template', phone: '+14155550304', template: { name: 'any', language: 'en_US', header: { media: { media_id: sample.body.data.handle } } },
    });
    expect(header.body.error.code).toBe('invalid_media_id');
  });
});

describe('sending by media_id: only this project\'s media', () => {
  const messagesCalls = async () => ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as { method: string; path: string }[])
    .filter((r) => r.method === 'POST' && r.path.endsWith('/messages')).length;

  it('When project A sends with project B\'s media_id (session media or template header), then 404 not_found like an unknown id, and the channel is not called', async () => {
    const a = await projectWithKey(t, SCOPES);
    const b = await projectWithKey(t, SCOPES);
    const up = await request(t.app).post('/v1/media').set(auth(b.key)).send({ data: S.b64(S.png()), filename: 'b.png', mime: 'image/png', slug: 'b-photo' });
    const bMediaId = up.body.data.media.media_id as string;
    await inbound(t, a.phoneNumberId, '14155550306', 'hi', { name: null });
    const calls = await messagesCalls();
    const foreign = await request(t.app).post('/v1/messages').set(auth(a.key)).send({ type: 'image', phone: '+14155550306', media: { media_id: bMediaId } });
    const unknown = await request(t.app).post('/v1/messages').set(auth(a.key)).send({ type: 'image', phone: '+14155550306', media: { media_id: '1234567890123456' } });
    const header = await request(t.app).post('/v1/messages').set(auth(a.key)).send({
      type: 'template', phone: '+14155550306', template: { name: 'any', language: 'en_US', header: { media: { media_id: bMediaId } } },
    });
    for (const res of [foreign, unknown, header]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // The same answer whether the id is B's or nobody's: only the id itself differs in the message.
    expect(foreign.body.error.message.replace(bMediaId, 'X')).toBe(unknown.body.error.message.replace('1234567890123456', 'X'));
    expect(await messagesCalls()).toBe(calls);
    // B sends its own id as before.
    await inbound(t, b.phoneNumberId, '14155550307', 'hi', { name: null });
    const own = await request(t.app).post('/v1/messages').set(auth(b.key)).send({ type: 'image', phone: '+14155550307', media: { media_id: bMediaId } });
    expect(own.status).toBe(200);
    expect((await lastSent(b.phoneNumberId)).image).toEqual({ id: bMediaId });
  });
});

describe('MEDIA_EXPIRED (last: moves the clock 30 days)', () => {
  it('When 30 days pass after the channel upload, then reading and sending are 410 MEDIA_EXPIRED; listing shows it expired; deleting still works', async () => {
    const { key, phoneNumberId } = await projectWithKey(t, SCOPES);
    await request(t.app).post('/v1/media').set(auth(key)).send({ data: S.b64(S.png()), filename: 'x.png', mime: 'image/png', slug: 'old' });
    t.clock.advance(30 * 24 * 3600_000 - 1000);
    expect((await request(t.app).get('/v1/media/old').set(auth(key))).status).toBe(200);
    t.clock.advance(1000);
    const got = await request(t.app).get('/v1/media/old').set(auth(key));
    expect(got.status).toBe(410);
    expect(got.body.error).toMatchObject({ code: 'MEDIA_EXPIRED', details: { slug: 'old' } });
    await inbound(t, phoneNumberId, '14155550305', 'hi', { name: null });
    const send = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550305', media: { slug: 'old' } });
    expect(send.status).toBe(410);
    expect(send.body.error.code).toBe('MEDIA_EXPIRED');
    const byId = await request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'image', phone: '+14155550305', media: { media_id: (await t.db.prisma.mediaAsset.findFirstOrThrow({ where: { slug: 'old' }, orderBy: { createdAt: 'desc' } })).channelMediaId } });
    expect(byId.status).toBe(410);
    expect(byId.body.error.code).toBe('MEDIA_EXPIRED');
    const list = await request(t.app).get('/v1/media').set(auth(key));
    expect(list.body.data.media[0]).toMatchObject({ slug: 'old', expired: true });
    expect((await request(t.app).delete('/v1/media/old').set(auth(key))).status).toBe(200);
  });
});
