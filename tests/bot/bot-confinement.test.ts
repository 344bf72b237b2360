/**
 * What a bot can make the host do (lib/sandbox/sandbox.ts, helpers.ts, rates.ts): argument size checked
 * inside the isolate before any copy, helper calls in progress bounded, work left running after an
 * event stopped by its CPU, no forged or flooded service log, and the per-project event and emit
 * rates (shared counters, so two instances agree).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import winston from 'winston';
import { Writable } from 'node:stream';
import { scaffoldFiles } from '../../lib/code/scaffold.js';
import { buildTree } from '../../lib/deploy/build.js';
import { Sandbox, MAX_HOST_CALLS } from '../../lib/sandbox/sandbox.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';
import { RedisCounterStore } from '../../lib/platform/counters.js';
import { takeBotEvent } from '../../lib/bot/rates.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { botLogsOf, botSourceProject, deployBot, simSent } from '../support/bots.js';
import { eventually } from '../support/eventually.js';

const LIMITS = { memoryMb: 64, startupTimeoutMs: 1000, eventTimeoutMs: 1500 };

/** The service log as lines, in the readable format (where a newline would start a forged line). */
const serviceLog: string[] = [];
const logger = winston.createLogger({
  level: 'debug',
  format: winston.format.printf(({ level, message }) => `00:00:00.000 ${level} ${message}`),
  transports: [
    new winston.transports.Stream({
      stream: new Writable({
        write(chunk, _enc, done) {
          serviceLog.push(String(chunk));
          done();
        },
      }),
    }),
  ],
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS, logger, config: { devAllowPrivateTargets: true } });
});
afterAll(async () => {
  await t?.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });

const botProject = (botSource: string) => botSourceProject(t, ['code:read', 'code:write', 'conversations:read', 'webhooks:manage', 'messages:send'], botSource);
const deploy = (key: string) => deployBot(t, key);
const sentTexts = async (phoneNumberId: string, to: string) => (await simSent(t, phoneNumberId))
  .filter((m) => JSON.stringify(m).includes(to)).map((m) => JSON.stringify(m).match(/"body":"([^"]*)"/)?.[1] ?? '');
const botLogs = (projectId: string) => botLogsOf(t, projectId);

const RAW_HOST = `const host = (globalThis as unknown as { __host: { apply(r: undefined, a: unknown[], o: object): Promise<string> } }).__host;
const raw = (op: unknown, args: unknown) => host.apply(undefined, [op, args], { arguments: { copy: true }, result: { promise: true, copy: true } });
`;

