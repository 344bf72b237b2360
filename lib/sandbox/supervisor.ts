/**
 * The service's bots run in sandbox processes it supervises (lib/sandbox/child.ts), never in its own.
 *
 * Policy and why (docs/bot.md, "Sandbox processes"):
 * - isolated-vm contains a bot's loops and heap (lib/sandbox/sandbox.ts), but not every failure:
 *   some end the process that hosts the isolate (a FatalRuntimeError thrown where isolated-vm does
 *   not catch it; a catastrophic out-of-memory). The service, its HTTP traffic and its database
 *   pool never share the isolates' process.
 * - Many projects per process: a project's isolates live in one of `sharedProcesses` processes
 *   (BOT_SANDBOX_SHARED_PROCESSES), chosen by its id, started once and kept warm, so a thousand
 *   projects cost a thousand isolates (about 1 MB each, made in milliseconds), not a thousand
 *   processes, and no project waits for a process to start. An isolate waiting on I/O holds no
 *   thread and no process.
 * - A project that endangers its neighbours is moved to a process of its own (`dedicate`), as
 *   workerd moves a misbehaving script: one past its CPU burst (its isolates in the shared process
 *   are stopped at once and their events run again in its own, at a lower priority), one whose
 *   isolates keep hitting their memory limit, and one whose events were in flight when a shared
 *   process ended (alone: it ended it, moved for DEDICATED_MS; with others: each is a suspect,
 *   moved for SUSPECT_MS, so the one that ends its own process again is found alone and charged).
 *   At most `processes` (BOT_SANDBOX_PROCESSES) such processes live at once; past it, a project
 *   waits in one first-come queue, and an idle one is stopped for the head of the queue at once.
 *   A wait longer than QUEUE_WAIT_MS ends in SandboxBusy (the event stays in the inbox, uncounted).
 * - Work in flight is shared between projects in turn (lib/sandbox/fair-slots.ts): at most
 *   `inFlight` (BOT_SANDBOX_IN_FLIGHT) events and start-ups at once, a freed slot to the project
 *   with the fewest in flight.
 * - Memory is bounded per process: while events run, the process's resident set is read from
 *   /proc every RSS_WATCH_MS; past its bound (`maxRssMb` for a project's own process,
 *   `sharedMaxRssMb` for a shared one) the process is stopped at once and its events are answered
 *   `memory_limit`. Each outcome also reports the resident set; past the bound the process is
 *   retired (stopped once its events end).
 * - When a process ends under events, each is answered with how many other events were in flight
 *   (`bystanders`), start-ups included: the runtime charges the abnormal run only to an event that
 *   ran alone (lib/bot/runtime.ts).
 * - CPU: a shared process reports each isolate's CPU every 100 ms while it runs (isolated-vm's
 *   per-isolate counter), a project's own process its whole CPU from /proc (all its threads); both
 *   are told to `onCpu`, which charges the project's budget (lib/bot/cpu-budget.ts). A project past
 *   its burst is moved to its own process, whose threads are lowered in priority (`setPriority`).
 * - Nothing waits for ever on a child: an event not answered within its hard limit plus a margin,
 *   or a start-up within its limit plus the child's own start, kills the child (SIGKILL).
 * - Helper answers over their bound are refused here, before they are sent to the child.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { childEntry } from '../platform/child-entry.js';
import { cpuMsOf, threadsOf } from '../platform/process-tree.js';
import { stableHash } from '../platform/stable-hash.js';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_LIMITS, HARD_LIMIT_FACTOR, MOVED_MESSAGE, StartupError, maxResultOf, resultTooLarge, type HostFn, type Outcome, type SandboxLimits, type SandboxOptions } from './sandbox.js';
import type { ChildMessage, ParentMessage } from './protocol.js';
import { FairSlots } from './fair-slots.js';

/** What the bot runtime, the preview and the deploy check need of a sandbox. */
export interface BotSandbox {
  readonly usable: boolean;
  /** What the bundle declared at start-up (its schedules, JSON text), if anything. */
  readonly declared?: string;
  dispatch(eventJson: string): Promise<Outcome>;
  dispose(): void;
}

