/**
 * What stops a real connector or a hostile page at /mcp: a forged Origin is 403 (the transport's
 * DNS-rebinding rule) on /mcp and the OAuth endpoints; a JSON-RPC batch is refused from MCP 2025-06-18 on and answered at 2025-03-26;
 * `project_required` names the `project` argument an agent can set; the unknown-tool message carries
 * "MCP error" once; loopback aliases are one resource in development; and the Inspector line of
 * docs/agents.md works from the project root.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import path from 'node:path';
import type http from 'node:http';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';
import type { TestApp } from '../support/app.js';
import { startListeningApp } from '../support/listening.js';
import { runProcess } from '../support/local.js';
import { authorizeQuery, pkce, register } from '../support/oauth.js';
import { loadConfig } from '../../lib/platform/config.js';

let t: TestApp;
let base: string;
let port: number;
let server: http.Server;
let close: () => Promise<void>;
beforeAll(async () => {
  ({ t, base, port, server, close } = await startListeningApp({ mcpAllowedOrigins: ['http://localhost:6274'] }, 'localhost'));
});
afterAll(() => close());

const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const rpc = (bearer: string, body: unknown, headers: Record<string, string> = {}) =>
  request(t.app).post('/mcp').set('Accept', 'application/json, text/event-stream').set('Authorization', `Bearer ${bearer}`).set(headers).send(body as object);

describe('Origin (DNS rebinding)', () => {
  it('When a page on another origin calls /mcp (its name rebound to us), then 403 with a JSON-RPC error and no id, before the credential is looked at', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const forged: Array<Record<string, string>> = [{ Origin: 'http://evil.example.com' }, { Origin: 'http://evil.example.com', Host: 'evil.example.com' }, { Origin: 'null' }, { Origin: `http://localhost:${port + 1}` }];
    for (const headers of forged) {
      const res = await rpc(con.secret, LIST, headers);
      expect({ headers, status: res.status }).toEqual({ headers, status: 403 });
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(res.body.error.message).toContain('MCP_ALLOWED_ORIGINS');
    }
    const noBearer = await request(t.app).post('/mcp').set('Origin', 'https://evil.example.com').send(LIST);
    expect(noBearer.status).toBe(403);
    const preflight = await request(t.app).options('/mcp').set('Origin', 'https://evil.example.com').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(403);
  });

  it('When the Origin is the service\'s own, a loopback alias of it, an allowed one, or absent, then the call is served', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    for (const origin of [base, `http://127.0.0.1:${port}`, `http://[::1]:${port}`, 'http://localhost:6274', undefined]) {
      const res = await rpc(con.secret, LIST, origin ? { Origin: origin } : {});
      expect({ origin, status: res.status }).toEqual({ origin, status: 200 });
    }
  });

  it('When a page on another origin calls /register, /token or /revoke, then 403 access_denied and nothing is stored; /authorize and the metadata are not refused', async () => {
    const before = await t.db.prisma.oAuthClient.count();
    const reg = await request(t.app).post('/register').set('Origin', 'https://evil.example.com').send({ redirect_uris: ['http://127.0.0.1:7777/callback'], token_endpoint_auth_method: 'none' });
    expect({ status: reg.status, error: reg.body.error }).toEqual({ status: 403, error: 'access_denied' });
    expect(await t.db.prisma.oAuthClient.count()).toBe(before);
    for (const endpoint of ['/token', '/revoke']) {
      const res = await request(t.app).post(endpoint).set('Origin', 'https://evil.example.com').type('form').send({ grant_type: 'authorization_code', token: 'x' });
      expect({ endpoint, status: res.status, error: res.body.error }).toEqual({ endpoint, status: 403, error: 'access_denied' });
    }
    const allowed = await request(t.app).post('/register').set('Origin', 'http://localhost:6274').send({ redirect_uris: ['http://127.0.0.1:7777/callback'], token_endpoint_auth_method: 'none' });
    expect(allowed.status).toBe(201);
    const meta = await request(t.app).get('/.well-known/oauth-authorization-server').set('Origin', 'https://evil.example.com');
    expect(meta.status).toBe(200);
  });

  it('When MCP_ALLOWED_ORIGINS holds something that is not an origin, then the configuration is refused at start', () => {
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'https://ok.example.com,https://app.example.com/path' })).toThrow(/MCP_ALLOWED_ORIGINS.*not an origin/);
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: 'https://ok.example.com, http://localhost:6274' }).mcpAllowedOrigins).toEqual(['https://ok.example.com', 'http://localhost:6274']);
  });
});

describe('the protocol as the current revision says', () => {
  it('When a JSON-RPC batch is sent at 2025-06-18 or later, then 400 -32600 and none of it runs', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await rpc(con.secret, [LIST, { ...LIST, id: 2 }], { 'Mcp-Protocol-Version': version });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(res.body.error.message).toContain('batches are not supported');
    }
  });

  it('When a JSON-RPC batch is sent at 2025-03-26 (or with no version header, which means 2025-03-26), then each request is answered, in an array', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const ping = { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'ping', arguments: {} } };
    for (const headers of [{ 'Mcp-Protocol-Version': '2025-03-26' }, {}] as Array<Record<string, string>>) {
      const res = await rpc(con.secret, [LIST, ping], headers);
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      const byId = new Map((res.body as Array<{ id: unknown; result?: any }>).map((m) => [m.id, m]));
      expect([...byId.keys()].sort()).toEqual([1, 'b']);
      expect(byId.get(1)!.result.tools.map((x: { name: string }) => x.name)).toContain('listContacts');
      expect(byId.get('b')!.result.structuredContent).toMatchObject({ ok: true, projectId: p.id });
    }
  });

  it('When an unknown tool is called with the SDK client, then its message says "MCP error -32602" once', async () => {
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const client = new Client({ name: 'hardening', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers: { Authorization: `Bearer ${con.secret}` } } }));
    const error = await client.callTool({ name: 'noSuchTool', arguments: {} }).then(() => undefined, (e: Error) => e);
    expect(error?.message).toBe('MCP error -32602: Unknown tool: noSuchTool');
    await client.close();
  });

  it('When a connection of two projects writes without naming one, then project_required names the `project` argument and the projects', async () => {
    const a = await t.admin.project('Two A');
    const b = await t.admin.project('Two B');
    const con = await t.admin.connection([{ projectId: a.id, scopes: ['webhooks:manage'] }, { projectId: b.id, scopes: ['webhooks:manage'] }]);
    const res = await rpc(con.secret, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'createWebhook', arguments: { body: { url: 'https://hooks.example.com/in', events: ['message.received'] } } } });
    expect(res.status).toBe(200);
    expect(res.body.result.isError).toBe(true);
    const error = JSON.parse(res.body.result.content[0].text).error;
    expect(error.code).toBe('project_required');
    expect(error.message).toContain('`project` argument');
    expect(error.message).not.toContain('X-Service-Project');
    expect(error.details).toEqual({ argument: 'project', projects: [a.id, b.id] });
  });
});

describe('loopback aliases in development', () => {
  it('When the client reaches the service as 127.0.0.1 while PUBLIC_BASE_URL is localhost, then the metadata and 401 name the URL it used, and a resource naming it is this server', async () => {
    const alias = `http://127.0.0.1:${port}`;
    const prm = await request(server).get('/.well-known/oauth-protected-resource/mcp').set('Host', `127.0.0.1:${port}`);
    expect(prm.body.resource).toBe(`${alias}/mcp`);
    expect((await request(server).get('/.well-known/oauth-protected-resource/mcp').set('Host', `localhost:${port}`)).body.resource).toBe(`${base}/mcp`);
    expect((await request(server).get('/.well-known/oauth-protected-resource/mcp').set('Host', 'evil.example.com')).body.resource).toBe(`${base}/mcp`);
    const unauth = await request(server).post('/mcp').set('Host', `127.0.0.1:${port}`).send(LIST);
    expect(unauth.headers['www-authenticate']).toContain(`resource_metadata="${alias}/.well-known/oauth-protected-resource/mcp"`);
    const client = await register(t);
    const res = await request(t.app).get(authorizeQuery({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:7777/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', resource: `${alias}/mcp` }));
    expect(res.status).toBe(302);
    expect(String(res.headers.location)).toMatch(/^\/dashboard\/oauth\/consent\?request=/);
  });
});

describe('the Inspector line of docs/agents.md', () => {
  it('When it is run as written from the project root (URL and token filled in), then it lists the tools', async () => {
    const docs = readFileSync(path.join(PROJECT_ROOT, 'docs', 'agents.md'), 'utf8');
    const line = /```sh\n(\(cd node_modules\/@modelcontextprotocol\/inspector-cli[^\n]+)\n```/.exec(docs)?.[1];
    expect(line).toBeDefined();
    const p = await t.admin.project();
    const con = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const command = line!.replace('http://localhost:3000/mcp', `${base}/mcp`).replace('mcp_at_…', con.secret);
    const run = await runProcess('bash', ['-c', command], { cwd: PROJECT_ROOT, timeoutMs: 30_000 });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).tools.map((x: { name: string }) => x.name)).toContain('listContacts');
  });
});