describe('what crosses from the isolate', () => {
  it('When a previewed bot makes 150 concurrent helper calls with a 16 MB argument, then each is refused inside the isolate and the service\'s memory stays flat', async () => {
    const { key } = await botProject(`import { log } from './platform/runtime/index.js';
${RAW_HOST}
export async function onMessage(): Promise<void> {
  const big = 'x'.repeat(16 * 1024 * 1024);
  const answers = await Promise.all(Array.from({ length: 150 }, () => raw('log', big)));
  const codes = new Set(answers.map((a) => JSON.parse(a).error?.code ?? 'accepted'));
  log.info([...codes].join(','));
}
`);
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'probe' });
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    const growthMb = (peak - before) / 2 ** 20;
    process.stdout.write(`RSS before ${(before / 2 ** 20).toFixed(0)} MB, peak during the probe ${(peak / 2 ** 20).toFixed(0)} MB (+${growthMb.toFixed(0)} MB)\n`);
    expect(res.status).toBe(200);
    expect(res.body.data.outcome.status).toBe('ok');
    expect(res.body.data.logs).toEqual([{ level: 'info', message: 'payload_too_large' }]);
    // 150 copies of 16 MB would be 2.4 GB (4.8 GB as UTF-16); the isolate's own 64 MB heap is allowed for.
    expect(growthMb).toBeLessThan(250);
  }, 60_000);

  it('When a bot fires 100 helper calls at once, or calls the host with a bad or huge helper name, then at most 16 are in progress and the others wait their turn; bad calls never reach the host', async () => {
    const files = scaffoldFiles();
    files.set('src/bot.ts', `import { tables, log } from './platform/runtime/index.js';
${RAW_HOST}
export async function onMessage(): Promise<void> {
  const rows = await Promise.all(Array.from({ length: 100 }, (_, i) => tables.select('t' + i)));
  // A Promise of its own, resolving at once, does not let calls past the bound.
  const Real = Promise;
  (globalThis as Record<string, unknown>).Promise = function Fake() { return { then(done: () => void) { done(); } }; };
  const flood = Array.from({ length: 50 }, () => raw('tables.select', '{}'));
  (globalThis as Record<string, unknown>).Promise = Real;
  await Real.all(flood);
  const bad = await Promise.all([raw('x'.repeat(8 * 1024 * 1024), '{}'), raw(42, '{}'), raw('log', { not: 'text' })]);
  try { (globalThis as Record<string, unknown>).__host = null; } catch { /* strict code throws; sloppy code is ignored */ }
  const replaced = typeof (globalThis as Record<string, unknown>).__host === 'object' ? 'refused' : 'replaced';
  log.info(JSON.stringify({ rows: rows.length, bad: bad.map((b) => JSON.parse(b).error.code), replaced }));
}
`);
    const built = await buildTree(files);
    if (!built.ok) throw new Error(JSON.stringify(built.diagnostics));
    let inProgress = 0;
    let most = 0;
    const ops: string[] = [];
    const logged: unknown[] = [];
    const sandbox = await Sandbox.create(built.bundle, built.sourceMap, async (op, args) => {
      ops.push(op);
      if (op === 'log') logged.push(JSON.parse(args));
      most = Math.max(most, ++inProgress);
      await new Promise((r) => setTimeout(r, 5));
      inProgress--;
      return JSON.stringify({ ok: true, value: [] });
    }, LIMITS);
    const outcome = await sandbox.dispatch(JSON.stringify({ type: 'message', message: { id: 'w1', from: '1555', type: 'text', text: 'go', raw: {}, conversation: { id: 1, state: 'unstructured' }, contact: { phone: '1555', name: null }, received_at: '2026-03-01T12:00:00Z' } }));
    await new Promise((r) => setTimeout(r, 50));
    sandbox.dispose();
    expect(outcome.status).toBe('ok');
    expect(most).toBe(MAX_HOST_CALLS);
    expect(ops.filter((o) => o === 'tables.select')).toHaveLength(150);
    expect(ops.every((o) => o === 'tables.select' || o === 'log')).toBe(true);
    expect(logged).toEqual([{ level: 'info', message: JSON.stringify({ rows: 100, bad: ['invalid_request', 'invalid_request', 'invalid_request'], replaced: 'refused' }) }]);
  }, 60_000);
});

