/**
 * Every dashboard page in a real browser at a phone's width (375 px) and a desktop's (issue 47,
 * item 11): axe-core finds no serious or critical violation, the page body never scrolls
 * sideways (a wide table scrolls inside its own container), and every time in the page's words is
 * in the one format with its zone (`2026-11-25 09:30 UTC`). The pages are the dashboard router's
 * GET routes, read from the router itself, so a page added later is covered without editing this
 * file: a route's parameters are filled from the seeded project (or from the links of the pages
 * already visited), and a route no link reaches fails the test by name.
 */
import { describe, expect, it } from '@jest/globals';
import { createRequire } from 'node:module';
import request from 'supertest';
import type { Express } from 'express';
import type { Browser, Page } from 'playwright-core';
import { describeWithBrowser, signedInPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { api, projectWithKey, seedContacts, template } from '../support/broadcasts.js';
import { eventually } from '../support/eventually.js';
import { consoleBrowserApp, asProject, RATE_CARD, seedBotLog, seedDeliveries, seedSpend } from '../support/console.js';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

// Screenshots of the overview, templates and audit pages: docs/ with UPDATE_SCREENSHOTS=1, as the other browser tests.
const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'a11y-shots-'));

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * GET routes that are not pages a person reads: the sign-in flow's pages for people without a
 * session (visited apart), assets, downloads, a conversation's media files (tests/inbox/inbox-media.test.ts) and the live progress's JSON (answered as such).
 */
const NOT_PAGES = [/^\/assets\//, /\/csv$/, /\/progress$/, /\/live$/, /\/events$/, /\/tail$/, /\/download$/, /\/media\/:messageId$/, /^\/oauth\/consent$/, /^\/(login|setup|invite)$/];

interface Layer { route?: { path: string | string[]; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } }

/** The GET paths of the router mounted at /dashboard (its own stack: no copy of the list here). */
function dashboardGetRoutes(app: Express): string[] {
  const root = (app as unknown as { router: { stack: Layer[] } }).router.stack;
  const isDashboard = (l: Layer) => l.handle?.stack?.some((x) => x.route?.path === '/login');
  const router = root.find(isDashboard)!;
  const out: string[] = [];
  for (const l of router.handle!.stack!) {
    if (!l.route?.methods.get) continue;
    for (const p of [l.route.path].flat()) if (!NOT_PAGES.some((re) => re.test(p))) out.push(p);
  }
  return [...new Set(out)];
}

/** A route pattern as a regular expression over a path (each `:param` one segment). */
const patternOf = (route: string) => new RegExp(`^/dashboard${route.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/?#]+')}$`);

interface Finding { url: string; width: number; violations: Array<{ id: string; impact: string; nodes: string[] }>; overflow: boolean; dates: string[] }

async function audit(page: Page, url: string, width: number): Promise<Finding> {
  await page.setViewportSize({ width, height: 800 });
  await page.goto(url);
  await page.addScriptTag({ path: AXE });
  const { violations, rules } = await page.evaluate(async () => {
    type Result = { id: string; impact: string; nodes: Array<{ target: string[] }> };
    const axe = (window as unknown as { axe: { run(o: unknown): Promise<{ violations: Result[]; passes: Result[] }> } }).axe;
    const r = await axe.run({ resultTypes: ['violations'] });
    return { rules: r.violations.length + r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })) };
  });
  // axe ran its rules on the page (a script blocked by the CSP would leave none).
  expect(rules).toBeGreaterThan(10);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth || document.body.scrollWidth > window.innerWidth);
  // Dates in one format with the zone: a time in the page's words (not in stored data, code or a
  // form's value) is `YYYY-MM-DD HH:MM UTC`, never ISO's `T…Z` or a time without its zone.
  const dates = await page.evaluate(() => {
    const main = document.querySelector('main')!.cloneNode(true) as HTMLElement;
    for (const el of Array.from(main.querySelectorAll('pre, code, textarea, table.data, table.code, script'))) el.remove();
    const text = main.textContent ?? '';
    return [...text.matchAll(/\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?(?:\.\d+)?(?!:)(?: UTC)?Z?/g)].map((m) => m[0]).filter((d) => !/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/.test(d));
  });
  return { url: url.replace(/^https?:\/\/[^/]+/, ''), width, violations: violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'), overflow, dates };
}

