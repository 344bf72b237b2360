/**
 * The service's bots run in sandbox processes it supervises (lib/sandbox/child.ts), never in its own.
 *
 * Policy and why:
 * - isolated-vm contains a bot's loops and heap (lib/sandbox/sandbox.ts), but not every failure:
 *   some end the process that hosts the isolate (a FatalRuntimeError thrown where isolated-vm does
 *   not catch it; a catastrophic out-of-memory). So each project's sandboxes run in a process of
 *   their own: what ends a process costs that project's events, never another project's. The
 *   service, its HTTP traffic and its database pool never share the isolates' process.
 * - Processes are started on demand (a project's first sandbox) and stopped when idle for
 *   `idleMs` (BOT_SANDBOX_IDLE_MS). At most `processes` live at once (BOT_SANDBOX_PROCESSES):
 *   past it, a project waits in one first-come queue; an idle process (nothing in flight) is
 *   stopped for the head of the queue at once, so a busy project keeps its process and an idle one
 *   yields it. A wait longer than QUEUE_WAIT_MS ends in SandboxBusy (the event stays in the inbox,
 *   not counted against it).
 * - Memory is bounded per process: while events run, the process's resident set is read from
 *   /proc every RSS_WATCH_MS; past `maxRssMb` (BOT_SANDBOX_MAX_RSS_MB) the process is stopped at
 *   once and its events are answered `memory_limit`. Each outcome also reports the resident set;
 *   past the bound the process is retired (stopped once its events end).
 * - When a process ends under events, each is answered with how many other events were in flight
 *   (`bystanders`): the runtime charges the abnormal run only to an event that ran alone
 *   (lib/bot/runtime.ts).
 * - CPU: while anything is in flight, the process's CPU (all its threads, from /proc) is told to
 *   `onCpu`, which charges the project's budget (lib/bot/cpu-budget.ts); a project past its burst
 *   or its budget has its process's threads lowered in priority (`setPriority`), so every other
 *   process and the service come first on the machine's cores.
 * - Nothing waits for ever on a child: an event not answered within its hard limit plus a margin,
 *   or a start-up within its limit plus the child's own start, kills the child (SIGKILL).
 * - Helper answers over their bound are refused here, before they are sent to the child.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, HARD_LIMIT_FACTOR, StartupError, maxResultOf, resultTooLarge, type HostFn, type Outcome, type SandboxLimits, type SandboxOptions } from './sandbox.js';
import type { ChildMessage, ParentMessage } from './protocol.js';

/** What the bot runtime, the preview and the deploy check need of a sandbox. */
export interface BotSandbox {
  readonly usable: boolean;
  /** What the bundle declared at start-up (its schedules, JSON text), if anything. */
  readonly declared?: string;
  dispatch(eventJson: string): Promise<Outcome>;
  dispose(): void;
}

export interface SupervisorOptions {
  /** Sandbox processes alive at once: one per project whose bot runs. */
  processes: number;
  maxRssMb: number;
  /** A process with nothing in flight for this long is stopped. */
  idleMs: number;
  /** Told the CPU each process spent (all its threads), in ms, as it runs (lib/bot/cpu-budget.ts). */
  onCpu?: (key: string, ms: number) => void;
}

export const DEFAULT_SUPERVISOR: SupervisorOptions = { processes: 8, maxRssMb: 512, idleMs: 60_000 };
/** How often a process's resident set is read while it runs events. */
const RSS_WATCH_MS = 100;
/** Longest wait for a free process before SandboxBusy. */
export const QUEUE_WAIT_MS = 30_000;
/** A process's priority (nice) on the machine's cores: its project within its budget, past its burst, past its budget. */
export type Priority = 0 | 10 | 19;
/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU time of `pid` (all threads) in ms from /proc (Linux), undefined elsewhere. */
function cpuMsOf(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}
/** Margin over an event's hard limit (or a start-up's limit) before the child is deemed stuck. */
const STUCK_MARGIN_MS = 10_000;
/** A child that does not say it is ready within this long is killed. */
const SPAWN_TIMEOUT_MS = 30_000;

