/**
 * Client ID metadata documents (MCP 2025-11-25): an agent whose client_id is the https URL of its
 * metadata document connects with no registration. The SDK's client runs the whole flow against a
 * loopback https document server (its certificate trusted through OAUTH_CLIENT_METADATA_CA_FILE's
 * setting, private addresses allowed as in development); the document is checked, cached by its
 * headers, and shown with its host on the consent page.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { freePort, runProcess, tempFolder } from '../support/local.js';
import { person } from '../support/dashboard.js';
import { answer, authorizeQuery, codeOf, pkce, REDIRECT } from '../support/oauth.js';
import { AgentStorage } from '../support/mcp-agent.js';
import { cacheSeconds, clientIdUrlProblem, validateDocument } from '../../lib/oauth/client-metadata.js';

let t: TestApp;
let server: http.Server;
let docs: https.Server;
let base: string;
let docBase: string;
const hits = new Map<string, number>();
const documents = new Map<string, { status?: number; body: string; headers?: Record<string, string> }>();

beforeAll(async () => {
  const dir = await tempFolder('cimd-');
  const run = await runProcess('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { timeoutMs: 30_000 });
  if (run.code !== 0) throw new Error(run.stderr);
  const cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
  docs = https.createServer({ key: readFileSync(path.join(dir, 'key.pem')), cert }, (req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const doc = documents.get(req.url!);
    if (!doc) return void res.writeHead(404).end();
    res.writeHead(doc.status ?? 200, { 'Content-Type': 'application/json', ...doc.headers }).end(doc.body);
  });
  const docPort = await freePort();
  await new Promise<void>((resolve) => docs.listen(docPort, '127.0.0.1', resolve));
  docBase = `https://127.0.0.1:${docPort}`;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    config: { publicBaseUrl: base, devAllowPrivateTargets: true, oauthClientMetadataCa: cert },
  });
  server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await new Promise((r) => docs.close(r));
  await t.close();
});

const email = () => `cimd-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
const doc = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ client_id: id, client_name: 'Docs agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', ...extra });

describe('a client known by its metadata document', () => {
  it('When the metadata is read, then it advertises client ID metadata documents beside registration', async () => {
    const res = await request(t.app).get('/.well-known/oauth-authorization-server');
    expect(res.body.client_id_metadata_document_supported).toBe(true);
    expect(res.body.registration_endpoint).toBe(`${base}/register`);
  });

  it('When the SDK client connects with a client_id URL, then nothing is registered, the page names the document\'s host, and the tools answer', async () => {
    const id = `${docBase}/agents/desk.json`;
    documents.set('/agents/desk.json', { body: doc(id), headers: { 'Cache-Control': 'max-age=600' } });
    const p = await t.admin.project('Docs');
    const { agent } = await person(t, p.id, email(), 'owner');
    const storage = new AgentStorage({ clientMetadataUrl: id });
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage });
    const before = await t.db.prisma.oAuthClient.count();
    await expect(new Client({ name: 'docs', version: '1' }).connect(transport)).rejects.toThrow(UnauthorizedError);
    expect(storage.info?.client_id).toBe(id);
    expect(storage.authorizationUrl?.searchParams.get('client_id')).toBe(id);

    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    expect(redirected.status).toBe(302);
    const location = String(redirected.headers.location);
    const page = await agent.get(location);
    expect(page.text).toContain(`Docs agent <small class="muted">(published by 127.0.0.1:${new URL(docBase).port})</small>`);
    expect(page.text).toContain(id);
    const approved = await answer(agent, location, new URL(location, base).searchParams.get('request')!, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read'] }] });
    await transport.finishAuth(codeOf(String(approved.headers.location)).code);
    expect(storage.saved?.access_token).toMatch(/^mcp_at_/);
    const client = new Client({ name: 'docs', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { authProvider: storage }));
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('listConversations');
    await client.close();
    // Stored under its URL for the grant's rows, with no secret; one row, not a registration per connect.
    const row = await t.db.prisma.oAuthClient.findUniqueOrThrow({ where: { id } });
    expect({ name: row.name, secret: row.secretHash }).toEqual({ name: 'Docs agent', secret: null });
    expect(await t.db.prisma.oAuthClient.count()).toBe(before + 1);
  });

  it('When the document is asked for again within its max-age, then it is not fetched again; after it, it is', async () => {
    const id = `${docBase}/agents/cached.json`;
    documents.set('/agents/cached.json', { body: doc(id), headers: { 'Cache-Control': 'public, max-age=600' } });
    const go = () => request(t.app).get(authorizeQuery({ response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
    expect((await go()).status).toBe(302);
    expect((await go()).status).toBe(302);
    expect(hits.get('/agents/cached.json')).toBe(1);
    t.clock.advance(601_000);
    expect((await go()).status).toBe(302);
    expect(hits.get('/agents/cached.json')).toBe(2);
  });

  it.each([
    ['another client_id', (id: string) => doc(`${id}x`), 'must be the document\'s own URL'],
    ['a client_secret', (id: string) => doc(id, { client_secret: 's' }), 'client_secret'],
    ['a confidential auth method', (id: string) => doc(id, { token_endpoint_auth_method: 'client_secret_post' }), 'only none'],
    ['an http redirect on a public host', (id: string) => doc(id, { redirect_uris: ['http://evil.example.com/cb'] }), 'plain http'],
    ['no redirect URI', (id: string) => doc(id, { redirect_uris: [] }), 'redirect_uris'],
    ['a feed: redirect (a browser-handled scheme)', (id: string) => doc(id, { redirect_uris: ['feed:javascript:alert(1)'] }), 'not feed'],
    ['a private-use scheme not in reverse-domain form', (id: string) => doc(id, { redirect_uris: ['myapp://callback'] }), 'reverse-domain'],
    ['markup in a redirect URI', (id: string) => doc(id, { redirect_uris: ['my.app://cb/"><script>alert(5)</script>'] }), 'URI grammar'],
    ['not JSON', () => 'hello', 'not JSON'],
    ['more than 5 KiB', (id: string) => doc(id, { logo_uri: `https://x.example.com/${'a'.repeat(6000)}` }), 'larger than 5120 bytes'],
  ])('When the document has %s, then /authorize answers 400 invalid_client with the reason, never a redirect', async (label, body, reason) => {
    const file = `/bad/${encodeURIComponent(String(label)).replace(/%/g, '')}.json`;
    const id = `${docBase}${file}`;
    documents.set(file, { body: body(id) });
    const res = await request(t.app).get(authorizeQuery({ response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
    expect({ status: res.status, error: res.body.error, location: res.headers.location }).toEqual({ status: 400, error: 'invalid_client', location: undefined });
    expect(res.body.error_description).toContain(reason);
  });

  it('When the document redirects, is missing, or the client_id is not a document URL, then 400 invalid_client', async () => {
    documents.set('/moved.json', { status: 302, body: '', headers: { Location: '/agents/desk.json' } });
    for (const [id, reason] of [
      [`${docBase}/moved.json`, 'could not be fetched'],
      [`${docBase}/missing.json`, 'HTTP 404'],
      [`http://127.0.0.1:${new URL(docBase).port}/agents/desk.json`, 'must be https'],
      [`${docBase}/`, 'needs a path'],
      [`${docBase}/a/../agents/desk.json`, 'normal form'],
      [`${docBase}/agents/desk.json?x=1`, 'query'],
    ]) {
      const res = await request(t.app).get(authorizeQuery({ response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
      expect({ id, status: res.status, error: res.body.error }).toEqual({ id, status: 400, error: 'invalid_client' });
      expect(res.body.error_description).toContain(reason);
    }
  });

  it('When the service runs without DEV_ALLOW_PRIVATE_TARGETS, then a document on a private address is refused (the SSRF guard)', async () => {
    const guarded = await startTestApp({ config: { publicBaseUrl: 'http://localhost:3000', devAllowPrivateTargets: false } });
    try {
      const id = `${docBase}/agents/desk.json`;
      const res = await request(guarded.app).get(authorizeQuery({ response_type: 'code', client_id: id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
      expect(res.status).toBe(400);
      expect(res.body.error_description).toMatch(/could not be fetched/);
    } finally {
      await guarded.close();
    }
  });
});

describe('the rules as functions', () => {
  it('When headers say how long to keep a document, then it is kept that long within 5 minutes and a day', () => {
    const now = new Date('2026-11-25T12:00:00Z');
    expect(cacheSeconds('max-age=600', undefined, now)).toBe(600);
    expect(cacheSeconds('max-age=5', undefined, now)).toBe(300);
    expect(cacheSeconds('max-age=999999', undefined, now)).toBe(86_400);
    expect(cacheSeconds('no-store', undefined, now)).toBe(300);
    expect(cacheSeconds(undefined, 'Wed, 25 Nov 2026 14:00:00 GMT', now)).toBe(7200);
    expect(cacheSeconds(undefined, undefined, now)).toBe(3600);
  });

  it('When a document names a cursor:// callback, then it is accepted (a public client)', () => {
    const id = 'https://agent.example.com/client.json';
    expect(validateDocument(id, JSON.parse(doc(id, { redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback'] }))).host).toBe('agent.example.com');
    expect(clientIdUrlProblem('https://agent.example.com/client.json')).toBeUndefined();
    expect(clientIdUrlProblem('https://AGENT.example.com/client.json')).toContain('normal form');
  });
});
