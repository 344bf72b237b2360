/**
 * The agents' OAuth 2.1 authorization server (issue 45, item 3) through HTTP on the real database:
 * both metadata documents, dynamic registration (public and confidential clients, the redirect-URI
 * rule, bad metadata), the authorization-code flow with PKCE through the dashboard's consent page as
 * a signed-in person, the token answer, the token on /v1 with the chosen scopes and default project,
 * refresh rotation, narrower and wider scopes on refresh, confidential clients' authentication, and
 * revocation (RFC 7009).
 */
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import request from 'supertest';
import { startTestApp, type TestApp, useTestApp } from '../support/app.js';
import { grant, person } from '../support/dashboard.js';
import { REDIRECT, RESOURCE, authorize, answer, codeOf, consentForm, grantFlow, pkce, ping, register, token } from '../support/oauth.js';
import { csrfOf } from '../support/dashboard.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';
import { SCOPE_GROUPS, STARTER_SCOPES, scopeGroup } from '../../lib/oauth/rules.js';

let t: TestApp;
useTestApp({ config: { oauthRequestsPerMinute: 100_000 } }, (app) => {
  t = app;
});

let n = 0;
const email = () => `oauth-flow-${++n}@example.test`;

describe('metadata documents', () => {
  it('When the authorization-server metadata is read (RFC 8414), then it names the endpoints, S256 only, both grants and the scope catalogue', async () => {
    const res = await request(t.app).get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: 'http://localhost:3000/',
      authorization_endpoint: 'http://localhost:3000/authorize',
      token_endpoint: 'http://localhost:3000/token',
      registration_endpoint: 'http://localhost:3000/register',
      revocation_endpoint: 'http://localhost:3000/revoke',
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    });
    expect(res.body.scopes_supported).toEqual(SCOPES);
  });

  it('When the protected-resource metadata of /mcp is read (RFC 9728), then it names the resource and this authorization server', async () => {
    const res = await request(t.app).get('/.well-known/oauth-protected-resource/mcp');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resource: RESOURCE, authorization_servers: ['http://localhost:3000/'] });
    expect(res.body.scopes_supported).toEqual(SCOPES);
  });

  it('When PUBLIC_BASE_URL is plain http on a public host, then the app still starts and serves no OAuth endpoint', async () => {
    const insecure = await startTestApp({ config: { publicBaseUrl: 'http://service.example.test' } });
    try {
      expect((await request(insecure.app).get('/.well-known/oauth-authorization-server')).status).toBe(404);
      expect((await request(insecure.app).post('/register').send({ redirect_uris: [REDIRECT] })).status).toBe(404);
    } finally {
      await insecure.close();
    }
  });
});

