/**
 * The inbox in a real browser (headless Chromium, issue 60, item 1), against the service, the
 * simulated channel and a deployed bot: an owner and a member split the conversations by
 * assignment (each one's "Assigned to me", "Unassigned" emptying), a private note shows in the chat
 * and never reaches the simulator, a canned reply fills the reply and is sent once, a label filters
 * the list, a customer's message and an API send arrive without a reload, and the chat names each
 * message's author (the customer, the bot, the person, an API key, an agent's connection, a
 * schedule, the WhatsApp Business app). Every control is labelled, the page works from the keyboard and at 375 px, and no
 * request leaves the service. Screenshot: docs/dashboard-inbox.png with UPDATE_SCREENSHOTS=1.
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
import { BOT_LIMITS, deploy, putFile } from '../support/bot-console.js';
import { eventually } from '../support/eventually.js';
import { PROJECT_ROOT } from '../../lib/platform/project-root.js';

const shotsDir = process.env.UPDATE_SCREENSHOTS ? path.join(PROJECT_ROOT, 'docs') : mkdtempSync(path.join(os.tmpdir(), 'inbox-shots-'));
const HOSTILE = '<img src=x onerror=alert(1)>';

const BOT = `import { sendText, type InboundMessage } from './platform/runtime/index.js';

export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'Bot: we got your message.');
}
`;

/** The shop, its two people's pages and the inbox's address, as each step of the scenario uses them. */
type InboxRun = Awaited<ReturnType<typeof shopWithBot>> & {
  t: TestApp;
  ownerEmail: string;
  owner: Page;
  member: Page;
  base: string;
  listed: (page: Page) => Promise<string[]>;
  anaUrl: string;
};

/** The shop: its bot answers every message, an integration's key sends too, and a schedule's run sent Ana a reminder. */
async function shopWithBot(t: TestApp) {
  const project = await t.admin.project('Corner shop');
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const pnid = channel.phoneNumberId;
  const sim = request(t.sim!.url);
  const sentTo = async (to: string): Promise<string[]> => ((await sim.get(`/_sim/messages?phone_number_id=${pnid}&to=${to}`)).body.data as Array<{ payload: any }>)
    .map((m) => m.payload.text?.body ?? `template ${m.payload.template?.name}`);
  const everything = async () => JSON.stringify((await sim.get(`/_sim/messages?phone_number_id=${pnid}`)).body.data);

  // The shop's bot answers every message; an integration's key and an AI agent's connection send too.
  const dev = await t.admin.call('post', `/admin/projects/${project.id}/keys`, { name: 'Shop integration', scopes: ['code:read', 'code:write', 'messages:send'], mode: 'live' });
  await putFile(t, dev.secret, 'src/bot.ts', BOT);
  await deploy(t, dev.secret, 'Answering bot');
  await inbound(t, pnid, '14155550801', 'Is my order ready?', { name: 'Ana Ortiz' });
  await inbound(t, pnid, '14155550802', 'Do you deliver?', { name: 'Ben Brown' });
  const answered = (to: string) => eventually(() => sentTo(to), (v) => Array.isArray(v) && v.length === 1, 15_000, `the bot's answer to ${to}`);
  expect(await answered('14155550801')).toEqual(['Bot: we got your message.']);
  expect(await answered('14155550802')).toEqual(['Bot: we got your message.']);
  // The test's clock stands still unless moved: each step below happens a minute after the last.
  const later = () => t.clock.advance(60_000);
  later();
  // A schedule's run sent Ana a reminder (recorded as the bot runtime records a schedule's send: its run's reference).
  const run = await t.db.pool.query<{ id: string }>(
    `INSERT INTO bot_schedule_runs (project_id, schedule, due_at, trigger, outcome, created_at) VALUES ($1, 'pickup-reminder', $2, 'cron', 'ok', $2) RETURNING id::text`, [project.id, t.clock.now()]);
  await t.db.pool.query(
    `INSERT INTO messages (project_id, conversation_id, wamid, send_ref, direction, type, content, status, sent_at, status_at)
     SELECT $1, v.id, 'wamid.schedule-1', $2, 'outbound', 'text', '{"type":"text","content":"Reminder: pickup until 18:00."}', 'delivered', $3, $3
     FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND c.phone = '14155550801'`,
    [project.id, `snd_sch${run.rows[0].id}_0123456789ab_1`, t.clock.now()]);
  return { project, pnid, sim, sentTo, everything, dev, later };
}

