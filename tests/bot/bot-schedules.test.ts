/**
 * The bot's scheduled tasks (issue 46, item 3), against the real PostgreSQL, the real sandbox and
 * the simulator, on a manual clock (no sleeps for time rules): a deploy reads the schedules and
 * refuses bad ones at the author's line; a due time runs once with two instances; a missed run
 * inside and outside SCHEDULE_GRACE_SECONDS; pause, resume, run now; a bot that throws or loops is
 * stopped and logged and the next run still runs; a scheduled send obeys the send rules.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { BotScheduler } from '../../lib/bot/scheduler.js';
import { seedContacts, template } from '../support/broadcasts.js';
import { timingBound } from '../support/retry-timing.js';

// A run's time limit: 3 s, so that a run of two sends finishes on a loaded machine (at 1.5 s CI saw a
// run log its first send and never its second), while the looping schedule below meets it in seconds.
const LIMITS = { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 3000 };
const START = new Date('2026-03-01T11:58:30Z');

let t: TestApp;
let u: TestApp;
let sched: BotScheduler;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS, clock: undefined });
  t.clock.set(START);
  sched = new BotScheduler({ ...t.services.deps, bot: t.bot });
});
// A test's projects are deleted after it: their schedules then advance without running.
const made: string[] = [];
afterEach(async () => {
  for (const id of made.splice(0)) await t.admin.call('delete', `/admin/projects/${id}`);
});
afterAll(async () => {
  await u?.close();
  await t.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

async function botProject(source: string) {
  const project = await t.admin.project();
  made.push(project.id);
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const put = await request(t.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: source });
  expect(put.status).toBeLessThan(300);
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
}

async function deploy(key: string) {
  return request(t.app).post('/v1/deployments').set(auth(key)).send({});
}

async function deployed(source: string) {
  const p = await botProject(source);
  const res = await deploy(p.key);
  expect(res.status).toBe(201);
  await sched.tick(); // follows the release (and fires nothing yet)
  return p;
}

async function logs(projectId: string): Promise<Array<{ kind: string; level: string; message: string }>> {
  const res = await request(t.app).get(`/admin/projects/${projectId}/bot/logs?limit=100`).set({ Authorization: `Bearer ${t.adminToken}` });
  expect(res.status).toBe(200);
  return res.body.data.logs;
}

const runs = (projectId: string, name: string) => t.admin.call('get', `/admin/projects/${projectId}/bot/schedules/${name}/runs`).then((d) => d.runs as any[]);
const schedules = (projectId: string) => t.admin.call('get', `/admin/projects/${projectId}/bot/schedules`).then((d) => d.schedules as any[]);

/** A bot whose every run writes one log line naming its due time and trigger. */
const LOGGING_BOT = `import { log, type ScheduleContext } from './platform/runtime/index.js';

export const schedules = {
  everyMinute: { cron: '* * * * *', timeZone: 'UTC' },
  morning: { cron: '0 9 * * *', timeZone: 'Europe/Lisbon' },
};

export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  await log.info('ran ' + name + ' ' + ctx.due_at + ' ' + ctx.trigger);
}
`;

const ranLines = async (projectId: string) => (await logs(projectId)).filter((l) => l.message.startsWith('ran ')).map((l) => l.message);

