/**
 * Bad input to the agents' OAuth server and its consent page (issue 45, "Bad input", the OAuth half):
 * each gives a clear error and stores nothing. No PKCE or `plain`, a wrong code verifier, a code used
 * twice (and the tokens issued from it revoked), an expired code, a redirect URI one character off, an
 * unregistered client, a refresh token reused after rotation (its grant revoked), a resource of another
 * server, scopes beyond what the person may grant, the consent form without its CSRF token or posted
 * twice; also denial, an expired request, a member-only person, the arrival without the session cookie
 * and the sign-in's `next`, and the per-address limit.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp, useTestApp } from '../support/app.js';
import { csrfOf, person, PASSWORD } from '../support/dashboard.js';
import { REDIRECT, RESOURCE, answer, authorize, authorizeQuery, codeOf, consentForm, grantFlow, pkce, ping, register, token } from '../support/oauth.js';

let t: TestApp;
useTestApp({ config: { oauthRequestsPerMinute: 100_000 } }, (app) => {
  t = app;
});

let n = 0;
const email = () => `oauth-bad-${++n}@example.test`;
const counts = async () => ({
  requests: await t.db.prisma.oAuthRequest.count(),
  answered: await t.db.prisma.oAuthRequest.count({ where: { answeredAt: { not: null } } }),
  codes: await t.db.prisma.oAuthCode.count(),
  connections: await t.db.prisma.agentConnection.count(),
  tokens: await t.db.prisma.accessToken.count(),
  audit: await t.db.prisma.dashboardAudit.count({ where: { action: { startsWith: 'agent.' } } }),
});

async function setup(role: 'owner' | 'admin' | 'member' = 'owner') {
  const p = await t.admin.project();
  const who = email();
  const { agent } = await person(t, p.id, who, role);
  const client = await register(t);
  return { p, agent, client, who };
}

function expectRedirectError(res: request.Response, error: string) {
  expect(res.status).toBe(302);
  const url = new URL(String(res.headers.location));
  expect(url.origin + url.pathname).toBe(REDIRECT);
  expect(url.searchParams.get('error')).toBe(error);
  expect(url.searchParams.get('state')).toBe('st-1');
}

describe('the authorization request', () => {
  it.each([
    ['no code_challenge', { code_challenge: undefined, code_challenge_method: undefined }],
    ['code_challenge_method plain', { code_challenge_method: 'plain' }],
    ['no code_challenge_method', { code_challenge_method: undefined }],
    ['a code_challenge that is not a SHA-256', { code_challenge: 'short' }],
    ['response_type token', { response_type: 'token' }],
  ])('When it has %s, then the client hears invalid_request at its redirect URI and nothing is stored', async (_label, extra) => {
    const { client } = await setup();
    const before = await counts();
    const res = await request(t.app).get(
      authorizeQuery({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1', ...extra }),
    );
    expectRedirectError(res, 'invalid_request');
    expect(await counts()).toEqual(before);
  });

  it('When the resource is another server, then invalid_target at the redirect URI; the MCP URL with a trailing slash is accepted', async () => {
    const { client } = await setup();
    const before = await counts();
    for (const resource of ['https://other.example.test/mcp', 'http://localhost:3000/v1', 'http://localhost:3001/mcp']) {
      const res = await request(t.app).get(
        authorizeQuery({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1', resource }),
      );
      expectRedirectError(res, 'invalid_target');
    }
    expect(await counts()).toEqual(before);
    await authorize(t, client.client_id, pkce().challenge, { resource: `${RESOURCE}/` });
  });

  it('When a scope outside the catalogue is asked for, then invalid_scope at the redirect URI', async () => {
    const { client } = await setup();
    const res = await request(t.app).get(
      authorizeQuery({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1', scope: 'contacts:read admin:everything' }),
    );
    expectRedirectError(res, 'invalid_scope');
  });

  it('When the redirect URI differs by one character, then 400 with no Location (never a redirect) and nothing is stored', async () => {
    const { client } = await setup();
    const before = await counts();
    for (const wrong of [REDIRECT.replace('callback', 'callbacc'), `${REDIRECT}/`, REDIRECT.replace('http:', 'https:'), 'http://127.0.0.2:7777/callback', `${REDIRECT}?x=1`]) {
      const res = await request(t.app).get(
        authorizeQuery({ response_type: 'code', client_id: client.client_id, redirect_uri: wrong, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1' }),
      );
      expect({ status: res.status, location: res.headers.location, error: res.body.error }).toEqual({ status: 400, location: undefined, error: 'invalid_request' });
    }
    expect(await counts()).toEqual(before);
  });

  it('When the client is not registered, then 400 invalid_client with no Location, whatever redirect URI it names', async () => {
    const res = await request(t.app).get(
      authorizeQuery({ response_type: 'code', client_id: 'no-such-client', redirect_uri: 'https://evil.example.test/cb', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'st-1' }),
    );
    expect({ status: res.status, location: res.headers.location, error: res.body.error }).toEqual({ status: 400, location: undefined, error: 'invalid_client' });
  });
});

describe('the token request', () => {
  async function approvedCode() {
    const { p, agent, client } = await setup();
    const { verifier, challenge } = pkce();
    const { location, requestId } = await authorize(t, client.client_id, challenge);
    const approved = await answer(agent, location, requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    return { client, verifier, code: codeOf(String(approved.headers.location)).code };
  }

  it('When the code verifier is wrong, then invalid_grant and no token', async () => {
    const { client, code } = await approvedCode();
    const before = await counts();
    const res = await token(t, { grant_type: 'authorization_code', code, code_verifier: pkce().verifier, client_id: client.client_id, redirect_uri: REDIRECT });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    expect(await counts()).toEqual(before);
  });

  it('When the verifier is missing, then invalid_request', async () => {
    const { client, code } = await approvedCode();
    const res = await token(t, { grant_type: 'authorization_code', code, client_id: client.client_id });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_request' });
  });

  it('When a code is used twice, then the second is refused and the tokens issued from the first are revoked (401 invalid_token)', async () => {
    const { client, code, verifier } = await approvedCode();
    const form = { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT };
    const first = await token(t, form);
    expect(first.status).toBe(200);
    expect((await ping(t, first.body.access_token)).status).toBe(200);
    const second = await token(t, form);
    expect({ status: second.status, error: second.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    const refused = await ping(t, first.body.access_token);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 401, code: 'invalid_token' });
    const refresh = await token(t, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: client.client_id });
    expect({ status: refresh.status, error: refresh.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
  });

  it('When the code is older than 60 s, then invalid_grant and no token', async () => {
    const { client, code, verifier } = await approvedCode();
    t.clock.advance(61_000);
    const before = await counts();
    const res = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    expect(await counts()).toEqual(before);
  });

  it('When the redirect URI differs from the authorization request, then invalid_grant; another client\'s code is invalid_grant too', async () => {
    const { client, code, verifier } = await approvedCode();
    const off = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, redirect_uri: REDIRECT.replace('callback', 'callbacc') });
    expect({ status: off.status, error: off.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    const other = await register(t);
    const stolen = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: other.client_id });
    expect({ status: stolen.status, error: stolen.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    // Neither used the code up.
    expect((await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id })).status).toBe(200);
  });

  it('When the token request names another resource, then invalid_target', async () => {
    const { client, code, verifier } = await approvedCode();
    const res = await token(t, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id, resource: 'https://other.example.test/mcp' });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_target' });
  });

  it('When a refresh token is reused after its rotation\'s 30-second grace window, then it is refused and every token of that grant is revoked', async () => {
    const { p, agent, client } = await setup();
    const { tokens } = await grantFlow(t, agent, client.client_id, { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    const rotated = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect(rotated.status).toBe(200);
    t.clock.advance(31_000);
    let reused;
    try {
      reused = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    } finally {
      t.clock.advance(-31_000);
    }
    expect({ status: reused.status, error: reused.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    for (const access of [tokens.access_token, rotated.body.access_token]) {
      const res = await ping(t, access);
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 401, code: 'invalid_token' });
    }
    const next = await token(t, { grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token, client_id: client.client_id });
    expect({ status: next.status, error: next.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
  });

  it('When the grant type is unsupported, then unsupported_grant_type', async () => {
    const { client } = await setup();
    const res = await token(t, { grant_type: 'client_credentials', client_id: client.client_id });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'unsupported_grant_type' });
  });
});

describe('the consent page', () => {
  it('When a person denies, then the client hears access_denied with its state and nothing is granted', async () => {
    const { agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    const before = await counts();
    const res = await answer(agent, location, requestId, 'deny');
    expect(res.status).toBe(303);
    const url = new URL(String(res.headers.location));
    expect(url.origin + url.pathname).toBe(REDIRECT);
    expect(url.searchParams.get('error')).toBe('access_denied');
    expect(url.searchParams.get('state')).toBe('st-1');
    expect(await counts()).toEqual({ ...before, answered: before.answered + 1 });
  });

  it('When the form is posted without its CSRF token, then 403 and nothing is stored (the request stays open)', async () => {
    const { p, agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    await agent.get(location);
    const before = await counts();
    const res = await agent.post('/dashboard/oauth/consent').type('form').send(consentForm(undefined, requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] }));
    expect(res.status).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(await counts()).toEqual(before);
    const bad = await agent.post('/dashboard/oauth/consent').type('form').send(consentForm('not-the-token', requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] }));
    expect(bad.status).toBe(403);
    expect(await counts()).toEqual(before);
  });

  it('When the same form is posted twice, then the second gets a 409 page and stores nothing', async () => {
    const { p, agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    const body = consentForm(csrfOf(page.text), requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    const first = await agent.post('/dashboard/oauth/consent').type('form').send(body);
    expect(first.status).toBe(303);
    const after = await counts();
    const second = await agent.post('/dashboard/oauth/consent').type('form').send(body);
    expect(second.status).toBe(409);
    expect(second.headers.location).toBeUndefined();
    expect(second.text).toContain('already answered');
    expect(await counts()).toEqual(after);
    // Two at once: exactly one wins.
    const { location: l2, requestId: r2 } = await authorize(t, client.client_id, pkce().challenge);
    const page2 = await agent.get(l2);
    const body2 = consentForm(csrfOf(page2.text), r2, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
    const both = await Promise.all([agent.post('/dashboard/oauth/consent').type('form').send(body2), agent.post('/dashboard/oauth/consent').type('form').send(body2)]);
    expect(both.map((r) => r.status).sort()).toEqual([303, 409]);
    expect(await t.db.prisma.oAuthCode.count()).toBe(after.codes + 1);
  });

  it('When a project where the person is a member is posted, then 403 and nothing is stored', async () => {
    const { p, agent, client, who } = await setup('owner');
    const other = await t.admin.project();
    await t.admin.call('post', `/admin/projects/${other.id}/dashboard-members`, { email: who, role: 'member' });
    const stranger = await t.admin.project();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    expect(page.text).not.toContain(`value="${other.id}"`);
    const before = await counts();
    for (const forged of [other.id, stranger.id]) {
      const res = await agent.post('/dashboard/oauth/consent').type('form').send(consentForm(csrfOf(page.text), requestId, 'approve', {
        projects: [{ id: p.id, scopes: ['contacts:read'] }, { id: forged, scopes: ['messages:send'] }],
      }));
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
    }
    expect(await counts()).toEqual(before);
  });

  it('When a scope outside the catalogue is posted, or none, or no project, then 400 and nothing is stored', async () => {
    const { p, agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge, { scope: 'contacts:read' });
    const page = await agent.get(location);
    const before = await counts();
    const post = (choice: Parameters<typeof consentForm>[3]) => agent.post('/dashboard/oauth/consent').type('form').send(consentForm(csrfOf(page.text), requestId, 'approve', choice));
    for (const choice of [
      { projects: [{ id: p.id, scopes: ['contacts:read', 'made:up'] }] },
      { projects: [{ id: p.id, scopes: ['made:up'] }] },
      { projects: [{ id: p.id, scopes: [] }] },
      { projects: [] },
      { projects: [{ id: p.id, scopes: ['contacts:read'] }], defaultProject: 'prj_other' },
    ]) {
      const res = await post(choice);
      expect(res.status).toBe(400);
      expect(res.headers.location).toBeUndefined();
    }
    expect(await counts()).toEqual(before);
    expect((await post({ projects: [{ id: p.id, scopes: ['contacts:read'] }] })).status).toBe(303);
  });

  it('When the decision is neither approve nor deny, then 400', async () => {
    const { agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    const res = await agent.post('/dashboard/oauth/consent').type('form').send(new URLSearchParams({ _csrf: csrfOf(page.text), request: requestId, decision: 'maybe' }).toString());
    expect(res.status).toBe(400);
  });

  it('When the request is older than 10 minutes, then the page and the form say it expired and nothing is stored', async () => {
    const { p, agent, client } = await setup();
    const { location, requestId } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    t.clock.advance(10 * 60_000 + 1000);
    expect((await agent.get(location)).status).toBe(400);
    const before = await counts();
    const res = await agent.post('/dashboard/oauth/consent').type('form').send(consentForm(csrfOf(page.text), requestId, 'approve', { projects: [{ id: p.id, scopes: ['contacts:read'] }] }));
    expect(res.status).toBe(400);
    expect(res.text).toContain('expired');
    expect(await counts()).toEqual(before);
  });
});

describe('the consent page', () => {
  it('When the request id is unknown, then 404', async () => {
    const { agent } = await setup();
    expect((await agent.get('/dashboard/oauth/consent?request=oar_nope')).status).toBe(404);
    expect((await request(t.app).get('/dashboard/oauth/consent?request=oar_nope')).status).toBe(404);
  });

  it('When the person is only a member, then the page says they cannot grant and offers only Deny', async () => {
    const { agent, client } = await setup('member');
    const { location } = await authorize(t, client.client_id, pkce().challenge);
    const page = await agent.get(location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('cannot connect this application');
    expect(page.text).not.toContain('value="approve"');
    expect(page.text).toContain('value="deny"');
  });

  it('When the page is reached without the session cookie (the cross-site redirect), then a Continue link leads through sign-in back to it', async () => {
    const { agent, client, who } = await setup();
    const { location } = await authorize(t, client.client_id, pkce().challenge);
    // What a browser sends after the agent's cross-site redirect: no SameSite=Strict cookie.
    const bare = await request(t.app).get(location).set('Sec-Fetch-Site', 'cross-site');
    expect(bare.status).toBe(200);
    const next = `/dashboard/login?next=${encodeURIComponent(location)}`;
    expect(bare.text).toContain(`href="${next.replace(/&/g, '&amp;')}"`);
    // A signed-in person following it (same origin: the cookie rides along) lands on the consent page at once.
    const signedIn = await agent.get(next);
    expect({ status: signedIn.status, location: signedIn.headers.location }).toEqual({ status: 303, location });
    // Someone not signed in signs in first and comes back.
    const browser = request.agent(t.app);
    const form = await browser.get(next);
    expect(form.text).toContain(`name="next" value="${location.replace(/&/g, '&amp;')}"`);
    const login = await browser.post('/dashboard/login').type('form').send({ _csrf: csrfOf(form.text), email: who, password: PASSWORD, next: location });
    expect({ status: login.status, location: login.headers.location }).toEqual({ status: 303, location });
    expect((await browser.get(location)).text).toContain('Approve');
    // A same-origin arrival without a session goes straight to the sign-in page.
    const same = await request(t.app).get(location).set('Sec-Fetch-Site', 'same-origin');
    expect({ status: same.status, location: same.headers.location }).toEqual({ status: 303, location: next });
  });

  it.each([['https://evil.example.test/'], ['//evil.example.test/dashboard/'], ['/dashboard/../evil'], ['/elsewhere'], ['/dashboard\\..\\x'], ['javascript:alert(1)']])(
    'When the sign-in\'s next is %s, then it is ignored',
    async (next) => {
      const { who } = await setup();
      const browser = request.agent(t.app);
      const form = await browser.get(`/dashboard/login?next=${encodeURIComponent(next)}`);
      expect(form.text).not.toContain('name="next"');
      const login = await browser.post('/dashboard/login').type('form').send({ _csrf: csrfOf(form.text), email: who, password: PASSWORD, next });
      expect({ status: login.status, location: login.headers.location }).toEqual({ status: 303, location: '/dashboard' });
    },
  );
});

describe('the per-address limit', () => {
  it('When an address passes OAUTH_REQUESTS_PER_MINUTE at /register, then 429 too_many_requests with Retry-After', async () => {
    const limited = await startTestApp({ config: { oauthRequestsPerMinute: 2 } });
    try {
      const reg = () => request(limited.app).post('/register').send({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
      expect((await reg()).status).toBe(201);
      expect((await reg()).status).toBe(201);
      const third = await reg();
      expect({ status: third.status, error: third.body.error }).toEqual({ status: 429, error: 'too_many_requests' });
      expect(Number(third.headers['retry-after'])).toBeGreaterThan(0);
      // Each endpoint has its own count.
      expect((await request(limited.app).post('/token').type('form').send('grant_type=refresh_token')).status).toBe(400);
    } finally {
      await limited.close();
    }
  });
});
