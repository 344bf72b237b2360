/**
 * The Files and media and Flows pages in a real browser (headless Chromium, issue 47, items 4 and
 * 8): an owner uploads a file with the page's form (the bar moves; the file is listed), sees a
 * wrong type and a cut connection said under the form without leaving the page, uploads again with script turned off
 * (the plain form works), reads media and header samples whose names are markup (no dialog opens),
 * opens a flow (its JSON as text), checks it at the channel and publishes it after the
 * confirmation; a member reads both pages without a form. Every control is labelled, the pages fit
 * a phone's width, no request leaves the service. Screenshots: docs/ with UPDATE_SCREENSHOTS=1.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import request from 'supertest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeWithBrowser, browserTestApp, unlabelled, fitsWidth, signedInPage, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import * as S from '../support/samples.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'console-files-shots-'));
const docs = (name: string) => path.join(shotsDir, name);

describeWithBrowser(describe)('files and flows in Chromium', () => {
  const app = browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  let t: TestApp;
  let browser: Browser;
  let projectId: string;
  beforeAll(() => {
    ({ t, browser } = app);
  });

  const signedIn = (context: BrowserContext, email: string, role: 'owner' | 'member') => signedInPage(t, context, projectId, email, role);

  it('When an owner uploads, is refused a wrong type, and publishes a flow, then each shows on the page, markup stays text, and a member reads without forms', async () => {
    const project = await t.admin.project('Corner shop');
    projectId = project.id;
    const key = (await t.admin.key(projectId, ['media:write', 'templates:manage', 'flows:write'])).secret;
    const auth = { Authorization: `Bearer ${key}` };
    expect((await request(t.app).post('/v1/media').set(auth).attach('file', S.png(2000), { filename: '<img src=x onerror=alert(1)>.png', contentType: 'image/png' })).status).toBe(201);
    expect((await request(t.app).post('/v1/templates/header-sample').set(auth).send({ format: 'IMAGE', data: S.b64(S.png(3000)), filename: 'spring-banner.png', mime: 'image/png' })).status).toBe(201);
    const flow = await request(t.app).post('/v1/flows/generate').set(auth).send({
      name: 'book_table',
      categories: ['APPOINTMENT_BOOKING'],
      description: { screens: [{ title: 'Book a table', fields: [{ name: 'guests', label: '<b>Guests</b>', type: 'number', required: true }, { name: 'day', label: 'Day', type: 'date' }] }] },
    });
    expect(flow.status).toBe(201);

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedIn(context, 'shop.owner@example.com', 'owner');
    const { foreign, dialogs } = watchPage(page, t.baseUrl!);
    const said: string[] = [];
    await page.exposeFunction('recordUploadStatus', (text: string) => void said.push(text));
    const base = `${t.baseUrl}/dashboard/projects/${projectId}`;

    // Files: an upload through the form, its progress read off the status line as it changes.
    await page.goto(`${base}/files`);
    expect(await page.getByRole('link', { name: 'Files and media' }).getAttribute('aria-current')).toBe('page');
    expect(await unlabelled(page)).toEqual([]);
    const watch = () => page.evaluate(() => {
      const status = document.querySelector('.upload-status')!;
      new MutationObserver(() => (window as unknown as { recordUploadStatus(t: string): void }).recordUploadStatus(status.textContent ?? '')).observe(status, { childList: true, characterData: true, subtree: true });
    });
    await watch();
    await page.getByLabel('Name (empty: the file\'s own name)').fill('menu.pdf');
    await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'Menu 2026.pdf', mimeType: 'application/pdf', buffer: S.pdf(3 * 1024 * 1024) });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.waitForURL('**/files?done=file_uploaded');
    expect(said.some((s) => /^\d+% sent$/.test(s))).toBe(true);
    expect(await page.textContent('#files')).toContain('menu.pdf');
    expect(await page.textContent('#files')).toContain('3.0 MiB');

    // A wrong type: the reason under the form, the page not left, nothing listed.
    await watch();
    await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'setup.png', mimeType: 'image/png', buffer: Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01'), Buffer.alloc(4000, 7)]) });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('.upload-status[role="alert"]').waitFor();
    expect(await page.textContent('.upload-status')).toContain('Not uploaded:');
    expect(page.url()).toBe(`${base}/files?done=file_uploaded`);
    expect(await page.locator('#files tbody tr').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Upload' }).isEnabled()).toBe(true);
    // A connection cut during the upload: said under the form; nothing listed.
    await page.route('**/files/upload', (route) => route.abort('connectionreset'));
    await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'late.pdf', mimeType: 'application/pdf', buffer: S.pdf(50_000) });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.locator('.upload-status[role="alert"]', { hasText: 'The upload was interrupted; nothing was stored.' }).waitFor();
    await page.unroute('**/files/upload');
    expect(await page.locator('#files tbody tr').count()).toBe(1);

    // Markup in a media file name is text; the page at rest is the screenshot.
    expect(await page.textContent('#media')).toContain('<img src=x onerror=alert(1)>.png');
    expect(await page.textContent('#samples')).toContain('spring-banner.png');
    await page.goto(`${base}/files`);
    await page.screenshot({ path: docs('dashboard-files.png'), fullPage: true });

    // Flows: the list, the flow's JSON as text, a check at the channel, then publish after the confirmation.
    await page.goto(`${base}/flows`);
    expect(await page.textContent('#flows')).toContain('DRAFT');
    await page.screenshot({ path: docs('dashboard-flows.png'), fullPage: true });
    await page.getByRole('link', { name: 'book_table' }).click();
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.textContent('#flow-json')).toContain('"label": "<b>Guests</b>"');
    await page.getByRole('button', { name: 'Check at the channel' }).click();
    await page.waitForURL('**/flows/book_table?done=flow_checked');
    expect(await page.textContent('#channel-findings')).toContain('None.');
    await page.screenshot({ path: docs('dashboard-flow.png'), fullPage: true });
    await page.getByRole('button', { name: 'Publish version 1' }).click();
    await page.waitForURL('**/flows/book_table?done=flow_published');
    expect(dialogs).toEqual(['Publish version 1 of book_table at Meta? This cannot be undone.']);
    expect(await page.textContent('#flow-facts')).toContain('PUBLISHED');

    // A phone's width: nothing needs horizontal scrolling.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const p of ['files', 'flows', 'flows/book_table']) {
      await page.goto(`${base}/${p}`);
      expect({ page: p, fits: await fitsWidth(page) }).toEqual({ page: p, fits: true });
    }
    expect(foreign).toEqual([]);
    await context.close();

    // Without script the plain form uploads (no progress, same answer).
    const plain = await browser.newContext({ viewport: { width: 1100, height: 900 }, javaScriptEnabled: false });
    const noScript = await signedIn(plain, 'shop.admin@example.com', 'owner');
    await noScript.goto(`${base}/files`);
    await noScript.getByLabel('File', { exact: true }).setInputFiles({ name: 'prices.csv', mimeType: 'text/csv', buffer: Buffer.from('item,price\ncoffee,2.50\n') });
    await noScript.getByRole('button', { name: 'Upload' }).click();
    await noScript.waitForURL('**/files?done=file_uploaded');
    expect(await noScript.textContent('#files')).toContain('prices.csv');
    await plain.close();

    // A member reads both pages, with no form that changes something.
    const memberContext = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const member = await signedIn(memberContext, 'shop.member@example.com', 'member');
    for (const p of ['files', 'flows', 'flows/book_table']) {
      await member.goto(`${base}/${p}`);
      expect(await member.locator('main form[method="post"]').count()).toBe(0);
    }
    expect(await member.textContent('main')).toContain('Your role (member) reads flows');
    await memberContext.close();
  }, 120_000);
});
