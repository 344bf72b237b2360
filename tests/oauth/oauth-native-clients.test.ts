/**
 * Native agents (Cursor, Windsurf) return from the browser through their own private-use URI scheme
 * (RFC 8252 §7.1): registered as public clients with PKCE, matched exactly, the scheme named on the
 * consent page. The SDK's client runs the whole flow with Cursor's redirect URI.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { TestApp } from '../support/app.js';
import { useListeningApp } from '../support/listening.js';
import { person } from '../support/dashboard.js';
import { answer, authorizeQuery, codeOf, pkce } from '../support/oauth.js';
import { AgentStorage } from '../support/mcp-agent.js';

const CURSOR = 'cursor://anysphere.cursor-mcp/oauth/callback';
/** What Cursor registers in one request: its app scheme, its web callback and a loopback one. */
const CURSOR_URIS = [CURSOR, 'https://www.cursor.com/agents/mcp/oauth/callback', 'http://localhost:8787/callback'];
const WINDSURF = 'windsurf://codeium.windsurf/mcp/oauth/callback';

let t: TestApp;
let base: string;
useListeningApp((app) => ({ t, base } = app));

const email = () => `native-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

describe('private-use scheme redirects', () => {
  it('When Cursor connects with the SDK client and its cursor:// redirect, then the consent page names the scheme, the code comes back to cursor:// and the tools answer', async () => {
    const p = await t.admin.project('Native');
    const { agent } = await person(t, p.id, email(), 'owner');
    const storage = new AgentStorage({ redirectUrl: CURSOR, metadata: { client_name: 'Cursor', redirect_uris: CURSOR_URIS } });
    const mcpUrl = new URL('/mcp', base);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage });
    await expect(new Client({ name: 'cursor', version: '1' }).connect(first)).rejects.toThrow(UnauthorizedError);
    expect(storage.info?.client_id).toBeDefined();
    expect(storage.authorizationUrl?.searchParams.get('redirect_uri')).toBe(CURSOR);

    const redirected = await agent.get(storage.authorizationUrl!.pathname + storage.authorizationUrl!.search);
    expect(redirected.status).toBe(302);
    const location = String(redirected.headers.location);
    const page = await agent.get(location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('the app of cursor:// (anysphere.cursor-mcp)');
    expect(page.text).toContain('<code>cursor://</code>');
    expect(String(page.headers['content-security-policy'])).toContain("form-action 'self' cursor:");

    const requestId = new URL(location, base).searchParams.get('request')!;
    const approved = await answer(agent, location, requestId, 'approve', { projects: [{ id: p.id, scopes: ['conversations:read'] }] });
    expect(approved.status).toBe(303);
    const back = String(approved.headers.location);
    expect(back.startsWith(`${CURSOR}?code=`)).toBe(true);
    await first.finishAuth(codeOf(back).code);
    expect(storage.saved?.access_token).toMatch(/^mcp_at_/);

    const client = new Client({ name: 'cursor', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: storage }));
    expect((await client.listTools()).tools.map((x) => x.name)).toContain('listConversations');
    await client.close();
  });

  it("When Windsurf registers its windsurf:// redirect as a public client, then it is registered as sent", async () => {
    const res = await request(t.app).post('/register').send({ client_name: 'Windsurf', redirect_uris: [WINDSURF], token_endpoint_auth_method: 'none' });
    expect(res.status).toBe(201);
    expect(res.body.redirect_uris).toEqual([WINDSURF]);
    expect(res.body.client_secret).toBeUndefined();
  });

  it('When the redirect URI differs from the registered cursor:// one in any way, then 400 and never a redirect', async () => {
    const reg = await request(t.app).post('/register').send({ redirect_uris: [CURSOR], token_endpoint_auth_method: 'none' });
    for (const wrong of [`${CURSOR}/`, CURSOR.replace('cursor-mcp', 'cursor-mcq'), 'evil://anysphere.cursor-mcp/oauth/callback', `${CURSOR}?x=1`]) {
      const res = await request(t.app).get(authorizeQuery({ response_type: 'code', client_id: reg.body.client_id, redirect_uri: wrong, code_challenge: pkce().challenge, code_challenge_method: 'S256' }));
      expect({ wrong, status: res.status, location: res.headers.location }).toEqual({ wrong, status: 400, location: undefined });
    }
  });

  it.each([
    ['a confidential client', { redirect_uris: [CURSOR] }, 'public client'],
    ['client_secret_basic', { redirect_uris: [CURSOR], token_endpoint_auth_method: 'client_secret_basic' }, 'public client'],
    ['javascript:', { redirect_uris: ['javascript:alert(1)'], token_endpoint_auth_method: 'none' }, 'redirect_uris'],
    ['file:', { redirect_uris: ['file:///etc/passwd'], token_endpoint_auth_method: 'none' }, 'not file'],
    ['a fragment', { redirect_uris: [`${CURSOR}#x`], token_endpoint_auth_method: 'none' }, 'fragment'],
  ])('When a private-use scheme comes with %s, then 400 invalid_redirect_uri (RFC 7591)', async (_label, body, message) => {
    const res = await request(t.app).post('/register').send(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_redirect_uri');
    expect(res.body.error_description).toContain(message);
  });

  it('When the metadata is read, then token_endpoint_auth_methods_supported lists what registration accepts', async () => {
    const res = await request(t.app).get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body.token_endpoint_auth_methods_supported).toEqual(['none', 'client_secret_post', 'client_secret_basic']);
    expect(res.body.revocation_endpoint_auth_methods_supported).toEqual(['none', 'client_secret_post', 'client_secret_basic']);
    expect(res.body.code_challenge_methods_supported).toEqual(['S256']);
  });
});
