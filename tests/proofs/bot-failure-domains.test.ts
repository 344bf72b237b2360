/**
 * A tenant's failure is its own (issue 55): each project's bots run in a sandbox process of their
 * own, one event per isolate; what a bot does to its heap, its process or its time costs its own
 * event, never another project's; all of a bot's memory is counted; and an event that runs again
 * (a crash, a timeout, its process ended) takes its effects once, answered from its journal.
 * Against the real sandbox, PostgreSQL and the simulator.
 * @shared What it kills and exhausts are its own app's sandbox processes; its two time bounds are
 *   declared (timingBound), one a pace against its own baseline; so it shares the workers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { botWorld, p50, until } from '../support/bots.js';
import { MOVED_NICE, SandboxSupervisor, TENANT_NICE, sandboxSupervisor } from '../../lib/sandbox/supervisor.js';
import { nicesOf } from '../../lib/platform/process-tree.js';
import { timingBound } from '../support/retry-timing.js';

const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 3000 };

let t: TestApp;
let slow: http.Server;
let slowUrl: string;
let big: string;
beforeAll(async () => {
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    bot: LIMITS,
    config: { devAllowPrivateTargets: true, botMaxAbnormalRuns: 3 },
  });
  big = 'b'.repeat(1_040_000);
  // A backend that answers slowly (holds an event in flight) or with a large body.
  slow = http.createServer((req, res) => {
    if (req.url?.startsWith('/big')) return void res.end(big);
    setTimeout(() => res.end('ok'), Number(new URL(req.url!, 'http://x').searchParams.get('ms') ?? 800));
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
  w = botWorld(t);
});
afterAll(async () => {
  slow.closeAllConnections();
  await new Promise((r) => slow.close(r));
  await t.close();
});

let w: ReturnType<typeof botWorld>;
const botProject = (source: string, table?: string) => w.botProject(source, { table });
const inbound = (phoneNumberId: string, from: string, text: string) => w.inbound(phoneNumberId, from, text);
const sentTexts = (phoneNumberId: string, to?: string) => w.sentTexts(phoneNumberId, to);
const botLogs = (projectId: string) => w.botLogs(projectId);
const inboxRows = (projectId: string) => w.inboxRows(projectId);
const tableRows = (key: string, table: string) => w.tableRows(key, table);
const settleAll = (projectId: string) => w.settleAll(projectId);

/** The sandbox process hosting the project's new sandboxes now (a shared one, or its own). */
const pidOf = (projectId: string) => sandboxSupervisor().processOf(projectId)?.pid;
const livePids = () => sandboxSupervisor().processes.map((p) => p.pid);

const ECHO = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'echo: ' + m.text);
}
`;

/** B's reply times, one message at a time (each waits for its answer). */
async function replyTimes(b: { phoneNumberId: string }, from: string, n: number, tag: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = (await sentTexts(b.phoneNumberId, from)).length;
    const started = performance.now();
    await inbound(b.phoneNumberId, from, `${tag} ${i}`);
    await until(`B's answer ${i}`, async () => (await sentTexts(b.phoneNumberId, from)).length > before);
    times.push(performance.now() - started);
  }
  return times;
}