describeWithBrowser(describe)('every dashboard page: axe-core and a phone’s width', () => {
  let projectId: string;
  let t: TestApp;
  let browser: Browser;
  consoleBrowserApp(() => projectId, (app) => ({ t, browser } = app));

  it('When an owner opens every page of the router at 375 px and 1280 px, then axe-core finds no serious or critical violation, nothing scrolls sideways and every time reads YYYY-MM-DD HH:MM UTC', async () => {
    const { project, key } = await projectWithKey(t, ['broadcasts:read', 'broadcasts:manage', 'contacts:write', 'flows:write', 'conversations:read', 'conversations:write']);
    projectId = project.id;
    await t.admin.call('put', '/admin/rate-card', RATE_CARD);
    await template(t, projectId, 'spring_sale', 'Hello {{1}}, our spring sale starts today', 'MARKETING');
    await seedContacts(t, projectId, [{ phone: '14155550101', name: 'Ana', optedIn: true }, { phone: '14155550102', name: 'Bo', optedIn: true }]);
    const created = await api(t, key).post('/v1/broadcasts', {
      name: 'Spring sale', template_name: 'spring_sale', template_language: 'en_US',
      template_variables: { body: ['{{contact.name|friend}}'] }, audience: { filter: { match: 'all', conditions: [] } },
    });
    expect(created.status).toBe(201);
    await seedDeliveries(t, projectId);
    await seedBotLog(t, projectId);
    await seedSpend(t, projectId);
    // A row for each page with a parameter of its own: a file, a flow, a scheduled task, a group.
    const admin = { Authorization: `Bearer ${t.adminToken}` };
    expect((await request(t.app).put(`/admin/projects/${projectId}/files/hours.txt`).set(admin).set('Content-Type', 'application/octet-stream').send(Buffer.from('Mon-Fri 9-17\n'))).status).toBeLessThan(300);
    const flow = await request(t.app).post('/v1/flows/generate').set('Authorization', `Bearer ${key}`).send({
      name: 'visit_survey', categories: ['SURVEY'],
      description: { screens: [{ title: 'Your visit', fields: [{ name: 'rating', label: 'How was it?', type: 'single_choice', choices: ['Great', 'Poor'], required: true }] }], final_action: { type: 'complete', label: 'Send' } },
    });
    expect(flow.status).toBe(201);
    await t.db.pool.query(`INSERT INTO deployments (id, project_id, status, content_hash, message, created_by, created_at) VALUES ($1, $2, 'active', 'h', 'First bot', 'a11y', now())`, [`dep_a11y_${projectId}`, projectId]);
    await t.db.pool.query(
      `INSERT INTO bot_schedules (project_id, name, cron, time_zone, deployment_id, source, next_run_at, created_at, updated_at) VALUES ($1, 'morning', '0 9 * * *', 'Europe/Berlin', $2, 'src/bot.ts:3', now() + interval '1 hour', now(), now())`,
      [projectId, `dep_a11y_${projectId}`]);
    // A WhatsApp group confirmed by the simulator, asking users' approval: its page, join requests and deletion's confirmation.
    const group = await api(t, key).post('/v1/groups', { subject: 'Weekend pickups', join_approval_mode: 'approval_required' });
    expect(group.status).toBe(201);
    await eventually(() => api(t, key).get(`/v1/groups/${group.body.data.group.id}`), (r) => r.body.data?.group?.status === 'active', 10_000, 'the group confirmed');
    await asProject(t, projectId, 'public', 'CREATE TABLE opening_hours (id serial PRIMARY KEY, weekday int NOT NULL, note text)', "INSERT INTO opening_hours (weekday, note) VALUES (1, 'Monday')");

    const routes = dashboardGetRoutes(t.app);
    expect(routes).toEqual(expect.arrayContaining(['/projects', '/projects/:projectId/broadcasts', '/projects/:projectId/audit']));
    const context = await browser.newContext({ bypassCSP: true });
    const page = await signedInPage(t, context, projectId, 'a11y.owner@example.com');
    const base = `${t.baseUrl}/dashboard`;

    // Visit breadth-first from the project's pages; every same-origin dashboard link found is a
    // candidate for a route with parameters of its own (a broadcast, a table, a conversation …).
    const known: Record<string, string> = { projectId };
    const reached = new Map<string, string>();
    const queue = routes.filter((r) => !/:(?!projectId\b)/.test(r)).map((r) => base + r.replace(/:projectId\b/, encodeURIComponent(known.projectId)));
    const seen = new Set<string>();
    const findings: Finding[] = [];
    while (queue.length) {
      const url = queue.shift()!;
      const path = url.slice(t.baseUrl!.length).split('?')[0];
      const route = routes.find((r) => patternOf(r).test(path));
      if (!route || reached.has(route) || seen.has(path)) continue;
      seen.add(path);
      const response = await page.goto(url).catch(() => null); // a download ends the navigation
      if (!response || response.status() !== 200) continue;
      reached.set(route, path);
      if (!(response.headers()['content-type'] ?? '').includes('text/html')) continue; // JSON, a file: no page to check
      for (const width of [375, 1280]) findings.push(await audit(page, url, width));
      const links = await page.$$eval('a[href^="/dashboard/"]', (as) => as.map((a) => (a as HTMLAnchorElement).href));
      for (const l of links) if (!seen.has(new URL(l).pathname)) queue.push(l.split('#')[0]);
    }

    expect(findings.filter((f) => f.violations.length || f.overflow || f.dates.length)).toEqual([]);
    expect(findings.length).toBeGreaterThanOrEqual(2 * 20);
    // The navigation shows every section of a project that the router has (an owner sees them all).
    await page.goto(`${base}/projects/${projectId}/broadcasts`);
    const tabs = await page.$$eval('nav.tabs a', (as) => as.map((a) => new URL((a as HTMLAnchorElement).href).pathname.split('/')[4]));
    const sections = [...new Set(routes.map((r) => /^\/projects\/:projectId\/([a-z-]+)/.exec(r)?.[1]).filter((x): x is string => !!x))];
    expect(sections.length).toBeGreaterThan(10);
    expect(sections.filter((x) => !tabs.includes(x))).toEqual([]);

    // The overview's figures, a template's text, and the audit trail's changes after an approval.
    await page.setViewportSize({ width: 1100, height: 800 });
    await page.goto(`${base}/projects`);
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-overview.png'), fullPage: true });
    await page.goto(`${base}/projects/${projectId}/templates`);
    expect(await page.textContent('main')).toContain('Hello {{1}}, our spring sale starts today');
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-templates.png'), fullPage: true });
    await page.goto(`${base}/projects/${projectId}/broadcasts/${created.body.data.broadcast.id}/approve`);
    await page.getByRole('button', { name: 'Approve and send to 2 recipients' }).click();
    await page.waitForURL('**?done=approved');
    await page.goto(`${base}/projects/${projectId}/audit`);
    expect(await page.textContent('#audit')).toMatch(/status: pending_approval\s*→\s*scheduled/);
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-audit.png'), fullPage: true });

    // Every page of the router was reached (a new page without a link from the others, or whose
    // parameter needs a row seeded above, is named here).
    expect(routes.filter((r) => !reached.has(r))).toEqual([]);
    await context.close();
  }, 300_000);
});
