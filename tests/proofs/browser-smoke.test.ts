/** The page tests' browser starts here: a page served on localhost is rendered and its text read. */
import { describe, expect, it } from '@jest/globals';
import http from 'node:http';
import { describeWithBrowser, launchBrowser } from '../support/browser.js';

describeWithBrowser(describe)('headless Chromium', () => {
  it('When a localhost page is opened, then its heading is read back', async () => {
    const server = http.createServer((_req, res) => res.end('<!doctype html><title>t</title><h1>hello &lt;b&gt;</h1>'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      expect(await page.textContent('h1')).toBe('hello <b>');
    } finally {
      await browser.close();
      server.close();
    }
  }, 60_000);
});
