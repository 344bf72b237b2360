/**
 * The service's side of its build process (lib/deploy/build-child.ts): started on first use,
 * replaced when it ends, one build at a time.
 *
 * Policy and why:
 * - The process never keeps the service alive (unref): a build in flight holds its channel, nothing
 *   else does, as the sandbox processes do (lib/sandbox/supervisor.ts).
 * - Nothing waits for ever on it: a build not answered within `timeoutMs` kills the process
 *   (SIGKILL, its esbuild child follows when its stdin closes) and fails with a diagnostic; so does
 *   a process that ends during a build, or does not start within SPAWN_TIMEOUT_MS. The next build
 *   starts a new process.
 * - What a build cost is measured, not estimated: the CPU of the process and of its children
 *   (esbuild's service process) from /proc, before and after the build. One build at a time makes
 *   the difference that build's alone.
 * - A process's start-up (loading the compiler, parsing the standard library's declarations) costs
 *   about 2 s of CPU. Where one process builds for one BuildProcess after another (a test worker's
 *   files, each with its own modules), a `keeper` may hold a ready, idle process when one stops and
 *   hand it to the next: it carries nothing of a build over (each build sends its whole tree).
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENTRY, type BuildReply, type BuildRequest, type BuildResult } from './build-protocol.js';
import { childEntry } from '../platform/child-entry.js';
import { treeCpuMs } from '../platform/process-tree.js';

/** A child that does not say it is ready within this long is killed. */
const SPAWN_TIMEOUT_MS = 30_000;

// From dist/ as compiled JavaScript (npm start), from the sources as one bundle (lib/platform/child-entry.ts).
const here = fileURLToPath(import.meta.url);
const CHILD_SOURCE = path.join(path.dirname(here), here.endsWith('.ts') ? 'build-child.ts' : 'build-child.js');

/** A build that could not be carried out: a diagnostic at the entry, as the API reports any failed build. */
export function buildNotDone(message: string): BuildResult {
  return { ok: false, diagnostics: [{ file: ENTRY, line: 1, column: 1, message, source: 'bundle' }] };
}

/** Holds a ready, idle build process between two BuildProcess instances of one process (tests/support/test-environment.js). */
export interface BuildProcessKeeper {
  /** A process kept earlier, still running, or undefined. */
  take(): ChildProcess | undefined;
  /** Keeps `child` (ready, no build in flight) for the next taker. */
  keep(child: ChildProcess): void;
}

interface InFlight {
  id: number;
  child: ChildProcess;
  finish: (result: BuildResult) => void;
  fail: (e: Error) => void;
}