describe('a deploy reads the schedules', () => {
  it('When a bot declares schedules, then the operator lists them with their next due times in their zones and where they are declared', async () => {
    t.clock.set(START);
    const p = await deployed(LOGGING_BOT);
    const list = await schedules(p.projectId);
    expect(list.map((s) => s.name)).toEqual(['everyMinute', 'morning']);
    const morning = list.find((s) => s.name === 'morning');
    expect(morning).toMatchObject({ cron: '0 9 * * *', time_zone: 'Europe/Lisbon', paused: false, source: 'src/bot.ts:5', last_run: null });
    // 1 March: Lisbon is on UTC (summer time starts on the 29th).
    expect(morning.next_run_at).toBe('2026-03-02T09:00:00.000Z');
    expect(list.find((s) => s.name === 'everyMinute').next_run_at).toBe('2026-03-01T11:59:00.000Z');
  });

  const refused = async (schedule: string, minPeriod?: number) => {
    const source = `import { log } from './platform/runtime/index.js';

export const schedules = {
  ok: { cron: '0 9 * * *', timeZone: 'UTC' },
  bad: ${schedule},
};

export async function onSchedule(name: string): Promise<void> {
  await log.info(name);
}
`;
    const app = minPeriod ? u : t;
    const project = await app.admin.project();
    const key = (await app.admin.key(project.id, ['code:read', 'code:write'])).secret;
    expect((await request(app.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: source })).status).toBeLessThan(300);
    const res = await request(app.app).post('/v1/deployments').set(auth(key)).send({});
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('build_failed');
    const d = res.body.error.details.diagnostics;
    expect(d).toHaveLength(1);
    return d[0];
  };

  it('When a cron expression has 6 fields, then the deploy is refused at the line of the expression', async () => {
    const d = await refused(`{ cron: '0 0 9 * * *', timeZone: 'UTC' }`);
    expect(d).toMatchObject({ file: 'src/bot.ts', line: 5, source: 'startup' });
    expect(d.message).toMatch(/has 6 fields; a cron expression has exactly 5/);
    expect(d.column).toBe(16);
  });

  it('When a cron expression is invalid, then the deploy is refused with the reason at its line', async () => {
    const d = await refused(`{ cron: '61 9 * * *', timeZone: 'UTC' }`);
    expect(d).toMatchObject({ file: 'src/bot.ts', line: 5 });
    expect(d.message).toMatch(/not a valid cron expression.*minute/i);
  });

  it('When a time zone does not exist, then the deploy is refused at the line of the zone', async () => {
    const d = await refused(`{\n    cron: '0 9 * * *',\n    timeZone: 'Europe/Atlantis',\n  }`);
    expect(d).toMatchObject({ file: 'src/bot.ts', line: 7 });
    expect(d.message).toMatch(/"Europe\/Atlantis" is not a known IANA time zone/);
  });

  it('When a schedule runs more often than SCHEDULE_MIN_PERIOD_SECONDS, then the deploy is refused', async () => {
    u = await startTestApp({ simulator: true, bot: LIMITS, config: { scheduleMinPeriodSeconds: 300 } });
    const d = await refused(`{ cron: '* * * * *', timeZone: 'UTC' }`, 300);
    expect(d).toMatchObject({ file: 'src/bot.ts', line: 5 });
    expect(d.message).toMatch(/runs every 60 s; the shortest period allowed is 300 s/);
    await u.close();
    u = undefined as never;
  });
});

