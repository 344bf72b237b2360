/**
 * The building blocks of uploads, without the app: type verification from the bytes (every
 * accepted document type, the plain-text rule, old and new Office files), the streaming base64
 * decoder, and the safe downloader's address, redirect, size and time rules.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import * as S from '../support/samples.js';
import { startFileServer, type FileServer } from '../support/file-server.js';
import { detectType, verifyContent } from '../../lib/media/verify.js';
import { Base64Stream, readJsonUpload } from '../../http/upload/json-body.js';
import { LimitExceeded, TempFileSink } from '../../lib/media/temp-file.js';
import { DownloadError, safeDownload } from '../../lib/platform/net/safe-download.js';
import { resolveTarget } from '../../lib/platform/net/public-address.js';
import { HEADER_RULES, MEDIA_TYPES } from '../../lib/media/types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { timingBound } from '../support/retry-timing.js';

let dir: string;
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-media-'));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

let n = 0;
async function fileOf(bytes: Buffer) {
  const p = path.join(dir, `f${n++}`);
  await fs.writeFile(p, bytes);
  return { path: p, size: bytes.length };
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return e instanceof ApiError ? e.code : (e as Error).name;
  }
}

describe('detectType', () => {
  it.each([
    ['png', S.png(), 'image/png'],
    ['jpeg', S.jpeg(), 'image/jpeg'],
    ['mp4', S.mp4(), 'video/mp4'],
    ['3gp', S.threeGp(), 'video/3gpp'],
    ['pdf', S.pdf(), 'application/pdf'],
    ['docx', S.ooxml('docx'), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
    ['xlsx', S.ooxml('xlsx'), 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'],
    ['pptx', S.ooxml('pptx'), 'application/vnd.openxmlformats-officedocument.presentationml.presentation'],
    ['doc (CFB with WordDocument)', S.doc(), 'application/msword'],
    ['xls (CFB with Workbook)', S.xls(), 'application/vnd.ms-excel'],
    ['ppt (CFB with PowerPoint Document)', S.ppt(), 'application/vnd.ms-powerpoint'],
    ['another CFB (no Office stream)', S.cfb('__substg1.0_0037001F'), 'application/x-cfb'],
    ['a plain zip', S.zip({ 'a.txt': 'x' }), 'application/zip'],
    ['UTF-8 text', Buffer.from('Olá, mundo!\r\n\tLinha 2\f\n'), 'text/plain'],
    ['UTF-8 text with a BOM', Buffer.from('\ufeffhello'), 'text/plain'],
  ])('When the bytes are %s, then the type is %s', async (_what, bytes, type) => {
    expect(await detectType(await fileOf(bytes))).toBe(type);
  });

  it.each([
    ['a NUL byte', Buffer.from('abc\u0000def')],
    ['a C0 control (ESC)', Buffer.from('abc\u001bdef')],
    ['DEL', Buffer.from('abc\u007fdef')],
    ['a C1 control', Buffer.from('abc\u0085def')],
    ['invalid UTF-8', Buffer.from([0x61, 0xc3, 0x28, 0x62])],
    ['UTF-16', Buffer.from('\ufeffhello', 'utf16le')],
  ])('When text has %s, then it is not plain text (no type)', async (_what, bytes) => {
    expect(await detectType(await fileOf(bytes))).toBeUndefined();
  });

  it('When XML is declared text/plain, then file-type finds a signature and it is not text', async () => {
    expect(await detectType(await fileOf(Buffer.from('<?xml version="1.0"?><a/>')))).toBe('application/xml');
  });

  it('When a CFB file is truncated or has a looping directory chain, then it is just x-cfb (never hangs)', async () => {
    const loop = S.doc();
    loop.writeUInt32LE(1, 512 + 4); // FAT: directory sector 1 → 1
    expect(await detectType(await fileOf(loop))).toBe('application/x-cfb');
    expect(await detectType(await fileOf(S.doc().subarray(0, 700)))).toBe('application/x-cfb');
  });
});

describe('verifyContent', () => {
  const image = HEADER_RULES.IMAGE.types;
  const documents = HEADER_RULES.DOCUMENT.types;

  it('When declared and content agree, then the verified type is returned (aliases normalised)', async () => {
    expect(await verifyContent(await fileOf(S.jpeg()), 'image/jpg', image, 'x')).toBe('image/jpeg');
    expect(await verifyContent(await fileOf(S.png()), 'IMAGE/PNG; foo=bar', image, 'x')).toBe('image/png');
    expect(await verifyContent(await fileOf(S.png()), 'application/octet-stream', image, 'x')).toBe('image/png');
    expect(await verifyContent(await fileOf(S.png()), undefined, image, 'x')).toBe('image/png');
    for (const [bytes, type] of [[S.doc(), 'application/msword'], [S.ooxml('xlsx'), 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'], [Buffer.from('notes'), 'text/plain']] as const) {
      expect(await verifyContent(await fileOf(bytes), type, documents, 'x')).toBe(type);
    }
  });

  it.each([
    ['a declared image that is a PDF', S.pdf(), 'image/png', image],
    ['a PNG declared image/jpeg', S.png(), 'image/jpeg', image],
    ['a declared type not accepted', S.png(), 'image/gif', image],
    ['content of a type not accepted', Buffer.from('GIF89a' + 'x'.repeat(50)), undefined, image],
    ['a docx declared as doc', S.ooxml('docx'), 'application/msword', documents],
    ['a plain zip declared docx', S.zip({ 'a.txt': 'x' }), 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', documents],
    ['an Outlook message declared doc', S.cfb('__substg1.0_0037001F'), 'application/msword', documents],
    ['binary declared text/plain', Buffer.from([1, 2, 3, 0, 4]), 'text/plain', documents],
    ['a PDF declared text/plain', S.pdf(), 'text/plain', documents],
    ['not a media type at all', S.png(), 'png please', image],
  ])('When the file is %s, then 415 unsupported_media_type', async (_what, bytes, declared, accepted) => {
    expect(await codeOf(verifyContent(await fileOf(bytes), declared, accepted, 'x'))).toBe('unsupported_media_type');
  });

  it('When audio is OGG without OPUS, then it is not accepted as media', async () => {
    const vorbis = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(24), Buffer.from([0x01, 0x76, 0x6f, 0x72, 0x62, 0x69, 0x73]), Buffer.alloc(40)]);
    expect(await codeOf(verifyContent(await fileOf(vorbis), 'audio/ogg', MEDIA_TYPES, 'x'))).toBe('unsupported_media_type');
  });
});

describe('Base64Stream', () => {
  const decode = (parts: string[]) => {
    const d = new Base64Stream();
    const out: Buffer[] = [];
    for (const p of parts) {
      const b = d.feed(Buffer.from(p, 'latin1'));
      if (b) out.push(Buffer.from(b)); // the decoder reuses its output buffer
    }
    const tail = d.end();
    if (tail) out.push(tail);
    return Buffer.concat(out);
  };

  it('When base64 arrives in pieces of any size, with whitespace or a data: prefix, then it decodes exactly', () => {
    const bytes = S.png(3000);
    const text = bytes.toString('base64');
    expect(decode([text]).equals(bytes)).toBe(true);
    expect(decode(text.match(/.{1,7}/gs)!).equals(bytes)).toBe(true);
    expect(decode(['da', 'ta:image/png;ba', 'se64,', text]).equals(bytes)).toBe(true);
    expect(decode([text.replace(/(.{76})/g, '$1\r\n')]).equals(bytes)).toBe(true);
    expect(decode(['QQ']).toString()).toBe('A'); // unpadded
    expect(decode(['QQ=', '=']).toString()).toBe('A');
  });

  it.each([
    ['characters outside the alphabet', ['QUJD*EVG']],
    ['URL-safe alphabet', ['QUJD-_==']],
    ['data after padding', ['QQ==QUJD']],
    ['three padding characters', ['Q===']],
    ['a truncated group', ['QUJDR']],
    ['a non-ASCII character', ['QUJD\u00e9']],
    ['a data: prefix that never ends', ['data:image/png']],
    ['misplaced padding', ['QQ=']],
    ['a data: URI that is not base64', ['data:text/plain,hello']],
    ['a data: prefix without a comma', ['data:image/png;base64' + 'A'.repeat(600)]],
  ])('When the text has %s, then it is refused', (_what, parts) => {
    expect(() => decode(parts)).toThrow(/not valid base64/);
  });
});

describe('readJsonUpload', () => {
  async function read(json: string | Buffer, limit = 1 << 20, chunk = 5) {
    const buf = Buffer.isBuffer(json) ? json : Buffer.from(json);
    const pieces = [];
    for (let i = 0; i < buf.length; i += chunk) pieces.push(buf.subarray(i, i + chunk));
    let sink: TempFileSink | undefined;
    try {
      const r = await readJsonUpload(Readable.from(pieces), {
        bodyLimit: 1 << 22,
        openSink: () => TempFileSink.create(limit, 'inline'),
        onSink: (s) => (sink = s),
      });
      if (r.file) await r.file.finish();
      return { body: r.body as Record<string, unknown>, bytes: r.file ? await fs.readFile(r.file.path) : undefined };
    } finally {
      await sink?.remove();
    }
  }

  it('When the body has data among other members (any order, escapes, nesting), then they parse like JSON.parse and data is decoded', async () => {
    const bytes = S.jpeg(2000);
    const text = bytes.toString('base64').replace(/\//g, '\\/');
    const r = await read(`{ "format":"IMAGE", "nested": {"a":[1,2,{"b":"}"}]}, "data" : "${text}", "n": -1.5e3, "t": true, "z": null, "filename":"a\\"b.jpg" }`);
    expect(r.bytes!.equals(bytes)).toBe(true);
    expect(r.body).toMatchObject({ format: 'IMAGE', nested: { a: [1, 2, { b: '}' }] }, n: -1500, t: true, z: null, filename: 'a"b.jpg' });
    expect(typeof r.body.data).toBe('string');
  });

  it('When data is empty or not a string, then the placeholder keeps that for the validator', async () => {
    expect((await read('{"data":""}')).body.data).toBe('');
    expect((await read('{"data":42}')).body.data).toBe(42);
  });

  it('When a \\u escape spans chunks, then it decodes', async () => {
    const r = await read('{"data":"QUJD\\u0052EVG"}', 1 << 20, 3);
    expect(r.bytes!.toString()).toBe('ABCDEF');
  });

  it.each([
    ['not JSON', 'invalid_json', 'hello'],
    ['a truncated body', 'invalid_json', '{"data":"QUJD'],
    ['trailing garbage', 'invalid_json', '{"a":1} x'],
    ['an array', 'invalid_json', '[1]'],
    ['data twice', 'invalid_request', '{"data":"QQ==","data":"QQ=="}'],
    ['non-base64 data', 'invalid_request', '{"data":"hello world!"}'],
  ])('When the body is %s, then %s', async (_what, code, json) => {
    expect(await codeOf(read(json))).toBe(code);
  });

  it('When decoded data passes the limit, then LimitExceeded stops it mid-stream', async () => {
    const text = S.png(5000).toString('base64');
    await expect(read(`{"data":"${text}"}`, 1000)).rejects.toBeInstanceOf(LimitExceeded);
  });
});

describe('safeDownload', () => {
  let server: FileServer;
  beforeAll(async () => {
    server = await startFileServer();
    server.file('/a.png', S.png(2000), { type: 'image/png', disposition: 'attachment; filename="banner.png"' });
    server.file('/big.png', S.png(50_000), { type: 'image/png' });
    server.file('/big-chunked.png', S.png(50_000), { type: 'image/png', chunked: true });
    server.redirects('/five', 5, '/a.png');
    server.redirects('/six', 6, '/a.png');
  });
  afterAll(async () => {
    await server.close();
  });

  async function download(url: string, opts: { allowPrivate?: boolean; limit?: number; timeoutMs?: number; resolve?: typeof resolveTarget } = {}) {
    const sink = await TempFileSink.create(opts.limit ?? 1 << 20, 'ceiling');
    try {
      const r = await safeDownload(url, { sink, allowPrivate: opts.allowPrivate ?? true, timeoutMs: opts.timeoutMs ?? 2000, resolve: opts.resolve });
      await sink.finish();
      return { ...r, bytes: await fs.readFile(sink.path) };
    } finally {
      await sink.remove();
    }
  }
  const reasonOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'ok';
    } catch (e) {
      return e instanceof DownloadError ? e.reason : e instanceof LimitExceeded ? 'limit' : String(e);
    }
  };

  it('When the file is served, then its bytes, type and file name come back', async () => {
    const r = await download(`${server.url}/a.png`);
    expect(r.bytes.equals(S.png(2000))).toBe(true);
    expect(r).toMatchObject({ contentType: 'image/png', filename: 'banner.png', size: r.bytes.length });
  });

  it.each([
    ['127.0.0.1', 'http://127.0.0.1:1/x'],
    ['169.254.169.254 (cloud metadata)', 'http://169.254.169.254/latest/meta-data/'],
    ['[::1]', 'http://[::1]:1/x'],
    ['[::127.0.0.1] (IPv4-compatible loopback)', 'http://[::127.0.0.1]:1/x'],
    ['[::ffff:0:10.0.0.1] (IPv4-translated private)', 'http://[::ffff:0:10.0.0.1]/x'],
    ['[::ffff:7f00:1] (IPv4-mapped loopback, in hex)', 'http://[::ffff:7f00:1]:1/x'],
    ['[64:ff9b::a9fe:a9fe] (NAT64 cloud metadata, in hex)', 'http://[64:ff9b::a9fe:a9fe]/x'],
    ['10.0.0.1', 'http://10.0.0.1/x'],
    ['a name that resolves to loopback (localhost)', 'http://localhost:1/x'],
    ['ftp', 'ftp://example.com/x'],
    ['credentials in the URL', 'http://user:pw@example.com/x'],
  ])('When the private-address rule is on and the URL is %s, then it is forbidden without connecting', async (_what, url) => {
    expect(await reasonOf(download(url, { allowPrivate: false }))).toBe('forbidden');
  });

  it('When a public URL redirects to a private address, then the hop is refused', async () => {
    // "public.test" stands for a public host: the fake resolver answers with the local server and
    // applies the real policy to every other name.
    const port = new URL(server.url).port;
    server.redirects('/to-private', 1, `http://127.0.0.1:${port}/a.png`);
    const resolve: typeof resolveTarget = async (host, policy) => (host === 'public.test' ? { address: '127.0.0.1', family: 4 } : resolveTarget(host, policy));
    expect(await reasonOf(download(`http://public.test:${port}/a.png`, { allowPrivate: false, resolve }))).toBe('ok');
    expect(await reasonOf(download(`http://public.test:${port}/to-private`, { allowPrivate: false, resolve }))).toBe('forbidden');
  });

  timingBound('the download deadline within 2 s').it('When the private-address rule is lifted, then redirects are still bounded at 5, the size at the limit and the time at the deadline', async () => {
    expect(await reasonOf(download(`${server.url}/five`))).toBe('ok');
    expect(await reasonOf(download(`${server.url}/six`))).toBe('too_many_redirects');
    expect(await reasonOf(download(`${server.url}/big.png`, { limit: 10_000 }))).toBe('limit');
    expect(await reasonOf(download(`${server.url}/big-chunked.png`, { limit: 10_000 }))).toBe('limit');
    expect(await reasonOf(download(`${server.url}/endless`, { limit: 200_000 }))).toBe('limit');
    const t0 = Date.now();
    expect(await reasonOf(download(`${server.url}/never-finishes`, { timeoutMs: 300 }))).toBe('timeout');
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('When the body is longer or shorter than its Content-Length, or the status is not 200, then it fails', async () => {
    expect(await reasonOf(download(`${server.url}/longer-than-declared`))).toBe('length_mismatch');
    expect(await reasonOf(download(`${server.url}/shorter-than-declared`))).toBe('network');
    expect(await reasonOf(download(`${server.url}/missing`))).toBe('http_status');
  });
});
