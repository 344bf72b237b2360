/**
 * A WhatsApp group's conversation in a real browser (headless Chromium, issue 61, item 2): a group
 * created through the API and confirmed by WhatsApp, two users joined and one wrote; the
 * dashboard's conversation page shows the group (subject, status, participants) instead of a
 * customer, each message by the participant who wrote it, and the business's replies (through the
 * API and from the page) sent to the group. Then the dashboard's own group actions: an owner
 * creates a group on the Groups page, approves and rejects join requests the simulated users make,
 * resets the invite link, changes the subject (refused in words while WhatsApp errs and while the
 * group is suspended), removes a participant and deletes the group after its confirmation page,
 * each audited; a member reads and is refused. Every control is labelled, the pages fit 375 px and
 * no request leaves the service. Screenshot: docs/dashboard-group.png with UPDATE_SCREENSHOTS=1.
 */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { Browser } from 'playwright-core';
import { describeWithBrowser, hasChromium, browserTestApp, fitsWidth, signedInPage, unlabelled, watchPage } from '../support/browser.js';
import type { TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

// Screenshots go to docs/ only when asked (UPDATE_SCREENSHOTS=1): a test run never changes tracked files.
const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'group-shots-'));

const app = browserTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: 0, read: 0 }, templateAutoDecisionMs: null } });
let t: TestApp;
let browser: Browser;

/** The group's row and the simulator's view of it, for waiting on what WhatsApp's notifications change. */
const groupRow = async (projectId: string, id: number) => (await t.db.pool.query<{ status: string; subject: string; participants: string[] }>(
  `SELECT g.status, g.subject, coalesce(array(SELECT p.wa_id FROM group_participants p WHERE p.group_row_id = g.id ORDER BY p.wa_id), '{}') AS participants
     FROM groups g WHERE g.project_id = $1 AND g.id = $2`, [projectId, id])).rows[0];
const simGroup = async (groupId: string) => ((await request(t.sim!.url).get('/_sim/groups')).body.data as Array<{ id: string; invite_link: string; participants: string[]; join_requests: string[]; deleted: boolean; suspended: boolean }>).find((g) => g.id === groupId)!;
const auditOf = async (projectId: string) => (await t.db.pool.query<{ action: string; actor: string }>(`SELECT action, actor FROM dashboard_audit WHERE project_id = $1 AND action LIKE 'group.%' ORDER BY id`, [projectId])).rows;

// Only where the suite runs (it is skipped otherwise).
if (hasChromium()) {
  beforeAll(() => {
    ({ t, browser } = app);
  });
}