describe('runs', () => {
  it('When two instances reach the due time together, then the schedule runs once', async () => {
    t.clock.set(START);
    const p = await deployed(LOGGING_BOT);
    u = await startTestApp({ simulator: true, bot: LIMITS, clock: t.clock });
    const other = new BotScheduler({ ...u.services.deps, bot: u.bot });
    t.clock.set(new Date('2026-03-01T11:59:00.000Z'));
    const fired = await Promise.all([sched.tick(), other.tick(), sched.tick(), other.tick()]);
    expect(fired.reduce((a, b) => a + b, 0)).toBe(1);
    await Promise.all([t.bot!.whenIdle(), u.bot!.whenIdle()]);
    expect(await ranLines(p.projectId)).toEqual(['ran everyMinute 2026-03-01T11:59:00.000Z cron']);
    const r = await runs(p.projectId, 'everyMinute');
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ outcome: 'ok', trigger: 'cron', due_at: '2026-03-01T11:59:00.000Z', error: null });
    expect(r[0].duration_ms).toBeGreaterThanOrEqual(0);
    // Again at the same time: nothing more.
    expect(await Promise.all([sched.tick(), other.tick()])).toEqual([0, 0]);
    const listed = (await schedules(p.projectId)).find((s) => s.name === 'everyMinute');
    expect(listed.next_run_at).toBe('2026-03-01T12:00:00.000Z');
    expect(listed.last_run).toMatchObject({ outcome: 'ok' });
    await u.close();
    u = undefined as never;
  });

  it('When a run was missed within SCHEDULE_GRACE_SECONDS, then it runs once at start as a catch-up; beyond it, it is skipped and logged', async () => {
    t.clock.set(START);
    const p = await deployed(LOGGING_BOT);
    // The service "was down" from 11:58:30 until 09:05 the next day: the morning run (09:00 in Lisbon,
    // 09:00 UTC) is 5 minutes late: it runs once, as a catch-up; everyMinute runs once, for 09:05.
    t.clock.set(new Date('2026-03-02T09:05:00Z'));
    expect(await sched.tick()).toBe(2);
    await t.bot!.whenIdle();
    expect((await ranLines(p.projectId)).sort()).toEqual(['ran everyMinute 2026-03-02T09:05:00.000Z cron', 'ran morning 2026-03-02T09:00:00.000Z catch_up']);
    // Down again until 09:20 the day after: 20 minutes late, over the grace of 10: skipped and logged.
    t.clock.set(new Date('2026-03-03T09:20:00Z'));
    expect(await sched.tick()).toBe(1); // everyMinute, for 09:20
    await t.bot!.whenIdle();
    const morning = await runs(p.projectId, 'morning');
    expect(morning.map((r) => [r.due_at, r.trigger, r.outcome])).toEqual([
      ['2026-03-03T09:00:00.000Z', 'catch_up', 'skipped'],
      ['2026-03-02T09:00:00.000Z', 'catch_up', 'ok'],
    ]);
    expect(morning[0].error.message).toMatch(/1200 s late, over the grace of 600 s \(SCHEDULE_GRACE_SECONDS\)/);
    expect((await logs(p.projectId)).some((l) => l.kind === 'schedule' && /Schedule "morning" did not run for 2026-03-03T09:00:00.000Z/.test(l.message))).toBe(true);
    expect((await ranLines(p.projectId)).filter((l) => l.startsWith('ran morning'))).toHaveLength(1);
    expect((await schedules(p.projectId)).find((s) => s.name === 'morning').next_run_at).toBe('2026-03-04T09:00:00.000Z');
  });

  it('When a schedule is paused, then it does not fire; resumed, it runs from its next due time', async () => {
    t.clock.set(START);
    const p = await deployed(LOGGING_BOT);
    const paused = await t.admin.call('post', `/admin/projects/${p.projectId}/bot/schedules/everyMinute/pause`);
    expect(paused.schedule).toMatchObject({ paused: true, next_run_at: null });
    t.clock.set(new Date('2026-03-01T12:03:00Z'));
    expect(await sched.tick()).toBe(0);
    await t.bot!.whenIdle();
    expect(await runs(p.projectId, 'everyMinute')).toEqual([]);
    // A redeploy keeps it paused.
    const audit = await t.db.pool.query(`SELECT action, subject FROM dashboard_audit WHERE project_id = $1 ORDER BY id`, [p.projectId]);
    expect(audit.rows).toEqual([{ action: 'schedule.pause', subject: 'everyMinute' }]);
    const resumed = await t.admin.call('post', `/admin/projects/${p.projectId}/bot/schedules/everyMinute/resume`);
    expect(resumed.schedule).toMatchObject({ paused: false, next_run_at: '2026-03-01T12:04:00.000Z' });
    t.clock.set(new Date('2026-03-01T12:04:00Z'));
    expect(await sched.tick()).toBe(1);
    await t.bot!.whenIdle();
    // The run's record first: where the line is missing, its outcome and error say why.
    expect((await runs(p.projectId, 'everyMinute')).map((r) => [r.due_at, r.outcome, r.error])).toEqual([['2026-03-01T12:04:00.000Z', 'ok', null]]);
    expect(await ranLines(p.projectId)).toEqual(['ran everyMinute 2026-03-01T12:04:00.000Z cron']);
  });

  timingBound('the manual run ends within the bot\'s 5 s event limit').it('When an operator runs a schedule now, then it runs once, as a manual run', async () => {
    t.clock.set(START);
    const p = await deployed(LOGGING_BOT);
    const res = await request(t.app).post(`/admin/projects/${p.projectId}/bot/schedules/morning/run`).set({ Authorization: `Bearer ${t.adminToken}` });
    expect(res.status).toBe(202);
    expect(res.body.data.run).toMatchObject({ schedule: 'morning', trigger: 'manual', outcome: 'queued', due_at: START.toISOString() });
    await t.bot!.whenIdle();
    expect(await sched.tick()).toBe(0);
    await t.bot!.whenIdle();
    expect(await ranLines(p.projectId)).toEqual([`ran morning ${START.toISOString()} manual`]);
    expect((await runs(p.projectId, 'morning'))[0]).toMatchObject({ outcome: 'ok', trigger: 'manual' });
    const unknown = await request(t.app).post(`/admin/projects/${p.projectId}/bot/schedules/nope/run`).set({ Authorization: `Bearer ${t.adminToken}` });
    expect(unknown.status).toBe(404);
  });
});

