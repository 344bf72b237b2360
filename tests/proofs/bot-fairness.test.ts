/**
 * Fair by construction (issue 66): many projects' bots share a few warm sandbox processes, so
 * projects that hold every event to its time limit (waiting, no CPU) take no process from anyone;
 * work in flight is shared between projects in turn (lib/sandbox/fair-slots.ts), the fewest in
 * flight first; and a project that burns CPU is moved to a process of its own.
 * Against the real sandbox, PostgreSQL and the simulator.
 * @shared Its load is its own app's sandboxes, and its one bound (a quiet project answered within
 *   5 s while 16 projects hold their events) is wide enough for another file beside it; so it shares the workers.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { botWorld, until, type BotProject } from '../support/bots.js';
import { sandboxSupervisor } from '../../lib/sandbox/supervisor.js';
import { IsolateGrowth, ISOLATES_FREE, ISOLATES_PER_SECOND } from '../../lib/bot/isolate-growth.js';
import { FairSlots } from '../../lib/sandbox/fair-slots.js';

// A long event limit, so every holder's event is still held while the quiet project is measured.
const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 20_000 };

let t: TestApp;
let w: ReturnType<typeof botWorld>;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS }, (app) => {
  t = app;
  w = botWorld(t);
});

const HOLD = `import { type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  // The deploy's sample message passes; every customer's is held to the limit.
  if (m.text === 'hold') await new Promise<void>(() => undefined);
}
`;
const ECHO = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'echo: ' + m.text);
}
`;

describe('FairSlots', () => {
  it('When slots are all taken, then a freed one goes to the waiting project with the fewest in flight, not to the first that asked', async () => {
    const slots = new FairSlots(2);
    const busy1 = await slots.acquire('busy');
    await slots.acquire('busy');
    const order: string[] = [];
    // The busy project queues three more before the quiet one asks.
    const waits = [slots.acquire('busy'), slots.acquire('busy'), slots.acquire('busy')].map((p) => p.then((r) => (order.push('busy'), r)));
    const quiet = slots.acquire('quiet').then((r) => (order.push('quiet'), r));
    expect(slots.stats).toEqual({ inFlight: 2, waiting: 4, projects: 1 });
    busy1();
    const releaseQuiet = await quiet;
    expect(order).toEqual(['quiet']);
    releaseQuiet();
    await waits[0];
    expect(order).toEqual(['quiet', 'busy']);
    // A release given twice frees one slot only.
    releaseQuiet();
    expect(slots.stats.inFlight).toBe(2);
  });
});

describe('projects that hold every event to its limit', () => {
  it("When 16 projects hold every event to its time limit, then a quiet project's bot answers each of 10 customers within 5 s, and no project waits for a process", async () => {
    const holders: BotProject[] = [];
    for (let i = 0; i < 16; i++) holders.push(await w.botProject(HOLD));
    const quiet = await w.botProject(ECHO);
    // The quiet bot's first answer (its first isolate) before the flood.
    await w.inbound(quiet.phoneNumberId, '14155557000', 'warm');
    await until('the warm answer', async () => (await w.sentTexts(quiet.phoneNumberId)).length === 1);

    // Each holder: 16 customers at once (each conversation runs one event at a time), every event held.
    await Promise.all(holders.map(async (h, i) => {
      for (let c = 0; c < 16; c++) await w.inbound(h.phoneNumberId, `14155571${String(i).padStart(2, '0')}${String(c).padStart(2, '0')}`, 'hold');
    }));
    await until('every holder event in flight', async () => sandboxSupervisor().slots.stats.inFlight >= 16 * 16, 30_000);

    const times: number[] = [];
    for (let c = 0; c < 10; c++) {
      const before = (await w.sentTexts(quiet.phoneNumberId)).length;
      const started = performance.now();
      await w.inbound(quiet.phoneNumberId, `141555720${c}`, `customer ${c}`);
      await until(`the answer to customer ${c}`, async () => (await w.sentTexts(quiet.phoneNumberId)).length > before, 10_000);
      times.push(performance.now() - started);
    }
    console.log(`fairness: 16 projects x 16 held events (${sandboxSupervisor().slots.stats.inFlight} in flight); the quiet project's 10 answers in ms: ${times.map((x) => x.toFixed(0)).join(', ')}; processes ${JSON.stringify(sandboxSupervisor().processes)}`);
    for (const ms of times) expect(ms).toBeLessThan(5000);
    // 17 projects, no process of their own: only the shared processes run.
    expect(sandboxSupervisor().processes.every((p) => p.shared)).toBe(true);
    expect(sandboxSupervisor().processes.length).toBeLessThanOrEqual(t.config.botSandboxSharedProcesses);
    await t.bot!.whenIdle();
  }, 180_000);
});

describe('a project that burns CPU', () => {
  it('When a project loops on its events, then it is moved to a process of its own (said in its bot log), its events still run once, and a quiet project in its shared process keeps answering', async () => {
    const burner = await w.botProject(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const end = Date.now() + 1500;
  let x = 0;
  while (Date.now() < end) x++;
  await sendText(m.from, 'burned ' + m.text + ' ' + (x > 0));
}
`);
    const quiet = await w.botProject(ECHO);
    expect(sandboxSupervisor().placement(burner.projectId)).toEqual({ process: 'shared' });
    for (let c = 0; c < 4; c++) await w.inbound(burner.phoneNumberId, `141555730${c}`, `b${c}`);
    await until('the burner moved', async () => sandboxSupervisor().placement(burner.projectId).process === 'own');
    await w.inbound(quiet.phoneNumberId, '14155573100', 'still there');
    await until("the quiet project's answer", async () => (await w.sentTexts(quiet.phoneNumberId)).length === 1);
    await t.bot!.whenIdle();
    // Each burning event answered once, though the move stopped and re-ran it.
    expect((await w.sentTexts(burner.phoneNumberId)).sort()).toEqual(['burned b0 true', 'burned b1 true', 'burned b2 true', 'burned b3 true']);
    const logs = await w.botLogs(burner.projectId);
    expect(logs.filter((l) => l.kind === 'moved').map((l) => l.message)).toEqual([expect.stringMatching(/moved to a sandbox process of its own .*CPU burst/)]);
    expect(sandboxSupervisor().processOf(burner.projectId)).toMatchObject({ key: burner.projectId, shared: false });
    expect(sandboxSupervisor().placement(quiet.projectId)).toEqual({ process: 'shared' });
    // The operator sees both: the burner past its burst in its own process, the quiet one shared and within it.
    const seen = await request(t.app).get(`/admin/projects/${burner.projectId}/bot/capacity`).set(w.admin());
    expect(seen.status).toBe(200);
    expect(seen.body.data).toMatchObject({
      cpu: { burst_ms: t.config.botCpuBurstMs, budget_ms: t.config.botCpuMsPerMinute, state: expect.stringMatching(/^(past_burst|exhausted)$/) },
      sandbox: { process: 'own', reason: 'cpu', until: expect.any(String) },
      events: { running: 0, queued: 0 },
    });
    expect(seen.body.data.cpu.spent_ms).toBeGreaterThanOrEqual(t.config.botCpuBurstMs);
    const calm = await request(t.app).get(`/admin/projects/${quiet.projectId}/bot/capacity`).set(w.admin());
    expect(calm.body.data).toMatchObject({ cpu: { state: 'within' }, sandbox: { process: 'shared', reason: null, until: null } });
    expect((await request(t.app).get('/admin/projects/prj_nope/bot/capacity').set(w.admin())).status).toBe(404);
  }, 120_000);
});

describe('a busy project on an idle instance', () => {
  it('When one project has 70 customers at once on an idle instance, then it runs up to 64 of their events at once, not 16, and never more', async () => {
    const busy = await w.botProject(HOLD);
    await Promise.all(Array.from({ length: 7 }, async (_, chunk) => {
      for (let c = 0; c < 10; c++) await w.inbound(busy.phoneNumberId, `1415557${String(chunk * 10 + c).padStart(4, '0')}`, 'hold');
    }));
    await until('64 of its events in flight', async () => sandboxSupervisor().slots.stats.inFlight >= 64, 30_000);
    // Past 64 it waits, though the instance has room.
    await new Promise((r) => setTimeout(r, 500));
    expect(sandboxSupervisor().slots.stats).toMatchObject({ inFlight: 64, projects: 1 });
    await t.bot!.whenIdle();
  }, 120_000);
});

describe('a project pool of isolates grows with its rate, not with its backlog', () => {
  it('When its events pile up while a few run, then at most ISOLATES_PER_SECOND new isolates are made a second past the first ISOLATES_FREE, and the rest wait for one given back', () => {
    const growth = new IsolateGrowth();
    let now = 10_000;
    // Nothing runs yet: the first ones are made whatever the rate (nothing would be given back).
    for (let k = 0; k < ISOLATES_PER_SECOND; k++) {
      expect(growth.mustWait(now, 0, 0)).toBe(false);
      growth.note(now);
    }
    expect(growth.mustWait(now, 0, 0)).toBe(false);
    // Eight made this second and eight running: the ninth waits.
    expect(growth.mustWait(now, ISOLATES_PER_SECOND, 0)).toBe(true);
    // A small pool is never held back (fewer than ISOLATES_FREE live).
    expect(growth.mustWait(now, ISOLATES_FREE - 1, 0)).toBe(false);
    // A second later the bound has room again.
    now += 1001;
    expect(growth.mustWait(now, ISOLATES_PER_SECOND, 0)).toBe(false);
  });
});