describe('a full heap meets a large answer', () => {
  const fillThen = (what: string) => `import { files, http, sendText, type InboundMessage } from './platform/runtime/index.js';
const kept: number[][] = [];
export async function onMessage(m: InboundMessage): Promise<void> {
  // About 1 MB per array of doubles, kept in a global.
  for (let i = 0; i < Number(m.text); i++) kept.push(new Array(131072).fill(1.5));
  let said = '';
  try {
    ${what}
  } catch (e) {
    said = 'refused ' + (e as { code?: string }).code;
  }
  kept.length = 0;
  await sendText(m.from, said);
}
`;

  for (const [name, what] of [
    ['fill 30 MB, then read a 1,000,000-byte file', "const f: any = await files.get('big2.txt'); said = f.ok === false ? 'refused ' + f.error.code : 'file ' + f.size;"],
    ['fill 30 MB, then fetch a 1,040,000-character body', "const r: any = await http.fetch(SLOW + '/big'); said = r.ok === false ? 'refused ' + r.error.code : 'body ' + String(r.body).length;"],
  ]) timingBound("another project's p50 within twice its pace alone").it(`When a bot does "${name}", then its event gets memory_limit instead of aborting its process, and another project's bot keeps its pace and loses nothing`, async () => {
    const a = await botProject(fillThen(what).replace('SLOW', JSON.stringify(slowUrl)));
    const upload = await request(t.app).put(`/admin/projects/${a.projectId}/files/big2.txt`).set(w.admin()).set('Content-Type', 'application/octet-stream').send(Buffer.from('a'.repeat(1_000_000)));
    expect(upload.status).toBeLessThan(300);
    const b = await botProject(ECHO);
    // B's pace alone (the first message starts its process).
    await replyTimes(b, '14155552200', 1, 'warm');
    const alone = await replyTimes(b, '14155552200', 12, 'alone');

    // Beside A: A's events fill their heap and ask for a large answer, over and over.
    await inbound(a.phoneNumberId, '14155552201', '1');
    await until("A's process", async () => pidOf(a.projectId));
    const aPid = pidOf(a.projectId);
    // From just under the heap's limit to past it (where the fill itself exhausts the isolate).
    const fills = [29, 30, 31, 32, 33, 34];
    for (const [i, mb] of fills.entries()) await inbound(a.phoneNumberId, `1415555221${i}`, String(mb));
    const beside = await replyTimes(b, '14155552200', 12, 'beside');
    await settleAll(a.projectId);
    await t.bot!.whenIdle();

    // Each of A's events got the answer, or was refused with the reason, or ran out of its own
    // heap while filling it (its isolate's memory_limit); A's process never aborted. On a loaded
    // machine the helper call may be refused for its time first (`refused timeout`): a refusal too.
    const aSaid = (await sentTexts(a.phoneNumberId)).slice(1);
    const logs = (await botLogs(a.projectId)).map((l) => l.message);
    console.log(`A's answers by fill (MB ${fills.join(', ')}): ${JSON.stringify(aSaid)}; memory_limit runs: ${logs.filter((m) => /memory limit/.test(m)).length}`);
    expect(aSaid.every((said) => /^(file 1000000|body 1040000|refused memory_limit|refused timeout)$/.test(said))).toBe(true);
    expect(aSaid).toContain('refused memory_limit');
    expect((await botLogs(a.projectId)).filter((l) => l.kind === 'crash')).toEqual([]);
    // The process A started in never ended (A itself may have been moved to one of its own, for its repeated memory limits).
    expect(livePids()).toContain(aPid);
    // B lost nothing and kept its pace (a timing bound: at most twice its p50 alone, or 100 ms more).
    expect(await sentTexts(b.phoneNumberId, '14155552200')).toHaveLength(25);
    const bound = Math.max(2 * p50(alone), p50(alone) + 100);
    console.log(`B p50 alone ${p50(alone).toFixed(0)} ms, beside A ${p50(beside).toFixed(0)} ms (bound ${bound.toFixed(0)} ms)`);
    expect(p50(beside)).toBeLessThanOrEqual(bound);
  }, 90_000);
});

