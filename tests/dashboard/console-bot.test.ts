/**
 * The console's Bot and Scheduled tasks pages through HTTP (issue 47, items 2 and 5), against the
 * real PostgreSQL, builds and sandbox: deployments with who, when, the message and the files
 * changed; the trees and a deployment's file with line numbers; rollback and the schedules'
 * pause, resume and run now applied once however often their form is posted, refused without or
 * with a stale CSRF token and for a member (nothing changed); the preview console; the bot log in
 * keyset pages and its live stream (a new line pushed, a reconnect resumed); every text a bot sets (files, messages, sends, log lines, run
 * errors) rendered as text.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { csrfOf, person } from '../support/dashboard.js';
import { BOT_LIMITS, botWithTwoDeployments, HOSTILE, putFile, seedBotLines } from '../support/bot-console.js';
import { BotScheduler } from '../../lib/bot/scheduler.js';
import { writeBotLog } from '../../lib/bot/bot-log.js';
import { cookieOf, openStream } from '../support/live.js';

let t: TestApp;
let n = 0;
const email = (who: string) => `${who}.bot${++n}.${Date.now()}@example.com`;
let shop: Awaited<ReturnType<typeof botWithTwoDeployments>>;
let base: string;
type Person = Awaited<ReturnType<typeof person>> & { email: string };
let owner: Person;
let member: Person;

async function signedIn(projectId: string, role: 'owner' | 'admin' | 'member'): Promise<Person> {
  const address = email(role);
  return { ...(await person(t, projectId, address, role)), email: address };
}

beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: BOT_LIMITS });
  shop = await botWithTwoDeployments(t);
  base = `/dashboard/projects/${shop.projectId}`;
  await new BotScheduler({ ...t.services.deps, bot: t.bot }).tick();
  owner = await signedIn(shop.projectId, 'owner');
  member = await signedIn(shop.projectId, 'member');
}, 120_000);
afterAll(async () => {
  await t.close();
});

/** The `_once` of the form posting to `action` on a page. */
function onceOf(page: string, action: string): string {
  const start = page.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form to ${action}`);
  const m = /name="_once" value="([a-f0-9]+)"/.exec(page.slice(start, page.indexOf('</form>', start)));
  if (!m) throw new Error(`no _once in the form to ${action}`);
  return m[1];
}

const deployments = async () => (await t.db.pool.query<{ id: string; rollback_of: string | null }>('SELECT id, rollback_of FROM deployments WHERE project_id = $1 ORDER BY seq', [shop.projectId])).rows;
const audit = async (action: string) => (await t.db.pool.query('SELECT actor, subject, after FROM dashboard_audit WHERE project_id = $1 AND action = $2 ORDER BY id', [shop.projectId, action])).rows;
const notRaw = (text: string) => {
  expect(text).not.toContain('<script>alert(1)');
  expect(text).not.toContain('<img src=x');
};

describe('Bot page', () => {
  it('When an owner opens the Bot page after two deploys, then each deployment shows who, when, its message as text and the files it changed', async () => {
    const page = await owner.agent.get(`${base}/bot`).expect(200);
    notRaw(page.text);
    const row = (id: string) => page.text.slice(page.text.indexOf(`id="deployment-${id}"`), page.text.indexOf('</tr>', page.text.indexOf(`id="deployment-${id}"`)));
    const second = row(shop.second);
    expect(second).toContain(`API key &quot;CI deploy&quot; (${shop.keyId})`);
    expect(second).toContain('Reply wording');
    expect(second).toContain('in production');
    expect(second).toMatch(/changed \(1\): <a href="[^"]+deployment=dep_[^"]+&amp;path=src%2Fbot.ts">src\/bot.ts<\/a>/);
    expect(second).toMatch(/added \(1\): <a [^>]+>src\/notes.ts<\/a>/);
    expect(second).toMatch(/\d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    const first = row(shop.first);
    expect(first).toContain('First &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(first).toContain('the oldest deployment kept');
    expect(first).toContain('Roll back to this');
    expect(page.text).toContain('Preview console');
    // A member reads the deployments, without the preview or a rollback.
    const read = await member.agent.get(`${base}/bot`).expect(200);
    expect(read.text).toContain('Reply wording');
    expect(read.text).not.toContain('<form method="post" action="/dashboard/projects');
  });

  it('When the trees and a deployment\'s file are read, then each line is numbered, the asked line marked, markup shown as text; bad paths are refused, never a 500', async () => {
    const notes = await member.agent.get(`${base}/bot/files?tree=development&path=src/notes.ts`).expect(200);
    notRaw(notes.text);
    expect(notes.text).toContain(`<tr id="L1"><td class="ln"><a href="#L1" aria-label="Line 1">1</a></td><td class="src">// Notes &lt;script&gt;alert(1)&lt;/script&gt;`);
    expect(notes.text).toContain('&lt;b&gt;bold&lt;/b&gt;');
    const prod = await member.agent.get(`${base}/bot/files?tree=production&path=src/bot.ts&line=11`).expect(200);
    expect(prod.text).toMatch(/<tr id="L11" class="hit">.*throw new Error/);
    expect(prod.text).toContain('You wrote: ');
    expect(prod.text).toMatch(/id="files"[\s\S]*src\/notes.ts/);
    const old = await member.agent.get(`${base}/bot/files?deployment=${shop.first}&path=src/bot.ts`).expect(200);
    expect(old.text).toContain('You said: ');
    expect(old.text).not.toContain('You wrote: ');
    for (const [q, status] of [
      ['tree=development&path=../../etc/passwd', 400], ['tree=production&path=src/nope.ts', 404], [`deployment=${shop.first}&path=src/notes.ts`, 404],
      ['deployment=dep_nope&path=src/bot.ts', 404], ['deployment=x', 400], ['tree=production&path=%2Fetc%2Fpasswd', 400],
    ] as const) {
      const res = await member.agent.get(`${base}/bot/files?${q}`);
      expect({ q, status: res.status }).toEqual({ q, status });
    }
  });

  it('When the preview console runs a message holding markup, then what the bot would send, set, emit and log is shown as text, and nothing is sent', async () => {
    const page = await owner.agent.get(`${base}/bot`);
    const res = await owner.agent.post(`${base}/bot/preview`).type('form').send({ _csrf: csrfOf(page.text), text: HOSTILE, from: '4915112345678' });
    expect(res.status).toBe(200);
    notRaw(res.text);
    expect(res.text).toContain('What the bot would do');
    expect(res.text).toMatch(/Outcome<\/dt><dd class="status">ok/);
    expect(res.text).toContain('You wrote: &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.text).toContain('4915112345678');
    expect(res.text).toContain('<code>echoed</code>');
    expect(res.text).toMatch(/<code>bot\.echoed<\/code><pre>\{\n {2}&quot;text&quot;: &quot;&lt;script&gt;/);
    expect(res.text).toContain('got &lt;script&gt;alert(1)');
    // The typed message stays in the box.
    expect(res.text).toContain(`>${HOSTILE.replace(/</g, '&lt;').replace(/>/g, '&gt;')}</textarea>`);
    expect((await t.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1`, [shop.projectId])).rows[0].n).toBe(0);

    // A throw: the error at the author's file and line of the development tree.
    const boom = await owner.agent.post(`${base}/bot/preview`).type('form').send({ _csrf: csrfOf(page.text), text: 'boom' });
    expect(boom.status).toBe(200);
    expect(boom.text).toMatch(/Outcome<\/dt><dd class="status">error/);
    expect(boom.text).toContain('no stock feed for boom');
    expect(boom.text).toMatch(/<a class="place" href="[^"]+\/bot\/files\?tree=development&amp;path=src%2Fbot.ts&amp;line=11#L11">src\/bot.ts line 11<\/a>/);

    // Bad input: the reason, the form kept, nothing run.
    const bad = await owner.agent.post(`${base}/bot/preview`).type('form').send({ _csrf: csrfOf(page.text), text: 'hi', from: '12ab' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('8 to 15 digits');
    expect(bad.text).toContain('value="12ab"');
    expect((await owner.agent.post(`${base}/bot/preview`).type('form').send({ _csrf: csrfOf(page.text), text: '' })).status).toBe(400);
    // A member may not run the bot (POST /v1/bot/preview needs code:write).
    const memberPage = await member.agent.get(`${base}/bot`);
    const refused = await member.agent.post(`${base}/bot/preview`).type('form').send({ _csrf: csrfOf(memberPage.text), text: 'hi' });
    expect(refused.status).toBe(403);
  }, 60_000);

  it('When the development tree does not build, then the preview shows each diagnostic at its file and line, and runs nothing; with nothing deployed each page says so', async () => {
    const project = await t.admin.project('Broken bot');
    const key = (await t.admin.key(project.id, ['code:read', 'code:write'])).secret;
    await putFile(t, key, 'src/bot.ts', `import type { InboundMessage } from './platform/runtime/index.js';\n\nexport async function onMessage(m: InboundMessage): Promise<void> {\n  const n: number = m.text;\n}\n`);
    const someone = await signedIn(project.id, 'owner');
    const page = await someone.agent.get(`/dashboard/projects/${project.id}/bot`).expect(200);
    expect(page.text).toContain('nothing deployed yet');
    const res = await someone.agent.post(`/dashboard/projects/${project.id}/bot/preview`).type('form').send({ _csrf: csrfOf(page.text), text: 'hi' });
    expect(res.status).toBe(422);
    expect(res.text).toContain('The development tree does not build');
    expect(res.text).toMatch(/src\/bot.ts line 4<\/a>: <span class="error-text">[^<]*not assignable to type &#39;number&#39;/);
    // Nothing deployed: each page says so.
    const at = `/dashboard/projects/${project.id}`;
    expect((await someone.agent.get(`${at}/bot/files?tree=production`).expect(200)).text).toContain('Nothing deployed yet.');
    expect((await someone.agent.get(`${at}/bot/log`).expect(200)).text).toContain('Nothing logged yet.');
    expect((await someone.agent.get(`${at}/schedules`).expect(200)).text).toContain('The bot in production declares no schedules.');
  }, 60_000);

  it('When an owner rolls back to the first deployment and posts the form twice, then one rollback is made and audited; without or with a stale token, or as a member, nothing changes', async () => {
    const page = await owner.agent.get(`${base}/bot`);
    const action = `${base}/bot/deployments/${shop.first}/rollback`;
    const once = onceOf(page.text, action);
    const before = await deployments();
    // Refused: no CSRF token, another session's token, a member.
    expect((await owner.agent.post(action).type('form').send({ _once: once })).status).toBe(403);
    const other = await signedIn(shop.projectId, 'admin');
    expect((await owner.agent.post(action).type('form').send({ _csrf: await other.csrf(), _once: once })).status).toBe(403);
    const memberPage = await member.agent.get(`${base}/bot`);
    const byMember = await member.agent.post(action).type('form').send({ _csrf: csrfOf(memberPage.text), _once: once });
    expect(byMember.status).toBe(403);
    expect(byMember.text).toContain('cannot roll back the bot');
    expect(await deployments()).toEqual(before);
    // Posted twice: one rollback, the same place.
    const first = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once });
    const again = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once });
    expect(first.status).toBe(303);
    expect(again.status).toBe(303);
    expect(again.headers.location).toBe(first.headers.location);
    expect(first.headers.location).toBe(`${base}/bot?done=rolled_back`);
    const after = await deployments();
    expect(after).toHaveLength(before.length + 1);
    expect(after[after.length - 1].rollback_of).toBe(shop.first);
    expect(await audit('deployment.rollback')).toEqual([{ actor: owner.email, subject: shop.first, after: { deployment_id: after[after.length - 1].id } }]);
    const shown = await owner.agent.get(first.headers.location).expect(200);
    expect(shown.text).toContain('Rolled back');
    const row = shown.text.slice(shown.text.indexOf(`id="deployment-${after[after.length - 1].id}"`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(new RegExp(`${owner.email.replace(/[.]/g, '\\.')}[\\s\\S]*rollback to ${shop.first}[\\s\\S]*in production[\\s\\S]*changed \\(1\\)[\\s\\S]*removed \\(1\\): src/notes.ts`));
    const prod = await owner.agent.get(`${base}/bot/files?tree=production&path=src/bot.ts`).expect(200);
    expect(prod.text).toContain('You said: ');
  }, 60_000);
});

describe('Bot log', () => {
  it('When the bot logged lines, then the log shows them by level with an error linked to its file and line, as text; the live stream pushes only newer lines; older lines page by keyset', async () => {
    await seedBotLines(t, shop.projectId, shop.second);
    // A line of a deployment no longer kept links to production's file instead.
    await t.db.pool.query(`INSERT INTO bot_logs (project_id, level, kind, message, deployment_id, created_at) VALUES ($1, 'error', 'error', 'old at src/bot.ts:3:1', 'dep_pruned', now())`, [shop.projectId]);
    const page = await member.agent.get(`${base}/bot/log`).expect(200);
    notRaw(page.text);
    expect(page.text).toContain('order 1042 looked up');
    expect(page.text).toContain('no stock feed &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).toContain(`href="${base}/bot/files?deployment=${shop.second}&amp;path=src%2Fbot.ts&amp;line=11#L11">src/bot.ts line 11</a>`);
    const tail = /sse-connect="([^"]+\/bot\/log\/events\?after=(\d+))"/.exec(page.text)!;
    expect(tail).not.toBeNull();
    const pruned = await member.agent.get(`${base}/bot/log?level=error`).expect(200);
    expect(pruned.text).toContain(`<code class="log-line">old at src/bot.ts:3:1</code><br><a class="place" href="${base}/bot/files?tree=production&amp;path=src%2Fbot.ts&amp;line=3#L3">`);
    const errors = await member.agent.get(`${base}/bot/log?level=error`).expect(200);
    expect(errors.text).not.toContain('order 1042 looked up');
    expect(errors.text).toContain('no stock feed');

    // The live stream (pushed, not polled): nothing new, then the new line only, on top, as text.
    const cookie = cookieOf(member.agent);
    const stream = await openStream(t.baseUrl!, tail[1].replace(/&amp;/g, '&'), cookie);
    const errorsOnly = await openStream(t.baseUrl!, `${base}/bot/log/events?level=error&after=${tail[2]}`, cookie);
    expect([stream.status, errorsOnly.status]).toEqual([200, 200]);
    await stream.until('retry: 2000');
    expect(stream.text()).not.toContain('event: update');
    await writeBotLog(t.services.deps, shop.projectId, { level: 'warn', kind: 'log', message: `late ${HOSTILE}` });
    const pushed = await stream.until('since the page opened.');
    expect(pushed).toContain('hx-swap-oob="afterbegin:#bot-log &gt; tbody"');
    expect(pushed).toContain('late &lt;script&gt;');
    expect(pushed).not.toContain('<script>');
    expect(pushed).toContain('Live: 1 new line since the page opened.');
    expect(pushed).toContain('hx-swap-oob="delete:#log-empty"');
    const lineId = /^id: (\d+)$/m.exec(pushed)![1];
    expect(Number(lineId)).toBeGreaterThan(Number(tail[2]));
    // A reconnect names the last line it got (Last-Event-ID): only what came after, and the count since the page opened.
    stream.close();
    const again = await openStream(t.baseUrl!, tail[1].replace(/&amp;/g, '&'), cookie, { 'last-event-id': lineId });
    await writeBotLog(t.services.deps, shop.projectId, { level: 'info', kind: 'log', message: 'after the reconnect' });
    const resumed = await again.until('Live: 2 new lines since the page opened.');
    expect(resumed).toContain('after the reconnect');
    expect(resumed).not.toContain('late &lt;script&gt;');
    again.close();
    // A page of errors only is not woken with lines of other levels.
    expect(errorsOnly.text()).not.toContain('event: update');
    errorsOnly.close();

    // 60 more lines: a first page of 50, then the older ones by keyset.
    for (let i = 0; i < 60; i++) await writeBotLog(t.services.deps, shop.projectId, { level: 'info', kind: 'log', message: `line ${i}` });
    const newest = await member.agent.get(`${base}/bot/log`).expect(200);
    expect(newest.text).toContain('line 59');
    expect(newest.text).not.toContain('>line 9<');
    const older = /href="([^"]+)" rel="next">Older lines/.exec(newest.text)![1].replace(/&amp;/g, '&');
    const next = await member.agent.get(older).expect(200);
    expect(next.text).toContain('>line 9<');
    expect(next.text).not.toContain('line 59');
    expect(next.text).not.toContain('sse-connect');
    // Outside the session: sign in first.
    expect((await request(t.app).get(`${base}/bot/log/events?after=0`)).status).toBe(303);
  });
});

describe('Scheduled tasks page', () => {
  it('When the bot declares schedules, then each shows its next run where it is declared; pause and resume posted twice change once, are audited, and are refused to a member and without a token', async () => {
    const page = await owner.agent.get(`${base}/schedules`).expect(200);
    const row = (text: string, name: string) => text.slice(text.indexOf(`id="schedule-${name}"`), text.indexOf('</tr>', text.indexOf(`id="schedule-${name}"`)));
    // 1 March: Lisbon is on UTC.
    expect(row(page.text, 'morning')).toContain('2026-03-02 09:00 UTC');
    expect(row(page.text, 'morning')).toContain('<code>0 9 * * *</code> <small>Europe/Lisbon</small>');
    expect(row(page.text, 'morning')).toMatch(/declared at <a href="[^"]+\/bot\/files\?tree=production&amp;path=src%2Fbot.ts&amp;line=4#L4">src\/bot.ts:4<\/a>/);
    expect(row(page.text, 'hourly')).toContain('never');

    const action = `${base}/schedules/morning/pause`;
    const once = onceOf(page.text, action);
    expect((await owner.agent.post(action).type('form').send({ _once: once })).status).toBe(403);
    const memberPage = await member.agent.get(`${base}/schedules`).expect(200);
    expect(memberPage.text).not.toContain('/pause"');
    expect((await member.agent.post(action).type('form').send({ _csrf: csrfOf(memberPage.text), _once: once })).status).toBe(403);
    expect(await audit('schedule.pause')).toEqual([]);
    const first = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once });
    const again = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once });
    expect([first.status, again.status]).toEqual([303, 303]);
    expect(again.headers.location).toBe(`${base}/schedules?done=schedule_paused`);
    expect(await audit('schedule.pause')).toHaveLength(1);
    const paused = await owner.agent.get(first.headers.location).expect(200);
    expect(paused.text).toContain('Schedule paused');
    expect(row(paused.text, 'morning')).toMatch(/<strong>paused<\/strong> since 2026-03-01 12:00 UTC/);
    const resume = `${base}/schedules/morning/resume`;
    const resumed = await owner.agent.post(resume).type('form').send({ _csrf: csrfOf(paused.text), _once: onceOf(paused.text, resume) });
    expect(resumed.headers.location).toBe(`${base}/schedules?done=schedule_resumed`);
    expect(row((await owner.agent.get(`${base}/schedules`)).text, 'morning')).toContain('2026-03-02 09:00 UTC');
    expect(await audit('schedule.resume')).toHaveLength(1);
  });

  it('When an owner runs a schedule now from its page, posting twice, then it runs once as a manual run with its outcome shown; an unknown schedule is refused with its reason', async () => {
    const page = await owner.agent.get(`${base}/schedules/hourly`).expect(200);
    expect(page.text).toContain('No runs yet');
    const action = `${base}/schedules/hourly/run`;
    const once = onceOf(page.text, action);
    const first = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once, back: 'schedule' });
    const again = await owner.agent.post(action).type('form').send({ _csrf: csrfOf(page.text), _once: once, back: 'schedule' });
    expect(first.headers.location).toBe(`${base}/schedules/hourly?done=schedule_run`);
    expect(again.headers.location).toBe(first.headers.location);
    await t.bot!.whenIdle();
    const runs = (await t.db.pool.query(`SELECT trigger, outcome FROM bot_schedule_runs WHERE project_id = $1 AND schedule = 'hourly'`, [shop.projectId])).rows;
    expect(runs).toEqual([{ trigger: 'manual', outcome: 'ok' }]);
    expect(await audit('schedule.run')).toHaveLength(1);
    const shown = await member.agent.get(`${base}/schedules/hourly`).expect(200);
    expect(shown.text).toMatch(/<td data-label="Trigger">manual<\/td><td data-label="Outcome"><span class="outcome outcome-ok">ok<\/span>/);
    const list = await member.agent.get(`${base}/schedules`).expect(200);
    expect(list.text).toMatch(/id="schedule-hourly"[\s\S]*?outcome-ok">ok<\/span> · 2026-03-01 12:00 UTC/);

    // (A one-time token is bound to the form it was first sent with: the page's unused pause form's.)
    const unknown = await owner.agent.post(`${base}/schedules/nope/run`).type('form').send({ _csrf: csrfOf(page.text), _once: onceOf(page.text, `${base}/schedules/hourly/pause`) });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('Not done: No schedule &quot;nope&quot;');
    expect((await member.agent.get(`${base}/schedules/nope`)).status).toBe(404);
  }, 60_000);

  it('When a schedule has many runs, then its page shows 20 at a time by keyset, each error as text at its file and line', async () => {
    await t.db.pool.query(
      `INSERT INTO bot_schedule_runs (project_id, schedule, due_at, trigger, outcome, error, error_file, error_line, error_column, deployment_id, created_at, started_at, finished_at, duration_ms)
       SELECT $1, 'morning', timestamptz '2026-01-01 09:00Z' + (i - 1) * interval '1 day', 'cron', 'error', $2 || i, 'src/bot.ts', 11, 11, $3, now(), now(), now(), 12
         FROM generate_series(1, 25) AS i ORDER BY i ON CONFLICT DO NOTHING`,
      [shop.projectId, `feed down ${HOSTILE} #`, shop.second],
    );
    const page = await member.agent.get(`${base}/schedules/morning`).expect(200);
    notRaw(page.text);
    expect((page.text.match(/<tr id="run-/g) ?? []).length).toBe(20);
    expect(page.text).toContain('feed down &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).toContain('2026-01-25 09:00 UTC');
    expect(page.text).toMatch(/<a class="place" href="[^"]+tree=production&amp;path=src%2Fbot.ts&amp;line=11#L11">src\/bot.ts line 11<\/a>/);
    const older = /href="([^"]+)" rel="next">Older runs/.exec(page.text)![1].replace(/&amp;/g, '&');
    const next = await member.agent.get(older).expect(200);
    expect((next.text.match(/<tr id="run-/g) ?? []).length).toBe(5);
    expect(next.text).toContain('2026-01-01 09:00 UTC');
    expect(next.text).not.toContain('2026-01-25 09:00 UTC');
    expect(next.text).not.toContain('rel="next"');
  });
});