describeWithBrowser(describe)('a group conversation in Chromium', () => {
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

describeWithBrowser(describe)('a group conversation in Chromium', () => {
  it('When an owner creates a group on the Groups page and answers its join requests, resets its link, changes and deletes it, then WhatsApp is asked each time, refusals are said in words and every action is audited', async () => {
    const project = await t.admin.project('Group actions shop');
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const sim = request(t.sim!.url);
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await signedInPage(t, context, project.id, 'groups.actions@example.com');
    const { foreign, dialogs } = watchPage(page, t.baseUrl!);
    const base = `${t.baseUrl}/dashboard/projects/${project.id}`;

    // The Groups page is in the project's menu; the form creates a group, by keyboard.
    await page.goto(`${base}/overview`);
    await page.locator('nav.tabs').getByRole('link', { name: 'Groups' }).click();
    await page.waitForURL('**/groups');
    expect(await page.textContent('#no-groups')).toBe('No groups yet.');
    expect(await unlabelled(page)).toEqual([]);
    // The contract's limit holds for the page's form too (the input's maxlength stops a person; a forged form is refused in words).
    const forged = await context.request.post(`${base}/groups`, {
      form: { _csrf: await page.locator('input[name="_csrf"]').first().inputValue(), _once: await page.locator('input[name="_once"]').first().inputValue(), subject: 'x'.repeat(129), join_approval_mode: 'auto_approve' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(400);
    expect(await forged.text()).toContain('Not created: A subject has at most 128 characters; nothing was created.');
    await page.getByLabel('Subject').focus();
    await page.keyboard.type('Sunday <b>pickups</b>');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Ada, Bea and the shop');
    await page.keyboard.press('Tab');
    await page.keyboard.press('ArrowDown'); // A person approves each request to join
    expect(await page.getByLabel('Who joins').inputValue()).toBe('approval_required');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL('**done=group_created');
    const id = Number(/\/groups\/(\d+)\?/.exec(page.url())![1]);
    expect(await page.textContent('h1')).toBe('Group: Sunday <b>pickups</b>'); // text, never markup
    await eventually(() => groupRow(project.id, id), (g) => g?.status === 'active', 10_000, 'the group confirmed by WhatsApp');
    await page.reload();
    expect(await page.textContent('#group-status')).toBe('active');
    expect(await page.textContent('#group-description-text')).toBe('Ada, Bea and the shop');
    const { group_id: groupId } = (await t.db.pool.query<{ group_id: string }>('SELECT group_id FROM groups WHERE id = $1', [id])).rows[0];
    const created = (await sim.get('/_sim/requests?limit=1000')).body.data.filter((r: { method: string; path: string }) => r.method === 'POST' && r.path.endsWith(`/${channel.phoneNumberId}/groups`));
    expect(created.map((r: { body: { subject: string; join_approval_mode: string } }) => [r.body.subject, r.body.join_approval_mode])).toEqual([['Sunday <b>pickups</b>', 'approval_required']]);

    // The invite link WhatsApp gave is shown; two users open it and ask to join.
    const firstLink = await page.textContent('#invite-link');
    expect(firstLink).toBe((await simGroup(groupId)).invite_link);
    const ada = '+5511966660011';
    const bea = '+5511966660012';
    for (const from of [ada, bea]) expect((await sim.post(`/_sim/groups/${encodeURIComponent(groupId)}/join`).send({ from })).body.joined).toBe(false);
    await page.reload();
    expect(await page.locator('#join-requests tbody tr td[data-label="Who asks"]').allTextContents()).toEqual([ada, bea]);
    expect(await unlabelled(page)).toEqual([]);
    await page.screenshot({ path: path.join(shotsDir, 'dashboard-group.png'), fullPage: true });

    // Approve Ada: she joins with WhatsApp's notification. Reject Bea: she does not.
    await page.getByRole('button', { name: `Approve ${ada}` }).click();
    await page.waitForURL('**done=join_approved');
    await eventually(() => groupRow(project.id, id), (g) => g.participants.join() === ada.slice(1), 10_000, 'Ada a participant');
    await page.getByRole('button', { name: `Reject ${bea}` }).click();
    await page.waitForURL('**done=join_rejected');
    expect(await page.textContent('#no-join-requests')).toBe('No open join requests.');
    expect(await simGroup(groupId)).toMatchObject({ participants: [ada.slice(1)], join_requests: [] });
    await page.reload();
    // Each participant by the name the project knows, with the phone (the phone alone when none is known).
    expect((await page.locator('#participants td[data-label="Who"]').allTextContents()).map((who) => who.includes(ada))).toEqual([true]);

    // Reset the invite link (after the page's question): WhatsApp's new link replaces the old.
    await page.getByRole('button', { name: 'Reset the invite link' }).click();
    await page.waitForURL('**done=invite_link_reset');
    expect(dialogs).toEqual(['Reset the invite link of “Sunday <b>pickups</b>”? The current link stops working at once.']);
    const secondLink = await page.textContent('#invite-link');
    expect(secondLink).not.toBe(firstLink);
    expect(secondLink).toBe((await simGroup(groupId)).invite_link);

    // Refusals in words, the typed subject kept: WhatsApp errs, then the group is suspended.
    expect((await sim.post('/_sim/faults').send({ phone_number_id: channel.phoneNumberId, operation: 'other', graph_error: { code: 100, details: 'The group cannot be changed now' } })).status).toBe(201);
    await page.getByLabel('Subject', { exact: true }).fill('Sunday pickups');
    const [erred] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/settings')), page.getByRole('button', { name: 'Save subject and description' }).click()]);
    expect(erred.status()).toBe(502);
    expect(await page.textContent('p.error')).toMatch(/^Not done: The messaging provider rejected the call: .*The group cannot be changed now.* Nothing was changed\. \(upstream_error\)$/);
    expect(await page.getByLabel('Subject', { exact: true }).inputValue()).toBe('Sunday pickups');
    expect((await groupRow(project.id, id)).subject).toBe('Sunday <b>pickups</b>');
    expect((await sim.post(`/_sim/groups/${encodeURIComponent(groupId)}/suspend`).send({ suspended: true })).status).toBe(200);
    await eventually(() => groupRow(project.id, id), (g) => g.status === 'suspended', 10_000, 'the group suspended');
    const [refused] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith('/settings')), page.getByRole('button', { name: 'Save subject and description' }).click()]);
    expect(refused.status()).toBe(409);
    expect(await page.textContent('p.error')).toBe(`Not done: Group ${id} is not active: it is suspended. Nothing was changed. (group_not_active)`);
    expect(await page.textContent('#group-inactive')).toContain('suspended by WhatsApp');
    expect((await sim.post(`/_sim/groups/${encodeURIComponent(groupId)}/suspend`).send({ suspended: false })).status).toBe(200);
    await eventually(() => groupRow(project.id, id), (g) => g.status === 'active', 10_000, 'the suspension lifted');

    // Change the subject, then remove Ada (after the page's question). The refusal was a POST's answer: opened again, not reloaded.
    await page.goto(`${base}/groups/${id}`);
    await page.getByLabel('Subject', { exact: true }).fill('Sunday pickups');
    await page.getByRole('button', { name: 'Save subject and description' }).click();
    await page.waitForURL('**done=group_changed');
    expect(await page.textContent('h1')).toBe('Group: Sunday pickups');
    await page.getByRole('button', { name: `Remove ${ada}` }).click();
    await page.waitForURL('**done=participant_removal');
    await eventually(() => groupRow(project.id, id), (g) => g.participants.length === 0, 10_000, 'Ada removed');

    // The group's conversation links to its page; at a phone's width both pages fit.
    await page.setViewportSize({ width: 375, height: 800 });
    const { conversation_id: conversationId } = (await t.db.pool.query<{ conversation_id: string }>(
      'SELECT cv.id::text AS conversation_id FROM groups g JOIN conversations cv ON cv.contact_id = g.contact_id WHERE g.id = $1', [id])).rows[0];
    await page.goto(`${base}/conversations/${conversationId}`);
    await page.click('#group-page-link');
    await page.waitForURL(`**/groups/${id}`);
    expect(await fitsWidth(page)).toBe(true);
    await page.goto(`${base}/groups`);
    expect(await page.locator('#groups tbody tr td[data-label="Subject"]').allTextContents()).toEqual(['Sunday pickups']);
    expect(await fitsWidth(page)).toBe(true);

    // Delete: the link leads to a confirmation page; going back changes nothing, confirming deletes.
    await page.goto(`${base}/groups/${id}`);
    await page.getByRole('link', { name: 'Delete this group…' }).click();
    await page.waitForURL(`**/groups/${id}/delete`);
    expect(await page.textContent('h1')).toBe('Delete the group: Sunday pickups');
    expect(await fitsWidth(page)).toBe(true);
    expect(await unlabelled(page)).toEqual([]);
    await page.getByRole('link', { name: 'Back without deleting' }).click();
    await page.waitForURL(`**/groups/${id}`);
    expect((await groupRow(project.id, id)).status).toBe('active');
    await page.getByRole('link', { name: 'Delete this group…' }).click();
    await page.getByRole('button', { name: 'Delete the group' }).click();
    await page.waitForURL('**done=group_deleted');
    expect(await page.textContent('#group-status')).toBe('deleted');
    expect((await simGroup(groupId)).deleted).toBe(true);
    expect(await page.getByRole('button', { name: 'Reset the invite link' }).count()).toBe(0);

    expect(await auditOf(project.id)).toEqual([
      'group.create', 'group.join_request_approved', 'group.join_request_rejected', 'group.invite_link_reset', 'group.settings', 'group.participant_removed', 'group.delete',
    ].map((action) => ({ action, actor: 'groups.actions@example.com' })));
    expect(foreign).toEqual([]);
    await context.close();
  }, 120_000);
});

describeWithBrowser(describe)('a group conversation in Chromium', () => {
  it('When a member opens a group, then it reads the group without its actions, and a forged action is refused in words', async () => {
    const project = await t.admin.project('Group readers shop');
    const key = (await t.admin.key(project.id, ['conversations:read', 'conversations:write'])).secret;
    const created = await request(t.app).post('/v1/groups').set('Authorization', `Bearer ${key}`).send({ subject: 'Readers welcome' });
    expect(created.status).toBe(201);
    const id = created.body.data.group.id as number;
    await eventually(() => groupRow(project.id, id), (g) => g?.status === 'active', 10_000, 'the group confirmed by WhatsApp');
    const context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    const page = await signedInPage(t, context, project.id, 'groups.member@example.com', 'member');
    const { foreign } = watchPage(page, t.baseUrl!);
    const url = `${t.baseUrl}/dashboard/projects/${project.id}/groups/${id}`;
    await page.goto(url);
    expect(await page.textContent('#group-status')).toBe('active');
    expect(await page.textContent('#invite-link')).toMatch(/^https:\/\/chat\.whatsapp\.com\//);
    expect(await page.locator('main form').count()).toBe(0);
    expect(await page.textContent('main')).toContain('Your role (member) reads the group; owners and admins change it.');
    expect(await fitsWidth(page)).toBe(true);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const forged = await context.request.post(`${url}/invite-link`, { form: { _csrf: csrf, _once: randomBytes(16).toString('hex') }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect(await forged.text()).toContain('Your role in this project (member) cannot reset invite links; ask an owner.');
    const confirm = await context.request.get(`${url}/delete`, { maxRedirects: 0 });
    expect(confirm.status()).toBe(403);
    expect(await auditOf(project.id)).toEqual([]);
    expect(foreign).toEqual([]);
    await context.close();
  }, 60_000);
});
