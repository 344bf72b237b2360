/**
 * The service's bots run in sandbox processes it supervises (lib/sandbox/child.ts), never in its own.
 *
 * Policy and why:
 * - isolated-vm contains a bot's loops and heap (lib/sandbox/sandbox.ts), but not every failure:
 *   some end the process that hosts the isolate (a FatalRuntimeError thrown where isolated-vm does
 *   not catch it, seen with a 48 MB helper answer; a catastrophic out-of-memory). In a child such a
 *   failure costs the child and the events it was running, which are answered `crashed`; the next
 *   sandbox starts a fresh child. The service, its HTTP traffic and its database pool never share
 *   the isolates' process.
 * - `processes` children (BOT_SANDBOX_PROCESSES, default 2); a project's sandboxes always go to the
 *   same one (a hash of the key), so one project's crash loop costs at most the events of the
 *   projects sharing its child, which are retried (lib/bot/runtime.ts).
 * - Host memory is bounded per child: each outcome reports the child's resident set; past
 *   `maxRssMb` (BOT_SANDBOX_MAX_RSS_MB, default 512) the child is retired: its sandboxes stop being
 *   usable (their owners make new ones in a fresh child), and it is stopped once its events end.
 * - Nothing waits for ever on a child: an event not answered within its hard limit plus a margin,
 *   or a start-up within its limit plus the child's own start, kills the child (SIGKILL).
 * - Helper answers over MAX_HELPER_RESULT are refused here, before they are sent to the child.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
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
  processes: number;
  maxRssMb: number;
}

export const DEFAULT_SUPERVISOR: SupervisorOptions = { processes: 2, maxRssMb: 512 };
/** Margin over an event's hard limit (or a start-up's limit) before the child is deemed stuck. */
const STUCK_MARGIN_MS = 10_000;
/** A child that does not say it is ready within this long is killed. */
const SPAWN_TIMEOUT_MS = 30_000;

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
  /** The last resident set the child reported, in MB. */
  rssMb = 0;
  readonly ready: Promise<void>;
  private readonly sandboxes = new Map<number, SupervisedSandbox>();
  private readonly creates = new Map<number, { resolve: (declared?: string) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly dispatches = new Map<number, { sid: number; resolve: (o: Outcome) => void; started: number; timer: NodeJS.Timeout }>();
  private nextId = 1;
  private exitText = 'it ended';

  constructor(private readonly options: SupervisorOptions, private readonly onGone: (p: SandboxProcess) => void) {
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

  get idle(): boolean {
    return this.dispatches.size === 0 && this.creates.size === 0;
  }

  async create(bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits, options: SandboxOptions): Promise<SupervisedSandbox> {
    await this.ready;
    if (!this.alive) throw new SandboxCrashed(`The sandbox process ${this.exitText}.`);
    const sid = this.nextId++;
    const sandbox = new SupervisedSandbox(this, sid, host, options, limits);
    this.sandboxes.set(sid, sandbox);
    try {
      this.hold();
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
    if (!this.alive) return Promise.resolve(this.crashed(performance.now()));
    const did = this.nextId++;
    const started = performance.now();
    this.hold();
    return new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => this.kill(), limits.eventTimeoutMs * HARD_LIMIT_FACTOR + STUCK_MARGIN_MS);
      this.dispatches.set(did, { sid, resolve, started, timer });
      this.send({ t: 'dispatch', sid, did, event });
    }).finally(() => this.letGo());
  }

  dispose(sid: number): void {
    this.sandboxes.delete(sid);
    this.send({ t: 'dispose', sid });
    this.stopIfDone();
  }

  private crashed(started: number): Outcome {
    return { status: 'crashed', message: `The bot's sandbox process ${this.exitText} while the event ran; the service kept running.`, durationMs: Math.round(performance.now() - started) };
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
    this.exitText = signal ? `ended (${signal})` : `ended (exit code ${code})`;
    this.onGone(this);
    for (const [, c] of this.creates) {
      clearTimeout(c.timer);
      c.reject(new SandboxCrashed(`The sandbox process ${this.exitText} while the bot started.`));
    }
    this.creates.clear();
    for (const [, d] of this.dispatches) {
      clearTimeout(d.timer);
      d.resolve(this.crashed(d.started));
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
  private readonly procs: Array<SandboxProcess | undefined>;

  constructor(readonly options: SupervisorOptions = DEFAULT_SUPERVISOR) {
    this.procs = new Array(Math.max(1, options.processes)).fill(undefined);
  }

  /** The child for `key` (a project id): the same one every time, started anew after it ended or retired. */
  private processFor(key: string): SandboxProcess {
    const i = createHash('sha256').update(key).digest().readUInt32BE(0) % this.procs.length;
    let p = this.procs[i];
    if (!p || !p.alive || p.retiring) {
      p = new SandboxProcess(this.options, (gone) => {
        if (this.procs[i] === gone) this.procs[i] = undefined;
      });
      this.procs[i] = p;
    }
    return p;
  }

  /** A sandbox for `key`'s bot; StartupError as Sandbox.create, SandboxCrashed when its child ended meanwhile. */
  async create(key: string, bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits = DEFAULT_LIMITS, options: SandboxOptions = {}): Promise<SupervisedSandbox> {
    return this.processFor(key).create(bundle, sourceMap, host, limits, options);
  }

  /** The children's process ids and resident sets (tests, metrics). */
  get processes(): Array<{ pid: number | undefined; rssMb: number }> {
    return this.procs.filter((p): p is SandboxProcess => !!p && p.alive).map((p) => ({ pid: p.child.pid, rssMb: p.rssMb }));
  }

  close(): void {
    for (const p of this.procs) p?.kill();
    this.procs.fill(undefined);
  }
}

let shared: SandboxSupervisor | undefined;

/** The process's supervisor, made at first use with `options` (later options are ignored). */
export function sandboxSupervisor(options: SupervisorOptions = DEFAULT_SUPERVISOR): SandboxSupervisor {
  shared ??= new SandboxSupervisor(options);
  return shared;
}
