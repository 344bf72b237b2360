/**
 * An agent's consent and disconnect in a real browser (headless Chromium): a registered agent sends
 * the person to /authorize; signed in, they see the consent page (the client's name marked not
 * verified, the host it returns to, their project with reads ticked), tick a write, approve, and the
 * browser lands on the agent's loopback redirect with a code the agent exchanges for a token that
 * works at /mcp. Then the person disconnects it under Agents, and the token stops. Screenshots
 * (docs/dashboard-consent.png, docs/dashboard-agents.png) replace the README's with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { mkdtempSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, launchBrowser } from '../support/browser.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { grant, PASSWORD } from '../support/dashboard.js';
import { pkce, RESOURCE } from '../support/oauth.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'agents-shots-'));

describeWithBrowser(describe)('an agent\'s consent in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  let callback: http.Server;
  let redirectUri: string;
  const landed: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
    browser = await launchBrowser();
    // The agent's loopback redirect (RFC 8252), as a desktop client would open.
    callback = http.createServer((req, res) => {
      // Only the redirect itself: Chromium also asks this host for /favicon.ico.
      if (req.url?.startsWith('/callback')) landed.push(req.url);
      res.end('You can close this window.');
    });
    await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
    redirectUri = `http://127.0.0.1:${(callback.address() as { port: number }).port}/callback`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => callback?.close(r));
    await t?.close();
  });

  it('When the person approves in the browser, then the agent gets a working token; when they disconnect it, the token stops', async () => {
    const project = await t.admin.project('Corner Bakery');
    const owner = 'owner.bakery@example.com';
    const setup = (await grant(t, project.id, owner))!;
    const registered = await request(t.app).post('/register').send({ client_name: 'Desk Assistant', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    expect(registered.status).toBe(201);
    const clientId = registered.body.client_id as string;
    const { verifier, challenge } = pkce();

    const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
    const page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(t.baseUrl + setup);
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.waitForURL('**/dashboard/projects');

    const query = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: 'S256', state: 'desk-1', resource: RESOURCE });
    await page.goto(`${t.baseUrl}/authorize?${query}`);
    await page.waitForURL('**/dashboard/oauth/consent**');
    const main = (await page.textContent('main'))!;
    expect(main).toContain('Desk Assistant');
    expect(main).toContain('not verified');
    expect(main).toContain(new URL(redirectUri).host);
    expect(main).toContain('Corner Bakery');
    // Reads preselected, writes opt-in.
    expect(await page.getByLabel('conversations:read').isChecked()).toBe(true);
    expect(await page.getByLabel('messages:send').isChecked()).toBe(false);
    await page.getByLabel('messages:send').check();
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-consent.png'), fullPage: true });
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${redirectUri}**`);
    const back = new URL(landed.at(-1)!, redirectUri);
    expect(back.searchParams.get('state')).toBe('desk-1');

    const token = await request(t.app).post('/token').type('form')
      .send(new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, code_verifier: verifier, client_id: clientId, redirect_uri: redirectUri, resource: RESOURCE }).toString());
    expect(token.status).toBe(200);
    const listTools = () => request(t.app).post('/mcp').set('Authorization', `Bearer ${token.body.access_token}`).set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const listed = await listTools();
    expect(listed.status).toBe(200);
    expect(listed.body.result.tools.map((x: { name: string }) => x.name)).toContain('sendMessage');

    await page.goto(`${t.baseUrl}/dashboard/agents`);
    expect(await page.textContent('main')).toContain('Desk Assistant');
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-agents.png'), fullPage: true });
    await page.getByRole('button', { name: 'Disconnect Desk Assistant' }).click();
    await page.waitForLoadState('load');
    const refused = await listTools();
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_token');
    await context.close();
  });
});
