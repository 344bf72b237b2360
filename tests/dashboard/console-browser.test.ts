/**
 * The console in a real browser (headless Chromium, issue 47): an owner walks Database (creates a
 * table with the form, adds a row after its dry run, sees a refused DDL's reason), Secrets (saves
 * one: its value is on no page), Logs (a failed delivery's attempts and answer, redelivered) and
 * Billing (the estimate and its SVG chart); hostile text from a table, a receiver, the bot log and
 * a campaign's name stays text (no dialog opens); a member sees the pages without their forms.
 * Every control is labelled, the pages fit a phone's width, no request leaves the service.
 * Screenshots: docs/ with UPDATE_SCREENSHOTS=1, as the other browser tests.
 */
import { describe, expect, it } from '@jest/globals';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeWithBrowser, unlabelled, fitsWidth, signedInPage, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { consoleBrowserApp, HOSTILE, RATE_CARD, seedBotLog, seedDeliveries, seedSpend } from '../support/console.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'console-shots-'));
const docs = (name: string) => path.join(shotsDir, name);

describeWithBrowser(describe)('console in Chromium', () => {
  let projectId: string;
  let t: TestApp;
  let browser: Browser;
  consoleBrowserApp(() => projectId, (app) => ({ t, browser } = app));

  const signedIn = (context: BrowserContext, email: string, role: 'owner' | 'member') => signedInPage(t, context, projectId, email, role);

  it('When an owner walks Database, Secrets, Logs and Billing, then each change shows first and applies once, hostile text stays text, and a member reads without forms', async () => {
    const project = await t.admin.project('Corner shop');
    projectId = project.id;
    await t.admin.call('put', '/admin/rate-card', RATE_CARD);
    const { failed } = await seedDeliveries(t, projectId);
    await seedBotLog(t, projectId);
    await seedSpend(t, projectId);

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedIn(context, 'shop.owner@example.com', 'owner');
    const { foreign, dialogs } = watchPage(page, t.baseUrl!);
    const base = `${t.baseUrl}/dashboard/projects/${projectId}`;

    // Database: a table made with the form, a row typed in, previewed, added.
    await page.goto(`${base}/database`);
    expect(await unlabelled(page)).toEqual([]);
    await page.getByLabel('Table name', { exact: true }).fill('opening_hours');
    await page.getByLabel('Column 2 name').fill('weekday');
    await page.getByLabel('Column 2 type').selectOption('integer');
    await page.getByLabel('Column 2 may be empty').uncheck();
    await page.getByLabel('Column 3 name').fill('opens');
    await page.getByLabel('Column 3 type').selectOption('time');
    await page.getByLabel('Column 4 name').fill('note');
    await page.getByRole('button', { name: 'Create table' }).click();
    await page.waitForURL('**/database/public/opening_hours?done=table_created');
    expect(await unlabelled(page)).toEqual([]);
    await page.getByLabel(/^weekday/).fill('1');
    await page.getByLabel(/^opens/).fill('09:00');
    await page.getByLabel(/^note/).fill(`Monday ${HOSTILE}`);
    await page.getByRole('button', { name: 'Preview the new row' }).click();
    expect(await page.textContent('#dry-run')).toContain('Nothing has changed yet');
    const apply = page.locator('form', { has: page.getByRole('button', { name: 'Add this row' }) });
    const action = (await apply.getAttribute('action'))!;
    const fields = await apply.evaluate((f) => Object.fromEntries(new FormData(f as HTMLFormElement)) as Record<string, string>);
    await page.getByRole('button', { name: 'Add this row' }).click();
    await page.waitForURL('**/opening_hours?done=row_inserted');
    expect(await page.textContent('#rows')).toContain(`Monday ${HOSTILE}`);
    expect(await page.locator('#rows tbody tr').count()).toBe(1);
    // The same form sent again (a double click, a resubmission): one effect, the same answer.
    const again = await context.request.post(t.baseUrl + action, { form: fields, maxRedirects: 0 });
    expect(again.status()).toBe(303);
    expect(again.headers().location).toContain('done=row_inserted');
    await page.reload();
    expect(await page.locator('#rows tbody tr').count()).toBe(1);
    await page.screenshot({ path: docs('dashboard-database.png'), fullPage: true });
    // A DDL the confinement refuses: the reason, the statement kept, nothing run.
    await page.goto(`${base}/database`);
    await page.getByLabel('Statement', { exact: true }).fill('DROP TABLE opening_hours; DROP TABLE opening_hours');
    await page.getByRole('button', { name: 'Run statement' }).click();
    expect(await page.textContent('.error')).toContain('Refused, nothing was run:');
    expect(await page.inputValue('#ddl-sql')).toBe('DROP TABLE opening_hours; DROP TABLE opening_hours');
    expect(await page.textContent('#tables')).toContain('opening_hours');
    await page.screenshot({ path: docs('dashboard-database-ddl.png'), fullPage: true });

    // Secrets: saved, listed by fingerprint, the value on no page.
    await page.goto(`${base}/secrets`);
    expect(await unlabelled(page)).toEqual([]);
    await page.getByLabel('Name', { exact: true }).fill('SHOP_API_TOKEN');
    await page.getByLabel('Value', { exact: true }).fill('tok_never_on_a_page_123');
    await page.getByRole('button', { name: 'Save secret' }).click();
    await page.waitForURL('**/secrets?done=secret_set');
    expect(await page.textContent('#secrets')).toContain('SHOP_API_TOKEN');
    expect(await page.content()).not.toContain('tok_never_on_a_page_123');
    await page.screenshot({ path: docs('dashboard-secrets.png'), fullPage: true });

    // Logs: the failed delivery's attempts with the receiver's answer as text; redelivered.
    await page.goto(`${base}/logs`);
    expect(await unlabelled(page)).toEqual([]);
    const row = page.locator(`#delivery-${failed}`);
    expect(await row.textContent()).toContain('500 · 812 ms');
    expect(await row.textContent()).toContain('{"error":"<script>alert(1)</script>');
    expect(await page.textContent('#bot-log')).toContain('TypeError at src/bot.ts:12:5 <script>');
    await page.screenshot({ path: docs('dashboard-logs.png'), fullPage: true });
    await row.getByRole('button', { name: /^Redeliver/ }).click();
    await page.waitForURL('**/logs?webhook=*&done=redelivered');
    expect(await page.locator(`#delivery-${failed} .status`).textContent()).toContain('pending');

    // Billing: the estimate, the chart drawn by the server, the campaign's name as text.
    await page.goto(`${base}/billing?month=2026-03`);
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.textContent('main')).toContain('Estimate.');
    expect(await page.locator('#spend-by-day svg rect.bar').count()).toBe(31);
    expect(await page.textContent('#by-campaign')).toContain(`Spring ${HOSTILE}`);
    await page.screenshot({ path: docs('dashboard-billing.png'), fullPage: true });

    // A phone's width: nothing needs horizontal scrolling.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const p of ['database', 'database/public/opening_hours', 'secrets', 'logs', 'billing?month=2026-03']) {
      await page.goto(`${base}/${p}`);
      expect({ page: p, fits: await fitsWidth(page) }).toEqual({ page: p, fits: true });
    }

    // A member reads every page without a form that changes something.
    const memberContext = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const member = await signedIn(memberContext, 'shop.member@example.com', 'member');
    for (const p of ['database', 'database/public/opening_hours', 'secrets', 'logs']) {
      await member.goto(`${base}/${p}`);
      expect(await member.locator(`main form[method="post"]`).count()).toBe(0);
    }
    await member.goto(`${base}/database/public/opening_hours`);
    expect(await member.textContent('#rows')).toContain('Monday');
    await memberContext.close();

    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
    await context.close();
  }, 120_000);
});
