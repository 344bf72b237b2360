/**
 * The conversation view in a real browser (headless Chromium, issue 61, items 3 and 4): a reply a
 * person sent from the WhatsApp Business app shows with its author and leaves the conversation
 * held by a person; the owner passes the thread to another app, sees who holds it, takes it back.
 * Every control is labelled and no request leaves the service.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, browserTestApp, signedInPage, unlabelled, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';

describeWithBrowser(describe)('the Business app and thread control in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => ({ t, browser } = app));

  it('When a person answered from the Business app and the owner passes and takes back the thread, then the page shows the echo’s author and who holds the thread', async () => {
    const project = await t.admin.project('Shared number shop');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const pnid = channel.phoneNumberId;
    const sim = request(t.sim!.url);
    const phone = '14155550901';
    expect((await sim.post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, name: 'Ana', text: 'Is the blue one in stock?' })).status).toBe(200);
    expect((await sim.post(`/_sim/phone-numbers/${pnid}/echoes`).send({ to: phone, text: 'Yes, I put one aside for you.' })).body.delivered).toBe(true);
    const { rows } = await t.db.pool.query<{ id: string }>('SELECT v.id::text FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = $2', [project.id, phone]);

    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedInPage(t, context, project.id, 'coex.owner@example.com');
    const { foreign } = watchPage(page, t.baseUrl!);
    const url = `${t.baseUrl}/dashboard/projects/${project.id}/conversations/${rows[0].id}`;
    await page.goto(url);
    const echo = page.locator('li.bubble[data-author="business_app"]');
    expect(await echo.locator('.author').textContent()).toBe('WhatsApp Business app');
    expect(await echo.locator('.message-text').textContent()).toBe('Yes, I put one aside for you.');
    expect(await page.textContent('#conversation-state')).toContain('handover');
    expect(await page.textContent('#conversation-thread')).toBe('this app');
    expect(await unlabelled(page)).toEqual([]);

    await page.getByLabel('Pass to app (its id)').fill('7700112233');
    await page.getByRole('button', { name: 'Pass the thread' }).click();
    await page.waitForURL('**?done=thread_pass');
    expect(await page.textContent('#conversation-thread')).toContain('app 7700112233');
    expect((await sim.get(`/_sim/phone-numbers/${pnid}/thread-holders`)).body.data).toEqual([{ wa_id: phone, app_id: '7700112233' }]);

    await page.getByRole('button', { name: 'Take the thread back' }).click();
    await page.waitForURL('**?done=thread_take');
    expect(await page.textContent('#conversation-thread')).toBe('this app');
    expect((await sim.get(`/_sim/phone-numbers/${pnid}/thread-holders`)).body.data).toEqual([]);
    const audit = await t.db.pool.query(`SELECT after FROM dashboard_audit WHERE project_id = $1 AND action = 'conversation.thread_control' ORDER BY id`, [project.id]);
    expect(audit.rows.map((r) => r.after)).toEqual([{ action: 'pass', holder: '7700112233' }, { action: 'take', holder: null }]);
    expect(foreign).toEqual([]);
    await context.close();
  }, 60_000);
});
