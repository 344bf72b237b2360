/**
 * The Bot and Scheduled tasks pages in a real browser (headless Chromium, issue 47, items 2 and 5),
 * against the service with its bot runtime: an owner runs a message holding markup through the
 * preview console (what the bot would send, set, emit and log, as text), rolls back to the first
 * deployment (asked first), reads production's file at an error's line, watches a new bot log line
 * arrive without a reload, pauses a schedule and runs another now; a member reads every page
 * without a form that changes something. Every control is labelled, the pages fit a phone's width,
 * no dialog opens but the confirmations, no request leaves the service.
 * Screenshots: docs/ with UPDATE_SCREENSHOTS=1, as the other browser tests.
 */
import { describe, expect, it } from '@jest/globals';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { describeWithBrowser, browserTestApp, fitsWidth, signedInPage, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { BOT_LIMITS, botWithTwoDeployments, HOSTILE, seedBotLines } from '../support/bot-console.js';
import { BotScheduler } from '../../lib/bot/scheduler.js';
import { writeBotLog } from '../../lib/bot/bot-log.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'console-bot-shots-'));
const docs = (name: string) => path.join(shotsDir, name);

/** Form controls without a name a screen reader can say. */
const unlabelled = (page: Page) => page.evaluate(() => Array.from(document.querySelectorAll('input, select, textarea, button'))
  .filter((el) => (el as HTMLInputElement).type !== 'hidden')
  .filter((el) => !(el.getAttribute('aria-label') || (el.id && document.querySelector(`label[for="${el.id}"]`)) || el.closest('label') || (el.tagName === 'BUTTON' && el.textContent!.trim())))
  .map((el) => el.outerHTML.slice(0, 80)));

/** axe-core's serious and critical findings on the page (rule id and the first element). */
async function axeFindings(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
  return page.evaluate(async () => {
    type Result = { id: string; impact: string; nodes: Array<{ target: string[] }> };
    const axe = (window as unknown as { axe: { run(o: unknown): Promise<{ violations: Result[] }> } }).axe;
    const r = await axe.run({ resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} ${v.nodes[0]?.target.join(' ')}`);
  });
}

describeWithBrowser(describe)('Bot and Scheduled tasks in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: BOT_LIMITS }, (app) => ({ t, browser } = app));

  const signedIn = (context: BrowserContext, projectId: string, email: string, role: 'owner' | 'member') => signedInPage(t, context, projectId, email, role);

  it('When an owner previews, rolls back, reads a file at its line, watches the log and runs the schedules, then each works and hostile text stays text; a member reads without forms', async () => {
    const shop = await botWithTwoDeployments(t, 'Corner shop bot');
    await new BotScheduler({ ...t.services.deps, bot: t.bot }).tick();
    await seedBotLines(t, shop.projectId, shop.second);
    const base = `${t.baseUrl}/dashboard/projects/${shop.projectId}`;

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedIn(context, shop.projectId, `bot.owner.${Date.now()}@example.com`, 'owner');
    const { foreign, dialogs } = watchPage(page, t.baseUrl!);

    // The preview console: a message holding markup, what the bot would do, as text.
    await page.goto(`${base}/bot`);
    expect(await unlabelled(page)).toEqual([]);
    await page.getByRole('link', { name: 'Bot', exact: true }).waitFor();
    await page.getByLabel('Message', { exact: true }).fill(HOSTILE);
    await page.getByRole('button', { name: 'Run preview' }).click();
    await page.locator('#preview-result').waitFor();
    expect(await page.textContent('#preview-sends')).toContain(`You wrote: ${HOSTILE}`);
    expect(await page.textContent('#preview-events')).toContain('bot.echoed');
    expect(await page.textContent('#preview-logs')).toContain(`got ${HOSTILE}`);
    expect(await page.textContent('#deployments')).toContain(`First ${HOSTILE}`);
    await page.screenshot({ path: docs('dashboard-bot.png'), fullPage: true });

    // Rollback to the first deployment: asked first, then in production.
    await page.getByRole('button', { name: `Roll back to ${shop.first}` }).click();
    await page.waitForURL('**/bot?done=rolled_back');
    expect(await page.locator('#deployments tbody tr').first().textContent()).toContain(`rollback to ${shop.first}`);
    expect(await page.locator('#deployments tbody tr').first().textContent()).toContain('in production');

    // Production's file at the line an error names, read-only, numbered.
    await page.goto(`${base}/bot/files?tree=production&path=src/bot.ts&line=11#L11`);
    expect(await page.locator('#L11').getAttribute('class')).toBe('hit');
    expect(await page.textContent('#L11')).toContain("throw new Error('no stock feed for ' + text);");
    expect(await page.locator('main textarea, main input:not([type=hidden])').count()).toBe(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: docs('dashboard-bot-file.png') });

    // The bot log: the error links to its line; a new line arrives without a reload.
    await page.goto(`${base}/bot/log`);
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.textContent('#bot-log')).toContain(`no stock feed ${HOSTILE}`);
    await page.evaluate(() => ((window as unknown as { stillHere: boolean }).stillHere = true));
    await writeBotLog(t.services.deps, shop.projectId, { level: 'error', kind: 'error', message: `arrived live ${HOSTILE} at src/bot.ts:11:11` });
    await page.locator('#bot-log tbody tr', { hasText: 'arrived live' }).waitFor({ timeout: 15_000 });
    expect(await page.evaluate(() => (window as unknown as { stillHere?: boolean }).stillHere)).toBe(true);
    expect(await page.locator('#bot-log tbody tr').first().textContent()).toContain(`arrived live ${HOSTILE}`);
    expect(await page.textContent('#live-status')).toContain('1 new line');
    await page.locator('#bot-log tbody tr').first().getByRole('link', { name: 'src/bot.ts line 11' }).click();
    await page.waitForURL('**/bot/files?tree=production&path=src%2Fbot.ts&line=11#L11');
    await page.goto(`${base}/bot/log`);
    await page.screenshot({ path: docs('dashboard-bot-log.png'), fullPage: true });

    // Scheduled tasks: pause one, run the other now (asked first), its outcome on its page.
    await page.goto(`${base}/schedules`);
    expect(await unlabelled(page)).toEqual([]);
    await page.getByRole('button', { name: 'Pause morning' }).click();
    await page.waitForURL('**/schedules?done=schedule_paused');
    expect(await page.textContent('#schedule-morning')).toContain('paused since');
    await page.getByRole('button', { name: 'Run now hourly' }).click();
    await page.waitForURL('**/schedules?done=schedule_run');
    await t.bot!.whenIdle();
    await page.getByRole('link', { name: 'hourly', exact: true }).click();
    expect(await page.textContent('#runs')).toMatch(/manual\s*ok/);
    await page.goto(`${base}/schedules`);
    await page.screenshot({ path: docs('dashboard-schedules.png'), fullPage: true });

    // A phone's width: nothing needs horizontal scrolling; axe-core finds nothing serious at either
    // width (its script is injected, so this context lets it past the pages' CSP).
    const pages = ['bot', 'bot/files?tree=development', 'bot/files?tree=production&path=src/bot.ts', `bot/files?deployment=${shop.first}&path=src/bot.ts`, 'bot/log', 'schedules', 'schedules/hourly'];
    const auditContext = await browser.newContext({ bypassCSP: true });
    const auditor = await signedIn(auditContext, shop.projectId, `bot.auditor.${Date.now()}@example.com`, 'owner');
    for (const width of [1100, 375]) {
      await auditor.setViewportSize({ width, height: 800 });
      for (const p of pages) {
        await auditor.goto(`${base}/${p}`);
        expect({ page: p, width, fits: await fitsWidth(auditor), axe: await axeFindings(auditor) }).toEqual({ page: p, width, fits: true, axe: [] });
      }
    }
    await auditContext.close();

    // A member reads every page without a form that changes something.
    const memberContext = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const member = await signedIn(memberContext, shop.projectId, `bot.member.${Date.now()}@example.com`, 'member');
    for (const p of pages) {
      await member.goto(`${base}/${p}`);
      expect({ page: p, forms: await member.locator('main form[method="post"]').count() }).toEqual({ page: p, forms: 0 });
    }
    await member.goto(`${base}/bot`);
    expect(await member.textContent('main')).toContain('owners and admins run previews and roll back');
    await memberContext.close();

    expect(dialogs).toEqual([expect.stringMatching(/^Put deployment dep_\w+ of .* back in production\?/), 'Run hourly now? It runs once, as a manual run, with the production bot.']);
    expect(foreign).toEqual([]);
    await context.close();
  }, 180_000);
});