describe('dynamic client registration (RFC 7591)', () => {
  it('When a public client registers, then 201 with a client_id and no secret, and the metadata is stored', async () => {
    const client = await register(t, { client_name: 'Claude', redirect_uris: [REDIRECT, 'https://claude.ai/api/mcp/auth_callback'] });
    expect(client.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(client.client_secret).toBeUndefined();
    expect(client.client_name).toBe('Claude');
    const row = await t.db.prisma.oAuthClient.findUnique({ where: { id: client.client_id } });
    expect(row).toMatchObject({ name: 'Claude', redirectUris: [REDIRECT, 'https://claude.ai/api/mcp/auth_callback'], secretHash: null });
  });

  it('When a confidential client registers, then its secret is answered once and only its SHA-256 is stored', async () => {
    const res = await request(t.app).post('/register').send({ client_name: 'Server agent', redirect_uris: ['https://agent.example.test/cb'] });
    expect(res.status).toBe(201);
    const { client_id, client_secret } = res.body;
    expect(typeof client_secret).toBe('string');
    expect(res.body.client_secret_expires_at).toBe(0);
    expect(res.body.token_endpoint_auth_method).toBe('client_secret_post');
    const row = await t.db.prisma.oAuthClient.findUnique({ where: { id: client_id } });
    expect(row!.secretHash).toBe(createHash('sha256').update(client_secret).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(client_secret);
  });

  it.each([
    ['https anywhere', 'https://app.example.test/oauth/callback'],
    ['http on 127.0.0.1, any port', 'http://127.0.0.1:53682/callback'],
    ['http on localhost', 'http://localhost/cb'],
    ['http on [::1]', 'http://[::1]:8080/cb'],
  ])('When the redirect URI is %s, then it is registered', async (_label, uri) => {
    const client = await register(t, { redirect_uris: [uri] });
    expect(client.redirect_uris).toEqual([uri]);
  });

  // A refused redirect URI is RFC 7591's invalid_redirect_uri; the rest of the metadata invalid_client_metadata.
  it.each([
    ['http on a public host', { redirect_uris: ['http://app.example.test/cb'] }, 'plain http is allowed only for a loopback host', 'invalid_redirect_uri'],
    ['http on a private address', { redirect_uris: ['http://10.0.0.5/cb'] }, 'plain http', 'invalid_redirect_uri'],
    ['a custom scheme for a confidential client', { redirect_uris: ['com.example.app:/callback'] }, 'public client', 'invalid_redirect_uri'],
    ['javascript:', { redirect_uris: ['javascript:alert(1)'] }, 'redirect_uris', 'invalid_redirect_uri'],
    ['a fragment', { redirect_uris: ['https://app.example.test/cb#x'] }, 'fragment', 'invalid_redirect_uri'],
    ['no redirect URI', { redirect_uris: [] }, 'at least one', 'invalid_client_metadata'],
    ['six redirect URIs', { redirect_uris: Array.from({ length: 6 }, (_, i) => `https://app.example.test/cb${i}`) }, 'at most 5', 'invalid_client_metadata'],
    ['a redirect URI over 512 characters', { redirect_uris: [`https://app.example.test/${'a'.repeat(488)}`] }, 'longer than 512', 'invalid_redirect_uri'],
    ['a name over 200 characters', { redirect_uris: [REDIRECT], client_name: 'n'.repeat(201) }, 'client_name', 'invalid_client_metadata'],
    ['the client_credentials grant', { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] }, 'grant_types', 'invalid_client_metadata'],
    ['an unsupported auth method', { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' }, 'token_endpoint_auth_method', 'invalid_client_metadata'],
    ['redirect_uris not a list', { redirect_uris: 'https://app.example.test/cb' }, '', 'invalid_client_metadata'],
  ])('When the metadata has %s, then 400 (invalid_redirect_uri or invalid_client_metadata) and nothing is stored', async (_label, body, message, error) => {
    const before = await t.db.prisma.oAuthClient.count();
    const res = await request(t.app).post('/register').send(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
    expect(res.body.error_description).toContain(message);
    expect(await t.db.prisma.oAuthClient.count()).toBe(before);
  });

  it('When the registration body is over 16 KiB or not JSON, then 400 invalid_client_metadata', async () => {
    const big = await request(t.app).post('/register').send({ redirect_uris: [REDIRECT], software_statement: 'x'.repeat(17 * 1024) });
    expect({ status: big.status, error: big.body.error }).toEqual({ status: 400, error: 'invalid_client_metadata' });
    const bad = await request(t.app).post('/register').set('Content-Type', 'application/json').send('{"redirect_uris": [');
    expect({ status: bad.status, error: bad.body.error }).toEqual({ status: 400, error: 'invalid_client_metadata' });
  });
});

describe('the authorization-code flow with PKCE, through the consent page', () => {
  it('When a person approves two projects with chosen scopes, then the token answer has its shape and the token works on /v1 with those scopes and the chosen default', async () => {
    const a = await t.admin.project('Flow A');
    const b = await t.admin.project('Flow B');
    const who = email();
    const { agent } = await person(t, a.id, who, 'owner');
    await grant(t, b.id, who, 'admin');
    const client = await register(t, { client_name: 'Flow agent' });

    const { tokens } = await grantFlow(t, agent, client.client_id, {
      projects: [{ id: a.id, scopes: ['conversations:read', 'messages:send'] }, { id: b.id, scopes: ['contacts:read'] }],
      defaultProject: b.id,
    });
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^mcp_at_[a-z0-9]{40}$/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^mcp_rt_[a-z0-9]{40}$/),
      scope: 'conversations:read messages:send contacts:read',
    });

    // A read naming no project acts on the default (B); the header picks A with its own scopes.
    const pinged = await ping(t, tokens.access_token);
    expect(pinged.status).toBe(200);
    expect(pinged.body.data).toEqual({ ok: true, projectId: b.id, scopes: ['contacts:read'] });
    expect((await ping(t, tokens.access_token, a.id)).body.data).toEqual({ ok: true, projectId: a.id, scopes: ['conversations:read', 'messages:send'] });

    const projects = await request(t.app).get('/v1/projects').set('Authorization', `Bearer ${tokens.access_token}`);
    expect(projects.status).toBe(200);
    expect(projects.body.data.projects).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: a.id, name: 'Flow A', scopes: ['conversations:read', 'messages:send'], is_default: false }),
        expect.objectContaining({ id: b.id, name: 'Flow B', scopes: ['contacts:read'], is_default: true }),
      ]),
    );

    // Stored hashed, bound to the client, its grant and the MCP resource; the connection is the client's and the person's.
    const row = await t.db.prisma.accessToken.findUnique({ where: { secretHash: createHash('sha256').update(tokens.access_token).digest('hex') }, include: { connection: true } });
    expect(row).toMatchObject({ clientId: client.client_id, resource: RESOURCE, grantId: expect.stringMatching(/^grt_/) });
    expect(row!.expiresAt.getTime() - t.clock.now().getTime()).toBe(3600_000);
    expect(row!.connection).toMatchObject({ clientId: client.client_id, name: 'Flow agent' });
    expect(await t.db.prisma.oAuthRefreshToken.count({ where: { secretHash: createHash('sha256').update(tokens.refresh_token).digest('hex') } })).toBe(1);
  });

  it('When the client asked for specific scopes, then the whole catalogue is offered in groups, the asked ones preselected and the rest opt-in', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { challenge } = pkce();
    const { location } = await authorize(t, client.client_id, challenge, { scope: 'conversations:read messages:send' });
    const page = await agent.get(location);
    expect(page.status).toBe(200);
    const boxes = [...page.text.matchAll(/<input type="checkbox" name="scope:[^"]+" value="([^"]+)"( checked)?>/g)].map((m) => [m[1], !!m[2]]);
    expect(boxes.map(([s]) => s).sort()).toEqual([...SCOPES].sort());
    expect(boxes.filter(([, on]) => on).map(([s]) => s)).toEqual(['conversations:read', 'messages:send']);
    // Grouped: read, write, send, manage, each a fieldset with its legend.
    const legends = [...page.text.matchAll(/<fieldset class="scope-group"><legend>([^<]+) on /g)].map((m) => m[1]);
    expect(legends).toEqual(['Read (and receive events)', 'Write: change data', 'Send messages to your customers', 'Manage templates, broadcasts and webhooks']);
    expect(page.text).toContain('Test agent');
    expect(page.text).toContain('name not verified');
    expect(page.text).toContain('127.0.0.1:7777');
    // The answer redirects to the client's origin: the page's form-action allows it (and nothing else but this site).
    expect(page.headers['content-security-policy']).toContain("form-action 'self' http://127.0.0.1:7777;");
  });

  it('When no scope was asked for, then the whole catalogue is offered, grouped, with only reads preselected', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { location } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    const boxes = [...page.text.matchAll(/name="scope:[^"]+" value="([^"]+)"( checked)?>/g)].map((m) => [m[1], !!m[2]]);
    expect(boxes.map(([s]) => s)).toEqual(SCOPE_GROUPS.flatMap((g) => SCOPES.filter((s) => scopeGroup(s) === g)));
    expect(boxes.filter(([, on]) => on).map(([s]) => s).sort()).toEqual(SCOPES.filter((s) => s.endsWith(':read')).sort());
  });

  it('When a first connection asks for the starter reads and the person also ticks messages:send, then the token carries it and can send', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { location } = await authorize(t, client.client_id, pkce().challenge, { scope: STARTER_SCOPES.join(' ') });
    const page = await agent.get(location);
    expect(page.text).toMatch(new RegExp(`<label class="check"><input type="checkbox" name="scope:${p.id}" value="messages:send"> messages:send</label>`));
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: p.id, scopes: [...STARTER_SCOPES, 'messages:send'] }] }, { scope: STARTER_SCOPES.join(' ') });
    expect(tokens.scope.split(' ').sort()).toEqual([...STARTER_SCOPES, 'messages:send'].sort());
    expect((await ping(t, tokens.access_token)).body.data.scopes).toContain('messages:send');
    const sent = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${tokens.access_token}`).send({ to: '15550001111', type: 'text', text: { body: 'hi' } });
    expect(sent.body.error?.code).not.toBe('insufficient_scope');
  });

  it('When the person\'s role may not grant sending (a member), then messages:send is not offered there and a forged form asking it is refused', async () => {
    const owned = await t.admin.project();
    const joined = await t.admin.project();
    const who = email();
    const { agent } = await person(t, owned.id, who);
    await person(t, joined.id, who, 'member');
    const client = await register(t);
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge, { scope: 'messages:send' });
    const page = await agent.get(location);
    expect(page.text).toContain(`name="scope:${owned.id}" value="messages:send" checked>`);
    expect(page.text).not.toContain(`name="scope:${joined.id}"`);
    const before = await t.db.prisma.agentConnection.count();
    const forged = await agent.post('/dashboard/oauth/consent').type('form').send(consentForm(csrfOf(page.text), requestId, 'approve', { projects: [{ id: joined.id, scopes: ['messages:send'] }] }));
    expect(forged.status).toBe(403);
    expect(forged.headers.location).toBeUndefined();
    expect(await t.db.prisma.agentConnection.count()).toBe(before);
  });

  it('When the person consents again to the same client, keeping the earlier project (ticked on the page), then the same connection is extended, not a second one made', async () => {
    const a = await t.admin.project();
    const b = await t.admin.project();
    const who = email();
    const { agent } = await person(t, a.id, who);
    await grant(t, b.id, who, 'owner');
    const client = await register(t);
    await grantFlow(t, agent, client.client_id, { projects: [{ id: a.id, scopes: ['contacts:read'] }] });
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: a.id, scopes: ['contacts:read'] }, { id: b.id, scopes: ['templates:read'] }], defaultProject: b.id });
    const connections = await t.db.prisma.agentConnection.findMany({ where: { clientId: client.client_id }, include: { projects: true } });
    expect(connections).toHaveLength(1);
    expect(connections[0].projects.map((p) => [p.projectId, p.scopes, p.isDefault]).sort()).toEqual([[a.id, ['contacts:read'], false], [b.id, ['templates:read'], true]].sort());
    expect(tokens.scope).toBe('contacts:read templates:read');
  });

  it('When the redirect URI is a loopback one, then another port of it is accepted (RFC 8252) and the code goes there', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { verifier, challenge } = pkce();
    const other = 'http://127.0.0.1:61234/callback';
    const { location, requestId } = await authorize(t, client.client_id, challenge, { redirect_uri: other });
    const approved = await answer(agent, location, requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    expect(String(approved.headers.location).startsWith(`${other}?code=`)).toBe(true);
    const { code } = codeOf(String(approved.headers.location));
    const res = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: other });
    expect(res.status).toBe(200);
  });
});

describe('refresh tokens', () => {
  async function granted() {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: p.id, scopes: ['contacts:read', 'conversations:read', 'messages:send'] }] });
    return { p, client, tokens };
  }

  it('When a refresh token is used, then a new access and refresh token come back and the old refresh token is marked used', async () => {
    const { client, tokens } = await granted();
    const res = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^mcp_at_/),
      token_type: 'Bearer',
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^mcp_rt_/),
      scope: 'contacts:read conversations:read messages:send',
    });
    expect(res.body.refresh_token).not.toBe(tokens.refresh_token);
    expect((await ping(t, res.body.access_token)).status).toBe(200);
    const old = await t.db.prisma.oAuthRefreshToken.findUnique({ where: { secretHash: createHash('sha256').update(tokens.refresh_token).digest('hex') } });
    expect(old!.usedAt).not.toBeNull();
    // The rotated one works in turn.
    expect((await token(t, { grant_type: 'refresh_token', refresh_token: res.body.refresh_token, client_id: client.client_id })).status).toBe(200);
  });

  it('When a refresh asks for fewer scopes, then the new token holds only those; more than granted is invalid_scope', async () => {
    const { p, client, tokens } = await granted();
    const narrow = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, scope: 'contacts:read' });
    expect(narrow.status).toBe(200);
    expect(narrow.body.scope).toBe('contacts:read');
    expect((await ping(t, narrow.body.access_token)).body.data).toEqual({ ok: true, projectId: p.id, scopes: ['contacts:read'] });
    const sent = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${narrow.body.access_token}`).send({ to: '15550001111', type: 'text', text: { body: 'hi' } });
    expect({ status: sent.status, code: sent.body.error?.code }).toEqual({ status: 403, code: 'insufficient_scope' });

    const wide = await token(t, { grant_type: 'refresh_token', refresh_token: narrow.body.refresh_token, client_id: client.client_id, scope: 'contacts:read code:write' });
    expect({ status: wide.status, error: wide.body.error }).toEqual({ status: 400, error: 'invalid_scope' });
    // Without `scope`, the grant's full set again.
    const full = await token(t, { grant_type: 'refresh_token', refresh_token: narrow.body.refresh_token, client_id: client.client_id });
    expect(full.body.scope).toBe('contacts:read conversations:read messages:send');
  });

  it('When two refreshes with one refresh token run at once, then both succeed with the same pair, which works, and the grant stays', async () => {
    const { client, tokens } = await granted();
    const form = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id };
    const [a, b] = await Promise.all([token(t, form), token(t, form)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    // One rotation: the racing request is answered the pair it produced, so the grant stays one chain.
    expect(b.body.access_token).toBe(a.body.access_token);
    expect(b.body.refresh_token).toBe(a.body.refresh_token);
    expect(b.body.scope).toBe(a.body.scope);
    expect((await ping(t, a.body.access_token)).status).toBe(200);
    expect((await ping(t, tokens.access_token)).status).toBe(200);
    expect((await token(t, { ...form, refresh_token: a.body.refresh_token })).status).toBe(200);
    // The pair is kept sealed, never in plain text.
    const old = await t.db.prisma.oAuthRefreshToken.findUnique({ where: { secretHash: createHash('sha256').update(tokens.refresh_token).digest('hex') } });
    expect(old!.successorSealed).toMatch(/^v2\./);
    expect(old!.successorSealed).not.toContain(a.body.refresh_token);
    expect(old!.successorSealed).not.toContain(a.body.access_token);
  });

  it('When a refresh is retried 29 seconds after its rotation, then it gets the same pair with the access token\'s remaining lifetime', async () => {
    const { client, tokens } = await granted();
    const form = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id };
    const first = await token(t, form);
    t.clock.advance(29_000);
    try {
      const retried = await token(t, form);
      expect(retried.status).toBe(200);
      expect({ access: retried.body.access_token, refresh: retried.body.refresh_token }).toEqual({ access: first.body.access_token, refresh: first.body.refresh_token });
      expect(retried.body.expires_in).toBe(3600 - 29);
      expect((await ping(t, first.body.access_token)).status).toBe(200);
    } finally {
      t.clock.advance(-29_000);
    }
  });

  it('When a refresh token is another client\'s, then invalid_grant', async () => {
    const { tokens } = await granted();
    const other = await register(t);
    const res = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: other.client_id });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
  });

  it('When a refresh token has expired (30 days), then invalid_grant', async () => {
    const { client, tokens } = await granted();
    t.clock.advance(30 * 86400_000 + 1000);
    try {
      const res = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    } finally {
      t.clock.advance(-(30 * 86400_000 + 1000));
    }
  });
});

