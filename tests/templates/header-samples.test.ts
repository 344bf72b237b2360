/**
 * POST /v1/templates/header-sample against the simulator: both body shapes, verified types, the
 * per-format ceilings, every bad input of the issue (each a clear 4xx, nothing stored), safe URL
 * downloads (local servers under devAllowPrivateTargets, which must not relax redirects, size or
 * time; private addresses refused with the setting off) and the per-key upload budget.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { expectNoTempFiles, projectWithKey } from '../support/uploads.js';
import * as S from '../support/samples.js';
import type { CounterStore } from '../../lib/platform/counters.js';
import { gzipSync } from 'node:zlib';
import { timingBound } from '../support/retry-timing.js';

const MB = 1024 * 1024;
let t: TestApp;
let strict: TestApp;
let files: FileServer;

beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null }, config: { devAllowPrivateTargets: true, downloadTimeoutMs: 20_000 } });
  strict = await startTestApp({ simulator: { autoStatusDelaysMs: null }, config: { devAllowPrivateTargets: false } });
  files = await startFileServer();
  files.file('/banner.png', S.png(3000), { type: 'image/png' });
  files.file('/terms.pdf', S.pdf(4000), { type: 'application/pdf' });
  files.file('/octet.pdf', S.pdf(4000), { type: 'application/octet-stream' });
  files.file('/lying.png', S.pdf(4000), { type: 'image/png' });
  files.file('/clip.mp4', S.mp4(200_000), { type: 'video/mp4' });
  files.file('/empty.png', Buffer.alloc(0), { type: 'image/png' });
  files.file('/image-5mb.png', S.png(5 * MB), { type: 'image/png' });
  files.file('/image-over.png', S.png(5 * MB + 1), { type: 'image/png' });
  files.file('/image-over-chunked.png', S.png(5 * MB + 1), { type: 'image/png', chunked: true });
  files.file('/video-16mb.mp4', S.mp4(16 * MB), { type: 'video/mp4' });
  files.file('/video-over.mp4', S.mp4(16 * MB + 1), { type: 'video/mp4', chunked: true });
  files.declares('/document-over.pdf', 100 * MB + 1, 'application/pdf');
  files.file('/sample-60k.png', S.png(60_000), { type: 'image/png' });
  files.redirects('/five-hops', 5, '/banner.png');
  files.redirects('/six-hops', 6, '/banner.png');
});
afterAll(async () => {
  await files?.close();
  await t?.close();
  await strict?.close();
});

const sample = (app: TestApp, key: string, body: object) =>
  request(app.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`).send(body);

async function manager(app = t) {
  return projectWithKey(app, ['templates:manage', 'templates:read']);
}

describe('header sample: accepted', () => {
  it('When an inline PNG is sent, then 201 with a handle, the verified type and the decoded size, and the handle is recorded', async () => {
    const { project, key } = await manager();
    const png = S.png(1500);
    const res = await sample(t, key, { format: 'IMAGE', data: S.b64(png), filename: 'banner.png', mime: 'image/png' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({ handle: expect.stringMatching(/^4::/), format: 'IMAGE', filename: 'banner.png', mime_type: 'image/png', size: png.length });
    const row = await t.db.prisma.headerSample.findUniqueOrThrow({ where: { handle: res.body.data.handle } });
    expect(row).toMatchObject({ projectId: project.id, format: 'IMAGE', mimeType: 'image/png', size: png.length });
    await expectNoTempFiles();
  });

  it('When inline data has a data: URI prefix and the type is spelled image/jpg, then the prefix is stripped and mime_type is image/jpeg', async () => {
    const { key } = await manager();
    const jpg = S.jpeg(2000);
    const res = await sample(t, key, { format: 'IMAGE', data: `data:image/jpeg;base64,${S.b64(jpg)}`, filename: 'a.jpg', mime: 'image/jpg' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ mime_type: 'image/jpeg', size: jpg.length });
  });

  it('When a PDF is fetched by URL, then the name comes from the URL and the type from the bytes', async () => {
    const { key } = await manager();
    const res = await sample(t, key, { format: 'DOCUMENT', source_url: `${files.url}/terms.pdf` });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ format: 'DOCUMENT', filename: 'terms.pdf', mime_type: 'application/pdf', size: S.pdf(4000).length });
  });

  it('When the server says octet-stream, then that declares nothing; filename and mime given in the body win', async () => {
    const { key } = await manager();
    const a = await sample(t, key, { format: 'DOCUMENT', source_url: `${files.url}/octet.pdf` });
    expect(a.status).toBe(201);
    const b = await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/banner.png?v=2`, filename: 'hero.png', mime: 'image/png' });
    expect(b.status).toBe(201);
    expect(b.body.data.filename).toBe('hero.png');
  });

  it('When a video is fetched through 5 redirects, then it is accepted (5 is the bound)', async () => {
    const { key } = await manager();
    expect((await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/five-hops` })).status).toBe(201);
    const v = await sample(t, key, { format: 'VIDEO', source_url: `${files.url}/clip.mp4` });
    expect(v.status).toBe(201);
    expect(v.body.data.mime_type).toBe('video/mp4');
  });

  it('When a DOCUMENT is Word, the type is verified, and the channel refusing that sample type is a 502 with its detail', async () => {
    // The simulator's (like Meta's documented) Resumable Upload takes pdf, jpeg, png and mp4 only.
    const { key } = await manager();
    const res = await sample(t, key, { format: 'DOCUMENT', data: S.b64(S.ooxml('docx')), filename: 'a.docx', mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('upstream_error');
    expect(res.body.error.message).toMatch(/file_type/);
  });
});

describe('header sample: ceilings per format', () => {
  it('When an IMAGE is exactly 5 MB (inline and by URL), then it is accepted; one byte more is 413 file_too_large', async () => {
    const { key } = await manager();
    const five = S.png(5 * MB);
    const inline = await sample(t, key, { format: 'IMAGE', data: S.b64(five), filename: 'five.png', mime: 'image/png' });
    expect(inline.status).toBe(201);
    expect(inline.body.data.size).toBe(5 * MB);
    expect((await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/image-5mb.png` })).status).toBe(201);
    for (const path of ['/image-over.png', '/image-over-chunked.png']) {
      const res = await sample(t, key, { format: 'IMAGE', source_url: files.url + path });
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'file_too_large', details: { limit: 5 * MB } });
    }
  });

  it('When inline data is over 5 MB decoded, then 413 file_too_large whatever the format', async () => {
    const { project, key } = await manager();
    const res = await sample(t, key, { format: 'VIDEO', data: S.b64(S.mp4(5 * MB + 1)), filename: 'v.mp4', mime: 'video/mp4' });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('file_too_large');
    expect(await t.db.prisma.headerSample.count({ where: { projectId: project.id } })).toBe(0);
    await expectNoTempFiles();
  });

  it('When a VIDEO is 16 MB by URL, then accepted; 16 MB + 1 streamed is 413; a DOCUMENT declaring 100 MB + 1 is 413 before any byte is read', async () => {
    const { key } = await manager();
    expect((await sample(t, key, { format: 'VIDEO', source_url: `${files.url}/video-16mb.mp4` })).status).toBe(201);
    const over = await sample(t, key, { format: 'VIDEO', source_url: `${files.url}/video-over.mp4` });
    expect(over.status).toBe(413);
    expect(over.body.error.details.limit).toBe(16 * MB);
    // A fresh key: this one has used 32 MB of its budget, which would now be the smaller limit (429).
    const doc = await sample(t, (await manager()).key, { format: 'DOCUMENT', source_url: `${files.url}/document-over.pdf` });
    expect(doc.status).toBe(413);
    expect(doc.body.error.details.limit).toBe(100 * MB);
  }, 60_000);
});

describe('header sample: bad input is a clear 4xx and stores nothing', () => {
  const pngAsJpeg = { format: 'IMAGE', data: S.b64(S.png()), filename: 'photo.jpg', mime: 'image/jpeg' };
  it.each([
    ['base64 that is not base64', 400, 'invalid_request', { format: 'IMAGE', data: 'this is *not* base64!', filename: 'a.png', mime: 'image/png' }],
    ['an empty data string', 400, 'invalid_request', { format: 'IMAGE', data: '', filename: 'a.png', mime: 'image/png' }],
    ['a zero-byte file (data: prefix and nothing)', 400, 'empty_file', { format: 'IMAGE', data: 'data:image/png;base64,', filename: 'a.png', mime: 'image/png' }],
    ['a declared image that is a PDF', 415, 'unsupported_media_type', { format: 'IMAGE', data: S.b64(S.pdf()), filename: 'a.png', mime: 'image/png' }],
    ['a PNG renamed .jpg with mime image/jpeg', 415, 'unsupported_media_type', pngAsJpeg],
    ['a type not accepted for the format', 415, 'unsupported_media_type', { format: 'VIDEO', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png' }],
    ['plain text that is binary', 415, 'unsupported_media_type', { format: 'DOCUMENT', data: S.b64(Buffer.from([0, 1, 2, 3])), filename: 'a.txt', mime: 'text/plain' }],
    ['inline without mime', 400, 'invalid_request', { format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png' }],
    ['both shapes at once', 400, 'invalid_request', { format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png', source_url: 'https://example.com/a.png' }],
    ['an unknown property', 400, 'invalid_request', { format: 'IMAGE', source_url: 'https://example.com/a.png', size: 1 }],
    ['an unknown format', 400, 'invalid_request', { format: 'AUDIO', source_url: 'https://example.com/a.mp3' }],
    ['an empty file by URL', 400, 'empty_file', { format: 'IMAGE', source_url: '{files}/empty.png' }],
    ['a URL whose content disagrees with its Content-Type', 415, 'unsupported_media_type', { format: 'IMAGE', source_url: '{files}/lying.png' }],
    ['a body larger than its Content-Length', 400, 'download_failed', { format: 'IMAGE', source_url: '{files}/longer-than-declared' }],
    ['a body shorter than its Content-Length', 400, 'download_failed', { format: 'IMAGE', source_url: '{files}/shorter-than-declared' }],
    ['a server that never ends its body', 413, 'file_too_large', { format: 'VIDEO', source_url: '{files}/endless' }],
    ['more than 5 redirects', 400, 'download_failed', { format: 'IMAGE', source_url: '{files}/six-hops' }],
    ['a 404', 400, 'download_failed', { format: 'IMAGE', source_url: '{files}/nothing-here.png' }],
    ['an ftp URL', 400, 'source_url_forbidden', { format: 'IMAGE', source_url: 'ftp://example.com/a.png' }],
  ])('When the body has %s, then %i %s', async (_what, status, code, body) => {
    const { project, key } = await manager();
    const b = JSON.parse(JSON.stringify(body).replace('{files}', files.url));
    const res = await sample(t, key, b);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.headers['x-request-id']).toBe(res.body.request_id);
    expect(await t.db.prisma.headerSample.count({ where: { projectId: project.id } })).toBe(0);
    await expectNoTempFiles();
  });

  timingBound('the total time limit cuts within 5 s').it('When the server never finishes its body, then the total time limit cuts it: 400 download_failed (timeout), nothing stored', async () => {
    const { project, key } = await manager();
    const saved = t.config.downloadTimeoutMs;
    t.config.downloadTimeoutMs = 700;
    try {
      const t0 = Date.now();
      const res = await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/never-finishes` });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'download_failed', details: { reason: 'timeout' } });
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(await t.db.prisma.headerSample.count({ where: { projectId: project.id } })).toBe(0);
      await expectNoTempFiles();
    } finally {
      t.config.downloadTimeoutMs = saved;
    }
  });

  it('When the body is not JSON, then 400 invalid_json', async () => {
    const { key } = await manager();
    const res = await request(t.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send('{"format":"IMAGE","data":"QUJD');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_json');
  });

  it('When the body is not JSON at all (multipart), then 415 unsupported_media_type', async () => {
    const { key } = await manager();
    const res = await request(t.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`).attach('file', S.png(), 'a.png');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('When the body is compressed (Content-Encoding: gzip), then 415 unsupported_media_type', async () => {
    const { key } = await manager();
    const res = await request(t.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`)
      .set('Content-Type', 'application/json').set('Content-Encoding', 'gzip').send(gzipSync(JSON.stringify({ format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png' })));
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('When the JSON body is over the operation limit, then 413 file_too_large (the sample is over its ceiling) before it is read', async () => {
    const { key } = await manager();
    const res = await request(t.app).post('/v1/templates/header-sample').set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json')
      .send(JSON.stringify({ format: 'IMAGE', data: 'A'.repeat(7_400_000), filename: 'a.png', mime: 'image/png' }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('file_too_large');
  });

  it('When the key lacks templates:manage, then 403 insufficient_scope and the body is not read', async () => {
    const { key } = await projectWithKey(t, ['templates:read']);
    const res = await sample(t, key, { format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('header sample: private addresses (DEV_ALLOW_PRIVATE_TARGETS off)', () => {
  it.each([
    ['127.0.0.1', 'http://127.0.0.1:{port}/banner.png'],
    ['169.254.169.254', 'http://169.254.169.254/latest/meta-data/iam/'],
    ['[::1]', 'http://[::1]:{port}/banner.png'],
    ['[::127.0.0.1] (IPv4-compatible loopback)', 'http://[::127.0.0.1]:{port}/banner.png'],
    ['[::ffff:0:127.0.0.1] (IPv4-translated loopback)', 'http://[::ffff:0:127.0.0.1]:{port}/banner.png'],
    ['[64:ff9b::169.254.169.254] (NAT64 cloud metadata)', 'http://[64:ff9b::169.254.169.254]/latest/meta-data/'],
    ['a public-looking name resolving to loopback (localhost)', 'http://localhost:{port}/banner.png'],
  ])('When source_url is %s, then 400 source_url_forbidden and nothing is fetched or stored', async (_what, url) => {
    const { project, key } = await manager(strict);
    const res = await sample(strict, key, { format: 'IMAGE', source_url: url.replace('{port}', new URL(files.url).port) });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('source_url_forbidden');
    expect(await strict.db.prisma.headerSample.count({ where: { projectId: project.id } })).toBe(0);
  });
});

describe('upload budget', () => {
  it('When a key makes more upload requests per minute than allowed, then 429 rate_limited with Retry-After', async () => {
    const { key } = await manager();
    const saved = t.config.uploadRequestsPerMinute;
    t.config.uploadRequestsPerMinute = 2;
    try {
      const body = { format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png' };
      expect((await sample(t, key, body)).status).toBe(201);
      expect((await sample(t, key, body)).status).toBe(201);
      const third = await sample(t, key, body);
      expect(third.status).toBe(429);
      expect(third.body.error).toMatchObject({ code: 'rate_limited', details: { budget: 'requests', limit: 2 } });
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      t.clock.advance(60_000);
      expect((await sample(t, key, body)).status).toBe(201);
    } finally {
      t.config.uploadRequestsPerMinute = saved;
    }
  });

  it('When the bytes budget runs out, then inline and URL uploads are cut mid-stream with 429, within the request count', async () => {
    const { project, key } = await manager();
    const saved = t.config.uploadBytesPerMinute;
    t.config.uploadBytesPerMinute = 100_000;
    try {
      t.clock.advance(60_000);
      const sixty = S.png(60_000);
      expect((await sample(t, key, { format: 'IMAGE', data: S.b64(sixty), filename: 'a.png', mime: 'image/png' })).status).toBe(201);
      const inline = await sample(t, key, { format: 'IMAGE', data: S.b64(sixty), filename: 'b.png', mime: 'image/png' });
      expect(inline.status).toBe(429);
      expect(inline.body.error).toMatchObject({ code: 'rate_limited', details: { budget: 'bytes', limit: 100_000 } });
      expect(inline.headers['retry-after']).toBeDefined();
      const url = await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/sample-60k.png` });
      expect(url.status).toBe(429);
      expect(url.body.error.code).toBe('rate_limited');
      expect(await t.db.prisma.headerSample.count({ where: { projectId: project.id } })).toBe(1);
      // Another key has its own budget.
      const other = await manager();
      expect((await sample(t, other.key, { format: 'IMAGE', source_url: `${files.url}/sample-60k.png` })).status).toBe(201);
      t.clock.advance(60_000);
      expect((await sample(t, key, { format: 'IMAGE', source_url: `${files.url}/sample-60k.png` })).status).toBe(201);
      await expectNoTempFiles();
    } finally {
      t.config.uploadBytesPerMinute = saved;
    }
  });

  it('When the counter store fails, then uploads are let through (fail-open)', async () => {
    const failing: CounterStore = { hit: () => Promise.reject(new Error('redis down')), close: async () => undefined };
    const app = await startTestApp({ simulator: { autoStatusDelaysMs: null }, counters: failing });
    try {
      const { key } = await projectWithKey(app, ['templates:manage']);
      const res = await sample(app, key, { format: 'IMAGE', data: S.b64(S.png()), filename: 'a.png', mime: 'image/png' });
      expect(res.status).toBe(201);
    } finally {
      await app.close();
    }
  });
});
