/**
 * A CPU budget per project (issue 55): a project's bots share BOT_CPU_MS_PER_MINUTE of CPU a
 * minute, counted from its sandbox process; past BOT_CPU_BURST_MS its process runs at a lower
 * priority, past the budget at the lowest and its new events wait for the next minute (the bot
 * log says so), and another project's bot keeps its pace meanwhile. On a manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { timingBound } from '../support/retry-timing.js';
import { readFileSync, readdirSync } from 'node:fs';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { botWorld, until } from '../support/bots.js';
import { TENANT_NICE, sandboxSupervisor } from '../../lib/sandbox/supervisor.js';

const BUDGET_MS = 1500;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    bot: { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 3000 },
    config: { botCpuMsPerMinute: BUDGET_MS, botCpuBurstMs: 300 },
  });
  w = botWorld(t);
});
afterAll(async () => {
  await t.close();
});

let w: ReturnType<typeof botWorld>;
const auth = (key: string) => w.auth(key);
const botProject = (source: string) => w.botProject(source, { scopes: ['code:read', 'code:write', 'messages:send'] });
const inbound = (phoneNumberId: string, from: string, text: string) => w.inbound(phoneNumberId, from, text);
const sentTexts = (phoneNumberId: string) => w.sentTexts(phoneNumberId);
const botLogs = async (projectId: string) => (await w.botLogs(projectId)).map((l) => l.message);

/** Resolves once the project's counted CPU has not moved for a second (every read and flush is in). */
async function cpuSettled(projectId: string): Promise<void> {
  let last = -1;
  let stableSince = Date.now();
  await until(`${projectId}'s CPU count to settle`, async () => {
    const now = (await t.bot!.capacity!(projectId)).cpu.spent_ms;
    if (now !== last) [last, stableSince] = [now, Date.now()];
    return Date.now() - stableSince >= 1000;
  }, 20_000);
}

/**
 * The deploys' builds and trial runs are charged to the projects' budgets too: on a cold or busy
 * machine they alone spent A's 1.5 s and its first loop waited for a minute that never turns here.
 */
async function freshMinute(...projectIds: string[]): Promise<void> {
  for (const id of projectIds) await cpuSettled(id);
  t.clock.advance(60_000);
}

/** The nice value of every thread of `pid` (Linux). */
function nices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]));
}

const BURN = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const end = Date.now() + Number(m.text);
  let x = 0;
  while (Date.now() < end) x++;
  await sendText(m.from, 'burned ' + m.text);
}
`;
const ECHO = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'echo: ' + m.text);
}
`;