describe('WebAssembly', () => {
  it('When a bot looks for WebAssembly, then there is none in the sandbox, so no memory outside its limit', async () => {
    const a = await botProject(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const g = globalThis as { WebAssembly?: { Memory: new (d: { initial: number }) => unknown } };
  let said = 'typeof ' + typeof g.WebAssembly;
  try {
    new g.WebAssembly!.Memory({ initial: 4096 });
    said += ', memory made';
  } catch (e) {
    said += ', ' + (e as Error).name;
  }
  await sendText(m.from, said);
}
`);
    await inbound(a.phoneNumberId, '14155552300', 'wasm');
    await t.bot!.whenIdle();
    expect(await sentTexts(a.phoneNumberId)).toEqual(['typeof undefined, TypeError']);
    const rss = sandboxSupervisor().processOf(a.projectId)?.rssMb;
    console.log(`sandbox process RSS after the WebAssembly probe: ${rss} MB`);
  });
});

describe('a process that ends under several events', () => {
  it("When a project's sandbox process is killed while several of its events run, then each runs again uncounted, none is set aside, and each row is written once", async () => {
    const b = await botProject(`import { http, sendText, tables, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await tables.insert('visits', { phone: m.from, body: m.text ?? '' });
  await http.fetch(${JSON.stringify(slowUrl)} + '/hold?ms=1500');
  await sendText(m.from, 'noted ' + m.text);
}
`, 'visits');
    const other = await botProject(ECHO);
    await inbound(other.phoneNumberId, '14155552399', 'before');
    await until('the other bot', async () => (await sentTexts(other.phoneNumberId)).length === 1);
    const otherPid = pidOf(other.projectId);
    for (let i = 0; i < 6; i++) await inbound(b.phoneNumberId, `1415555240${i}`, `v${i}`);
    // Every event has written its row and waits on the backend.
    await until('six rows', async () => (await tableRows(b.key, 'visits')).length === 6);
    const pid = pidOf(b.projectId)!;
    process.kill(pid, 'SIGKILL');
    await settleAll(b.projectId);
    expect(await inboxRows(b.projectId)).toEqual([]);
    expect((await tableRows(b.key, 'visits')).map((r) => r.body).sort()).toEqual(['v0', 'v1', 'v2', 'v3', 'v4', 'v5']);
    expect((await sentTexts(b.phoneNumberId)).sort()).toEqual(['noted v0', 'noted v1', 'noted v2', 'noted v3', 'noted v4', 'noted v5']);
    expect((await botLogs(b.projectId)).filter((l) => l.kind === 'crash' || l.kind === 'set_aside')).toEqual([]);
    // Only B's events were in flight there: B was moved to a process of its own, said in its log.
    expect(sandboxSupervisor().placement(b.projectId)).toMatchObject({ process: 'own', reason: 'crash' });
    expect((await botLogs(b.projectId)).filter((l) => l.kind === 'moved')).toHaveLength(1);
    // Another project, with nothing in flight there, stays where it was, and is answered as before.
    expect(sandboxSupervisor().placement(other.projectId)).toEqual({ process: 'shared' });
    if (otherPid !== pid) expect(pidOf(other.projectId)).toBe(otherPid);
    await inbound(other.phoneNumberId, '14155552399', 'after');
    await until('the other bot, after', async () => (await sentTexts(other.phoneNumberId)).length === 2);
    expect(await botLogs(other.projectId)).toEqual([]);
  });
});

describe('a shared process that ends under several projects', () => {
  it("When a shared sandbox process is killed while two projects' events run there, then each runs again uncounted, and the neighbour keeps running several events at once (it is a suspect moved out, not held to one event at a time)", async () => {
    const HOLD = `import { http, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await http.fetch(${JSON.stringify(slowUrl)} + '/hold?ms=1500');
  await sendText(m.from, 'held ' + m.text);
}
`;
    // Two projects whose isolates share one process (a project's shared process follows its id).
    const first = await botProject(HOLD);
    await inbound(first.phoneNumberId, '14155552500', 'warm');
    await until('the first answer', async () => (await sentTexts(first.phoneNumberId)).length === 1);
    let second: Awaited<ReturnType<typeof botProject>> | undefined;
    for (let k = 0; k < 8 && !second; k++) {
      const p = await botProject(HOLD);
      await inbound(p.phoneNumberId, '14155552501', 'warm');
      await until('its first answer', async () => (await sentTexts(p.phoneNumberId)).length === 1);
      if (pidOf(p.projectId) === pidOf(first.projectId)) second = p;
    }
    expect(second).toBeDefined();
    const neighbour = second!;
    const pid = pidOf(first.projectId)!;
    for (let i = 0; i < 2; i++) {
      await inbound(first.phoneNumberId, `141555526${i}0`, `f${i}`);
      await inbound(neighbour.phoneNumberId, `141555527${i}0`, `n${i}`);
    }
    await until('four events in flight there', async () => (await t.bot!.capacity!(first.projectId)).events.running === 2 && (await t.bot!.capacity!(neighbour.projectId)).events.running === 2);
    process.kill(pid, 'SIGKILL');
    await settleAll(neighbour.projectId);
    await settleAll(first.projectId);
    expect((await sentTexts(neighbour.phoneNumberId)).filter((x) => x !== 'held warm').sort()).toEqual(['held n0', 'held n1']);
    expect((await botLogs(neighbour.projectId)).filter((l) => l.kind === 'crash' || l.kind === 'set_aside')).toEqual([]);
    expect(sandboxSupervisor().placement(neighbour.projectId)).toMatchObject({ process: 'own', reason: 'suspect' });
    // Four customers at once: the neighbour runs them side by side, as before the crash.
    for (let c = 0; c < 4; c++) await inbound(neighbour.phoneNumberId, `141555528${c}0`, `after${c}`);
    await until('several of its events at once', async () => (await t.bot!.capacity!(neighbour.projectId)).events.running >= 2, 10_000);
    await settleAll(neighbour.projectId);
  }, 60_000);
});

describe('a timeout stops only its event', () => {
  it('When one event loops past its limit beside 48 that each write a row, then exactly 48 rows are written, and the looping event is set aside alone', async () => {
    const a = await botProject(`import { tables, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  if (m.text === 'loop') {
    for (;;) {}
  }
  await tables.insert('runs', { phone: m.from, body: m.text ?? '' });
}
`, 'runs');
    await inbound(a.phoneNumberId, '14155552500', 'loop');
    for (let i = 0; i < 48; i++) await inbound(a.phoneNumberId, `141555526${String(i).padStart(2, '0')}`, `w${i}`);
    const rows = await settleAll(a.projectId);
    expect(rows).toEqual([{ abnormal_runs: 3, set_aside: true }]);
    expect(await tableRows(a.key, 'runs')).toHaveLength(48);
    expect((await botLogs(a.projectId)).filter((l) => l.kind === 'timeout' || l.kind === 'set_aside')).toHaveLength(3);
  });

  it('When an event writes a row and then times out, then its reruns are answered from its journal: one row, not one per run', async () => {
    const a = await botProject(`import { tables, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const row = await tables.insert('marks', { phone: m.from, body: m.text ?? '' });
  if (!row) throw new Error('no row');
  for (;;) {}
}
`, 'marks');
    await inbound(a.phoneNumberId, '14155552700', 'once');
    const rows = await settleAll(a.projectId);
    expect(rows).toEqual([{ abnormal_runs: 3, set_aside: true }]);
    expect(await tableRows(a.key, 'marks')).toHaveLength(1);
  });
});

describe('the cap on sandbox processes', () => {
  const BUNDLE = 'globalThis.__platformDispatch = async (e) => { const end = Date.now() + JSON.parse(e).ms; while (Date.now() < end) {} };';
  const host = async () => '{"ok":true,"value":null}';

  it('When more projects than BOT_SANDBOX_PROCESSES want a process, then each gets its own in turn: a busy one keeps it, an idle one is stopped for the next in the queue', async () => {
    const sup = new SandboxSupervisor({ processes: 1, maxRssMb: 512, idleMs: 60_000 });
    try {
      const a = await sup.create('prj_a', BUNDLE, undefined, host, LIMITS);
      expect(sup.processes.map((p) => p.key)).toEqual(['prj_a']);
      // A runs for 600 ms: B waits for it, then A's idle process is stopped for B.
      const running = a.dispatch(JSON.stringify({ ms: 600 }));
      const started = performance.now();
      const b = await sup.create('prj_b', BUNDLE, undefined, host, LIMITS);
      expect((await running).status).toBe('ok');
      expect(performance.now() - started).toBeGreaterThanOrEqual(500);
      expect(sup.processes.map((p) => p.key)).toEqual(['prj_b']);
      expect(a.usable).toBe(false);
      expect((await b.dispatch(JSON.stringify({ ms: 1 }))).status).toBe('ok');
    } finally {
      sup.close();
    }
  });

  it('When a process ends while start-ups are in flight, then a start-up that was alone is told it ran alone (charged) and start-ups beside another are told of their bystanders (charged to none)', async () => {
    // A start-up that spins 800 ms, so the process can be ended while it runs.
    const SLOW_START = 'const end = Date.now() + 800; while (Date.now() < end) {} globalThis.__platformDispatch = async () => {};';
    const sup = new SandboxSupervisor({ processes: 4, maxRssMb: 512, idleMs: 60_000 });
    const killWhileStarting = async (key: string, n: number) => {
      const starts = Array.from({ length: n }, () => sup.create(key, SLOW_START, undefined, host, LIMITS).then(() => undefined, (e: unknown) => e));
      const pid = await until(`${key}'s process`, async () => sup.processOf(key)?.pid);
      // Its start-ups are under way (the child is up and spinning) before it is ended.
      await new Promise((r) => setTimeout(r, 300));
      process.kill(pid, 'SIGKILL');
      return Promise.all(starts);
    };
    try {
      const alone = await killWhileStarting('prj_alone', 1);
      expect(alone).toEqual([expect.objectContaining({ name: 'SandboxCrashed', bystanders: 0 })]);
      const together = await killWhileStarting('prj_three', 3);
      expect(together).toEqual(Array(3).fill(expect.objectContaining({ name: 'SandboxCrashed', bystanders: 2 })));
    } finally {
      sup.close();
    }
  });

  timingBound('stopped within 2 s of passing the RSS cap').it('When a sandbox process passes BOT_SANDBOX_MAX_RSS_MB while an event runs, then it is stopped at once and the event is answered memory_limit', async () => {
    // A bound below what a sandbox process holds at rest: the first read while an event runs is over it.
    const sup = new SandboxSupervisor({ processes: 1, maxRssMb: 40, idleMs: 60_000 });
    try {
      const a = await sup.create('prj_rss', BUNDLE, undefined, host, LIMITS);
      const started = performance.now();
      const outcome = await a.dispatch(JSON.stringify({ ms: 2500 }));
      expect(outcome).toMatchObject({ status: 'memory_limit', message: expect.stringMatching(/passed its memory bound \(40 MB, BOT_SANDBOX_MAX_RSS_MB\)/), bystanders: 0 });
      // Stopped within the watch's reads, not at the event's end.
      expect(performance.now() - started).toBeLessThan(2000);
    } finally {
      sup.close();
    }
  });
});

