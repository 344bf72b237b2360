/**
 * Nothing that carries credentials follows a redirect to another origin (lib/bot/http-fetch.ts,
 * issue 55 finding 7): on a hop to another scheme, host or port, only the safelisted headers go on,
 * and a body is never re-sent there (the bot gets forbidden_target instead). Same-origin redirects
 * keep everything. Two real loopback servers, reached under DEV_ALLOW_PRIVATE_TARGETS, through the
 * host API's http.fetch as the bot calls it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/app.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A loopback server that redirects on /redirect?status=…&to=… and records every other request. */
class Origin {
  seen: Seen[] = [];
  server!: http.Server;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', this.url);
        if (url.pathname === '/redirect') {
          res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to')! }).end();
          return;
        }
        this.seen.push({ method: req.method ?? '', path: url.pathname, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('seen');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(() => r(undefined)));
  }
}

let t: TestApp;
let projectId: string;
const a = new Origin();
const b = new Origin();

beforeAll(async () => {
  await a.start();
  await b.start();
  t = await startTestApp({ config: { devAllowPrivateTargets: true, botHttpPerMinute: 1000 } });
  projectId = (await t.admin.project()).id;
});
afterAll(async () => {
  await t?.close();
  await a.close();
  await b.close();
});

const CREDENTIALS = {
  'x-api-key': 'key_live_5ecret',
  'x-auth-token': 'tok_live_5ecret',
  'x-shop-signature': 'sig_5ecret',
  authorization: 'Bearer bearer_5ecret',
  cookie: 'session=cookie_5ecret',
};
const SAFE = { accept: 'application/json', 'accept-language': 'en' };

async function fetchAsBot(args: object) {
  const answer = JSON.parse(await runHelper(t.services.deps as unknown as BotDeps, { projectId, mode: 'production', logLines: 0 }, 'http.fetch', JSON.stringify(args)));
  expect(answer.ok).toBe(true);
  return answer.value as { ok: true; status: number; body: string } | { ok: false; error: { code: string; message: string } };
}

const redirect = (from: Origin, to: string, status = 302) => `${from.url}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

describe('http.fetch: a redirect to another origin carries no credentials', () => {
  it('When a 302 sends the call to another port, then x-api-key, x-auth-token, a custom header, Authorization and Cookie are not delivered; the safelisted headers are', async () => {
    b.seen = [];
    const answer = await fetchAsBot({ url: redirect(a, `${b.url}/landing`), headers: { ...CREDENTIALS, ...SAFE } });
    expect(answer).toMatchObject({ ok: true, status: 200, body: 'seen' });
    expect(b.seen).toHaveLength(1);
    const { headers } = b.seen[0];
    for (const name of Object.keys(CREDENTIALS)) expect([name, headers[name]]).toEqual([name, undefined]);
    expect(JSON.stringify(headers)).not.toContain('5ecret');
    expect(headers).toMatchObject({ ...SAFE, 'user-agent': expect.stringMatching(/^messaging-service-bot\//) });
  });

  it('When a 302 goes to another host on the same port, or comes back after leaving, then the credentials stay dropped', async () => {
    b.seen = [];
    a.seen = [];
    const otherHost = a.url.replace('127.0.0.1', 'localhost');
    expect((await fetchAsBot({ url: redirect(a, `${otherHost}/landing`), headers: CREDENTIALS })).ok).toBe(true);
    // a → b → a: once dropped, they do not come back on the way home.
    expect((await fetchAsBot({ url: redirect(a, redirect(b, `${a.url}/home`)), headers: CREDENTIALS })).ok).toBe(true);
    expect(a.seen.map((s) => s.path)).toEqual(['/landing', '/home']);
    for (const s of a.seen) expect(JSON.stringify(s.headers)).not.toContain('5ecret');
  });

  it('When a 307 or 308 would re-send a body to another origin, then nothing reaches it and the bot gets forbidden_target saying why', async () => {
    b.seen = [];
    for (const status of [307, 308]) {
      const answer = await fetchAsBot({ url: redirect(a, `${b.url}/take`, status), method: 'POST', headers: { ...CREDENTIALS, 'content-type': 'application/json' }, body: '{"card":"4242 5ecret"}' });
      expect(answer).toEqual({ ok: false, error: { code: 'forbidden_target', message: expect.stringContaining('another origin') } });
      expect((answer as { error: { message: string } }).error.message).toMatch(/body/);
    }
    // A PUT answered 302 keeps its method and body: the same refusal.
    const put = await fetchAsBot({ url: redirect(a, `${b.url}/take`, 302), method: 'PUT', headers: CREDENTIALS, body: 'payload 5ecret' });
    expect(put).toMatchObject({ ok: false, error: { code: 'forbidden_target' } });
    expect(b.seen).toEqual([]);
  });

  it('When a POST is answered 302 or 303 to another origin, then it arrives as a GET without body, Content-Type or credentials', async () => {
    b.seen = [];
    for (const status of [302, 303]) {
      const answer = await fetchAsBot({ url: redirect(a, `${b.url}/done`, status), method: 'POST', headers: { ...CREDENTIALS, 'content-type': 'application/json' }, body: '{"card":"4242 5ecret"}' });
      expect(answer).toMatchObject({ ok: true, status: 200 });
    }
    expect(b.seen.map((s) => [s.method, s.body, s.headers['content-type']])).toEqual([['GET', '', undefined], ['GET', '', undefined]]);
    for (const s of b.seen) expect(JSON.stringify(s.headers)).not.toContain('5ecret');
  });

  it('When the redirect stays on the same origin, then headers and a 307 body are delivered as before', async () => {
    a.seen = [];
    expect((await fetchAsBot({ url: redirect(a, '/same'), headers: { ...CREDENTIALS, ...SAFE } })).ok).toBe(true);
    expect((await fetchAsBot({ url: redirect(a, `${a.url}/same-post`, 307), method: 'POST', headers: { ...CREDENTIALS, 'content-type': 'application/json' }, body: '{"order":1}' })).ok).toBe(true);
    expect(a.seen.map((s) => [s.method, s.path, s.body])).toEqual([['GET', '/same', ''], ['POST', '/same-post', '{"order":1}']]);
    for (const s of a.seen) expect(s.headers).toMatchObject(CREDENTIALS);
    expect(a.seen[1].headers['content-type']).toBe('application/json');
  });
});