describe('the spread within the minute', () => {
  it("When projects' schedules name the same minute, then each runs at a fixed second of its own within BOT_SCHEDULE_SPREAD_SECONDS, not all at second 0, and once", async () => {
    // On a whole minute: each schedule's next due time is this minute plus its second.
    const M0 = new Date('2026-03-01T12:00:00Z');
    t.clock.set(M0);
    const spread = new BotScheduler({ ...t.services.deps, config: { ...t.config, botScheduleSpreadSeconds: 30 }, bot: t.bot });
    const projects = [];
    for (let i = 0; i < 4; i++) {
      const p = await botProject(LOGGING_BOT);
      expect((await deploy(p.key)).status).toBe(201);
      projects.push(p);
    }
    await spread.tick();
    const offsets: number[] = [];
    for (const p of projects) {
      const every = (await schedules(p.projectId)).find((s) => s.name === 'everyMinute');
      // M0's minute plus the project's own second (a whole second in [0, 30)); second 0 is the next minute's.
      const offset = (new Date(every.next_run_at).getTime() - M0.getTime()) % 60_000;
      expect(offset % 1000 === 0 && offset >= 0 && offset < 30_000).toBe(true);
      offsets.push(offset);
    }
    console.log(`spread: everyMinute's seconds past the minute: ${offsets.map((o) => o / 1000).join(', ')}`);
    // Four projects on one second would be a 1-in-27,000 chance: the hash spreads them.
    expect(new Set(offsets).size).toBeGreaterThan(1);
    // Half a minute on, each with a second of its own has run once, its due time that second; none ran at second 0.
    t.clock.set(new Date(M0.getTime() + 30_000));
    await spread.tick();
    await t.bot!.whenIdle();
    for (const [i, p] of projects.entries()) {
      if (offsets[i] === 0) continue;
      const due = new Date(M0.getTime() + offsets[i]).toISOString();
      expect(await ranLines(p.projectId)).toEqual([`ran everyMinute ${due} cron`]);
      // The next due time keeps the same second, a minute on.
      const every = (await schedules(p.projectId)).find((s) => s.name === 'everyMinute');
      expect(new Date(every.next_run_at).getTime()).toBe(new Date(due).getTime() + 60_000);
    }
  }, 120_000);
});

describe('a failing schedule', () => {
  const FAILING_BOT = `import { log, type ScheduleContext } from './platform/runtime/index.js';

export const schedules = { tick: { cron: '* * * * *', timeZone: 'UTC' } };

export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  const minute = new Date(ctx.due_at).getUTCMinutes();
  if (minute === 1) throw new Error('no stock feed');
  if (minute === 2) for (;;) {}
  await log.info('ran ' + ctx.due_at);
}
`;

  it('When the bot throws, then the run is logged with the author\'s line, and the next run still runs', async () => {
    t.clock.set(new Date('2026-03-01T12:00:30Z'));
    const p = await deployed(FAILING_BOT);
    t.clock.set(new Date('2026-03-01T12:01:00Z'));
    expect(await sched.tick()).toBe(1);
    await t.bot!.whenIdle();
    const [thrown] = await runs(p.projectId, 'tick');
    expect(thrown).toMatchObject({ outcome: 'error', error: { file: 'src/bot.ts', line: 7 } });
    expect(thrown.error.message).toMatch(/no stock feed/);
    expect((await logs(p.projectId)).some((l) => l.level === 'error' && /no stock feed at src\/bot\.ts:7/.test(l.message) && /schedule "tick"/.test(l.message))).toBe(true);

    // 12:02: the bot loops; it is stopped at its time limit, tried again, and set aside.
    t.clock.set(new Date('2026-03-01T12:02:00Z'));
    expect(await sched.tick()).toBe(1);
    await t.bot!.whenIdle();
    expect((await runs(p.projectId, 'tick'))[0]).toMatchObject({ outcome: 'timeout', due_at: '2026-03-01T12:02:00.000Z' });
    for (let i = 0; i < t.config.botMaxAbnormalRuns && (await runs(p.projectId, 'tick'))[0].outcome !== 'set_aside'; i++) {
      await t.bot!.reclaim();
      await t.bot!.whenIdle();
    }
    const looped = (await runs(p.projectId, 'tick'))[0];
    expect(looped.outcome).toBe('set_aside');
    expect(looped.error.message).toMatch(/did not finish within 3000 ms/);

    // 12:03: runs normally.
    t.clock.set(new Date('2026-03-01T12:03:00Z'));
    expect(await sched.tick()).toBe(1);
    await t.bot!.whenIdle();
    expect((await runs(p.projectId, 'tick'))[0]).toMatchObject({ outcome: 'ok', due_at: '2026-03-01T12:03:00.000Z' });
    expect(await ranLines(p.projectId)).toEqual(['ran 2026-03-01T12:03:00.000Z']);
  });
});