describe('the sandbox processes\' priorities', () => {
  const BUNDLE = 'globalThis.__platformDispatch = async () => {};';
  const host = async () => '{"ok":true,"value":null}';

  it('When a project has a process of its own, then it runs at the sandbox nice; once its events end at a limit, at the lowest priority (MOVED_NICE), even when its budget alone would not lower it', async () => {
    // No shared processes: every project in a process of its own, started at its priority.
    const sup = new SandboxSupervisor({ processes: 2, sharedProcesses: 0, maxRssMb: 512, idleMs: 60_000 });
    try {
      const busy = await sup.create('prj_busy', BUNDLE, undefined, host, LIMITS);
      const rude = await sup.create('prj_rude', BUNDLE, undefined, host, LIMITS);
      expect((await busy.dispatch('{}')).status).toBe('ok');
      expect((await rude.dispatch('{}')).status).toBe('ok');
      const niceOf = (key: string) => Math.min(...nicesOf(sup.processOf(key)!.pid!));
      expect([niceOf('prj_busy'), niceOf('prj_rude')]).toEqual([TENANT_NICE, TENANT_NICE]);
      sup.noteOverLimit('prj_rude');
      expect([niceOf('prj_busy'), niceOf('prj_rude')]).toEqual([TENANT_NICE, MOVED_NICE]);
      // The budget lowers it further past its budget; back within it, the limit's floor holds.
      sup.setPriority('prj_rude', 19);
      expect(niceOf('prj_rude')).toBe(19);
      sup.setPriority('prj_rude', 0);
      if (process.getuid?.() === 0) expect(niceOf('prj_rude')).toBe(MOVED_NICE);
      expect(nicesOf(process.pid)).toContain(0);
    } finally {
      sup.close();
    }
  });

  it('When BOT_SANDBOX_NICE is 5, then every thread of every sandbox process, shared or a project\'s own, runs at nice 5 or lower priority, below the service', async () => {
    const shared = new SandboxSupervisor({ processes: 2, sharedProcesses: 1, maxRssMb: 512, idleMs: 60_000, nice: 5 });
    const own = new SandboxSupervisor({ processes: 2, sharedProcesses: 0, maxRssMb: 512, idleMs: 60_000, nice: 5 });
    try {
      for (const sup of [shared, own]) {
        const box = await sup.create('prj_nice', BUNDLE, undefined, host, LIMITS);
        expect((await box.dispatch('{}')).status).toBe('ok');
        const pid = sup.processOf('prj_nice')!.pid!;
        expect(Math.min(...nicesOf(pid))).toBeGreaterThanOrEqual(5);
      }
      expect(nicesOf(process.pid)).toContain(0);
    } finally {
      shared.close();
      own.close();
    }
  });
});