/** No sandbox process came free in time (every one busy with other projects): try again later. */
export class SandboxBusy extends Error {
  constructor() {
    super(`Every sandbox process was busy for ${QUEUE_WAIT_MS / 1000} s.`);
    this.name = 'SandboxBusy';
  }
}

/** The resident set of `pid` in MB from /proc (Linux), undefined elsewhere. */
function residentMb(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
    return Math.round((pages * 4096) / 1048576);
  } catch {
    return undefined;
  }
}

/** The sandbox's process ended while it started: not the bot's fault, try again later. */
export class SandboxCrashed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxCrashed';
  }
}

const here = fileURLToPath(import.meta.url);
const fromSource = here.endsWith('.ts');
const CHILD_ENTRY = path.join(path.dirname(here), fromSource ? 'child.ts' : 'child.js');
const CHILD_ARGS = ['--no-node-snapshot', ...(fromSource ? ['--import', 'tsx'] : ['--enable-source-maps'])];

class SandboxProcess {
  readonly child: ChildProcess;
  alive = true;
  retiring = false;
  /** The last resident set the child reported (or the watch read), in MB. */
  rssMb = 0;
  /** When it last had something in flight (performance.now()). */
  lastActive = performance.now();
  /** Stopped by the memory watch: its events are answered `memory_limit`. */
  private overMemory = false;
  private rssWatch?: NodeJS.Timeout;
  private priority: Priority = 0;
  /** CPU time reported so far (ms). */
  private cpuSeen = 0;
  readonly ready: Promise<void>;
  private readonly sandboxes = new Map<number, SupervisedSandbox>();
  private readonly creates = new Map<number, { resolve: (declared?: string) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly dispatches = new Map<number, { sid: number; resolve: (o: Outcome) => void; started: number; timer: NodeJS.Timeout }>();
  private nextId = 1;
  private exitText = 'it ended';

  constructor(readonly key: string, private readonly options: SupervisorOptions, private readonly onGone: (p: SandboxProcess) => void, private readonly onIdle: () => void) {
    this.child = fork(CHILD_ENTRY, [], {
      execArgv: CHILD_ARGS,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // glibc's per-thread arenas hold freed copies of every isolate thread; two keep RSS near use.
      env: { ...process.env, MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? '2' },
    });
    // Neither the child nor its channel keeps the service running while nothing waits on it (a
    // test's process, a shutdown); a call in progress holds the channel (hold/let go).
    this.child.unref();
    this.letGo(0);
    this.hold();
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new SandboxCrashed('The sandbox process did not start in time.'));
        this.kill();
      }, SPAWN_TIMEOUT_MS);
      timer.unref();
      this.child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      this.child.once('exit', () => {
        clearTimeout(timer);
        reject(new SandboxCrashed(`The sandbox process ${this.exitText} while starting.`));
      });
    });
    this.ready.catch(() => {}).finally(() => this.letGo());
    this.child.on('message', (m: ChildMessage) => this.onMessage(m));
    this.child.on('error', () => this.kill());
    this.child.on('exit', (code, signal) => this.onExit(code, signal));
  }

  private waiting = 0;

  private hold(): void {
    if (this.waiting++ === 0) (this.child.channel as { ref?: () => void } | undefined)?.ref?.();
  }

  private letGo(n = 1): void {
    this.waiting -= n;
    if (this.waiting === 0) (this.child.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  private send(m: ParentMessage): void {
    if (!this.alive || !this.child.connected) return;
    try {
      this.child.send(m);
    } catch {
      this.kill();
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }

  /** Sandboxes asked of it and not yet made (its start-up included): it is not idle meanwhile. */
  private asked = 0;

  get idle(): boolean {
    return this.dispatches.size === 0 && this.creates.size === 0 && this.asked === 0;
  }

  async create(bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits, options: SandboxOptions): Promise<SupervisedSandbox> {
    this.asked++;
    try {
      await this.ready;
    } finally {
      this.asked--;
      this.lastActive = performance.now();
    }
    if (!this.alive) throw new SandboxCrashed(`The sandbox process ${this.exitText}.`);
    const sid = this.nextId++;
    const sandbox = new SupervisedSandbox(this, sid, host, options, limits);
    this.sandboxes.set(sid, sandbox);
    try {
      this.hold();
      this.watch();
      sandbox.declared = await new Promise<string | undefined>((resolve, reject) => {
        const timer = setTimeout(() => this.kill(), limits.startupTimeoutMs + STUCK_MARGIN_MS);
        this.creates.set(sid, { resolve, reject, timer });
        this.send({ t: 'create', sid, bundle, sourceMap, limits, ops: options.ops });
      }).finally(() => this.letGo());
      return sandbox;
    } catch (e) {
      this.sandboxes.delete(sid);
      throw e;
    }
  }

  dispatch(sid: number, event: string, limits: SandboxLimits): Promise<Outcome> {
    if (!this.alive) return Promise.resolve(this.crashed(performance.now(), 0));
    const did = this.nextId++;
    const started = performance.now();
    this.hold();
    this.watch();
    if (this.priority !== 0) this.applyPriority();
    return new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => this.kill(), limits.eventTimeoutMs * HARD_LIMIT_FACTOR + STUCK_MARGIN_MS);
      this.dispatches.set(did, { sid, resolve, started, timer });
      this.send({ t: 'dispatch', sid, did, event });
    }).finally(() => {
      this.letGo();
      this.lastActive = performance.now();
      if (this.idle) this.onIdle();
    });
  }

  /**
   * While anything is in flight: reads the resident set (past the bound the process is stopped at
   * once) and the CPU spent since the last read (told to `onCpu`).
   */
  private watch(): void {
    if (this.rssWatch) return;
    this.rssWatch = setInterval(() => {
      this.readCpu();
      if (this.idle) {
        clearInterval(this.rssWatch);
        this.rssWatch = undefined;
        return;
      }
      const mb = residentMb(this.child.pid);
      if (mb === undefined) return;
      this.rssMb = mb;
      if (mb > this.options.maxRssMb) {
        this.overMemory = true;
        this.kill();
      }
    }, RSS_WATCH_MS);
    this.rssWatch.unref();
  }

  private readCpu(): void {
    const ms = cpuMsOf(this.child.pid);
    if (ms === undefined || ms <= this.cpuSeen) return;
    const spent = ms - this.cpuSeen;
    this.cpuSeen = ms;
    this.options.onCpu?.(this.key, spent);
  }

  /** Sets the priority of every thread of the process (Linux sets it per thread). */
  setPriority(priority: Priority): void {
    if (this.priority === priority) return;
    const lower = priority < this.priority;
    this.priority = priority;
    if (!this.applyPriority() && lower) {
      // Raising it back needs the right to (root or CAP_SYS_NICE): replaced by a fresh process once its events end.
      this.retire();
    }
  }

  /** False when a thread's priority could not be set. */
  private applyPriority(): boolean {
    const pid = this.child.pid;
    if (!pid || !this.alive) return true;
    let tids: number[];
    try {
      tids = readdirSync(`/proc/${pid}/task`).map(Number);
    } catch {
      tids = [pid];
    }
    let all = true;
    for (const tid of tids) {
      try {
        os.setPriority(tid, this.priority);
      } catch {
        all = false;
      }
    }
    return all;
  }

  dispose(sid: number): void {
    this.sandboxes.delete(sid);
    this.send({ t: 'dispose', sid });
    this.stopIfDone();
  }

  private crashed(started: number, bystanders: number): Outcome {
    const durationMs = Math.round(performance.now() - started);
    if (this.overMemory) {
      return { status: 'memory_limit', message: `The bot's sandbox process passed its memory bound (${this.options.maxRssMb} MB, BOT_SANDBOX_MAX_RSS_MB) and was stopped.`, durationMs, bystanders };
    }
    return { status: 'crashed', message: `The bot's sandbox process ${this.exitText} while the event ran; the service kept running.`, durationMs, bystanders };
  }

  private onMessage(m: ChildMessage): void {
    switch (m.t) {
      case 'ready':
        this.rssMb = m.rssMb;
        return;
      case 'created': {
        const c = this.creates.get(m.sid);
        if (!c) return;
        this.creates.delete(m.sid);
        clearTimeout(c.timer);
        if (m.error) c.reject(new StartupError(m.error.message, m.error.kind, m.error.location));
        else c.resolve(m.declared);
        return;
      }
      case 'outcome': {
        const d = this.dispatches.get(m.did);
        if (!d) return;
        this.dispatches.delete(m.did);
        clearTimeout(d.timer);
        const sandbox = this.sandboxes.get(m.sid);
        if (sandbox && !m.usable) sandbox.isolateGone = true;
        this.rssMb = m.rssMb;
        if (m.rssMb > this.options.maxRssMb) this.retire();
        d.resolve(m.outcome);
        this.stopIfDone();
        return;
      }
      case 'host':
        void this.answer(m.sid, m.cid, m.op, m.args, m.remainingMs);
        return;
      case 'stopped':
        this.sandboxes.get(m.sid)?.stopped(m.reason, m.message);
        return;
    }
  }

  private async answer(sid: number, cid: number, op: string, args: string, remainingMs: number | undefined): Promise<void> {
    const sandbox = this.sandboxes.get(sid);
    let answer: string;
    try {
      answer = sandbox ? await sandbox.host(op, args, remainingMs === undefined ? {} : { remainingMs }) : JSON.stringify({ ok: false, error: { code: 'no_event', message: 'The sandbox was disposed.' } });
    } catch {
      answer = JSON.stringify({ ok: false, error: { code: 'server_error', message: 'The helper failed unexpectedly.' } });
    }
    // Refused here, so an oversized answer is never sent to the child at all.
    const maxResult = maxResultOf(sandbox?.ops, op);
    if (answer.length > maxResult) answer = resultTooLarge(maxResult, 'the limit of one answer');
    this.send({ t: 'answer', cid, answer });
  }

  /** No new sandboxes here; stopped once its events end (its sandboxes report unusable at once). */
  retire(): void {
    if (this.retiring) return;
    this.retiring = true;
    this.onGone(this);
    this.stopIfDone();
  }

  private stopIfDone(): void {
    if (this.retiring && this.idle) this.kill();
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.alive = false;
    clearInterval(this.rssWatch);
    this.exitText = signal ? `ended (${signal})` : `ended (exit code ${code})`;
    this.onGone(this);
    for (const [, c] of this.creates) {
      clearTimeout(c.timer);
      c.reject(new SandboxCrashed(`The sandbox process ${this.exitText} while the bot started.`));
    }
    this.creates.clear();
    const inFlight = this.dispatches.size;
    for (const [, d] of this.dispatches) {
      clearTimeout(d.timer);
      d.resolve(this.crashed(d.started, inFlight - 1));
    }
    this.dispatches.clear();
  }
}