export class BuildProcess {
  private child?: ChildProcess;
  private ready?: Promise<void>;
  private isReady = false;
  private current?: InFlight;
  private nextId = 1;
  /** Removes this instance's listeners from its child (before the child is kept for another). */
  private detach?: () => void;
  /** Where stop() leaves a ready, idle process instead of killing it (unset in the service). */
  keeper?: BuildProcessKeeper;

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Builds `files` within `timeoutMs`; answers the result and the CPU the build process (and esbuild's) spent on it, in ms. */
  async build(files: Map<string, string>, timeoutMs: number): Promise<{ result: BuildResult; cpuMs: number }> {
    if (this.current) throw new Error('the build process runs one build at a time');
    const child = this.start();
    // Sent in this very turn when the process is ready: nothing of the caller runs in between.
    if (!this.isReady) {
      this.hold(child);
      try {
        await this.ready;
      } catch (e) {
        return { result: buildNotDone((e as Error).message), cpuMs: 0 };
      } finally {
        this.letGo(child);
      }
    }
    const pid = child.pid!;
    const before = treeCpuMs(pid);
    const spent = () => Math.max(0, treeCpuMs(pid) - before);
    this.hold(child);
    return new Promise<{ result: BuildResult; cpuMs: number }>((resolve, reject) => {
      const id = this.nextId++;
      const timer = setTimeout(() => {
        const cpuMs = spent();
        this.current = undefined;
        this.retire(child);
        resolve({ result: buildNotDone(`The build took longer than ${Math.round(timeoutMs / 1000)} s and was stopped; nothing was built.`), cpuMs });
      }, timeoutMs);
      timer.unref();
      const settle = () => {
        clearTimeout(timer);
        this.current = undefined;
      };
      this.current = {
        id,
        child,
        finish: (result) => {
          // Read before the turn ends: the next build's work is not this one's.
          const cpuMs = spent();
          settle();
          resolve({ result, cpuMs });
        },
        fail: (e) => {
          settle();
          reject(e);
        },
      };
      const request: BuildRequest = { t: 'build', id, files: [...files] };
      try {
        child.send(request);
      } catch (e) {
        this.current.fail(e as Error);
      }
    }).finally(() => this.letGo(child));
  }

  private start(): ChildProcess {
    if (this.child) return this.child;
    const kept = this.keeper?.take();
    const child = kept ?? this.spawn();
    this.child = child;
    this.isReady = false;
    child.unref();
    this.unrefChannel(child);
    let exitText = 'ended';
    let started!: () => void;
    let startExit!: (code: number | null, signal: NodeJS.Signals | null) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`The build process did not start within ${SPAWN_TIMEOUT_MS / 1000} s; nothing was built. Try again.`));
        this.retire(child);
      }, SPAWN_TIMEOUT_MS);
      timer.unref();
      started = () => {
        clearTimeout(timer);
        if (this.child === child) this.isReady = true;
        resolve();
      };
      startExit = (code, signal) => {
        clearTimeout(timer);
        exitText = signal ? `ended (${signal})` : `exited (code ${code})`;
        reject(new Error(`The build process ${exitText} while starting; nothing was built. Try again.`));
      };
      child.once('exit', startExit);
    });
    this.ready.catch(() => {});
    const onMessage = (m: BuildReply) => {
      if (m.t === 'ready') return started();
      const current = this.current;
      if (!current || current.id !== m.id) return;
      if (m.t === 'built') current.finish(m.result);
      else current.fail(new Error(`build failed: ${m.error}`));
    };
    const onError = () => this.retire(child);
    const onExit = () => {
      if (this.child === child) {
        this.child = undefined;
        this.isReady = false;
      }
      const current = this.current;
      if (current?.child === child) current.finish(buildNotDone(`The build process ${exitText} during the build; nothing was built. Try again.`));
    };
    child.on('message', onMessage);
    child.on('error', onError);
    child.on('exit', onExit);
    this.detach = () => {
      child.off('message', onMessage);
      child.off('error', onError);
      child.off('exit', onExit);
      child.off('exit', startExit);
    };
    // A kept process said it was ready to the instance that started it.
    if (kept) started();
    return child;
  }

  private spawn(): ChildProcess {
    const entry = childEntry(CHILD_SOURCE);
    return fork(entry.file, [], {
      execArgv: entry.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      // esbuild's process uses one core at most: a build never takes both of a small machine's.
      env: { ...process.env, GOMAXPROCS: '1' },
    });
  }

  // One build (or one wait for the start) at a time holds the channel: nothing to count.
  private hold(child: ChildProcess): void {
    (child.channel as { ref?: () => void } | undefined)?.ref?.();
  }

  private letGo(child: ChildProcess): void {
    this.unrefChannel(child);
  }

  private unrefChannel(child: ChildProcess): void {
    (child.channel as { unref?: () => void } | undefined)?.unref?.();
  }

  /** Kills `child` and forgets it at once: the next build starts a new process, never one that is ending. */
  private retire(child: ChildProcess): void {
    if (this.child === child) {
      this.child = undefined;
      this.isReady = false;
    }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /**
   * Stops the process (shutdown, tests); a build in flight fails with a diagnostic, the next starts a
   * new one. With a keeper, a ready process with no build in flight is handed to it instead.
   */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (this.keeper && this.isReady && !this.current && child.connected && child.exitCode === null && child.signalCode === null) {
      this.detach?.();
      this.child = undefined;
      this.isReady = false;
      this.keeper.keep(child);
      return;
    }
    const gone = child.exitCode === null && child.signalCode === null ? new Promise<void>((resolve) => child.once('exit', () => resolve())) : Promise.resolve();
    this.retire(child);
    await gone;
  }
}
