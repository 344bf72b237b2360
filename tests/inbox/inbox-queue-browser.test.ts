/**
 * The inbox's queue, media and stale forms in a real browser (headless Chromium, issue 68): an
 * owner and a colleague, each in a browser of their own. The waiting customers come first with
 * their wait (the one the bot handed over, the one whose photo of a broken box the bot answered
 * with its menu); the answered one and a campaign-only one are not in the default view; the photo
 * is seen as a thumbnail fetched from the service; a label saved from a stale page keeps the
 * colleague's label, and a stale assignment is refused in words; a resolved conversation leaves the
 * queue. Every control labelled, 375 px wide, no request leaves the service.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { Browser, Page } from 'playwright-core';
import { describeWithBrowser, browserTestApp, signedInPage, unlabelled, fitsWidth, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';

describeWithBrowser(describe)('the inbox queue in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => ({ t, browser } = app));

  it('When two people work the inbox, then the waiting customers come first with their wait, the photo is seen, a stale label merges, a stale assignment is refused and a resolved conversation leaves the queue', async () => {
    const project = await t.admin.project('Box shop');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const pnid = channel.phoneNumberId;
    const key = (await t.admin.key(project.id, ['conversations:read', 'conversations:write', 'messages:send'])).secret;
    const conversationOf = async (phone: string) => Number((await t.db.pool.query<{ id: string }>(
      'SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2', [project.id, phone])).rows[0].id);
    // The bot's messages, recorded as the bot runtime records them (its send reference): no deployed bot needed here.
    const botSays = async (phone: string, text: string) => t.db.pool.query(
      `INSERT INTO messages (project_id, conversation_id, wamid, send_ref, direction, type, content, status, sent_at, status_at)
       VALUES ($1, $2, $3, $3, 'outbound', 'text', $4, 'delivered', $5, $5)`,
      [project.id, await conversationOf(phone), `snd_bot${phone}${Date.now()}`, JSON.stringify({ type: 'text', content: text }), t.clock.now()]);

    await inbound(t, pnid, '14155550951', { type: 'image', image: { caption: 'The box arrived broken' } }, { name: 'Ana Ortiz' });
    await botSays('14155550951', 'Menu: 1 orders, 2 opening hours');
    t.clock.advance(60_000);
    await inbound(t, pnid, '14155550952', 'I want to talk to a human', { name: 'Ben Brown' });
    await botSays('14155550952', 'A colleague will answer you shortly.');
    await inbound(t, pnid, '14155550953', 'Do you deliver?', { name: 'Cy Cole' });
    expect((await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550953', content: 'Yes, daily.' })).status).toBe(200);
    t.clock.advance(5 * 60_000);

    const run = Math.random().toString(36).slice(2, 8);
    const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const ownerEmail = `queue.owner.${run}@example.com`;
    const owner = await signedInPage(t, ownerContext, project.id, ownerEmail);
    const colleagueEmail = `queue.colleague.${run}@example.com`;
    const colleagueContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const colleague = await signedInPage(t, colleagueContext, project.id, colleagueEmail, 'member');
    const watched = [watchPage(owner, t.baseUrl!), watchPage(colleague, t.baseUrl!)];
    const base = `${t.baseUrl}/dashboard/projects/${project.id}`;
    const listed = async (page: Page) => (await page.locator('#conversations tbody tr a').allTextContents()).sort();

    // The default view: who waits, with the wait.
    await owner.goto(`${base}/conversations`);
    expect(await unlabelled(owner)).toEqual([]);
    expect(await listed(owner)).toEqual(['Ana Ortiz', 'Ben Brown']);
    expect(await owner.locator('tr', { hasText: 'Ana Ortiz' }).locator('[data-wait]').textContent()).toBe('waiting 6 min');
    expect(await owner.locator('tr', { hasText: 'Ben Brown' }).locator('[data-wait]').textContent()).toBe('waiting 5 min');

    // Ana's photo, seen in the chat, from the service.
    await owner.getByRole('link', { name: 'Ana Ortiz' }).click();
    await owner.waitForURL('**/conversations/*');
    const anaUrl = owner.url().split('?')[0];
    const photo = owner.getByRole('img', { name: 'Photo from Customer (opens the full size)' });
    await photo.waitFor();
    // The element comes before its bytes: wait for the image's load (or error) before judging it.
    await photo.evaluate((img: HTMLImageElement) => img.complete || new Promise((done) => {
      img.addEventListener('load', done, { once: true });
      img.addEventListener('error', done, { once: true });
    }));
    expect(await photo.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true);
    expect(await photo.getAttribute('src')).toMatch(new RegExp(`^/dashboard/projects/${project.id}/conversations/\\d+/media/\\d+$`));
    expect(await owner.textContent('#messages')).toContain('The box arrived broken');

    // Both have Ana open; the colleague labels and takes her, then the owner saves from the page drawn before.
    await colleague.goto(anaUrl);
    await owner.getByLabel('Labels (comma-separated)').fill('refund');
    await colleague.getByLabel('Labels (comma-separated)').fill('vip');
    await colleague.getByRole('button', { name: 'Save labels' }).click();
    await colleague.waitForURL('**done=labels_saved');
    await colleague.getByRole('button', { name: 'Assign to me' }).click();
    await colleague.waitForURL('**done=assigned');
    await owner.getByRole('button', { name: 'Save labels' }).click();
    await owner.waitForURL('**done=labels_merged');
    expect(await owner.textContent('#conversation-labels')).toBe('refund, vip');
    expect(await owner.getByRole('status').first().textContent()).toContain('both are kept');

    // The colleague's page shows them as assignee; meanwhile the owner resolves Ana and unassigns her.
    await colleague.goto(anaUrl);
    await owner.getByRole('button', { name: 'Resolve' }).click();
    await owner.waitForURL('**done=resolved');
    await owner.getByLabel('Assigned to', { exact: true }).selectOption('');
    await owner.getByRole('button', { name: 'Save assignment' }).click();
    await owner.waitForURL('**done=unassigned');
    // The colleague hands Ana to the owner from the page drawn before: refused, with the current value.
    await colleague.getByLabel('Assigned to', { exact: true }).selectOption({ label: ownerEmail });
    await colleague.getByRole('button', { name: 'Save assignment' }).click();
    const refusal = colleague.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain(`Not saved: someone changed the assignment while your page was open. It is now nobody (your page showed ${colleagueEmail}).`);
    expect(await colleague.textContent('#conversation-assignee')).toBe('nobody');

    // Resolved, Ana left the queue; Ben still waits.
    await owner.goto(`${base}/conversations`);
    expect(await listed(owner)).toEqual(['Ben Brown']);
    await owner.goto(`${base}/conversations?filter=resolved`);
    expect(await listed(owner)).toEqual(['Ana Ortiz']);

    // A phone's width.
    await owner.setViewportSize({ width: 375, height: 800 });
    for (const url of [`${base}/conversations`, anaUrl]) {
      await owner.goto(url);
      expect({ url, fits: await fitsWidth(owner) }).toEqual({ url, fits: true });
    }
    for (const w of watched) {
      expect(w.dialogs).toEqual([]);
      expect(w.foreign).toEqual([]);
    }
    await colleagueContext.close();
    await ownerContext.close();
  });
});