export interface SupervisorOptions {
  /** Processes of their own alive at once, for projects moved out of the shared ones. */
  processes: number;
  /** Processes that host many projects' isolates (0: every project in a process of its own). */
  sharedProcesses?: number;
  /** Resident-set bound of a project's own process, in MB. */
  maxRssMb: number;
  /** Resident-set bound of a shared process, in MB (default: four times maxRssMb). */
  sharedMaxRssMb?: number;
  /** Events and start-ups in flight at once across projects (lib/sandbox/fair-slots.ts). */
  inFlight?: number;
  /** Told when a project is moved to a process of its own, and why (its bot log). */
  onMoved?: (key: string, reason: MoveReason, message: string) => void;
  /** A process with nothing in flight for this long is stopped. */
  idleMs: number;
  /** Told the CPU each process spent (all its threads), in ms, as it runs (lib/bot/cpu-budget.ts). */
  onCpu?: (key: string, ms: number) => void;
  /** The nice value every sandbox process runs at, at least (default TENANT_NICE). */
  nice?: number;
}

export const DEFAULT_SUPERVISOR: SupervisorOptions = { processes: 16, sharedProcesses: 2, maxRssMb: 512, sharedMaxRssMb: 2048, inFlight: 512, idleMs: 60_000 };
/** Why a project was moved to a process of its own. */
export type MoveReason = 'cpu' | 'memory' | 'crash' | 'suspect';
/** How long a project stays in its own process after it passed its burst, ended a shared process alone, or kept hitting its memory limit. */
export const DEDICATED_MS = 10 * 60_000;
/** How long a project whose events were in flight with others' when a shared process ended stays in its own. */
export const SUSPECT_MS = 60_000;
/** Isolate memory limits within MEMORY_WINDOW_MS after which a project is moved to its own process. */
export const MEMORY_LIMITS_TO_MOVE = 2;
const MEMORY_WINDOW_MS = 10 * 60_000;
/** How often a process's resident set is read while it runs events. */
const RSS_WATCH_MS = 100;
/** Longest wait for a free process before SandboxBusy. */
export const QUEUE_WAIT_MS = 30_000;
/** A process's priority: its nice value, 0 (the service's) to 19 (the lowest). */
export type Priority = number;
/**
 * The nice value every sandbox process runs at, at least, unless `nice` (BOT_SANDBOX_NICE) says
 * otherwise. 0: a well-behaved project's bot runs beside the service. Measured (docs/benchmarks.md,
 * issue 66): at 5, a busy project's replies fell 10 s behind on a machine shared with other
 * work, for no gain in how fast the service took the channel's notifications; the projects that
 * misbehave are lowered instead (MOVED_NICE, the CPU budget).
 */
export const TENANT_NICE: Priority = 0;
/**
 * A project whose events lately ended at a limit (time, memory, its process's end), or that was
 * moved for its memory or a process's end, never runs above nice MOVED_NICE in its own process:
 * its code waits behind the service, its database and the well-behaved projects whenever they
 * want the cores (the cores are not held back from it when they are idle). A project moved only
 * for its CPU keeps TENANT_NICE until its budget lowers it: busy is not hostile. 19, the lowest:
 * at 10 (weight 110 against the service's 1,024) eight such processes together still weighed as
 * much as the service, and beside 16 hostile projects the service took 3.5 to 5.6 s to accept a
 * notification (docs/benchmarks.md, issue 66, run 10).
 */
export const MOVED_NICE: Priority = 19;
/** How long events ended at a limit keep a project at MOVED_NICE. */
const OVER_LIMIT_MS = 10 * 60_000;
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
  /** Other start-ups and events in flight in the process when it ended (the runtime charges only a start-up that was alone). */
  constructor(message: string, readonly bystanders = 0, readonly withOtherProjects = false) {
    super(message);
    this.name = 'SandboxCrashed';
  }
}