describe('work left running', () => {
  it('When a bot leaves a loop running after its handler returned, then it is stopped within its CPU bound and logged, and the next message is still answered', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { emit, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  if (m.text === 'spin') {
    void emit('spin.started').then(() => { for (;;) {} });
    return;
  }
  await sendText(m.from, 'echo ' + m.text);
}
`);
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550701', 'spin');
    await t.bot!.whenIdle();
    // The loop starts when emit answers, after the event ended: it is stopped for its own CPU and
    // logged. Waited for before the next message: one sent while emit's answer was still on its
    // way would be in flight when the loop starts, and end at its own deadline instead.
    const stopped = await eventually(() => botLogs(projectId), (l) => l.length > 0, 20_000, 'the bot log line of the stopped loop');
    expect(stopped.map((l) => l.message)).toEqual([expect.stringContaining('kept running after its event ended')]);
    await inbound(t, phoneNumberId, '14155550702', 'after');
    await t.bot!.whenIdle();
    expect(await eventually(() => sentTexts(phoneNumberId, '14155550702'), (s) => s.length > 0, 20_000, 'the answer to "after"')).toEqual(['echo after']);
    expect((await botLogs(projectId)).map((l) => l.message)).toEqual([expect.stringContaining('kept running after its event ended')]);
    // Nothing runs any more: the process spends (almost) no CPU while idle.
    const cpu = process.cpuUsage();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    const used = process.cpuUsage(cpu);
    const cpuSeconds = (used.user + used.system) / 1e6;
    process.stdout.write(`CPU over ${((performance.now() - started) / 1000).toFixed(1)} s after the loop was started: ${cpuSeconds.toFixed(2)} s\n`);
    expect(cpuSeconds).toBeLessThan(0.5);
    await inbound(t, phoneNumberId, '14155550702', 'again');
    await t.bot!.whenIdle();
    expect(await sentTexts(phoneNumberId, '14155550702')).toEqual(['echo after', 'echo again']);
  }, 60_000);
});

describe('the service log', () => {
  it('When a bot writes newlines in its log lines and helper names, and ten 8 MB helper names, then no forged line reaches the service log or the bot log, and the log stays small', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { log } from './platform/runtime/index.js';
${RAW_HOST}
export async function onMessage(): Promise<void> {
  log.info('first\\n00:00:00.000 error FORGED admin token rotated');
  await raw('send\\n00:00:00.000 error FORGED by name', '{not json');
  await raw('tables.select', '{"a":\\n"00:00:00.000 error FORGED by args');
  const huge = 'y'.repeat(8 * 1024 * 1024);
  for (let i = 0; i < 10; i++) await raw(huge + i, '{not json');
}
`);
    await deploy(key);
    const size = () => serviceLog.reduce((n, l) => n + l.length, 0);
    const logBefore = size();
    serviceLog.length = 0;
    await inbound(t, phoneNumberId, '14155550801', 'go');
    await t.bot!.whenIdle();
    const text = serviceLog.join('');
    const lines = text.split('\n');
    expect(lines.filter((l) => /^00:00:00\.000 error FORGED/.test(l))).toEqual([]);
    expect(text).toContain('bot helper send\\n00:00:00.000 error FORGED by name failed');
    expect(size()).toBeLessThan(4096);
    expect(logBefore).toBeGreaterThanOrEqual(0);
    // log.info does not wait for its write.
    const entries = await eventually(() => botLogs(projectId), (l) => l.length > 0, 5000, 'the bot log entry');
    expect(entries.map((e) => e.message)).toEqual(['first\\n00:00:00.000 error FORGED admin token rotated']);
  }, 60_000);

  it('When the host is handed an 8 MB helper name with unparsable arguments, then the answer is a refusal and nothing long is logged', async () => {
    const deps = t.services.deps as unknown as BotDeps;
    serviceLog.length = 0;
    const project = await t.admin.project();
    const inv = { projectId: project.id, mode: 'production' as const, logLines: 0 };
    for (let i = 0; i < 10; i++) {
      const answer = JSON.parse(await runHelper(deps, inv, 'z'.repeat(8 * 1024 * 1024), '{not json'));
      expect(answer.error.code).toBe('invalid_request');
    }
    const odd = JSON.parse(await runHelper(deps, inv, 'a\u2028b\rc', '{not json'));
    expect(odd.ok).toBe(false);
    const text = serviceLog.join('');
    expect(text.length).toBeLessThan(1024);
    expect(text).toContain('bot helper a\\u2028b\\rc failed');
    expect(text.split('\n').filter((l) => l.includes('bot helper'))).toHaveLength(1);
  });
});

