/**
 * Builds run on the project's time, not the service's (issue 66, item 1): a deploy's or a
 * preview's build (esbuild and the type check) runs in a build process of its own at a lower
 * priority, its CPU is charged to the project's CPU budget, projects are served in turn with a
 * bound on what one project may have waiting, and a build whose process dies or hangs fails with
 * a clear diagnostic while the next one works. The build process is paused (SIGSTOP) where a test
 * needs builds to stay waiting: nothing here depends on how fast the machine builds.
 * @shared What it kills and pauses is its own build process, and nothing here depends on how
 *   fast the machine builds; so it shares the workers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { until } from '../support/bots.js';
import { processAlive } from '../support/local.js';
import { buildTree, buildsState, configureBuilds, BUILD_NICE, BUILD_TIMEOUT_MS, MAX_WAITING_BUILDS } from '../../lib/deploy/build.js';
import { childrenOf, nicesOf, treeCpuMs } from '../../lib/platform/process-tree.js';
import { CpuBudget } from '../../lib/bot/cpu-budget.js';
import { ApiError } from '../../lib/platform/errors.js';
import { BuildQueue, QueueFull } from '../../lib/deploy/build-queue.js';
import { BuildProcess } from '../../lib/deploy/build-process.js';
import type { ChildProcess } from 'node:child_process';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ bot: { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 3000 } });
});
afterAll(async () => {
  await t.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

async function projectWithKey() {
  const project = await t.admin.project();
  const key = await t.admin.key(project.id, ['code:read', 'code:write']);
  return { projectId: project.id, key: key.secret };
}

/** A tree whose type check takes a while: 600 typed functions beside an echo bot. */
const BIG = Array.from({ length: 600 }, (_, i) => `export function f${i}(a: { x: number; y: string[] }): Array<{ n: number }> { return a.y.map((s, k) => ({ n: a.x + s.length + k + ${i} })); }`).join('\n') + '\n';
const BOT = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
import { f1 } from './big.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'echo: ' + m.text + ' ' + f1({ x: 1, y: [] }).length);
}
`;
/** A self-contained tree for buildTree itself. */
const tree = (n = 0) => new Map([['src/main.ts', `import { f${n} } from './big.js';\nexport const out: number = f${n}({ x: 1, y: ['a'] })[0].n;\n`], ['src/big.ts', BIG]]);

async function putTree(key: string) {
  for (const [path, content] of [['src/big.ts', BIG], ['src/bot.ts', BOT]]) {
    const res = await request(t.app).put('/v1/files/' + encodeURIComponent(path)).set(auth(key)).send({ content });
    expect(res.status).toBeLessThan(300);
  }
}

const preview = (key: string) => request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'hi' });
const cpuMsOfProcess = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
/** The build process's id, once it runs. */
const buildPid = () => {
  const pid = buildsState().pid;
  if (!pid) throw new Error('no build process');
  return pid;
};
/** True once no process has this id. */
const ended = (pid: number) => !processAlive(pid);
/** Resolves to the label when `p` settles, so the order builds end in can be compared. */
const settled = (order: string[], label: string, p: Promise<unknown>) => p.then((r) => (order.push(label), r), (e) => (order.push(`${label}!`), Promise.reject(e)));

describe('builds run in a build process, on the project\'s time', () => {
  it('When a project previews a large tree, then the build runs in another process, which spends far more CPU on it than the service\'s own process does', async () => {
    const { key } = await projectWithKey();
    await putTree(key);
    // Warm: the build process, the sandbox process and the compiler's standard library are started and loaded.
    expect((await preview(key)).status).toBe(200);
    const pid = buildPid();
    expect(pid).not.toBe(process.pid);
    const buildBefore = treeCpuMs(pid);
    const mainBefore = cpuMsOfProcess();
    for (let i = 0; i < 3; i++) {
      const res = await preview(key);
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body.data.sends)).toContain('echo: hi 0');
    }
    const main = cpuMsOfProcess() - mainBefore;
    const build = treeCpuMs(pid) - buildBefore;
    console.log(`3 previews of a 600-function tree: the service's process spent ${main.toFixed(0)} ms of CPU, the build process (and esbuild's) ${build.toFixed(0)} ms`);
    expect(buildsState().pid).toBe(pid);
    expect(build).toBeGreaterThan(0);
    // The service still answers HTTP, reads the tree and runs the preview's helpers: a fraction of the build.
    expect(main).toBeLessThan(build / 2);
  }, 120_000);

  it(`When the build process runs, then every thread of it and of esbuild's process under it runs at nice ${BUILD_NICE} or lower priority`, async () => {
    expect((await buildTree(tree(), { projectId: 'prj_nice' })).ok).toBe(true);
    const pid = buildPid();
    const children = childrenOf(pid);
    expect(children.length).toBeGreaterThan(0);
    for (const p of [pid, ...children]) {
      const nices = nicesOf(p);
      expect(nices.length).toBeGreaterThan(0);
      expect(Math.min(...nices)).toBeGreaterThanOrEqual(BUILD_NICE);
    }
  }, 60_000);

  it('When a project builds, then its CPU budget counter grows by the CPU the build spent', async () => {
    const { projectId } = await projectWithKey();
    const budget = new CpuBudget(t.services.deps, { setPriority: () => undefined, dedicate: () => undefined });
    expect((await buildTree(tree(1))).ok).toBe(true);
    expect(await budget.spentThisMinute(projectId)).toBe(0);
    const pid = buildPid();
    const before = treeCpuMs(pid);
    const built = await buildTree(tree(2), { projectId });
    const spent = treeCpuMs(pid) - before;
    expect(built.ok).toBe(true);
    expect(spent).toBeGreaterThan(0);
    // Told to the budget, which adds it to the shared counters within its flush (250 ms).
    const counted = await until('the build counted', async () => (await budget.spentThisMinute(projectId)) || undefined);
    console.log(`one build: ${spent} ms of CPU read from /proc, ${counted} ms counted in the project's budget`);
    // Whole milliseconds are counted (the rest carried to the next flush); /proc counts in 10 ms ticks.
    expect(counted).toBeGreaterThanOrEqual(Math.floor(spent) - 10);
    expect(counted).toBeLessThanOrEqual(spent + 10);
  }, 60_000);
});

