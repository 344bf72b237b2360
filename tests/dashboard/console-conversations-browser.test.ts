/**
 * Contacts and a human take-over in a real browser (headless Chromium, issue 47, items 9 and 10),
 * against the service and the simulated channel: an owner finds a username customer by username and
 * BSUID (no "+null"), filters conversations that need a reply, reads both directions' texts, replies
 * (the same form sent again: one message), takes the conversation over, sees the customer's next
 * message arrive without a reload, and, once the window has closed, sends an approved template with
 * its variables; a member reads without forms and a member's POST sends nothing. Hostile names,
 * usernames and messages stay text (no dialog), every control is labelled, the pages fit 375 px and
 * no request leaves the service. Screenshots: docs/ with UPDATE_SCREENSHOTS=1.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { describeWithBrowser, browserTestApp, signedInPage, unlabelled, fitsWidth, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { template } from '../support/broadcasts.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'conversation-shots-'));
const docs = (name: string) => path.join(shotsDir, name);
const HOSTILE = '<img src=x onerror=alert(1)>';

describeWithBrowser(describe)('conversations in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => ({ t, browser } = app));

  it('When an owner finds a customer, replies, takes over and follows the conversation live, then each send happens once through the send path, hostile text stays text, and a member reads without forms', async () => {
    const project = await t.admin.project('Corner shop');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const pnid = channel.phoneNumberId;
    const sim = request(t.sim!.url);
    const sentTo = async (to: string) => ((await sim.get(`/_sim/messages?phone_number_id=${pnid}`)).body.data as Array<{ to?: string; payload: any }>)
      .filter((m) => JSON.stringify(m).includes(to)).map((m) => m.payload.text?.body ?? `template ${m.payload.template?.name}`);
    await template(t, project.id, 'order_update', 'Hi {{1}}, your order {{2}} is ready for pickup.', 'UTILITY');

    // Customers: a phone customer, and a username customer WhatsApp gives no phone for.
    await inbound(t, pnid, '14155550701', 'Do you open on Sunday?', { name: 'Ana Ortiz' });
    const user = (await sim.post('/_sim/users').send({ phone_number_id: pnid, username: 'bo.bakes', name: `Bo ${HOSTILE}` }).expect(201)).body;
    await inbound(t, pnid, undefined, { user_id: user.user_id, text: `Is my cake ready? ${HOSTILE}` }, { name: null });
    await inbound(t, pnid, '14155550703', 'Thanks!', { name: 'Cy' });
    // Cy was answered through the API: that conversation no longer needs a reply.
    const key = (await t.admin.key(project.id, ['messages:send'])).secret;
    expect((await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550703', content: 'You are welcome!' })).status).toBe(200);
    const bsuid = user.user_id as string;

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedInPage(t, context, project.id, 'shop.owner@example.com');
    const { foreign, dialogs } = watchPage(page, t.baseUrl!);
    const base = `${t.baseUrl}/dashboard/projects/${project.id}`;

    // Contacts: the username customer by username and by BSUID; no "+null" anywhere.
    await page.goto(`${base}/contacts`);
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.textContent('#contacts')).not.toContain('+null');
    await page.getByLabel('Search by name, username, BSUID or phone').fill('@bo.ba');
    await page.getByRole('button', { name: 'Search contacts' }).click();
    await page.waitForURL('**/contacts?q=*');
    expect(await page.locator('#contacts tbody tr').count()).toBe(1);
    const row = await page.textContent('#contacts tbody tr');
    expect(row).toContain('@bo.bakes');
    expect(row).toContain(bsuid);
    expect(row).toContain(`Bo ${HOSTILE}`);
    await page.getByLabel('Search by name, username, BSUID or phone').fill(bsuid);
    await page.getByRole('button', { name: 'Search contacts' }).click();
    await page.waitForURL('**/contacts?q=*');
    expect(await page.textContent('#contacts tbody tr')).toContain('@bo.bakes');
    await page.goto(`${base}/contacts`);
    await page.screenshot({ path: docs('dashboard-contacts.png'), fullPage: true });

    // Conversations: all of them, then the ones that need a reply (the default view); open Ana's.
    await page.goto(`${base}/conversations?filter=all`);
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.locator('#conversations tbody tr').count()).toBe(3);
    await page.getByLabel('Show').selectOption('needs_reply');
    await page.getByRole('button', { name: 'Search conversations' }).click();
    await page.waitForURL('**/conversations?*filter=needs_reply*');
    expect(await page.locator('#conversations tbody tr').count()).toBe(2);
    expect(await page.textContent('#conversations')).not.toContain('Cy');
    await page.getByRole('link', { name: 'Ana Ortiz' }).click();
    await page.waitForURL('**/conversations/*');
    const conversationUrl = page.url();
    expect(await unlabelled(page)).toEqual([]);
    expect(await page.textContent('#messages')).toContain('Do you open on Sunday?');

    // A reply inside the window; the same form sent again (a double click, a resubmission) is one message.
    await page.getByLabel('Message', { exact: true }).fill('Yes, 10:00 to 14:00 <b>on Sundays</b>.');
    const form = page.locator('form', { has: page.getByRole('button', { name: 'Send reply' }) });
    const action = (await form.getAttribute('action'))!;
    const fields = await form.evaluate((f) => Object.fromEntries(new FormData(f as HTMLFormElement)) as Record<string, string>);
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.waitForURL('**?done=reply_sent');
    // The chat runs oldest to newest (issue 60): the reply is the last bubble, named by the person.
    expect(await page.textContent('#messages li:last-child')).toContain('Yes, 10:00 to 14:00 <b>on Sundays</b>.');
    expect(await page.textContent('#messages li:last-child .author')).toBe('shop.owner@example.com');
    const again = await context.request.post(t.baseUrl + action, { form: fields, maxRedirects: 0 });
    expect([again.status(), again.headers().location]).toEqual([303, expect.stringContaining('done=reply_sent')]);
    expect(await sentTo('14155550701')).toEqual(['Yes, 10:00 to 14:00 <b>on Sundays</b>.']);

    // Take over: the state says a person answers; the customer's next message arrives without a reload.
    await page.getByRole('button', { name: 'Take over (the bot stops answering)' }).click();
    await page.waitForURL('**?done=handed_to_human');
    expect(await page.textContent('#conversation-state')).toBe('handover (a person answers)');
    let navigations = 0;
    page.on('framenavigated', (f) => {
      if (f === page.mainFrame()) navigations++;
    });
    await inbound(t, pnid, '14155550701', `And on holidays? ${HOSTILE}`, { name: null });
    await page.locator('#messages li:last-child').filter({ hasText: `And on holidays? ${HOSTILE}` }).waitFor({ timeout: 15_000 });
    expect(navigations).toBe(0);
    await page.screenshot({ path: docs('dashboard-conversation.png'), fullPage: true });

    // The window closes: a text cannot go; an approved template with its variables does.
    await t.db.pool.query(`UPDATE conversations v SET last_inbound_at = last_inbound_at - interval '25 hours' FROM contacts c WHERE c.id = v.contact_id AND c.phone = '14155550701'`);
    await page.goto(conversationUrl);
    expect(await page.locator('#reply-text').count()).toBe(0);
    expect(await page.textContent('main')).toContain('only an approved template may be sent');
    await page.getByLabel('Approved template').selectOption('order_update@en_US');
    await page.getByRole('button', { name: 'Choose template' }).click();
    await page.waitForURL('**template=*');
    expect(await page.textContent('#template-body')).toBe('Hi {{1}}, your order {{2}} is ready for pickup.');
    expect(await unlabelled(page)).toEqual([]);
    await page.getByLabel('Variable {{1}}').fill('Ana');
    await page.getByLabel('Variable {{2}}').fill('#1042');
    await page.getByRole('button', { name: 'Send template order_update' }).click();
    await page.waitForURL('**?done=reply_sent');
    expect(await sentTo('14155550701')).toEqual(['Yes, 10:00 to 14:00 <b>on Sundays</b>.', 'template order_update']);
    await page.getByRole('button', { name: 'Give back to the bot' }).click();
    await page.waitForURL('**?done=handed_to_bot');
    expect(await page.textContent('#conversation-state')).toBe('unstructured');

    // The username customer's conversation: username and BSUID, no phone, hostile text as text.
    await page.goto(`${base}/conversations?q=${encodeURIComponent('bo.bakes')}`);
    await page.locator('#conversations a').first().click();
    await page.waitForURL('**/conversations/*');
    expect(await page.textContent('dl.facts')).toContain('@bo.bakes');
    expect(await page.textContent('dl.facts')).toContain(bsuid);
    expect(await page.textContent('dl.facts')).not.toContain('Phone');
    expect(await page.textContent('#messages')).toContain(`Is my cake ready? ${HOSTILE}`);

    // A phone's width.
    await page.setViewportSize({ width: 375, height: 800 });
    for (const p of ['contacts', 'conversations', conversationUrl.slice(base.length + 1)]) {
      await page.goto(`${base}/${p}`);
      expect({ page: p, fits: await fitsWidth(page) }).toEqual({ page: p, fits: true });
    }

    // A member reads the conversation without the reply and hand-over forms (the team's forms are
    // everyone's: issue 60); a reply posted anyway is refused and sends nothing.
    const memberContext = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const member = await signedInPage(t, memberContext, project.id, 'shop.member@example.com', 'member');
    await member.goto(conversationUrl);
    expect(await member.locator('main form[action$="/reply"], main form[action$="/handover"]').count()).toBe(0);
    expect(await member.textContent('#messages')).toContain('Do you open on Sunday?');
    const csrf = (await member.locator('header input[name="_csrf"]').getAttribute('value'))!;
    const refused = await memberContext.request.post(t.baseUrl + action, { form: { ...fields, _csrf: csrf, _once: 'b'.repeat(32), text: 'from a member' }, maxRedirects: 0 });
    expect(refused.status()).toBe(403);
    expect(await sentTo('14155550701')).toHaveLength(2);
    await memberContext.close();

    expect(dialogs).toEqual([]);
    expect(foreign).toEqual([]);
    await context.close();
  }, 120_000);
});
