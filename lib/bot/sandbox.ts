/**
 * One project's bot in a V8 isolate (isolated-vm).
 *
 * Policy and why (see the README's "Bot runtime" section for the choice over a child process):
 * - An isolate is a separate V8 heap with no Node APIs: no `require`, `process`, file system,
 *   environment, timers or network. The only way out is `__host`, one reference to a host function
 *   that performs the helpers (lib/bot/helpers.ts) with the project's own rights.
 * - Memory: the isolate's heap is capped (`memoryMb`); past it V8 disposes the isolate, the
 *   invocation fails with `memory_limit`, and the next event starts a fresh one.
 * - Time: start-up runs with a CPU timeout; each event has a wall-clock deadline after which the
 *   isolate is disposed, which stops a loop, a never-resolving promise or a slow chain alike. Time
 *   the bot is waiting for the service when the deadline comes (a helper call in progress, e.g. a
 *   send while the service is busy), the deadline waits for that call, up to HARD_LIMIT_FACTOR
 *   times it: a loaded service does not get bots killed, and nothing runs for ever.
 * - Isolates run on isolated-vm's own threads, so a looping bot occupies one of them, never
 *   Node's event loop: the service and other projects' bots keep running.
 */
import ivm from 'isolated-vm';
import { PositionMapper, type SourceMap } from '../deploy/sourcemap.js';

export interface SandboxLimits {
  memoryMb: number;
  startupTimeoutMs: number;
  eventTimeoutMs: number;
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 5000 };
/** An event never runs longer than this many times `eventTimeoutMs`, helper waits included. */
export const HARD_LIMIT_FACTOR = 6;

/** A helper call from the bot: op name and JSON arguments → JSON answer text. */
export type HostFn = (op: string, argsJson: string) => Promise<string>;

export type Outcome =
  | { status: 'ok'; durationMs: number }
  | { status: 'error' | 'timeout' | 'memory_limit'; message: string; location?: SourceLocation; durationMs: number };

export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

export class StartupError extends Error {
  constructor(message: string, readonly kind: 'error' | 'timeout' | 'memory_limit', readonly location?: SourceLocation) {
    super(message);
    this.name = 'StartupError';
  }
}

function mapperOf(sourceMap: string | undefined): PositionMapper | undefined {
  if (!sourceMap) return undefined;
  try {
    return new PositionMapper(JSON.parse(sourceMap) as SourceMap);
  } catch {
    return undefined;
  }
}

/** The first bundle position of an error's stack, mapped to the source. */
export function locate(stack: string | undefined, mapper: PositionMapper | undefined): SourceLocation | undefined {
  if (!stack || !mapper) return undefined;
  for (const m of stack.matchAll(/bundle\.js:(\d+):(\d+)/g)) {
    const pos = mapper.original(Number(m[1]), Number(m[2]));
    if (pos) return { ...pos, file: pos.file.replace(/^tree:/, '') };
  }
  return undefined;
}

// Duck-typed: an error may come from another realm (jest's VM context), failing instanceof.
function errorText(e: unknown): { message: string; stack?: string } {
  if (typeof e === 'object' && e !== null && typeof (e as Error).message === 'string') {
    const stack = (e as Error).stack;
    return { message: (e as Error).message, stack: typeof stack === 'string' ? stack : undefined };
  }
  return { message: String(e) };
}

export class Sandbox {
  private disposedFor?: 'timeout' | 'memory_limit';
  /** Helper calls in progress (the bot waits for the service). */
  private hostPending = 0;

  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly context: ivm.Context,
    private readonly dispatchRef: ivm.Reference,
    private readonly limits: SandboxLimits,
    private readonly mapper: PositionMapper | undefined,
    private readonly counter: { sandbox?: Sandbox },
  ) {
    counter.sandbox = this;
  }

  /** Runs the bundle's start-up; StartupError when it throws, loops or exhausts memory. */
  static async create(bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits = DEFAULT_LIMITS): Promise<Sandbox> {
    const mapper = mapperOf(sourceMap);
    const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
    const counter: { sandbox?: Sandbox } = {};
    const counted: HostFn = async (op, args) => {
      const s = counter.sandbox;
      if (s) s.hostPending++;
      try {
        return await host(op, args);
      } finally {
        if (s) s.hostPending--;
      }
    };
    try {
      const context = await isolate.createContext();
      await context.global.set('__host', new ivm.Reference(counted));
      const script = await isolate.compileScript(bundle, { filename: 'bundle.js' });
      await script.run(context, { timeout: limits.startupTimeoutMs });
      const dispatch = await context.global.get('__platformDispatch', { reference: true });
      if (dispatch.typeof !== 'function') {
        throw new StartupError('The bundle did not register the bot (src/main.ts must call registerBot).', 'error');
      }
      return new Sandbox(isolate, context, dispatch, limits, mapper, counter);
    } catch (e) {
      const memory = isolate.isDisposed || /memory limit/i.test(errorText(e).message);
      if (!isolate.isDisposed) isolate.dispose();
      if (e instanceof StartupError) throw e;
      const { message, stack } = errorText(e);
      if (memory) throw new StartupError('The bot exceeded its memory limit while starting.', 'memory_limit');
      if (/timed out/i.test(message)) throw new StartupError(`The bot's start-up ran longer than ${limits.startupTimeoutMs} ms.`, 'timeout');
      throw new StartupError(`The bot threw while starting: ${message}`, 'error', locate(stack, mapper));
    }
  }

  get usable(): boolean {
    return !this.isolate.isDisposed;
  }

  /** Hands one event to the bot, within the event deadline. Never throws. */
  async dispatch(eventJson: string): Promise<Outcome> {
    const started = performance.now();
    const ms = () => Math.round((performance.now() - started) * 10) / 10;
    if (this.isolate.isDisposed) return { status: 'error', message: 'The sandbox was disposed.', durationMs: 0 };
    const hardLimit = this.limits.eventTimeoutMs * HARD_LIMIT_FACTOR;
    let timer: NodeJS.Timeout;
    // Past the deadline the event is stopped, unless the bot is waiting for a helper right then
    // (checked again shortly), and in any case at the hard limit.
    const check = () => {
      if (this.hostPending > 0 && performance.now() - started < hardLimit) {
        timer = setTimeout(check, 50);
        return;
      }
      this.disposedFor = 'timeout';
      if (!this.isolate.isDisposed) this.isolate.dispose();
    };
    timer = setTimeout(check, this.limits.eventTimeoutMs);
    try {
      await this.dispatchRef.apply(undefined, [eventJson], {
        arguments: { copy: true },
        result: { promise: true, copy: true },
        timeout: this.limits.eventTimeoutMs,
      });
      return { status: 'ok', durationMs: ms() };
    } catch (e) {
      const { message, stack } = errorText(e);
      if (this.disposedFor === 'timeout' || /timed out/i.test(message)) {
        if (!this.isolate.isDisposed) this.isolate.dispose();
        return { status: 'timeout', message: `The bot did not finish within ${this.limits.eventTimeoutMs} ms and was stopped.`, durationMs: ms() };
      }
      if (this.isolate.isDisposed || /memory limit/i.test(message)) {
        if (!this.isolate.isDisposed) this.isolate.dispose();
        return { status: 'memory_limit', message: `The bot exceeded its ${this.limits.memoryMb} MB memory limit and was stopped.`, durationMs: ms() };
      }
      const location = locate(stack, this.mapper);
      return { status: 'error', message: `The bot threw: ${message}`, location, durationMs: ms() };
    } finally {
      clearTimeout(timer);
    }
  }

  dispose(): void {
    this.dispatchRef.release();
    this.context.release();
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}
