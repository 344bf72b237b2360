/**
 * Redirect URIs as RFC 8252 means them (issue 67 item 6): https, http on a loopback host, or a
 * public client's private-use scheme in reverse-domain form (`com.example.app:`) or a known
 * client's (cursor, windsurf, vscode, vscode-insiders, claude). Scripts, data, files and the
 * schemes browsers handle themselves are refused, and so is any character outside RFC 3986's
 * grammar, with RFC 7591's `invalid_redirect_uri`. A client registered under the earlier rule with
 * a URI refused now is never redirected there.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { authorizeQuery, pkce } from '../support/oauth.js';
import { KNOWN_APP_SCHEMES } from '../../lib/oauth/rules.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const registerPublic = (uri: string) => request(t.app).post('/register').send({ redirect_uris: [uri], token_endpoint_auth_method: 'none', client_name: 'Native' });

describe('registration', () => {
  it.each([
    ['Cursor', 'cursor://anysphere.cursor-mcp/oauth/callback'],
    ['Windsurf', 'windsurf://codeium.windsurf/mcp/oauth/callback'],
    ['VS Code', 'vscode://vscode.github-authentication/did-authenticate'],
    ['VS Code Insiders', 'vscode-insiders://vscode.mcp/callback'],
    ['Claude\'s desktop app', 'claude://claude.ai/oauth/callback'],
    ['a reverse-domain scheme (RFC 8252 §7.1)', 'com.example.app:/oauth2redirect'],
    ['a reverse-domain scheme with an authority', 'my.app://cb'],
    ['a percent-encoded query', 'https://app.example.test/cb?next=%2Fhome'],
    ['http on a loopback host', 'http://127.0.0.1:33418/'],
  ])('When a public client registers %s, then it is registered as sent', async (_label, uri) => {
    const res = await registerPublic(uri);
    expect(res.status).toBe(201);
    expect(res.body.redirect_uris).toEqual([uri]);
  });

  it('When the known schemes are read, then they are the clients named in docs/agents-oauth.md', () => {
    expect([...KNOWN_APP_SCHEMES].sort()).toEqual(['claude', 'cursor', 'vscode', 'vscode-insiders', 'windsurf']);
  });

  it.each([
    ['javascript:', 'javascript:alert(1)', 'not javascript'],
    ['data:', 'data:text/html,<b>x</b>', 'URI grammar'],
    ['data: in grammar', 'data:text/html,x', 'not data'],
    ['file:', 'file:///etc/passwd', 'not file'],
    ['vbscript:', 'vbscript:msgbox(1)', 'not vbscript'],
    ['about:', 'about:blank', 'not about'],
    ['blob:', 'blob:https://app.example.test/1', 'not blob'],
    ['feed: around javascript:', 'feed:javascript:alert(1)', 'not feed'],
    ['jar: around file:', 'jar:file:x!/', 'not jar'],
    ['ms-settings:', 'ms-settings:', 'not ms-settings'],
    ['a script-like scheme', 'x-javascript:alert(1)', 'reverse-domain'],
    ['a scheme with +', 'javascript+x:', 'reverse-domain'],
    ['a one-letter scheme', 'a:b', 'reverse-domain'],
    ['an unknown scheme without a dot', 'myapp://callback', 'reverse-domain'],
    ['markup in the path', 'my.app://cb/"><script>alert(5)</script>', 'URI grammar'],
    ['a space', 'https://app.example.test/c b', 'URI grammar'],
    ['a bad percent-encoding', 'https://app.example.test/%zz', 'URI grammar'],
    ['a non-ASCII character', 'https://app.example.test/caf\u00e9', 'URI grammar'],
    ['http on a public host', 'http://app.example.test/cb', 'plain http'],
    ['credentials', 'https://user:pw@app.example.test/cb', 'credentials'],
  ])('When a public client registers %s, then 400 invalid_redirect_uri naming why and nothing is stored', async (_label, uri, reason) => {
    const before = await t.db.prisma.oAuthClient.count();
    const res = await registerPublic(uri);
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_redirect_uri' });
    expect(res.body.error_description).toContain(reason);
    expect(await t.db.prisma.oAuthClient.count()).toBe(before);
  });

  it('When a confidential client registers a reverse-domain scheme, then 400 invalid_redirect_uri: a native app cannot keep a secret', async () => {
    const res = await request(t.app).post('/register').send({ redirect_uris: ['com.example.app:/cb'] });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_redirect_uri' });
    expect(res.body.error_description).toContain('public client');
  });

  it('When one of several redirect URIs is refused, then the registration is refused', async () => {
    const res = await request(t.app).post('/register').send({ redirect_uris: ['cursor://anysphere.cursor-mcp/oauth/callback', 'feed:x'], token_endpoint_auth_method: 'none' });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_redirect_uri' });
  });
});

describe('a client registered under the earlier rule', () => {
  it('When its stored redirect URI is refused now (feed:), then /authorize answers 400 and never redirects there; its good URI still works', async () => {
    const id = randomUUID();
    const bad = 'feed:javascript:alert(1)';
    const good = 'cursor://anysphere.cursor-mcp/oauth/callback';
    await t.db.prisma.oAuthClient.create({
      data: { id, name: 'Old', redirectUris: [bad, good], metadata: { redirect_uris: [bad, good], token_endpoint_auth_method: 'none' }, secretHash: null, createdAt: new Date() },
    });
    const go = (redirect_uri: string) => request(t.app).get(authorizeQuery({ response_type: 'code', client_id: id, redirect_uri, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' }));
    const refused = await go(bad);
    expect({ status: refused.status, location: refused.headers.location }).toEqual({ status: 400, location: undefined });
    const served = await go(good);
    expect(served.status).toBe(302);
    expect(String(served.headers.location)).not.toContain('feed:');
  });
});
