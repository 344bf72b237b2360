/**
 * The bot's code files (listFiles, getFile, putFile): the scaffold, protected paths by every
 * spelling, traversal, ETag preconditions, limits and binary content.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { keyedProject, type TestApp, useTestApp } from '../support/app.js';
import { writeFlowFile } from '../../lib/code/store.js';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const projectWithKey = (scopes = ['code:read', 'code:write']) => keyedProject(t, scopes);

const enc = (p: string) => '/v1/files/' + encodeURIComponent(p);
const get = (key: string, url: string) => request(t.app).get(url).set('Authorization', `Bearer ${key}`);
const put = (key: string, url: string, content: string, headers: Record<string, string> = {}) =>
  request(t.app).put(url).set('Authorization', `Bearer ${key}`).set(headers).send({ content });

describe('listFiles', () => {
  it('When a project is new, then its development tree is the scaffold with every platform-managed file marked protected with its reason', async () => {
    const { key } = await projectWithKey(['code:read']);
    const res = await get(key, '/v1/files');
    expect(res.status).toBe(200);
    const byPath = new Map<string, any>(res.body.data.files.map((f: any) => [f.path, f]));
    const reasons: Record<string, string> = {
      'src/main.ts': 'entry_point',
      'package.json': 'dependency_manifest',
      'src/platform/webhook.ts': 'channel_endpoint',
      'src/platform/send.ts': 'channel_endpoint',
      'src/platform/runtime/messaging.ts': 'runtime_helper',
      'src/platform/runtime/media.ts': 'runtime_helper',
      'src/platform/runtime/ids.ts': 'runtime_helper',
      'src/platform/runtime/log.ts': 'runtime_helper',
      'src/platform/runtime/connectors.ts': 'runtime_helper',
      'manifest.json': 'generated_manifest',
      '.platform/project.json': 'internal_directory',
    };
    for (const [path, reason] of Object.entries(reasons)) {
      expect(byPath.get(path)).toMatchObject({ path, protected: true, protected_reason: reason, version: 1 });
    }
    expect(byPath.get('src/bot.ts')).toMatchObject({ protected: false, protected_reason: null });
    expect(res.body.data.limits).toEqual({ file_bytes: 262144, tree_bytes: 2097152, files: 200 });
    const prod = await get(key, '/v1/files?tree=production');
    expect(prod.body.data.files).toEqual([]);
  });

  it('When the key lacks code:read, then 403 insufficient_scope', async () => {
    const { key } = await projectWithKey(['messages:send']);
    const res = await get(key, '/v1/files');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('getFile', () => {
  it('When a protected file is read, by encoded or plain slashes, then it is returned with its ETag', async () => {
    const { key } = await projectWithKey(['code:read']);
    const a = await get(key, enc('src/main.ts'));
    const b = await get(key, '/v1/files/src/main.ts');
    expect(a.status).toBe(200);
    expect(a.body.data.file).toMatchObject({ path: 'src/main.ts', protected: true, protected_reason: 'entry_point' });
    expect(a.body.data.file.content).toContain('registerBot');
    expect(a.headers.etag).toBe(a.body.data.file.etag);
    expect(b.body.data.file.etag).toBe(a.body.data.file.etag);
  });

  it('When the file does not exist, then 404; when the path is a traversal, then 400 invalid_path', async () => {
    const { key } = await projectWithKey(['code:read']);
    expect((await get(key, enc('src/nope.ts'))).status).toBe(404);
    const bad = await get(key, enc('../etc/passwd'));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_path');
  });
});

const PROTECTED_SPELLINGS: Array<[string, string, string]> = [
  // [spelling, canonical file that must stay unchanged, code]
  ['package.json', 'package.json', 'protected_file'],
  ['./package.json', 'package.json', 'protected_file'],
  ['PACKAGE.JSON', 'package.json', 'protected_file'],
  ['package.json.', 'package.json', 'protected_file'],
  ['package.json\u0000', 'package.json', 'protected_file'],
  ['%70ackage.json', 'package.json', 'protected_file'],
  ['src/main.ts', 'src/main.ts', 'protected_file'],
  ['src//main.ts', 'src/main.ts', 'protected_file'],
  ['src/./main.ts', 'src/main.ts', 'protected_file'],
  ['src/x/../main.ts', 'src/main.ts', 'protected_file'],
  ['Src/Main.TS', 'src/main.ts', 'protected_file'],
  ['src\\main.ts', 'src/main.ts', 'protected_file'],
  ['src%2Fmain.ts', 'src/main.ts', 'protected_file'],
  ['src%252Fmain.ts', 'src/main.ts', 'protected_file'],
  ['/src/main.ts', 'src/main.ts', 'protected_file'],
  ['src/platform/webhook.ts', 'src/platform/webhook.ts', 'protected_file'],
  ['src/platform/send.ts', 'src/platform/send.ts', 'protected_file'],
  ['src/platform/runtime/messaging.ts', 'src/platform/runtime/messaging.ts', 'protected_file'],
  ['src/platform/runtime/media.ts', 'src/platform/runtime/media.ts', 'protected_file'],
  ['src/platform/runtime/ids.ts', 'src/platform/runtime/ids.ts', 'protected_file'],
  ['src/platform/runtime/log.ts', 'src/platform/runtime/log.ts', 'protected_file'],
  ['SRC/PLATFORM/RUNTIME/connectors.ts', 'src/platform/runtime/connectors.ts', 'protected_file'],
  ['manifest.json', 'manifest.json', 'protected_file'],
  ['.platform/project.json', '.platform/project.json', 'protected_file'],
  ['.PLATFORM//project.json', '.platform/project.json', 'protected_file'],
  ['flows/order.json', 'flows/order.json', 'flow_file_forbidden'],
  ['FLOWS/order.json', 'flows/order.json', 'flow_file_forbidden'],
  ['./flows/../flows/order.json', 'flows/order.json', 'flow_file_forbidden'],
];

describe('putFile', () => {
  it.each(PROTECTED_SPELLINGS)('When %j is written, then 403 and the file is unchanged', async (spelling, canonical, code) => {
    const { projectId, key } = await projectWithKey();
    await writeFlowFile(t.db, projectId, 'order', { version: '7.0', screens: [] }, t.clock.now());
    const before = await get(key, enc(canonical));
    expect(before.status).toBe(200);
    const res = await put(key, enc(spelling), 'export const hacked = true;\n');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe(code);
    const after = await get(key, enc(canonical));
    expect(after.body.data.file).toEqual(before.body.data.file);
    const list = await get(key, '/v1/files');
    expect(list.body.data.files.some((f: any) => f.path.toLowerCase() !== f.path && f.path.toLowerCase() === canonical)).toBe(false);
  });

  it('When a new file is put inside a protected folder, then 403 protected_file and nothing is created', async () => {
    const { key } = await projectWithKey();
    const res = await put(key, enc('src/platform/runtime/extra.ts'), 'export {}\n');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('protected_file');
    expect((await get(key, enc('src/platform/runtime/extra.ts'))).status).toBe(404);
  });

  it.each([
    ['../outside.ts'],
    ['src/../../outside.ts'],
    ['..'],
    ['/etc/passwd'],
    ['src\\bot2.ts'],
    ['src/b%2561d.ts'],
    ['src/\u0001bad.ts'],
    ['./src/bot.ts'],
    ['src//bot.ts'],
    ['src/bot.ts.'],
    ['src/spa ce.ts'],
    ['src/ｍain.ts'],
  ])('When the path %j is not a canonical path inside the tree, then 400 invalid_path', async (spelling) => {
    const { key } = await projectWithKey();
    const res = await put(key, enc(spelling), 'export {}\n');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_path');
  });

  it('When a user file is written, then its version goes up and its ETag follows the content', async () => {
    const { key } = await projectWithKey();
    const first = await put(key, enc('src/util.ts'), 'export const a = 1;\n');
    expect(first.status).toBe(201);
    expect(first.body.data.file).toMatchObject({ path: 'src/util.ts', version: 1, protected: false, size: 20 });
    expect(first.headers.etag).toBe(first.body.data.file.etag);
    const second = await put(key, '/v1/files/src/util.ts', 'export const a = 2;\n');
    expect(second.status).toBe(200);
    expect(second.body.data.file.version).toBe(2);
    expect(second.body.data.file.etag).not.toBe(first.body.data.file.etag);
    const read = await get(key, enc('src/util.ts'));
    expect(read.body.data.file.content).toBe('export const a = 2;\n');
  });

  it('When two editors write with If-Match, then the second gets 412 with the current ETag and the first one\'s change stays', async () => {
    const { key } = await projectWithKey();
    const read = await get(key, enc('src/bot.ts'));
    const etag = read.headers.etag;
    const a = await put(key, enc('src/bot.ts'), read.body.data.file.content + '// editor A\n', { 'If-Match': etag });
    expect(a.status).toBe(200);
    const b = await put(key, enc('src/bot.ts'), read.body.data.file.content + '// editor B\n', { 'If-Match': etag });
    expect(b.status).toBe(412);
    expect(b.body.error.code).toBe('precondition_failed');
    expect(b.headers.etag).toBe(a.headers.etag);
    expect(b.body.error.details.current_etag).toBe(a.headers.etag);
    const now = await get(key, enc('src/bot.ts'));
    expect(now.body.data.file.content).toContain('// editor A');
    expect(now.body.data.file.content).not.toContain('// editor B');
  });

  it('When If-None-Match: * is given, then only a create succeeds; If-Match on a missing file is 412', async () => {
    const { key } = await projectWithKey();
    const created = await put(key, enc('src/new.ts'), 'export {}\n', { 'If-None-Match': '*' });
    expect(created.status).toBe(201);
    const again = await put(key, enc('src/new.ts'), 'export const x = 1;\n', { 'If-None-Match': '*' });
    expect(again.status).toBe(412);
    expect(again.body.error.details.current_etag).toBe(created.headers.etag);
    const missing = await put(key, enc('src/missing.ts'), 'export {}\n', { 'If-Match': '"abc"' });
    expect(missing.status).toBe(412);
    expect((await get(key, enc('src/missing.ts'))).status).toBe(404);
  });

  it('When a path differs from an existing file only in case, then 409 conflict', async () => {
    const { key } = await projectWithKey();
    expect((await put(key, enc('src/Helper.ts'), 'export {}\n')).status).toBe(201);
    const res = await put(key, enc('src/helper.ts'), 'export {}\n');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
  });

  it('When a file is over 256 KiB, then 413 and nothing is written; a tree over 2 MiB is 413 too', async () => {
    const { key } = await projectWithKey();
    const big = await put(key, enc('src/big.ts'), '/' + '/'.repeat(256 * 1024) + '\n');
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
    expect((await get(key, enc('src/big.ts'))).status).toBe(404);
    const chunk = '// ' + 'x'.repeat(250 * 1024) + '\n';
    let last;
    for (let i = 0; i < 9; i++) {
      last = await put(key, enc(`src/blob${i}.ts`), chunk);
      if (last.status !== 201) break;
    }
    expect(last!.status).toBe(413);
    expect(last!.body.error.details.limit).toBe(2 * 1024 * 1024);
  });
});

describe('putFile', () => {
  it('When the content is binary (NUL characters), then 415; when content is missing or not a string, then 400', async () => {
    const { key } = await projectWithKey();
    const bin = await put(key, enc('src/bin.ts'), 'abc\u0000def');
    expect(bin.status).toBe(415);
    expect(bin.body.error.code).toBe('unsupported_media_type');
    const none = await request(t.app).put(enc('src/x.ts')).set('Authorization', `Bearer ${key}`).send({ text: 'x' });
    expect(none.status).toBe(400);
    const num = await request(t.app).put(enc('src/x.ts')).set('Authorization', `Bearer ${key}`).send({ content: 5 });
    expect(num.status).toBe(400);
  });

  it('When the key holds only code:read, then a write is 403 insufficient_scope', async () => {
    const { key } = await projectWithKey(['code:read']);
    const res = await put(key, enc('src/bot.ts'), 'export {}\n');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
  });
});

describe('writeFlowFile (for the flow endpoints)', () => {
  it('When the flow endpoints write a definition, then it is in the tree, marked flow_definition', async () => {
    const { projectId, key } = await projectWithKey(['code:read']);
    await writeFlowFile(t.db, projectId, 'signup', { version: '7.0', screens: [] }, t.clock.now());
    const res = await get(key, enc('flows/signup.json'));
    expect(res.status).toBe(200);
    expect(res.body.data.file).toMatchObject({ protected: true, protected_reason: 'flow_definition' });
    expect(JSON.parse(res.body.data.file.content)).toEqual({ version: '7.0', screens: [] });
  });
});