/** The menu leads to the inbox; the owner takes Ana, the member takes Ben, and each sees their own. */
async function splitTheWork({ ownerEmail, owner, member, base, listed }: InboxRun): Promise<string> {
  // The project's menu leads to the overview and the inbox.
  await owner.goto(`${base}/broadcasts`);
  await owner.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Overview' }).click();
  await owner.waitForURL('**/overview');
  expect(await owner.textContent('#overview')).toContain('Waiting for a reply');
  await owner.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Inbox' }).click();
  await owner.waitForURL('**/conversations');
  expect(await unlabelled(owner)).toEqual([]);
  expect(await listed(owner)).toEqual(['Ana Ortiz', 'Ben Brown']);

  // Splitting the work: the owner takes Ana, the member takes Ben.
  await owner.getByRole('link', { name: 'Ana Ortiz' }).click();
  await owner.waitForURL('**/conversations/*');
  const anaUrl = owner.url().split('?')[0];
  await owner.getByRole('button', { name: 'Assign to me' }).click();
  await owner.waitForURL('**done=assigned');
  expect(await owner.textContent('#conversation-assignee')).toBe(ownerEmail);
  await member.goto(`${base}/conversations?assigned=none`);
  expect(await listed(member)).toEqual(['Ben Brown']);
  await member.getByRole('link', { name: 'Ben Brown' }).click();
  await member.waitForURL('**/conversations/*');
  expect(await unlabelled(member)).toEqual([]);
  await member.getByRole('button', { name: 'Assign to me' }).click();
  await member.waitForURL('**done=assigned');
  // A member does not reply (the send rules are the owners' and admins'), but holds the conversation.
  expect(await member.locator('#reply-text').count()).toBe(0);
  for (const [page, mine] of [[owner, ['Ana Ortiz']], [member, ['Ben Brown']]] as const) {
    await page.goto(`${base}/conversations`);
    await page.getByLabel('Assigned', { exact: true }).selectOption('mine');
    await page.getByRole('button', { name: 'Search conversations' }).click();
    await page.waitForURL('**assigned=mine*');
    expect(await listed(page)).toEqual([...mine]);
  }
  await owner.goto(`${base}/conversations?assigned=none`);
  expect(await listed(owner)).toEqual([]);
  return anaUrl;
}

/** Ana's conversation: a private note (from the keyboard) never sent, and a canned reply sent once. */
async function noteAndCannedReply({ sentTo, everything, later, ownerEmail, owner, anaUrl }: InboxRun) {
  // Ana's conversation: a private note (written from the keyboard), never sent to the customer.
  await owner.goto(anaUrl);
  await owner.getByRole('button', { name: 'Take over (the bot stops answering)' }).click();
  await owner.waitForURL('**done=handed_to_human');
  later();
  await owner.getByLabel('Private note (the team’s; never sent to the customer)').fill(`Refund approved by Ana's bank ${HOSTILE}`);
  await owner.keyboard.press('Tab');
  await owner.keyboard.press('Enter');
  await owner.waitForURL('**done=note_added');
  const note = owner.locator('#messages li.note');
  expect(await note.locator('.message-text').textContent()).toBe(`Refund approved by Ana's bank ${HOSTILE}`);
  expect(await note.locator('.author').textContent()).toBe(ownerEmail);
  expect(await everything()).not.toContain('Refund approved');

  // A canned reply, saved once, fills the reply; it is sent once.
  await owner.getByText('Canned replies (0)').click();
  await owner.getByLabel('Shortcut (lower-case letters, digits, _ or -)').fill('hours');
  await owner.getByLabel('Text', { exact: true }).fill('We open 9:00 to 17:00, Monday to Saturday.');
  await owner.getByRole('button', { name: 'Save canned reply' }).click();
  await owner.waitForURL('**done=canned_saved');
  await owner.getByLabel('Canned reply').selectOption({ label: 'hours' });
  expect(await owner.getByLabel('Message', { exact: true }).inputValue()).toBe('We open 9:00 to 17:00, Monday to Saturday.');
  later();
  await owner.getByRole('button', { name: 'Send reply' }).click();
  await owner.waitForURL('**done=reply_sent');
  expect(await sentTo('14155550801')).toEqual(['Bot: we got your message.', 'We open 9:00 to 17:00, Monday to Saturday.']);
}

/** A label, and the list filtered by it. */
async function labelFilter({ owner, listed }: InboxRun) {
  // A label, and the list filtered by it.
  await owner.getByLabel('Labels (comma-separated)').fill('VIP, refund');
  await owner.getByRole('button', { name: 'Save labels' }).click();
  await owner.waitForURL('**done=labels_saved');
  expect(await owner.textContent('#conversation-labels')).toBe('refund, vip');
  await owner.getByLabel('Label', { exact: true }).selectOption('vip');
  // Ana was answered: she is out of the default view (who waits), in All.
  await owner.getByLabel('Show').selectOption('all');
  await owner.getByRole('button', { name: 'Search conversations' }).click();
  await owner.waitForURL('**label=vip*');
  expect(await listed(owner)).toEqual(['Ana Ortiz']);
}