export class SupervisedSandbox implements BotSandbox {
  private disposed = false;
  /** The isolate inside the child was disposed (a time or memory limit, leftover work). */
  isolateGone = false;
  /** What the bundle declared at start-up (lib/sandbox/sandbox.ts, Sandbox.declared). */
  declared?: string;

  constructor(
    private readonly proc: SandboxProcess,
    private readonly sid: number,
    readonly host: HostFn,
    private readonly options: SandboxOptions,
    private readonly limits: SandboxLimits,
  ) {}

  get usable(): boolean {
    return !this.disposed && !this.isolateGone && this.proc.alive && !this.proc.retiring;
  }

  /** The host operations its bridge lets through. */
  get ops() {
    return this.options.ops;
  }

  /** Never throws: a crashed child answers `crashed`. */
  dispatch(eventJson: string): Promise<Outcome> {
    if (this.disposed) return Promise.resolve({ status: 'error', message: 'The sandbox was disposed.', durationMs: 0 });
    return this.proc.dispatch(this.sid, eventJson, this.limits);
  }

  stopped(reason: 'leftover_cpu', message: string): void {
    this.isolateGone = true;
    this.options.onStopped?.(reason, message);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.proc.dispose(this.sid);
  }
}

export class SandboxSupervisor {
  /** Every live process (retiring ones included: they still hold memory). */
  private readonly live = new Set<SandboxProcess>();
  /** The usable process of each key. */
  private readonly byKey = new Map<string, SandboxProcess>();
  /** Keys waiting for a process, first come first served. */
  private readonly queue: Array<() => void> = [];
  private readonly reaper: NodeJS.Timeout;