describe('confidential clients at the token endpoint', () => {
  async function confidentialFlow() {
    const reg = await request(t.app).post('/register').send({ client_name: 'Confidential', redirect_uris: [REDIRECT] });
    const { client_id, client_secret } = reg.body as { client_id: string; client_secret: string };
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const { verifier, challenge } = pkce();
    const { location, requestId } = await authorize(t, client_id, challenge);
    const approved = await answer(agent, location, requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    return { client_id, client_secret, code: codeOf(String(approved.headers.location)).code, verifier };
  }

  it('When the secret is missing or wrong, then 401 invalid_client; the right one (in the body or as HTTP Basic) gets the tokens', async () => {
    const c = await confidentialFlow();
    const base = { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, client_id: c.client_id };
    const missing = await token(t, base);
    expect({ status: missing.status, error: missing.body.error }).toEqual({ status: 401, error: 'invalid_client' });
    const wrong = await token(t, { ...base, client_secret: c.client_secret.replace(/.$/, (x) => (x === 'a' ? 'b' : 'a')) });
    expect({ status: wrong.status, error: wrong.body.error }).toEqual({ status: 401, error: 'invalid_client' });
    const ok = await token(t, { ...base, client_secret: c.client_secret });
    expect(ok.status).toBe(200);

    const d = await confidentialFlow();
    const basic = await request(t.app)
      .post('/token')
      .set('Authorization', `Basic ${Buffer.from(`${encodeURIComponent(d.client_id)}:${encodeURIComponent(d.client_secret)}`).toString('base64')}`)
      .type('form')
      .send(new URLSearchParams({ grant_type: 'authorization_code', code: d.code, code_verifier: d.verifier }).toString());
    expect(basic.status).toBe(200);
  });

  it('When the client_id is unknown at /token, then 401 invalid_client', async () => {
    const res = await token(t, { grant_type: 'authorization_code', code: 'mcp_ac_x', code_verifier: 'v'.repeat(43), client_id: 'no-such-client' });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 401, error: 'invalid_client' });
  });
});

