/**
 * The OAuth consent in a real browser (headless Chromium), as a person meets it: signed in to the
 * dashboard, they click "Connect" on an agent's site (another site: localhost against the service's
 * 127.0.0.1), so the browser reaches /authorize and the consent page by a cross-site navigation and
 * sends no SameSite=Strict session cookie. The page's Continue leads through the sign-in page (which
 * forwards a signed-in person at once) to the consent form; Approve redirects the browser to the
 * agent's callback (the page's CSP lets the form lead there), and the code it carries gets a token
 * that works on /v1. Asked again by the same agent (a step-up), the page shows what it holds, which the
 * person keeps or drops. (tests/dashboard/agents-browser.test.ts takes the README's screenshot of the page.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import request from 'supertest';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, hasChromium, launchBrowser } from '../support/browser.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { grant, PASSWORD } from '../support/dashboard.js';
import { freePort } from '../support/local.js';
import { pkce } from '../support/oauth.js';

let t: TestApp;
let server: Server;
let agentSite: http.Server;
let base: string;
let agentBase: string;
let browser: Browser;
const callbacks: URL[] = [];

// Only where the suite runs (it is skipped otherwise).
if (hasChromium()) {
  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await startTestApp({ config: { publicBaseUrl: base, oauthRequestsPerMinute: 1000 } });
    server = await new Promise<Server>((resolve) => {
      const s = t.app.listen(port, '127.0.0.1', () => resolve(s));
    });
    // The agent's own site: a page with a Connect link, and the callback that receives the code.
    agentSite = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', agentBase);
      if (url.pathname === '/callback') {
        callbacks.push(url);
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>Connected</h1>');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<a id="connect" href="${url.searchParams.get('go') ?? ''}">Connect</a>`);
    });
    await new Promise<void>((resolve) => agentSite.listen(0, '127.0.0.1', () => resolve()));
    agentBase = `http://localhost:${(agentSite.address() as AddressInfo).port}`;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => agentSite?.close(r));
    await new Promise((r) => server?.close(r));
    await t?.close();
  });
}

describeWithBrowser(describe)('OAuth consent in Chromium', () => {
  it('When a signed-in owner connects an agent from its site, then Continue, Approve and the code reach the agent, and its token works', async () => {
    const p = await t.admin.project('Shop');
    const email = 'browser-consent@example.test';
    const setup = await grant(t, p.id, email, 'owner');
    const redirect = `${agentBase}/callback`;
    const reg = await request(t.app).post('/register').send({ client_name: 'Shop assistant', redirect_uris: [redirect], token_endpoint_auth_method: 'none' });
    expect(reg.status).toBe(201);
    const clientId = reg.body.client_id as string;

    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    // Sign in to the dashboard first (the session cookie is SameSite=Strict, Path=/dashboard).
    await page.goto(`${base}${setup}`);
    await page.fill('#password', PASSWORD);
    await page.fill('#confirm', PASSWORD);
    await Promise.all([page.waitForURL(`${base}/dashboard/projects`), page.click('button[type=submit]')]);

    const { verifier, challenge } = pkce();
    const authorize = `${base}/authorize?${new URLSearchParams({
      response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 'browser-state', resource: `${base}/mcp`, scope: 'conversations:read contacts:read messages:send',
    })}`;
    await page.goto(`${agentBase}/start?go=${encodeURIComponent(authorize)}`);
    await page.click('#connect');
    // The cross-site arrival carried no session cookie: the page offers Continue.
    await page.waitForURL(/\/dashboard\/oauth\/consent\?request=/);
    expect(await page.textContent('main')).toContain('An application asks to connect');
    await page.click('a.button');
    // Signed in already: the sign-in page forwards to the consent form at once.
    await page.waitForSelector('button[value=approve]');
    expect(await page.textContent('main')).toContain('Shop assistant');
    expect(await page.textContent('main')).toContain(new URL(agentBase).host);
    expect(await page.isChecked(`input[name="scope:${p.id}"][value="conversations:read"]`)).toBe(true);
    expect(await page.isChecked(`input[name="scope:${p.id}"][value="messages:send"]`)).toBe(true); // asked for: preselected
    await page.check(`input[name="scope:${p.id}"][value="messages:send"]`);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[value=approve]')]);

    expect(callbacks).toHaveLength(1);
    const code = callbacks[0].searchParams.get('code')!;
    expect(callbacks[0].searchParams.get('state')).toBe('browser-state');
    const tokens = await request(t.app).post('/token').type('form').send(new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, redirect_uri: redirect }).toString());
    expect(tokens.status).toBe(200);
    const pinged = await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${tokens.body.access_token}`);
    expect(pinged.body.data).toEqual({ ok: true, projectId: p.id, scopes: ['conversations:read', 'contacts:read', 'messages:send'] });
    await context.close();
  }, 60_000);

  it('When the same agent asks again for more (a step-up), then the page shows what it holds, ticked and marked, and the person keeps a scope, drops one and adds one', async () => {
    const p = await t.admin.project('Deli');
    const setup = await grant(t, p.id, 'browser-consent-3@example.test', 'owner');
    const redirect = `${agentBase}/callback`;
    const reg = await request(t.app).post('/register').send({ client_name: 'Deli agent', redirect_uris: [redirect], token_endpoint_auth_method: 'none' });
    const clientId = reg.body.client_id as string;
    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}${setup}`);
    await page.fill('#password', PASSWORD);
    await page.fill('#confirm', PASSWORD);
    await Promise.all([page.waitForURL(`${base}/dashboard/projects`), page.click('button[type=submit]')]);
    /** Connect from the agent's site, asking for `scope`; leaves the browser on the consent form. */
    const connect = async (scope: string) => {
      const { verifier, challenge } = pkce();
      const authorize = `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', scope })}`;
      await page.goto(`${agentBase}/start?go=${encodeURIComponent(authorize)}`);
      await page.click('#connect');
      await page.waitForURL(/\/dashboard\/oauth\/consent\?request=/);
      await page.click('a.button');
      await page.waitForSelector('button[value=approve]');
      return verifier;
    };
    const approve = async (verifier: string) => {
      const before = callbacks.length;
      await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[value=approve]')]);
      const tokens = await request(t.app).post('/token').type('form')
        .send(new URLSearchParams({ grant_type: 'authorization_code', code: callbacks[before].searchParams.get('code')!, code_verifier: verifier, client_id: clientId, redirect_uri: redirect }).toString());
      return (await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${tokens.body.access_token}`)).body.data.scopes as string[];
    };
    const box = (scope: string) => `input[name="scope:${p.id}"][value="${scope}"]`;

    // First: reads only.
    let verifier = await connect('conversations:read contacts:read');
    expect(await page.textContent('main')).not.toContain('granted earlier');
    expect(await approve(verifier)).toEqual(['conversations:read', 'contacts:read']);

    // Again, asking for the send: the earlier grant is shown, ticked; the send asked for is preselected.
    verifier = await connect('conversations:read contacts:read messages:send');
    const main = await page.textContent('main');
    expect(main).toContain('already holds access you granted earlier');
    expect(main).toContain('Granted earlier on Deli: conversations:read, contacts:read.');
    expect(await page.isChecked(`input[name="project"][value="${p.id}"]`)).toBe(true);
    expect(await page.isChecked(box('conversations:read'))).toBe(true);
    expect(await page.isChecked(box('contacts:read'))).toBe(true);
    expect(await page.isChecked(box('messages:send'))).toBe(true);
    await page.uncheck(box('contacts:read'));
    await page.check(box('messages:send'));
    expect(await approve(verifier)).toEqual(['conversations:read', 'messages:send']);
    await context.close();
  }, 60_000);
});

describeWithBrowser(describe)('OAuth consent in Chromium', () => {
  it('When a person who is not signed in connects, then they sign in and come back to the consent page; Deny tells the agent access_denied', async () => {
    const p = await t.admin.project('Cafe');
    const email = 'browser-consent-2@example.test';
    const setup = await grant(t, p.id, email, 'owner');
    // The person has a password, but this browser has no session.
    const prep = await browser.newContext();
    const prepPage = await prep.newPage();
    await prepPage.goto(`${base}${setup}`);
    await prepPage.fill('#password', PASSWORD);
    await prepPage.fill('#confirm', PASSWORD);
    await Promise.all([prepPage.waitForURL(`${base}/dashboard/projects`), prepPage.click('button[type=submit]')]);
    await prep.close();

    const redirect = `${agentBase}/callback`;
    const reg = await request(t.app).post('/register').send({ client_name: 'Cafe bot', redirect_uris: [redirect], token_endpoint_auth_method: 'none' });
    const authorize = `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: reg.body.client_id, redirect_uri: redirect, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's2' })}`;
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${agentBase}/start?go=${encodeURIComponent(authorize)}`);
    await page.click('#connect');
    await page.waitForURL(/\/dashboard\/oauth\/consent\?request=/);
    await page.click('a.button');
    await page.waitForSelector('#email');
    await page.fill('#email', email);
    await page.fill('#password', PASSWORD);
    await Promise.all([page.waitForSelector('button[value=deny]'), page.click('button[type=submit]')]);
    expect(page.url()).toMatch(/\/dashboard\/oauth\/consent\?request=/);
    const before = callbacks.length;
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[value=deny]')]);
    const answer = callbacks[before];
    expect(answer.searchParams.get('error')).toBe('access_denied');
    expect(answer.searchParams.get('state')).toBe('s2');
    await context.close();
  }, 60_000);
});
