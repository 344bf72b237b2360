/**
 * A WhatsApp group's conversation in a real browser (headless Chromium, issue 61, item 2): a group
 * created through the API and confirmed by WhatsApp, two users joined and one wrote; the
 * dashboard's conversation page shows the group (subject, status, participants) instead of a
 * customer, each message by the participant who wrote it, and the business's replies (through the
 * API and from the page) sent to the group. Every control is labelled and no request leaves the service.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, browserTestApp, signedInPage, unlabelled, watchPage } from './support/browser.js';
import type { TestApp } from './support/app.js';
import { eventually } from './support/eventually.js';

describeWithBrowser(describe)('a group conversation in Chromium', () => {
  const app = browserTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: 0, read: 0 }, templateAutoDecisionMs: null } });
  let t: TestApp;
  let browser: Browser;
  beforeAll(() => {
    ({ t, browser } = app);
  });

  it('When a group is written in and answered, then its page names the group, its participants and who wrote each message', async () => {
    const project = await t.admin.project('Group shop');
    const key = (await t.admin.key(project.id, ['conversations:read', 'conversations:write', 'messages:send'])).secret;
    const api = (method: 'get' | 'post', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
    const sim = request(t.sim!.url);
    const created = await api('post', '/v1/groups').send({ subject: 'Weekend pickups' });
    expect(created.status).toBe(201);
    const g = (await eventually(() => api('get', `/v1/groups/${created.body.data.group.id}`), (r) => r.body.data?.group?.status === 'active', 10_000, 'the group confirmed')).body.data.group;
    expect((await api('get', `/v1/groups/${g.id}/invite-link`)).status).toBe(200);
    const at = (rest: string) => `/_sim/groups/${encodeURIComponent(g.group_id)}/${rest}`;
    expect((await sim.post(at('join')).send({ from: '+5511966660001' })).status).toBe(200);
    expect((await sim.post(at('join')).send({ from: '+5511966660002' })).status).toBe(200);
    expect((await sim.post(at('inbound')).send({ from: '5511966660002', name: 'Bea', text: 'Can I come on Sunday?' })).status).toBe(200);
    expect((await api('post', '/v1/messages').send({ type: 'text', group_id: g.id, content: 'Sunday 10 to 12 works.' })).status).toBe(200);

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedInPage(t, context, project.id, 'groups.owner@example.com');
    const { foreign } = watchPage(page, t.baseUrl!);
    await page.goto(`${t.baseUrl}/dashboard/projects/${project.id}/conversations/${g.conversation_id}`);
    expect(await page.textContent('#contact-title')).toBe('Group: Weekend pickups');
    expect((await page.locator('ul.participants li').allTextContents()).map((s) => s.split(' ')[0])).toEqual(['+5511966660001', '+5511966660002']);
    const inbound = page.locator('li.bubble.inbound');
    expect(await inbound.locator('.author').textContent()).toBe('Bea (+5511966660002)');
    expect(await inbound.locator('.message-text').textContent()).toBe('Can I come on Sunday?');
    expect(await page.locator('li.bubble.outbound .message-text').textContent()).toBe('Sunday 10 to 12 works.');
    expect(await unlabelled(page)).toEqual([]);

    // A person answers from the dashboard: the reply goes to the group.
    await page.getByLabel('Message', { exact: true }).fill('See you on Sunday, Bea.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.waitForURL('**done=reply_sent');
    const toGroup = (await sim.get(`/_sim/messages?limit=1000`)).body.data.filter((m: { to: string }) => m.to === g.group_id).map((m: { payload: { text: { body: string } } }) => m.payload.text.body);
    expect(toGroup).toEqual(['Sunday 10 to 12 works.', 'See you on Sunday, Bea.']);
    expect(foreign).toEqual([]);
    await context.close();
  }, 60_000);
});