describe('rates per project', () => {
  it('When a project\'s bot gets more messages in a minute than BOT_EVENTS_PER_MINUTE, then the extra ones wait (logged, still in the inbox) and are answered in order in the next minute', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> { await sendText(m.from, 'echo ' + m.text); }
`);
    await deploy(key);
    const limit = t.config.botEventsPerMinute;
    t.config.botEventsPerMinute = 2;
    try {
      for (const text of ['one', 'two', 'three', 'four']) await inbound(t, phoneNumberId, '14155550901', text);
      await eventually(() => sentTexts(phoneNumberId, '14155550901'), (s) => s.length === 2, 10_000, 'two answers');
      await eventually(() => botLogs(projectId), (l) => l.some((e) => e.message.includes('events a minute (BOT_EVENTS_PER_MINUTE)')), 10_000, 'the wait logged');
      expect((await botLogs(projectId)).map((l) => l.message)).toEqual([expect.stringContaining('events a minute (BOT_EVENTS_PER_MINUTE)')]);
      const waiting = await t.db.pool.query('SELECT count(*)::int AS n FROM bot_inbox WHERE project_id = $1', [projectId]);
      expect(waiting.rows[0].n).toBe(2);
      expect(await sentTexts(phoneNumberId, '14155550901')).toEqual(['echo one', 'echo two']);
      t.clock.advance(60_000);
      await eventually(() => sentTexts(phoneNumberId, '14155550901'), (s) => s.length === 4, 10_000, 'four answers');
      expect(await sentTexts(phoneNumberId, '14155550901')).toEqual(['echo one', 'echo two', 'echo three', 'echo four']);
      await t.bot!.whenIdle();
      const left = await t.db.pool.query('SELECT count(*)::int AS n FROM bot_inbox WHERE project_id = $1', [projectId]);
      expect(left.rows[0].n).toBe(0);
    } finally {
      t.config.botEventsPerMinute = limit;
    }
  }, 60_000);

  it('When a bot emits more custom events in a minute than BOT_EMITS_PER_MINUTE, then emit answers false past it (logged once), never throwing', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { emit, log } from './platform/runtime/index.js';
export async function onMessage(): Promise<void> {
  const answers: boolean[] = [];
  for (let i = 0; i < 6; i++) answers.push(await emit('order.created', { i }));
  log.info(JSON.stringify(answers));
}
`);
    await deploy(key);
    const limit = t.config.botEmitsPerMinute;
    t.config.botEmitsPerMinute = 4;
    try {
      await inbound(t, phoneNumberId, '14155550902', 'go');
      await t.bot!.whenIdle();
      // A run its sandbox interrupted (a neighbour moved or ended) runs again, its journal answering
      // the emits it made: the bot's line is awaited, not assumed written when the queue is empty.
      const answers = JSON.stringify([true, true, true, true, false, false]);
      const logged = await eventually(() => botLogs(projectId), (l) => l.some((e) => e.message === answers), 10_000, 'the bot\'s line of answers');
      const messages = logged.map((l) => l.message);
      expect(messages).toContain(answers);
      expect(messages.filter((m) => m.includes('BOT_EMITS_PER_MINUTE'))).toHaveLength(1);
      const events = await t.db.pool.query(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'order.created'`, [projectId]);
      expect(events.rows[0].n).toBe(4);
    } finally {
      t.config.botEmitsPerMinute = limit;
    }
  }, 60_000);

  (process.env.REDIS_TEST_URL ? it : it.skip)('When two instances share Redis, then a project\'s emits and events are counted once across both', async () => {
    const shared = [new RedisCounterStore({ url: process.env.REDIS_TEST_URL!, timeoutMs: 1000 }), new RedisCounterStore({ url: process.env.REDIS_TEST_URL!, timeoutMs: 1000 })];
    try {
      const project = await t.admin.project();
      // Two instances: each its own Redis client, the same Redis; a fresh minute of the real clock.
      const [a, b] = shared.map((counters) => ({ ...(t.services.deps as unknown as BotDeps), counters, config: { ...t.config, botEmitsPerMinute: 3 } }) as BotDeps);
      const inv = { projectId: project.id, mode: 'production' as const, logLines: 0 };
      const emit = async (deps: BotDeps) => JSON.parse(await runHelper(deps, { ...inv }, 'emit', JSON.stringify({ name: 'shared.count', payload: null }))).value;
      expect([await emit(a), await emit(b), await emit(a), await emit(b), await emit(a)]).toEqual([true, true, true, false, false]);
      const [ea, eb] = [a, b].map((deps) => ({ ...deps, config: { ...deps.config, botEventsPerMinute: 2 } }));
      const events = [await takeBotEvent(ea, project.id), await takeBotEvent(eb, project.id), await takeBotEvent(ea, project.id)];
      expect(events.map((e) => e.allowed)).toEqual([true, true, false]);
    } finally {
      await Promise.all(shared.map((s) => s.close()));
    }
  });
});