/** The customer writes, an integration, an agent and the Business app send: the chat and the list follow without a reload. */
async function liveArrival({ t, project, pnid, sim, sentTo, dev, later, owner, anaUrl }: InboxRun) {
  // Live: the customer writes, an integration and an agent send; the chat and the list follow without a reload.
  await owner.goto(anaUrl);
  let navigations = 0;
  owner.on('framenavigated', (f) => {
    if (f === owner.mainFrame()) navigations++;
  });
  later();
  await inbound(t, pnid, '14155550801', `Thanks! ${HOSTILE}`, { name: 'Ana Ortiz' });
  await owner.locator('#messages li:last-child').filter({ hasText: `Thanks! ${HOSTILE}` }).waitFor({ timeout: 15_000 });
  expect(await sentTo('14155550801')).toHaveLength(2); // held by a person: the bot stays silent
  later();
  expect((await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${dev.secret}`).send({ type: 'text', phone: '+14155550801', content: 'Your refund is on its way.' })).status).toBe(200);
  later();
  const agent = await t.admin.connection([{ projectId: project.id, scopes: ['messages:send'] }]);
  expect((await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${agent.secret}`).send({ type: 'text', phone: '+14155550801', content: 'Anything else I can do?' })).status).toBe(200);
  await owner.locator('#messages li:last-child').filter({ hasText: 'Anything else I can do?' }).waitFor({ timeout: 15_000 });
  // A colleague answers from the WhatsApp Business app on the same number (coexistence's echo, issue 61).
  later();
  const echo = await sim.post(`/_sim/phone-numbers/${pnid}/echoes`).send({ to: '14155550801', text: 'Sent from the shop phone.' });
  expect([echo.status, echo.body.delivered]).toEqual([200, true]);
  await owner.locator('#messages li:last-child').filter({ hasText: 'Sent from the shop phone.' }).waitFor({ timeout: 15_000 });
  await inbound(t, pnid, '14155550803', 'Hello?', { name: 'Cy Cole' });
  await owner.locator('#conversations tbody tr a', { hasText: 'Cy Cole' }).waitFor({ timeout: 15_000 });
  expect(navigations).toBe(0);
}

/** Each message names its author; at a phone's width the chat comes first and nothing is wider than the screen. */
async function authorsAndPhoneWidth({ ownerEmail, owner, base, anaUrl }: InboxRun) {
  // Each message names its author.
  const authors = async () => owner.locator('#messages li').evaluateAll((items) => items.map((li) => [li.getAttribute('data-author'), li.querySelector('.author')!.textContent]));
  expect(await authors()).toEqual([
    ['customer', 'Customer'],
    ['bot', 'Bot'],
    ['schedule', 'Schedule “pickup-reminder”'],
    ['person', ownerEmail],
    ['person', ownerEmail],
    ['customer', 'Customer'],
    ['api_key', 'API key “Shop integration”'],
    ['agent', 'Agent “agent”'],
    ['business_app', 'WhatsApp Business app'],
  ]);
  expect(await owner.locator('#messages li.note').count()).toBe(1);
  await owner.screenshot({ path: path.join(shotsDir, 'dashboard-inbox.png'), fullPage: false });

  // A phone's width: the chat first, nothing wider than the screen, the forms still there.
  await owner.setViewportSize({ width: 375, height: 800 });
  for (const url of [`${base}/conversations`, anaUrl, `${base}/overview`]) {
    await owner.goto(url);
    expect({ url, fits: await fitsWidth(owner) }).toEqual({ url, fits: true });
  }
  await owner.goto(anaUrl);
  const chatTop = await owner.locator('#chat-title').boundingBox();
  const listTop = await owner.locator('#list-title').boundingBox();
  expect(chatTop!.y).toBeLessThan(listTop!.y);
  expect(await owner.getByRole('button', { name: 'Add note' }).isVisible()).toBe(true);
}

describeWithBrowser(describe)('the inbox in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  browserTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: BOT_LIMITS }, (app) => ({ t, browser } = app));

  it('When an owner and a member split the inbox, then assignment, a private note, a canned reply, a label filter, live arrival and every author show as they should', async () => {
    const shop = await shopWithBot(t);
    const { project } = shop;
    // Addresses of their own, so a retry of the test signs in new people.
    const run_ = Math.random().toString(36).slice(2, 8);
    const ownerEmail = `inbox.owner.${run_}@example.com`;
    const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const owner = await signedInPage(t, ownerContext, project.id, ownerEmail);
    const memberContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const member = await signedInPage(t, memberContext, project.id, `inbox.member.${run_}@example.com`, 'member');
    const watched = [watchPage(owner, t.baseUrl!), watchPage(member, t.baseUrl!)];
    const base = `${t.baseUrl}/dashboard/projects/${project.id}`;
    const listed = async (page: Page) => (await page.locator('#conversations tbody tr a').allTextContents()).sort();

    const run: InboxRun = { ...shop, t, ownerEmail, owner, member, base, listed, anaUrl: '' };
    run.anaUrl = await splitTheWork(run);
    await noteAndCannedReply(run);
    await labelFilter(run);
    await liveArrival(run);
    await authorsAndPhoneWidth(run);

    for (const w of watched) {
      expect(w.dialogs).toEqual([]);
      expect(w.foreign).toEqual([]);
    }
    await memberContext.close();
    await ownerContext.close();
  }, 180_000);
});