/** Takes a call the child answered off its waiting list and stops its deadline; undefined when none waits. */
function takeAnswered<T extends { timer: NodeJS.Timeout }>(waiting: Map<number, T>, id: number): T | undefined {
  const w = waiting.get(id);
  if (!w) return undefined;
  waiting.delete(id);
  clearTimeout(w.timer);
  return w;
}

const here = fileURLToPath(import.meta.url);
// From dist/ as compiled JavaScript (npm start), from the sources as one bundle (lib/platform/child-entry.ts).
const CHILD_SOURCE = path.join(path.dirname(here), here.endsWith('.ts') ? 'child.ts' : 'child.js');

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
  private priority: Priority;
  /** CPU time reported so far (ms). */
  private cpuSeen = 0;
  readonly ready: Promise<void>;
  private readonly sandboxes = new Map<number, SupervisedSandbox>();
  private readonly creates = new Map<number, { resolve: (declared?: string) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly dispatches = new Map<number, { sid: number; resolve: (o: Outcome) => void; started: number; timer: NodeJS.Timeout }>();
  private nextId = 1;
  private exitText = 'it ended';

  constructor(
    /** The project it runs alone, or `shared:<n>`. */
    readonly key: string,
    /** Hosts many projects' isolates (charged per isolate) rather than one project's (charged from /proc). */
    readonly shared: boolean,
    private readonly options: SupervisorOptions,
    private readonly events: ProcessEvents,
    priority: Priority = 0,
  ) {
    this.priority = priority;
    const entry = childEntry(CHILD_SOURCE);
    this.child = fork(entry.file, [], {
      execArgv: ['--no-node-snapshot', ...entry.execArgv],
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
    // A process starts at its priority: its main thread at once (the threads Node starts from it
    // inherit it, so its own start-up runs there too), every thread again once it is ready.
    if (priority !== 0) {
      try {
        if (this.child.pid) os.setPriority(this.child.pid, priority);
      } catch {
        // gone already: its exit is handled below
      }
      void this.ready.then(() => this.applyPriority(), () => {});
    }
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

  /** Whether new sandboxes of `key` go here now (a moved project's stay where they are until they end). */
  hosts(key: string): boolean {
    return this.events.hosts(this, key);
  }

  /** Its resident-set bound in MB. */
  get maxRssMb(): number {
    return this.shared ? (this.options.sharedMaxRssMb ?? this.options.maxRssMb * 4) : this.options.maxRssMb;
  }

  /** Projects with a start-up or an event in flight here, and how many pieces each. */
  keysInFlight(): Map<string, number> {
    const keys = new Map<string, number>();
    const add = (sid: number) => {
      const key = this.sandboxes.get(sid)?.key;
      if (key) keys.set(key, (keys.get(key) ?? 0) + 1);
    };
    for (const sid of this.creates.keys()) add(sid);
    for (const d of this.dispatches.values()) add(d.sid);
    return keys;
  }

  /** Stops the isolates of `key` here: their events are answered `interrupted` and run again elsewhere. */
  interrupt(key: string): void {
    const sids = [...this.sandboxes.values()].filter((s) => s.key === key).map((s) => s.sid);
    for (const sid of sids) {
      const sandbox = this.sandboxes.get(sid)!;
      sandbox.isolateGone = true;
    }
    if (sids.length) this.send({ t: 'interrupt', sids });
  }

  get idle(): boolean {
    return this.dispatches.size === 0 && this.creates.size === 0 && this.asked === 0;
  }

  async create(key: string, bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits, options: SandboxOptions): Promise<SupervisedSandbox> {
    this.asked++;
    try {
      await this.ready;
    } catch (e) {
      // Ended while it started: this start-up and the others asked of it meanwhile are bystanders of each other.
      if (e instanceof SandboxCrashed) throw new SandboxCrashed(e.message, Math.max(0, this.inFlightAtExit - 1));
      throw e;
    } finally {
      this.asked--;
      this.lastActive = performance.now();
    }
    // Ended before this start-up began: not its doing.
    if (!this.alive) throw new SandboxCrashed(`The sandbox process ${this.exitText}.`, 1);
    const sid = this.nextId++;
    const sandbox = new SupervisedSandbox(this, key, sid, host, options, limits, this.events.slots);
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
    // Ended before the event reached it: the event did not run, so it is not at fault.
    if (!this.alive) return Promise.resolve({ status: 'interrupted', message: `The sandbox process ${this.exitText} before the event ran.`, durationMs: 0 });
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
      if (this.idle) this.events.onIdle();
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
      if (mb > this.maxRssMb) {
        this.overMemory = true;
        this.kill();
      }
    }, RSS_WATCH_MS);
    this.rssWatch.unref();
  }

  private readCpu(): void {
    // A shared process's CPU is told per isolate (its 'cpu' messages).
    if (this.shared) return;
    const ms = this.child.pid ? cpuMsOf(this.child.pid) : undefined;
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
    let all = true;
    for (const tid of threadsOf(pid)) {
      try {
        os.setPriority(tid, this.priority);
      } catch {
        all = false;
      }
    }
    return all;
  }

  /** Keys of sandboxes disposed since the last CPU report: their last report still charges them. */
  private readonly gone = new Map<number, string>();

  dispose(sid: number): void {
    const key = this.sandboxes.get(sid)?.key;
    if (key && this.shared) {
      this.gone.set(sid, key);
      if (this.gone.size > 1024) this.gone.delete(this.gone.keys().next().value as number);
    }
    this.sandboxes.delete(sid);
    this.send({ t: 'dispose', sid });
    this.stopIfDone();
  }

  private crashed(started: number, bystanders: number, withOtherProjects: boolean): Outcome {
    const durationMs = Math.round(performance.now() - started);
    if (this.overMemory) {
      return { status: 'memory_limit', message: `The bot's sandbox process passed its memory bound (${this.maxRssMb} MB, ${this.shared ? 'BOT_SANDBOX_SHARED_MAX_RSS_MB' : 'BOT_SANDBOX_MAX_RSS_MB'}) and was stopped.`, durationMs, bystanders, withOtherProjects };
    }
    return { status: 'crashed', message: `The bot's sandbox process ${this.exitText} while the event ran; the service kept running.`, durationMs, bystanders, withOtherProjects };
  }

  private onMessage(m: ChildMessage): void {
    switch (m.t) {
      case 'ready':
        this.rssMb = m.rssMb;
        return;
      case 'created': {
        const c = takeAnswered(this.creates, m.sid);
        if (!c) return;
        if (m.error) c.reject(new StartupError(m.error.message, m.error.kind, m.error.location));
        else c.resolve(m.declared);
        return;
      }
      case 'outcome': {
        const d = takeAnswered(this.dispatches, m.did);
        if (!d) return;
        const sandbox = this.sandboxes.get(m.sid);
        if (sandbox && !m.usable) sandbox.isolateGone = true;
        this.rssMb = m.rssMb;
        if (m.rssMb > this.maxRssMb) this.retire();
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
      case 'cpu':
        if (!this.shared) return;
        for (const [sid, ms] of m.spent) {
          const key = this.sandboxes.get(sid)?.key ?? this.gone.get(sid);
          if (key) this.options.onCpu?.(key, ms);
        }
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
    this.events.onGone(this);
    this.stopIfDone();
  }

  private stopIfDone(): void {
    if (this.retiring && this.idle) this.kill();
  }

  /** Start-ups (asked or under way) and events in flight when it ended. */
  private inFlightAtExit = 0;

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.alive = false;
    this.inFlightAtExit = this.asked + this.creates.size + this.dispatches.size;
    clearInterval(this.rssWatch);
    this.exitText = signal ? `ended (${signal})` : `ended (exit code ${code})`;
    this.events.onGone(this);
    const keys = this.keysInFlight();
    this.events.onEnded(this, keys);
    // Start-ups and events in flight together: which one ended the process is unknown.
    const inFlight = this.dispatches.size + this.creates.size;
    const withOtherProjects = keys.size > 1;
    for (const [, c] of this.creates) {
      clearTimeout(c.timer);
      c.reject(new SandboxCrashed(`The sandbox process ${this.exitText} while the bot started.`, inFlight - 1, withOtherProjects));
    }
    this.creates.clear();
    for (const [, d] of this.dispatches) {
      clearTimeout(d.timer);
      d.resolve(this.crashed(d.started, inFlight - 1, withOtherProjects));
    }
    this.dispatches.clear();
  }
}

export class SupervisedSandbox implements BotSandbox {
  private disposed = false;
  /** The isolate inside the child was disposed (a time or memory limit, leftover work, its project moved). */
  isolateGone = false;
  /** What the bundle declared at start-up (lib/sandbox/sandbox.ts, Sandbox.declared). */
  declared?: string;

  constructor(
    private readonly proc: SandboxProcess,
    /** Its project. */
    readonly key: string,
    readonly sid: number,
    readonly host: HostFn,
    private readonly options: SandboxOptions,
    private readonly limits: SandboxLimits,
    private readonly slots: FairSlots,
  ) {}

  get usable(): boolean {
    return !this.disposed && !this.isolateGone && this.proc.alive && !this.proc.retiring && this.proc.hosts(this.key);
  }

  /** The host operations its bridge lets through. */
  get ops() {
    return this.options.ops;
  }

  /** Never throws: a crashed child answers `crashed`. Waits its project's turn for a slot (lib/sandbox/fair-slots.ts). */
  async dispatch(eventJson: string): Promise<Outcome> {
    if (this.disposed) return { status: 'error', message: 'The sandbox was disposed.', durationMs: 0 };
    // Taken at once when free, so the event is in flight in its process before this returns (an idle process is not stopped under it).
    const release = this.slots.tryAcquire(this.key) ?? (await this.slots.acquire(this.key));
    try {
      // Its project moved while it waited: the event runs again in the project's own process.
      if (this.isolateGone && !this.proc.hosts(this.key)) return { status: 'interrupted', message: MOVED_MESSAGE, durationMs: 0 };
      return await this.proc.dispatch(this.sid, eventJson, this.limits);
    } finally {
      release();
    }
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

/** What a process tells its supervisor. */
interface ProcessEvents {
  /** It may no longer take new sandboxes (ended or retiring). */
  onGone(p: SandboxProcess): void;
  /** It has nothing in flight. */
  onIdle(): void;
  /** It ended; these projects had start-ups or events in flight there. */
  onEnded(p: SandboxProcess, keys: Map<string, number>): void;
  readonly slots: FairSlots;
  /** Whether `p` is where `key`'s new sandboxes go now. */
  hosts(p: SandboxProcess, key: string): boolean;
}

/** A stable index in [0, n) for a project id: a project's isolates stay in one shared process. */
function indexOf(key: string, n: number): number {
  return stableHash(key) % n;
}

export class SandboxSupervisor {
  /** Every live process (retiring ones included: they still hold memory). */
  private readonly live = new Set<SandboxProcess>();
  /** The usable process of each project moved to one of its own. */
  private readonly byKey = new Map<string, SandboxProcess>();
  /** The shared processes, by index. */
  private readonly sharedProcs: Array<SandboxProcess | undefined> = [];
  /** Projects moved to a process of their own: until when, and why. */
  private readonly dedicated = new Map<string, { until: number; reason: MoveReason }>();
  /** Per project: when its isolates hit their memory limit lately. */
  private readonly memoryLimits = new Map<string, number[]>();
  /** The priority each project's own process should run at (lib/bot/cpu-budget.ts). */
  private readonly priorities = new Map<string, Priority>();
  /** Projects whose events ended at a limit lately: until when (performance.now()). */
  private readonly overLimit = new Map<string, number>();
  /** Keys waiting for a process of their own, first come first served. */
  private readonly queue: Array<() => void> = [];
  private readonly reaper: NodeJS.Timeout;
  private closed = false;

  readonly options: SupervisorOptions;
  readonly slots: FairSlots;
  private readonly processEvents: ProcessEvents;

  constructor(options: SupervisorOptions = DEFAULT_SUPERVISOR) {
    this.options = { ...options };
    this.slots = new FairSlots(options.inFlight ?? DEFAULT_SUPERVISOR.inFlight!);
    this.processEvents = {
      onGone: (p) => this.gone(p),
      onIdle: () => this.wake(),
      onEnded: (p, keys) => this.ended(p, keys),
      slots: this.slots,
      hosts: (p, key) => this.hosts(p, key),
    };
    this.reaper = setInterval(() => this.reap(), Math.max(250, Math.min(options.idleMs / 4, 15_000)));
    this.reaper.unref();
  }

  private get sharing(): boolean {
    return (this.options.sharedProcesses ?? 0) > 0;
  }

  /** Whether `key` runs in a process of its own now (moved out of the shared ones). */
  isDedicated(key: string): boolean {
    if (!this.sharing) return true;
    const d = this.dedicated.get(key);
    if (!d) return false;
    if (d.until > performance.now()) return true;
    this.dedicated.delete(key);
    return false;
  }

  /** Why `key` runs in a process of its own, if it does (the operator's view). */
  placement(key: string): { process: 'shared' | 'own'; reason?: MoveReason; untilMs?: number } {
    if (!this.isDedicated(key)) return { process: 'shared' };
    const d = this.dedicated.get(key);
    return { process: 'own', reason: d?.reason, untilMs: d ? Math.round(d.until - performance.now()) : undefined };
  }

  /**
   * Moves `key` to a process of its own for `ms` (or longer, if already moved for longer); its
   * isolates in a shared process are stopped at once (their events run again in its own).
   */
  dedicate(key: string, reason: MoveReason, ms: number): void {
    if (!this.sharing) return;
    const was = this.isDedicated(key);
    const until = performance.now() + ms;
    const d = this.dedicated.get(key);
    if (!d || d.until < until) this.dedicated.set(key, { until, reason: d && d.until > until ? d.reason : reason });
    if (was) return;
    for (const p of this.sharedProcs) if (p?.alive) p.interrupt(key);
    const why = {
      cpu: `it passed its CPU burst (BOT_CPU_BURST_MS)`,
      memory: `its isolates hit their memory limit ${MEMORY_LIMITS_TO_MOVE} times within ${MEMORY_WINDOW_MS / 60_000} minutes`,
      crash: 'a shared sandbox process ended while only its events ran there',
      suspect: "a shared sandbox process ended while its events ran there with other projects' (which one ended it is not known)",
    }[reason];
    this.options.onMoved?.(key, reason, `The bot was moved to a sandbox process of its own for ${Math.round(ms / 60_000) || 1} minute(s): ${why}. Other projects are not affected by it meanwhile.`);
  }

  /** An isolate of `key` hit its memory limit (its neighbours' process holds the copies near it): moved out at the second within the window. */
  noteMemoryLimit(key: string): void {
    if (!this.sharing || this.isDedicated(key)) return;
    const now = performance.now();
    const recent = (this.memoryLimits.get(key) ?? []).filter((at) => now - at < MEMORY_WINDOW_MS);
    recent.push(now);
    this.memoryLimits.set(key, recent);
    if (this.memoryLimits.size > 10_000) this.memoryLimits.delete(this.memoryLimits.keys().next().value as string);
    if (recent.length >= MEMORY_LIMITS_TO_MOVE) {
      this.memoryLimits.delete(key);
      this.dedicate(key, 'memory', DEDICATED_MS);
    }
  }

  private hosts(p: SandboxProcess, key: string): boolean {
    return p.shared ? !this.isDedicated(key) : this.isDedicated(key);
  }

  /** A process ended: the projects in flight in a shared one move out (alone: it was theirs; with others: suspects). */
  private ended(p: SandboxProcess, keys: Map<string, number>): void {
    if (!p.shared || this.closed || keys.size === 0) return;
    if (keys.size === 1) this.dedicate(keys.keys().next().value as string, 'crash', DEDICATED_MS);
    else for (const key of keys.keys()) this.dedicate(key, 'suspect', SUSPECT_MS);
  }

  /** The process for `key` (a project id): a shared one, or its own (started on demand, within the cap on such processes). */
  private async processFor(key: string): Promise<SandboxProcess> {
    if (!this.isDedicated(key)) return this.sharedFor(key);
    const deadline = performance.now() + QUEUE_WAIT_MS;
    for (;;) {
      const own = this.byKey.get(key);
      if (own && own.alive && !own.retiring) {
        own.lastActive = performance.now();
        return own;
      }
      if (this.ownCount() < Math.max(1, this.options.processes)) return this.spawn(key);
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

  private sharedFor(key: string): SandboxProcess {
    const i = indexOf(key, this.options.sharedProcesses!);
    const p = this.sharedProcs[i];
    if (p && p.alive && !p.retiring) return p;
    const fresh = new SandboxProcess(`shared:${i}`, true, this.options, this.processEvents, this.tenantNice);
    this.track(fresh);
    this.sharedProcs[i] = fresh;
    return fresh;
  }

  /** Processes of projects' own (the cap counts these only). */
  private ownCount(): number {
    let n = 0;
    for (const p of this.live) if (!p.shared) n++;
    return n;
  }

  private spawn(key: string): SandboxProcess {
    const p = new SandboxProcess(key, false, this.options, this.processEvents, this.priorityOf(key));
    this.track(p);
    this.byKey.set(key, p);
    return p;
  }

  private track(p: SandboxProcess): void {
    this.live.add(p);
    p.child.once('exit', () => {
      this.live.delete(p);
      this.wake();
    });
  }

  private gone(p: SandboxProcess): void {
    if (p.shared) {
      const i = this.sharedProcs.indexOf(p);
      if (i >= 0) this.sharedProcs[i] = undefined;
    } else if (this.byKey.get(p.key) === p) this.byKey.delete(p.key);
  }

  /** Stops the least recently active idle process of a project's own; true when one was stopped (it leaves `live` on exit). */
  private evictIdle(): boolean {
    let lru: SandboxProcess | undefined;
    for (const p of this.live) if (!p.shared && p.alive && p.idle && (!lru || p.lastActive < lru.lastActive)) lru = p;
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

  /** Stops idle processes of projects' own; shared ones stay warm (a project's first event never waits for a process). */
  private reap(): void {
    const now = performance.now();
    for (const p of this.live) {
      if (!p.shared && p.alive && p.idle && now - p.lastActive > this.options.idleMs) {
        this.gone(p);
        p.kill();
      }
    }
  }

  /** New settings (the service's configuration); processes already running keep to them too. */
  configure(options: Partial<SupervisorOptions>): void {
    Object.assign(this.options, options);
    if (options.inFlight !== undefined) this.slots.capacity = options.inFlight;
  }

  /**
   * A sandbox for `key`'s bot, its start-up within the project's turn for a slot; StartupError as
   * Sandbox.create, SandboxCrashed when its child ended meanwhile, SandboxBusy when no process of
   * its own came free.
   */
  async create(key: string, bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits = DEFAULT_LIMITS, options: SandboxOptions = {}): Promise<SupervisedSandbox> {
    const proc = await this.processFor(key);
    const release = await this.slots.acquire(key);
    try {
      return await proc.create(key, bundle, sourceMap, host, limits, options);
    } finally {
      release();
    }
  }

  /**
   * Sets the priority of `key`'s own process (lib/bot/cpu-budget.ts). A project in a shared process
   * that is to run below the others is moved to its own first: a shared process's threads serve
   * every project in it.
   */
  setPriority(key: string, priority: Priority): void {
    if (priority === 0) this.priorities.delete(key);
    else {
      this.priorities.set(key, priority);
      if (this.priorities.size > 10_000) this.priorities.delete(this.priorities.keys().next().value as string);
      if (!this.isDedicated(key)) this.dedicate(key, 'cpu', DEDICATED_MS);
    }
    this.byKey.get(key)?.setPriority(this.priorityOf(key));
  }

  /**
   * An event of `key` ended at a limit (time, memory, its process's end): its own process runs at
   * MOVED_NICE at best for OVER_LIMIT_MS.
   */
  noteOverLimit(key: string): void {
    this.overLimit.set(key, performance.now() + OVER_LIMIT_MS);
    if (this.overLimit.size > 10_000) this.overLimit.delete(this.overLimit.keys().next().value as string);
    this.byKey.get(key)?.setPriority(this.priorityOf(key));
  }

  /** What `key`'s own process runs at: its budget's priority, never above the sandboxes' nice, nor above MOVED_NICE while it misbehaves. */
  private priorityOf(key: string): Priority {
    const budget = this.priorities.get(key) ?? 0;
    const until = this.overLimit.get(key);
    if (until !== undefined && until <= performance.now()) this.overLimit.delete(key);
    const reason = this.dedicated.get(key)?.reason;
    const misbehaves = (until !== undefined && until > performance.now()) || (this.isDedicated(key) && reason !== undefined && reason !== 'cpu');
    return Math.max(budget, misbehaves ? MOVED_NICE : 0, this.tenantNice);
  }

  private get tenantNice(): Priority {
    return this.options.nice ?? TENANT_NICE;
  }

  /** The live processes: their keys (a project, or `shared:<n>`), ids and resident sets (tests, metrics). */
  get processes(): Array<{ key: string; pid: number | undefined; rssMb: number; shared: boolean }> {
    return [...this.live].filter((p) => p.alive).map((p) => ({ key: p.key, pid: p.child.pid, rssMb: p.rssMb, shared: p.shared }));
  }

  /** The live process that hosts `key`'s new sandboxes now, if one is running (tests, the operator). */
  processOf(key: string): { key: string; pid: number | undefined; rssMb: number; shared: boolean } | undefined {
    const p = this.isDedicated(key) ? this.byKey.get(key) : this.sharedProcs[indexOf(key, this.options.sharedProcesses!)];
    if (!p || !p.alive) return undefined;
    return { key: p.key, pid: p.child.pid, rssMb: p.rssMb, shared: p.shared };
  }

  close(): void {
    this.closed = true;
    for (const p of this.live) p.kill();
    this.byKey.clear();
    this.sharedProcs.length = 0;
  }
}

let shared: SandboxSupervisor | undefined;

/** The process's supervisor, made at first use (the bot runtime configures it: SandboxSupervisor.configure). */
export function sandboxSupervisor(): SandboxSupervisor {
  shared ??= new SandboxSupervisor(DEFAULT_SUPERVISOR);
  return shared;
}

/**
 * Ends the process's supervisor and its sandbox processes; the next use makes a new one. For a
 * process that outlives its apps (a jest worker runs file after file): a sandbox process ends when
 * its parent does, so without this each file's sandboxes idled on until the worker ended.
 */
export function closeSandboxSupervisor(): void {
  shared?.close();
  shared = undefined;
}