describe('what a run sends', () => {
  it('When a scheduled MARKETING template goes to a contact who opted out, then it is refused before the channel', async () => {
    t.clock.set(START);
    const source = `import { log, send } from './platform/runtime/index.js';

export const schedules = { promo: { cron: '0 12 * * *', timeZone: 'UTC' } };

export async function onSchedule(): Promise<void> {
  for (const phone of ['14155550901', '14155550902']) {
    const r = await send({ type: 'template', phone, template: { name: 'spring_sale', language: 'en_US' } });
    await log.info(phone + ' ' + (r.ok ? 'sent' : r.error.code));
  }
}
`;
    const p = await botProject(source);
    await template(t, p.projectId, 'spring_sale', 'Spring sale: 20% off this week.', 'MARKETING');
    await seedContacts(t, p.projectId, [{ phone: '14155550901', optedIn: true }, { phone: '14155550902', optedOut: true }]);
    expect((await deploy(p.key)).status).toBe(201);
    await sched.tick();
    const calls = async () => ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ method: string; path: string; body: any }>)
      .filter((r) => r.method === 'POST' && r.path === `/${p.phoneNumberId}/messages`).map((r) => r.body.to);
    t.clock.set(new Date('2026-03-01T12:00:00Z'));
    expect(await sched.tick()).toBe(1);
    await t.bot!.whenIdle();
    // The run ended by itself (a run stopped at its time limit would say so here, not as a missing line).
    expect((await runs(p.projectId, 'promo'))[0]).toMatchObject({ outcome: 'ok' });
    const lines = (await logs(p.projectId)).map((l) => l.message);
    expect(lines).toContain('14155550901 sent');
    const refusal = lines.find((l) => l.startsWith('14155550902 '));
    expect(refusal).toBeDefined();
    expect(refusal).not.toBe('14155550902 sent');
    expect(await calls()).toEqual(['14155550901']);
  });
});

describe('a run takes effect once', () => {
  it('When one schedule loops past its limit beside 48 that each write a row, then exactly 48 rows are written per due time and only the looping one is set aside', async () => {
    t.clock.set(START);
    const names = Array.from({ length: 48 }, (_, i) => `w${i}`);
    const p = await botProject(`import { tables, type ScheduleContext } from './platform/runtime/index.js';

export const schedules = {
${[...names, 'stuck'].map((n) => `  ${n}: { cron: '* * * * *', timeZone: 'UTC' },`).join('\n')}
};

export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  if (name === 'stuck') {
    for (;;) {}
  }
  await tables.insert('ticks', { name, due: ctx.due_at });
}
`);
    const created = await request(t.app).post(`/admin/projects/${p.projectId}/tables`).set({ Authorization: `Bearer ${t.adminToken}` })
      .send({ name: 'ticks', columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'name', type: 'text' }, { name: 'due', type: 'text' }] });
    expect(created.status).toBe(201);
    expect((await deploy(p.key)).status).toBe(201);
    await sched.tick();
    t.clock.set(new Date('2026-03-01T11:59:00.000Z'));
    expect(await sched.tick()).toBe(49);
    await t.bot!.whenIdle();
    // The looping run is tried again up to its third timeout (each time on its own isolate).
    for (let pass = 0; pass < 4; pass++) {
      await t.bot!.reclaim();
      await t.bot!.whenIdle();
    }
    const reader = (await t.admin.key(p.projectId, ['tables:read'])).secret;
    const rows: Array<{ name: string }> = [];
    for (let cursor: string | undefined; ;) {
      const page = await request(t.app).get('/v1/tables/ticks/rows').query({ limit: 50, ...(cursor ? { cursor } : {}) }).set(auth(reader));
      expect(page.status).toBe(200);
      rows.push(...page.body.data.rows);
      if (!(cursor = page.body.data.nextCursor ?? undefined)) break;
    }
    expect(rows).toHaveLength(48);
    expect(new Set(rows.map((r) => r.name)).size).toBe(48);
    expect((await runs(p.projectId, 'stuck'))[0]).toMatchObject({ outcome: 'set_aside' });
    for (const name of ['w0', 'w47']) expect((await runs(p.projectId, name))[0]).toMatchObject({ outcome: 'ok' });
  }, 120_000);
});

