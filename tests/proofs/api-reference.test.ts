/**
 * The API reference page (GET /docs): Redoc over the served contract, from the service itself with
 * no external network. A real headless Chromium opens it and finds every operation of openapi.yaml;
 * any request the page makes off this service fails the test.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { describeWithBrowser, launchBrowser } from '../support/browser.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: true }); // the simulator option makes the app listen on a port
});
afterAll(async () => {
  await t?.close();
});

const operationIds = () => [...t.services.deps.contract.operations.keys()];

describe('GET /docs', () => {
  it('When the page is requested without a credential, then it is HTML that loads the bundle from this service, under a CSP without inline script', async () => {
    const res = await request(t.app).get('/docs').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<redoc spec-url="/v1/openapi.json"');
    expect(res.text).toContain('<script src="/docs/redoc.standalone.js"></script>');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).toContain("img-src 'self' data:");
    const js = await request(t.app).get('/docs/redoc.standalone.js').expect(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(Number(js.headers['content-length'])).toBeGreaterThan(100_000);
  });

  it('When an unknown path under /docs is requested, then the answer is the 404 envelope', async () => {
    const res = await request(t.app).get('/docs/../../package.json').expect(404);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('not_found');
    const other = await request(t.app).get('/docs/redoc.js').expect(404);
    expect(other.body.error.code).toBe('not_found');
  });
});

describeWithBrowser(describe)('the API reference in a browser', () => {
  it('When /docs is opened in headless Chromium, then every operation of openapi.yaml is on the page and nothing is loaded from elsewhere', async () => {
    const browser = await launchBrowser();
    const offsite: string[] = [];
    const errors: string[] = [];
    try {
      const page = await browser.newPage();
      // Redoc's sidebar names a logo on cdn.redoc.ly: the page's CSP (img-src 'self') refuses it, so it never loads.
      page.on('requestfinished', (r) => {
        if (!r.url().startsWith(t.baseUrl!) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) offsite.push(r.url());
      });
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${t.baseUrl}/docs`);
      await page.waitForSelector('[id="operation/ping"]', { state: 'attached', timeout: 60_000 });
      const ids: string[] = await page.$$eval('[id^="operation/"]', (els) => els.map((e) => e.id.slice('operation/'.length)));
      const missing = operationIds().filter((id) => !ids.includes(id));
      expect(missing).toEqual([]);
      expect(operationIds().length).toBeGreaterThan(40);
      expect(await page.title()).toContain('API reference');
      expect(offsite).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