describe('revocation (RFC 7009)', () => {
  it('When a client revokes its access token, then it gets 401 invalid_token; an unknown token answers 200', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    const revoke = (tok: string, id = client.client_id) => request(t.app).post('/revoke').type('form').send(new URLSearchParams({ token: tok, client_id: id }).toString());

    // Another client cannot revoke it (answered 200 all the same, as the RFC says).
    const other = await register(t);
    expect((await revoke(tokens.access_token, other.client_id)).status).toBe(200);
    expect((await ping(t, tokens.access_token)).status).toBe(200);

    expect((await revoke(tokens.access_token)).status).toBe(200);
    const refused = await ping(t, tokens.access_token);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 401, code: 'invalid_token' });
    expect((await revoke('mcp_at_' + 'x'.repeat(40))).status).toBe(200);
    expect((await revoke('anything')).status).toBe(200);
  });

  it('When a client revokes its refresh token, then the refresh token and every access token of its grant stop', async () => {
    const p = await t.admin.project();
    const { agent } = await person(t, p.id, email());
    const client = await register(t);
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    const res = await request(t.app).post('/revoke').type('form').send(new URLSearchParams({ token: tokens.refresh_token, token_type_hint: 'refresh_token', client_id: client.client_id }).toString());
    expect(res.status).toBe(200);
    expect((await ping(t, tokens.access_token)).status).toBe(401);
    const again = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect({ status: again.status, error: again.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
  });
});