describe('builds are served in turn per project, with a bound on what one project has waiting', () => {
  it(`When project A floods builds, then past ${MAX_WAITING_BUILDS} waiting its builds (preview and deploy alike) are refused 429 rate_limited with Retry-After, and B's single build is served before A's waiting ones`, async () => {
    const a = await projectWithKey();
    const b = await projectWithKey();
    await putTree(a.key);
    expect((await buildTree(tree())).ok).toBe(true);
    const pid = buildPid();
    // Paused: what is sent to it stays in flight, and what is queued stays queued.
    process.kill(pid, 'SIGSTOP');
    const order: string[] = [];
    let pending: Array<Promise<unknown>> = [];
    try {
      pending = [1, 2, 3].map((i) => settled(order, `A${i}`, buildTree(tree(i), { projectId: a.projectId })));
      await expect(buildTree(tree(4), { projectId: a.projectId })).rejects.toMatchObject({ code: 'rate_limited', headers: { 'Retry-After': expect.stringMatching(/^[1-9]\d*$/) } });
      pending.push(settled(order, 'B1', buildTree(tree(5), { projectId: b.projectId })));
      expect(buildsState()).toMatchObject({ running: 1, waiting: { [a.projectId]: 2, [b.projectId]: 1 } });

      const refused = await preview(a.key);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
      expect(refused.body.error.message).toMatch(/already has 2 builds waiting/);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      const deploy = await request(t.app).post('/v1/deployments').set(auth(a.key)).send({});
      expect(deploy.status).toBe(429);
      expect(deploy.body.error.code).toBe('rate_limited');
      expect((await request(t.app).get('/v1/deployments').set(auth(a.key))).body.data.deployments).toEqual([]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const results = await Promise.all(pending);
    expect(results.every((r) => (r as { ok: boolean }).ok)).toBe(true);
    expect(order).toEqual(['A1', 'B1', 'A2', 'A3']);
    // Served: A may build again.
    expect((await preview(a.key)).status).toBe(200);
  }, 120_000);
});

describe('the builds\' queue takes projects in turn', () => {
  it('When three projects wait, one with a full queue, then each gets one build a round, in the order they came, and the full one is refused naming the builds ahead', async () => {
    const queue = new BuildQueue({ concurrency: 1, maxWaitingPerProject: 2 });
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const job = (label: string) => () => new Promise<void>((resolve) => gates.set(label, () => (order.push(label), resolve())));
    const done = [
      queue.run('A', job('A1')), queue.run('A', job('A2')), queue.run('A', job('A3')),
      queue.run('B', job('B1')), queue.run('B', job('B2')), queue.run('C', job('C1')),
    ];
    let refused: unknown;
    try {
      void queue.run('A', job('A4'));
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(QueueFull);
    // The running build, then one of B and one of C, before A's next.
    expect((refused as QueueFull).turnsAhead).toBe(3);
    expect(queue.state).toEqual({ running: 1, waiting: { A: 2, B: 2, C: 1 } });
    // Each build ends when let go: one at a time, whoever runs.
    for (let i = 0; i < 6; i++) {
      await until('a build to run', async () => gates.size > i || undefined);
      [...gates.values()][i]();
      await Promise.resolve();
    }
    await Promise.all(done);
    expect(order).toEqual(['A1', 'B1', 'C1', 'A2', 'B2', 'A3']);
    expect(queue.state).toEqual({ running: 0, waiting: {} });
  });
});

describe('a build never hangs on its process', () => {
  it('When the build process is killed during a build, then that build fails with a diagnostic saying so, and the next build works in a new process', async () => {
    expect((await buildTree(tree())).ok).toBe(true);
    const pid = buildPid();
    // Paused first, so the build cannot have been answered before the kill.
    process.kill(pid, 'SIGSTOP');
    const pending = buildTree(tree(3), { projectId: 'prj_killed' });
    process.kill(pid, 'SIGKILL');
    const failed = await pending;
    expect(failed).toEqual({ ok: false, diagnostics: [{ file: 'src/main.ts', line: 1, column: 1, message: 'The build process ended (SIGKILL) during the build; nothing was built. Try again.', source: 'bundle' }] });
    const next = await buildTree(tree(4), { projectId: 'prj_killed' });
    expect(next.ok).toBe(true);
    expect(buildsState().pid).not.toBe(pid);
  }, 60_000);

  it('When a build passes its time bound, then its process is killed and the build fails saying so; the next build works', async () => {
    expect((await buildTree(tree())).ok).toBe(true);
    const pid = buildPid();
    configureBuilds({ timeoutMs: 1000 });
    try {
      process.kill(pid, 'SIGSTOP');
      const failed = await buildTree(tree(5), { projectId: 'prj_slow' });
      expect(failed.ok).toBe(false);
      expect(!failed.ok && failed.diagnostics[0].message).toBe('The build took longer than 1 s and was stopped; nothing was built.');
    } finally {
      configureBuilds({ timeoutMs: BUILD_TIMEOUT_MS });
    }
    await until('the paused process ended', async () => ended(pid));
    expect((await buildTree(tree(6), { projectId: 'prj_slow' })).ok).toBe(true);
    expect(buildsState().pid).not.toBe(pid);
  }, 60_000);

  it('When a build of a project is refused for its queue, then the error is the API\'s 429 rate_limited', async () => {
    // The refusal is an ApiError, so every operation that builds answers it with the envelope.
    expect((await buildTree(tree())).ok).toBe(true);
    const pid = buildPid();
    process.kill(pid, 'SIGSTOP');
    const pending: Array<Promise<unknown>> = [];
    try {
      for (let i = 0; i <= MAX_WAITING_BUILDS; i++) pending.push(buildTree(tree(i), { projectId: 'prj_bound' }));
      const refusal = await buildTree(tree(9), { projectId: 'prj_bound' }).catch((e) => e);
      expect(refusal).toBeInstanceOf(ApiError);
      expect(refusal).toMatchObject({ code: 'rate_limited', status: 429, details: { budget: 'builds', limit: MAX_WAITING_BUILDS } });
      // Builds without a project (the service's own: tests, the bench) are not bounded.
      pending.push(buildTree(tree(8)));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    for (const p of await Promise.all(pending)) expect((p as { ok: boolean }).ok).toBe(true);
  }, 60_000);
});

describe('A build process kept between instances (BuildProcessKeeper: a test worker keeps one warm between its files)', () => {
  const keeperOf = () => {
    const kept: ChildProcess[] = [];
    let spare: ChildProcess | undefined;
    return {
      kept,
      take: () => {
        const c = spare;
        spare = undefined;
        return c;
      },
      keep: (c: ChildProcess) => {
        kept.push(c);
        spare = c;
      },
    };
  };

  it('When an instance with a keeper stops idle, then its process is kept running and the next instance builds in it without starting another', async () => {
    const keeper = keeperOf();
    const first = new BuildProcess();
    first.keeper = keeper;
    expect((await first.build(tree(1), 30_000)).result.ok).toBe(true);
    const pid = first.pid!;
    await first.stop();
    expect(keeper.kept.map((c) => c.pid)).toEqual([pid]);
    expect(() => process.kill(pid, 0)).not.toThrow();

    const second = new BuildProcess();
    second.keeper = keeper;
    const { result, cpuMs } = await second.build(tree(2), 30_000);
    expect(result.ok).toBe(true);
    expect(second.pid).toBe(pid);
    expect(cpuMs).toBeGreaterThan(0);
    // A broken tree is still answered with its diagnostics: nothing of the first build is carried over.
    const broken = await second.build(new Map([['src/main.ts', 'export const n: number = "text";\n']]), 30_000);
    expect(broken.result.ok).toBe(false);
    second.keeper = undefined;
    await second.stop();
    await until('the process ends once stopped without a keeper', async () => ended(pid));
  }, 60_000);

  it('When a kept process has ended, then the next instance starts a new one and builds', async () => {
    const keeper = keeperOf();
    const first = new BuildProcess();
    first.keeper = keeper;
    expect((await first.build(tree(3), 30_000)).result.ok).toBe(true);
    await first.stop();
    const [child] = keeper.kept;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
    // What the test environment's keeper does: an ended process is not handed out.
    const second = new BuildProcess();
    second.keeper = { take: () => (child.exitCode === null && child.signalCode === null ? child : undefined), keep: () => undefined };
    expect((await second.build(tree(4), 30_000)).result.ok).toBe(true);
    expect(second.pid).not.toBe(child.pid);
    second.keeper = undefined;
    await second.stop();
  }, 60_000);
});