describe('the CPU budget', () => {
  it('When a project spends its CPU budget, then its process runs at the lowest priority (back to the usual sandbox priority when the minute turns), its next event waits for the next minute (said in its bot log), and another project is answered meanwhile', async () => {
    const a = await botProject(BURN);
    const b = await botProject(ECHO);
    await freshMinute(a.projectId, b.projectId);
    // Loops of two seconds until the budget (1.5 s of CPU) is spent: on a loaded machine a loop of
    // two seconds may get less than a second and a half of CPU.
    let spent: Date | undefined;
    let burned = 0;
    while (!spent && burned < 12) {
      await inbound(a.phoneNumberId, '14155553001', '2000');
      burned++;
      // Up to 45 s: past its burst A is moved to a process of its own, started and run at a lower
      // priority; beside other files' sandbox processes that took over 20 s in one run of tests/bot.
      await until("A's loop", async () => (await sentTexts(a.phoneNumberId)).length === burned, 45_000);
      // The loop's last CPU is told after its answer (the supervisor's next read, then the budget's
      // flush): a fixed wait of 600 ms was too short on a loaded CI machine, and the next loop then
      // found the budget spent and waited for a minute that never turns here.
      await cpuSettled(a.projectId);
      spent = await t.bot!.cpuExhausted!(a.projectId);
    }
    if (!spent) throw new Error('the budget was never spent');
    const pid = sandboxSupervisor().processes.find((p) => p.key === a.projectId)!.pid!;
    expect(spent.getTime()).toBeGreaterThan(t.clock.now().getTime());
    expect(Math.min(...nices(pid))).toBe(19);

    // A's next event waits; B's is answered.
    await inbound(a.phoneNumberId, '14155553001', '10');
    await inbound(b.phoneNumberId, '14155553002', 'hello');
    await until("B's answer", async () => (await sentTexts(b.phoneNumberId)).length === 1);
    await new Promise((r) => setTimeout(r, 500));
    expect(await sentTexts(a.phoneNumberId)).toEqual(Array(burned).fill('burned 2000'));
    expect((await botLogs(a.projectId)).join('\n')).toMatch(/used its CPU budget of 1500 ms this minute \(BOT_CPU_MS_PER_MINUTE\)/);
    // A preview spends the same budget: refused until the minute turns.
    const refused = await request(t.app).post('/v1/bot/preview').set(auth(a.key)).send({ text: '10' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);

    // The minute turns: it runs, and the priority is back to a moved project's (below the shared processes').
    t.clock.advance(60_000);
    await until("A's waiting event", async () => (await sentTexts(a.phoneNumberId)).length === burned + 1);
    expect(await t.bot!.cpuExhausted!(a.projectId)).toBeUndefined();
    if (process.getuid?.() === 0) expect(Math.max(...nices(pid))).toBe(TENANT_NICE);
    await t.bot!.whenIdle();
  }, 120_000);

  it('When a preview is CPU-heavy (start-up and handler), then it runs to its end: nothing of another event stops it', async () => {
    const a = await botProject(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
const started = Date.now();
let warm = 0;
while (Date.now() - started < 150) warm++;
export async function onMessage(m: InboundMessage): Promise<void> {
  const end = Date.now() + 700;
  let x = 0;
  while (Date.now() < end) x++;
  await sendText(m.from, 'computed ' + (x > 0 && warm > 0));
}
`);
    // A fresh minute: the deploy's build and trial run spent this file's small budget (builds are charged too).
    t.clock.advance(60_000);
    const res = await request(t.app).post('/v1/bot/preview').set(auth(a.key)).send({ text: 'heavy' });
    expect(res.status).toBe(200);
    expect(res.body.data.outcome.status).toBe('ok');
    expect(JSON.stringify(res.body.data.sends)).toContain('computed true');
  });

  timingBound("another project's p50 within twice its pace alone").it('When a project loops on many events at once, then another project\'s bot keeps its p50 within twice its pace alone (or 100 ms more)', async () => {
    const a = await botProject(BURN);
    const b = await botProject(ECHO);
    await freshMinute(a.projectId, b.projectId);
    const times = async (tag: string) => {
      const out: number[] = [];
      for (let i = 0; i < 12; i++) {
        const before = (await sentTexts(b.phoneNumberId)).length;
        const started = performance.now();
        await inbound(b.phoneNumberId, '14155553102', `${tag} ${i}`);
        await until("B's answer", async () => (await sentTexts(b.phoneNumberId)).length > before);
        out.push(performance.now() - started);
      }
      return out.sort((x, y) => x - y)[6];
    };
    await times('warm');
    const alone = await times('alone');
    // A: 16 events that each loop 2.5 s at once, in a fresh minute.
    t.clock.advance(60_000);
    for (let i = 0; i < 16; i++) await inbound(a.phoneNumberId, `141555532${String(i).padStart(2, '0')}`, '2500');
    await until("A's loops", async () => (sandboxSupervisor().processes.find((p) => p.key === a.projectId)));
    const beside = await times('beside');
    const bound = Math.max(2 * alone, alone + 100);
    console.log(`CPU budget: B p50 alone ${alone.toFixed(0)} ms, beside A's 16 loops ${beside.toFixed(0)} ms (bound ${bound.toFixed(0)} ms)`);
    expect(beside).toBeLessThanOrEqual(bound);
    t.clock.advance(60_000);
    await t.bot!.whenIdle();
  }, 120_000);
});
