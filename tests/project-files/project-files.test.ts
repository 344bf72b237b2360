/**
 * Project files (issue 46, item 4): operators upload files into the project's storage (streamed,
 * type verified from the bytes, a quota per project, safe names), the bot reads them with
 * `files.get` and sends them as media; files are per project. Against the real PostgreSQL, the
 * real sandbox and the simulator, through HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { botSourceProject, deployBot, simSent } from '../support/bots.js';
import * as S from '../support/samples.js';
import { main } from '../../scripts/ops/main.js';

const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 2000 };
const QUOTA_FILES = 4;
const QUOTA_BYTES = 64 * 1024;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    bot: LIMITS,
    config: { projectFilesMax: QUOTA_FILES, projectFilesMaxBytes: QUOTA_BYTES, botFileReadMaxBytes: 16 * 1024 },
  });
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });
const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

const upload = (projectId: string, name: string, bytes: Buffer) =>
  request(t.app).put(`/admin/projects/${projectId}/files/${encodeURIComponent(name)}`).set(admin()).set('Content-Type', 'application/octet-stream').send(bytes);

const botProject = (source: string) => botSourceProject(t, ['code:read', 'code:write', 'conversations:read', 'messages:send'], source);
const deploy = (key: string) => deployBot(t, key);

const sentTo = async (phoneNumberId: string, to: string) => (await simSent(t, phoneNumberId)).filter((m) => JSON.stringify(m).includes(to));

const PRICES = '{"coffee": 2.5, "tea": 2}\n';

describe('operators upload, list, download and delete project files', () => {
  it('When an operator uploads files, then they are listed with their verified type, downloaded byte for byte, replaced, deleted, and every change is audited', async () => {
    const project = await t.admin.project();
    const created = await upload(project.id, 'prices.json', Buffer.from(PRICES));
    expect(created.status).toBe(201);
    expect(created.body.data.file).toEqual({ name: 'prices.json', content_type: 'text/plain', size: PRICES.length, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), created_at: expect.any(String), updated_at: expect.any(String) });
    const png = S.png(2000);
    expect((await upload(project.id, 'logo.png', png)).body.data.file).toMatchObject({ content_type: 'image/png', size: png.length });

    const list = await request(t.app).get(`/admin/projects/${project.id}/files`).set(admin()).expect(200);
    expect(list.body.data.files.map((f: { name: string }) => f.name)).toEqual(['logo.png', 'prices.json']);
    expect(list.body.data.usage).toEqual({ files: 2, bytes: PRICES.length + png.length, max_files: QUOTA_FILES, max_bytes: QUOTA_BYTES });

    const down = await request(t.app).get(`/admin/projects/${project.id}/files/logo.png`).set(admin()).buffer(true).parse((res, cb) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => cb(null, Buffer.concat(chunks)));
    });
    expect(down.status).toBe(200);
    expect(down.headers['content-type']).toBe('application/octet-stream');
    expect(down.headers['content-disposition']).toBe('attachment; filename="logo.png"');
    expect(Buffer.compare(down.body as Buffer, png)).toBe(0);

    const replaced = await upload(project.id, 'prices.json', Buffer.from('{"coffee": 3}'));
    expect(replaced.status).toBe(200);
    expect((await request(t.app).delete(`/admin/projects/${project.id}/files/logo.png`).set(admin())).status).toBe(200);
    expect((await request(t.app).delete(`/admin/projects/${project.id}/files/logo.png`).set(admin())).status).toBe(404);
    expect((await request(t.app).get(`/admin/projects/${project.id}/files/logo.png`).set(admin())).status).toBe(404);

    const audit = await t.db.pool.query('SELECT action, subject, actor, after FROM dashboard_audit WHERE project_id = $1 ORDER BY id', [project.id]);
    expect(audit.rows.map((r) => `${r.action} ${r.subject}`)).toEqual(['file.upload prices.json', 'file.upload logo.png', 'file.replace prices.json', 'file.delete logo.png']);
    expect(audit.rows[0]).toMatchObject({ actor: 'operator (admin API)', after: { content_type: 'text/plain', size: PRICES.length } });
  });

  it('When the CLI uploads, lists, downloads and deletes a file, then it goes through the operator API', async () => {
    const project = await t.admin.project();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ops-files-'));
    const local = path.join(dir, 'menu.pdf');
    const pdf = S.pdf(3000);
    writeFileSync(local, pdf);
    const out: string[] = [];
    const run = async (...args: string[]) => {
      out.length = 0;
      const code = await main(args, { SERVICE_URL: t.baseUrl!, ADMIN_TOKEN: t.adminToken }, { out: (x) => void out.push(x), err: (x) => void out.push(x) });
      return { code, text: out.join('\n') };
    };
    expect(await run('files', 'upload', project.id, local)).toMatchObject({ code: 0, text: expect.stringContaining('menu.pdf') });
    expect((await run('files', 'list', project.id)).text).toMatch(/menu\.pdf\s+application\/pdf\s+3000/);
    const target = path.join(dir, 'copy.pdf');
    expect((await run('files', 'download', project.id, 'menu.pdf', '--out', target)).code).toBe(0);
    expect(Buffer.compare(readFileSync(target), pdf)).toBe(0);
    expect((await run('files', 'delete', project.id, 'menu.pdf')).code).toBe(0);
    expect((await run('files', 'list', project.id)).text).toContain('No files.');
  });
});

describe('project files: bad input', () => {
  it('When a file is over the quota (bytes or count), of a type not allowed, empty, or named with ../, then 413, 415, 400 and 400, and nothing is stored', async () => {
    const project = await t.admin.project();
    const big = await upload(project.id, 'big.txt', Buffer.alloc(QUOTA_BYTES + 1, 0x61));
    expect(big.status).toBe(413);
    expect(big.body.error).toMatchObject({ code: 'file_quota_exceeded', details: { quota: 'bytes', limit: QUOTA_BYTES, used: 0 } });

    for (let i = 0; i < QUOTA_FILES; i++) expect((await upload(project.id, `f${i}.txt`, Buffer.from(`file ${i}`))).status).toBe(201);
    const fifth = await upload(project.id, 'f9.txt', Buffer.from('one too many'));
    expect(fifth.status).toBe(413);
    expect(fifth.body.error).toMatchObject({ code: 'file_quota_exceeded', details: { quota: 'files', limit: QUOTA_FILES } });
    // Replacing one at the limit is not a new one.
    expect((await upload(project.id, 'f0.txt', Buffer.from('again'))).status).toBe(200);

    const other = await t.admin.project();
    const zip = await upload(other.id, 'archive.zip', S.zip({ 'a.txt': 'hello' }));
    expect(zip.status).toBe(415);
    expect(zip.body.error.code).toBe('unsupported_media_type');
    const exe = await upload(other.id, 'tool.txt', Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200, 0)]));
    expect(exe.status).toBe(415);
    expect((await upload(other.id, 'empty.txt', Buffer.alloc(0))).body.error.code).toBe('empty_file');
    for (const name of ['../etc/passwd', '..', 'a/b.txt', '/abs.txt', '.hidden', 'a..b', 'sp ace.txt', 'x'.repeat(129)]) {
      const res = await upload(other.id, name, Buffer.from('x'));
      expect([name, res.status]).toEqual([name, res.status === 404 ? 404 : 400]);
      expect([name, res.status]).not.toEqual([name, 201]);
    }
    const listed = await request(t.app).get(`/admin/projects/${other.id}/files`).set(admin()).expect(200);
    expect(listed.body.data.files).toEqual([]);
    const stored = await t.db.pool.query('SELECT count(*)::int AS n FROM project_files WHERE project_id = $1', [other.id]);
    expect(stored.rows[0].n).toBe(0);
  });
});

const FILES_BOT = `import { files, sendMedia, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const [verb, name] = (m.text ?? '').split(' ');
  if (verb === 'read') {
    const f = await files.get(name);
    if (!f.ok) { await sendText(m.from, 'error ' + f.error.code); return; }
    if ('text' in f) { const prices = JSON.parse(f.text) as Record<string, number>; await sendText(m.from, f.contentType + ' coffee=' + prices.coffee); return; }
    await sendText(m.from, f.contentType + ' ' + f.size + ' bytes, starts ' + f.base64.slice(0, 8));
    return;
  }
  if (verb === 'send') {
    const r = await files.sendAsMedia(m.from, name, { caption: 'Here it is' });
    if (!r.ok) await sendText(m.from, 'error ' + r.error.code);
    return;
  }
  if (verb === 'asset') {
    const r = await sendMedia(m.from, 'document', { slug: name, filename: 'asset.pdf' });
    if (!r.ok) await sendText(m.from, 'error ' + r.error.code);
  }
}
`;

describe('the bot reads and sends project files', () => {
  it("When the bot reads a file, then it gets text or base64 by its type; it sends one as media to the simulator (the asset made once, reused); another project's file is not found", async () => {
    const { projectId, key, phoneNumberId } = await botProject(FILES_BOT);
    expect((await upload(projectId, 'prices.json', Buffer.from(PRICES))).status).toBe(201);
    const png = S.png(1500);
    expect((await upload(projectId, 'logo.png', png)).status).toBe(201);
    expect((await upload(projectId, 'large.txt', Buffer.alloc(20 * 1024, 0x62))).status).toBe(201);
    const stranger = await t.admin.project();
    expect((await upload(stranger.id, 'secret-prices.json', Buffer.from(PRICES))).status).toBe(201);
    await deploy(key);

    const customer = '14155550701';
    await inbound(t, phoneNumberId, customer, 'read prices.json', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'read logo.png', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'read secret-prices.json', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'read large.txt', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'read ../prices.json', { botIdle: true });
    const texts = (await sentTo(phoneNumberId, customer)).map((m) => m.payload?.text?.body);
    expect(texts).toEqual([
      'text/plain coffee=2.5',
      `image/png ${png.length} bytes, starts ${png.toString('base64').slice(0, 8)}`,
      'error not_found',
      'error file_too_large',
      'error invalid_request',
    ]);

    await inbound(t, phoneNumberId, customer, 'send logo.png', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'send logo.png', { botIdle: true });
    await inbound(t, phoneNumberId, customer, 'send secret-prices.json', { botIdle: true });
    const images = (await sentTo(phoneNumberId, customer)).filter((m) => m.payload?.type === 'image');
    expect(images).toHaveLength(2);
    expect(images[0].payload.image).toMatchObject({ id: expect.any(String), caption: 'Here it is' });
    // The media asset was made once and reused.
    expect(images[1].payload.image.id).toBe(images[0].payload.image.id);
    const assets = await t.db.pool.query('SELECT slug, mime_type FROM media_assets WHERE project_id = $1', [projectId]);
    expect(assets.rows).toEqual([{ slug: expect.stringMatching(/^logo-[0-9a-f]{8}$/), mime_type: 'image/png' }]);
    expect((await sentTo(phoneNumberId, customer)).map((m) => m.payload?.text?.body).at(-1)).toBe('error not_found');

    // An existing media asset is sent by its slug.
    const asset = await request(t.app).post('/v1/media').set(auth((await t.admin.key(projectId, ['media:write'])).secret)).send({ data: S.b64(S.pdf(2000)), filename: 'menu.pdf', mime: 'application/pdf', slug: 'menu' });
    expect(asset.status).toBe(201);
    await inbound(t, phoneNumberId, customer, 'asset menu', { botIdle: true });
    expect((await sentTo(phoneNumberId, customer)).filter((m) => m.payload?.type === 'document')).toHaveLength(1);
  }, 60_000);
});
