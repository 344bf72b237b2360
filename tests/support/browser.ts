/**
 * A real headless Chromium for end-to-end page tests: Debian's `chromium` package driven by
 * playwright-core (no browser download). `.ci/run` installs the package; on a machine without it
 * `browserOrSkip()` says so and the page tests skip, so `npm test` still passes on bare Node.js.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from '@jest/globals';
import { startTestApp, type TestApp, type TestAppOptions } from './app.js';
import { grant, PASSWORD } from './dashboard.js';

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** True when a Chromium binary is installed where the page tests look for it. */
export function hasChromium(): boolean {
  return existsSync(chromiumPath);
}

/**
 * Launches headless Chromium with the flags this closed network needs (no background networking,
 * no component updates: otherwise it keeps trying to reach Google's hosts).
 */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** `describe` when Chromium is installed, else `describe.skip` with a line saying why. */
export function describeWithBrowser(describe: { (name: string, fn: () => void): void; skip: (name: string, fn: () => void) => void }) {
  if (hasChromium()) return describe;
  console.warn(`Chromium not found at ${chromiumPath}: page tests skipped (apt-get install chromium, or set CHROMIUM_PATH)`);
  return describe.skip;
}

/**
 * A new page of `context` signed in as `email` with `role` in the project: the setup link from the
 * operator API, a password chosen on its page, landing on the projects list.
 */
export async function signedInPage(t: TestApp, context: BrowserContext, projectId: string, email: string, role: 'owner' | 'admin' | 'member' = 'owner'): Promise<Page> {
  const page = await context.newPage();
  const setup = await grant(t, projectId, email, role);
  if (!setup) throw new Error(`${email} was set up already: give each browser test's people their own address`);
  await page.goto(t.baseUrl + setup);
  await page.getByLabel('New password').fill(PASSWORD);
  await page.getByLabel('Repeat the password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL('**/dashboard/projects');
  return page;
}

/** The page's form controls that have no accessible name (label, aria-label, or a button's text). */
export async function unlabelled(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    for (const el of Array.from(document.querySelectorAll('input, select, textarea, button'))) {
      if ((el as HTMLInputElement).type === 'hidden') continue;
      const id = el.getAttribute('id');
      const named = el.getAttribute('aria-label') || (id && document.querySelector(`label[for="${id}"]`)) || el.closest('label') || (el.tagName === 'BUTTON' && el.textContent!.trim());
      if (!named) out.push(el.outerHTML.slice(0, 80));
    }
    return out;
  });
}

/** The page fits the viewport's width: no sideways scroll. */
export const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

/**
 * What a page does beside its own service: every request to another origin (a page must load
 * nothing from outside) and every dialog's message (each accepted, so a confirmation proceeds).
 */
export function watchPage(page: Page, baseUrl: string): { foreign: string[]; dialogs: string[] } {
  const foreign: string[] = [];
  const dialogs: string[] = [];
  page.on('request', (r) => {
    if (!r.url().startsWith(baseUrl)) foreign.push(r.url());
  });
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.accept();
  });
  return { foreign, dialogs };
}

/**
 * The set-up the page tests share: the file's app and one Chromium, started before its tests and
 * closed after them (`beforeClose` first, with the app). `onStart` receives them once started; or
 * read `t` and `browser` of the answer inside a test or hook.
 */
export function browserTestApp(
  options: TestAppOptions & { beforeClose?: (t: TestApp) => Promise<unknown> } = {},
  onStart?: (app: { t: TestApp; browser: Browser }) => void,
): { readonly t: TestApp; readonly browser: Browser } {
  const { beforeClose, ...appOptions } = options;
  let t: TestApp | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    t = await startTestApp(appOptions);
    browser = await launchBrowser();
    onStart?.({ t, browser });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (t) await beforeClose?.(t);
    await t?.close();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('browserTestApp: started in beforeAll; use it inside a test or hook');
    return v;
  };
  return {
    get t() { return started(t); },
    get browser() { return started(browser); },
  };
}