  readonly options: SupervisorOptions;

  constructor(options: SupervisorOptions = DEFAULT_SUPERVISOR) {
    this.options = { ...options };
    this.reaper = setInterval(() => this.reap(), Math.max(250, Math.min(options.idleMs / 4, 15_000)));
    this.reaper.unref();
  }

  /** The process for `key` (a project id): its own, started on demand, within the cap on live processes. */
  private async processFor(key: string): Promise<SandboxProcess> {
    const deadline = performance.now() + QUEUE_WAIT_MS;
    for (;;) {
      const own = this.byKey.get(key);
      if (own && own.alive && !own.retiring) {
        own.lastActive = performance.now();
        return own;
      }
      if (this.live.size < Math.max(1, this.options.processes)) return this.spawn(key);
      // An idle process makes room when it has exited (which wakes the queue).
      this.evictIdle();
      const left = deadline - performance.now();
      if (left <= 0) throw new SandboxBusy();
      // Woken when a process ends or goes idle (or at the deadline).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        timer.unref();
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.queue.push(done);
      });
    }
  }

  private spawn(key: string): SandboxProcess {
    const p = new SandboxProcess(key, this.options, (gone) => this.gone(gone), () => this.wake());
    this.live.add(p);
    this.byKey.set(key, p);
    p.child.once('exit', () => {
      this.live.delete(p);
      this.wake();
    });
    return p;
  }

  private gone(p: SandboxProcess): void {
    if (this.byKey.get(p.key) === p) this.byKey.delete(p.key);
  }

  /** Stops the least recently active idle process; true when one was stopped (it leaves `live` on exit). */
  private evictIdle(): boolean {
    let lru: SandboxProcess | undefined;
    for (const p of this.live) if (p.alive && p.idle && (!lru || p.lastActive < lru.lastActive)) lru = p;
    if (!lru) return false;
    this.gone(lru);
    lru.alive = false;
    lru.kill();
    return true;
  }

  /** The head of the queue tries again (a process ended or went idle). */
  private wake(): void {
    this.queue.shift()?.();
  }

  private reap(): void {
    const now = performance.now();
    for (const p of this.live) {
      if (p.alive && p.idle && now - p.lastActive > this.options.idleMs) {
        this.gone(p);
        p.kill();
      }
    }
  }

  /** New settings (the service's configuration); processes already running keep to them too. */
  configure(options: Partial<SupervisorOptions>): void {
    Object.assign(this.options, options);
  }

  /** A sandbox for `key`'s bot; StartupError as Sandbox.create, SandboxCrashed when its child ended meanwhile, SandboxBusy when no process came free. */
  async create(key: string, bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits = DEFAULT_LIMITS, options: SandboxOptions = {}): Promise<SupervisedSandbox> {
    return (await this.processFor(key)).create(bundle, sourceMap, host, limits, options);
  }

  /** Sets the priority of `key`'s process, if it has one (lib/bot/cpu-budget.ts). */
  setPriority(key: string, priority: Priority): void {
    this.byKey.get(key)?.setPriority(priority);
  }

  /** The live processes: their keys, ids and resident sets (tests, metrics). */
  get processes(): Array<{ key: string; pid: number | undefined; rssMb: number }> {
    return [...this.live].filter((p) => p.alive).map((p) => ({ key: p.key, pid: p.child.pid, rssMb: p.rssMb }));
  }

  close(): void {
    for (const p of this.live) p.kill();
    this.byKey.clear();
  }
}

let shared: SandboxSupervisor | undefined;

/** The process's supervisor, made at first use (the bot runtime configures it: SandboxSupervisor.configure). */
export function sandboxSupervisor(): SandboxSupervisor {
  shared ??= new SandboxSupervisor(DEFAULT_SUPERVISOR);
  return shared;
}
