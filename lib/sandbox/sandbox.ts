/**
 * One project's bot in a V8 isolate (isolated-vm).
 *
 * Policy and why (see the README's "Bot runtime" section for the choice over a child process):
 * - An isolate is a separate V8 heap with no Node APIs: no `require`, `process`, file system,
 *   environment, timers or network. The only way out is `__host`, a frozen object installed before
 *   the bundle runs (BRIDGE below); the raw reference to the host function is kept in its closure,
 *   out of the bot's reach.
 * - What crosses: the bridge checks each call inside the isolate, before anything is copied to the
 *   host: the op name (at most MAX_OP_NAME characters) and the JSON arguments (at most the
 *   operation's own bound from the host API table, lib/bot/host-api.ts, passed in as `ops`; else
 *   MAX_HELPER_ARGS characters) must be strings within their limits, or the call is answered with
 *   an error without leaving the isolate. Each helper call is told how long the earliest event in
 *   flight has left (`HostCall.remainingMs`), so a slow call (http.fetch) ends within the
 *   deadline. At most MAX_HOST_CALLS helper calls are in progress at once per isolate; further
 *   calls wait their turn inside the isolate (in its own, capped heap). The host counts too and
 *   refuses a call beyond the bound.
 * - Memory: the isolate's heap is capped (`memoryMb`); past it V8 disposes the isolate, the
 *   invocation fails with `memory_limit`, and the next event starts a fresh one. What the host
 *   copies in is bounded before the copy is made (MAX_HELPER_RESULT per answer, or the operation's
 *   own bound; MAX_EVENT_RESULTS per event in flight): an answer over either is replaced by a
 *   `result_too_large` error the bot receives. The service itself runs sandboxes in supervised child processes
 *   (lib/sandbox/supervisor.ts), so what isolated-vm cannot contain costs a child, not the service.
 * - Time: start-up runs with a CPU timeout; each event has a wall-clock deadline after which the
 *   isolate is disposed, which stops a loop, a never-resolving promise or a slow chain alike. Time
 *   the bot is waiting for the service when the deadline comes (a helper call in progress, e.g. a
 *   send while the service is busy), the deadline waits for that call, up to HARD_LIMIT_FACTOR
 *   times it: a loaded service does not get bots killed, and nothing runs for ever.
 * - Work left running: once no event is in flight, whatever still runs in the isolate (a loop in a
 *   helper's continuation after the handler returned) is measured with the isolate's own CPU
 *   counter (`cpuTime`); past `leftoverCpuMs` of CPU the isolate is disposed (`onStopped`), and
 *   an event caught in it is answered `interrupted` so the runtime hands it to a fresh isolate.
 * - Isolates run on isolated-vm's own threads, so a looping bot occupies one of them, never
 *   Node's event loop: the service and other projects' bots keep running.
 */
import ivm from 'isolated-vm';
import { PositionMapper, type SourceMap } from './sourcemap.js';
import { MAX_EVENT_RESULTS, MAX_HELPER_ARGS, MAX_HELPER_RESULT, MAX_HOST_CALLS, MAX_OP_NAME } from './limits.js';

export interface SandboxLimits {
  memoryMb: number;
  startupTimeoutMs: number;
  eventTimeoutMs: number;
  /** CPU the isolate may spend once no event is in flight (work the bot left running); default LEFTOVER_CPU_MS. */
  leftoverCpuMs?: number;
}

export const DEFAULT_LIMITS: SandboxLimits = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 5000 };

/**
 * The host operations a sandbox's bridge lets through, by name, with the largest JSON arguments
 * (checked inside the isolate) and answer (checked on the host before the copy) of each, in
 * characters. The bot runtime gives its host API's (lib/bot/host-api.ts); without it, any name
 * passes with MAX_HELPER_ARGS and MAX_HELPER_RESULT.
 */
export type HostOpBounds = Record<string, { maxArgs: number; maxResult: number; effect?: boolean }>;

/** The largest answer of `op` under `ops`. */
export function maxResultOf(ops: HostOpBounds | undefined, op: string): number {
  return ops && Object.hasOwn(ops, op) ? ops[op].maxResult : MAX_HELPER_RESULT;
}
/** An event never runs longer than this many times `eventTimeoutMs`, helper waits included. */
export const HARD_LIMIT_FACTOR = 6;
/** CPU milliseconds of work left running after the events ended, before the isolate is stopped. */
export const LEFTOVER_CPU_MS = 250;
export { MAX_EVENT_RESULTS, MAX_HELPER_RESULT, MAX_HOST_CALLS, MAX_OP_NAME };
/**
 * After a helper's answer, the milliseconds an event past its deadline is still given: the answer
 * is checked against the heap, copied in and resumed by the service's own machinery, which a busy
 * machine can stretch past one 50 ms re-check (the event was then stopped for the service's delay).
 */
const ANSWER_GRACE_MS = 250;
/** How often the leftover watch reads the isolate's CPU counter. */
const WATCH_MS = 25;
/** Reads in a row with (almost) no CPU spent after which the isolate counts as quiet again. */
const QUIET_READS = 8;
const QUIET_NS = 500_000n;

/**
 * Installed in the isolate before the bundle: `__host` becomes a frozen bridge that checks each call
 * before anything is copied out, and bounds the calls in progress. `$0` is the host reference; it
 * stays in this closure. Only built-ins captured here are used (and objects without a prototype), so
 * a bot that later replaces `Promise`, `Function.prototype.bind` or adds `Object.prototype` setters
 * cannot get a call past the checks or the bound.
 */
function bridgeSource(ops: HostOpBounds | undefined): string {
  const limits = ops ? JSON.stringify(Object.fromEntries(Object.entries(ops).map(([name, b]) => [name, b.maxArgs]))) : 'null';
  return BRIDGE.split('__OPS__').join(limits);
}

const BRIDGE = `
'use strict';
const ref = $0;
const call = ref.apply.bind(ref);
const freeze = Object.freeze;
const PromiseCtor = Promise;
const defineProperty = Object.defineProperty;
const options = freeze({ __proto__: null, arguments: freeze({ __proto__: null, copy: true }), result: freeze({ __proto__: null, promise: true, copy: true }) });
const MAX_ARGS = ${MAX_HELPER_ARGS};
const MAX_OP = ${MAX_OP_NAME};
const MAX_CALLS = ${MAX_HOST_CALLS};
// The host API's names and their argument bounds (null: MAX_ARGS for all); no prototype, so no
// inherited name (__proto__, constructor) finds a bound.
const OPS = __OPS__ === null ? null : freeze(Object.assign(Object.create(null), __OPS__));
const refusal = (code, message) => '{"ok":false,"error":{"code":"' + code + '","message":"' + message + '"}}';
const BAD_CALL = refusal('invalid_request', 'Bad helper call.');
const BAD_OP = refusal('invalid_request', 'Helper names are limited to ' + MAX_OP + ' characters.');
const tooLarge = (max) => refusal('payload_too_large', 'Helper arguments are limited to ' + max + ' bytes.');
let running = 0;
let head = null;
let tail = null;
const turn = () => new PromiseCtor((resolve) => {
  const node = { __proto__: null, resolve, next: null };
  if (tail) tail.next = node; else head = node;
  tail = node;
});
const release = () => {
  running--;
  const node = head;
  if (!node) return;
  head = node.next;
  if (!head) tail = null;
  running++;
  node.resolve();
};
async function bridged(op, args) {
  if (typeof op !== 'string' || typeof args !== 'string') return BAD_CALL;
  if (op.length > MAX_OP) return BAD_OP;
  // A name the table does not know goes to the host with the general bound (it answers, and logs
  // an unparsable call); a known one with its own.
  const own = OPS === null ? undefined : OPS[op];
  const max = own === undefined ? MAX_ARGS : own;
  if (args.length > max) return tooLarge(max);
  if (running >= MAX_CALLS) await turn(); else running++;
  try {
    return await call(undefined, [op, args], options);
  } finally {
    release();
  }
}
const host = freeze({
  __proto__: null,
  apply(_receiver, list) {
    if (typeof list !== 'object' || list === null) return new PromiseCtor((resolve) => resolve(BAD_CALL));
    return bridged(list[0], list[1]);
  },
});
defineProperty(globalThis, '__host', { value: host, writable: false, enumerable: false, configurable: false });
// WebAssembly memory lives outside the isolate's heap limit: there is no WebAssembly here.
delete globalThis.WebAssembly;
`;

/** About one helper call: the time left before the deadline of the earliest event in flight in the sandbox. */
export interface HostCall {
  remainingMs?: number;
}

/** A helper call from the bot: op name and JSON arguments → JSON answer text. */
export type HostFn = (op: string, argsJson: string, call?: HostCall) => Promise<string>;

/** Besides its status: the isolate's CPU the event spent (lib/bot/cpu-budget.ts). */
interface Spent {
  cpuMs?: number;
}

export type Outcome =
  | ({ status: 'ok'; durationMs: number } & Spent)
  /**
   * `interrupted`: the isolate was stopped for work left running by earlier events; this event was not at fault.
   * `crashed`: the sandbox's process ended while the event ran (lib/sandbox/supervisor.ts); the event may or may not be at fault.
   */
  | ({
      status: 'error' | 'timeout' | 'memory_limit' | 'interrupted' | 'crashed';
      message: string;
      location?: SourceLocation;
      durationMs: number;
      /** When its process ended under it: how many other events were in flight there. */
      bystanders?: number;
      /** When its process ended under it: other projects' events were in flight there too (a shared process; its projects move out as suspects). */
      withOtherProjects?: boolean;
    } & Spent);

/** Why an isolate was stopped outside an event's own outcome. */
export type StopReason = 'leftover_cpu';

/** Why the supervisor stopped an isolate whose events were not at fault: its project moved to a process of its own. */
export const MOVED_MESSAGE = "The bot's project was moved to a sandbox process of its own; the event runs again there.";

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

/** Platform-managed files of the tree (the helpers): an error thrown there is located at its caller. */
const PLATFORM_FILE = /^src\/platform\//;

/**
 * Where an error's stack enters the author's own code: the first bundle frame mapped to a file
 * outside src/platform/ (a helper's HelperError is thrown in src/platform/runtime/host.ts, but the
 * line to fix is the call in the bot), else the first mapped frame.
 */
export function locate(stack: string | undefined, mapper: PositionMapper | undefined): SourceLocation | undefined {
  if (!stack || !mapper) return undefined;
  let first: SourceLocation | undefined;
  for (const m of stack.matchAll(/bundle\.js:(\d+):(\d+)/g)) {
    const pos = mapper.original(Number(m[1]), Number(m[2]));
    if (!pos) continue;
    const at = { ...pos, file: pos.file.replace(/^tree:/, '') };
    if (!PLATFORM_FILE.test(at.file)) return at;
    first ??= at;
  }
  return first;
}

// Duck-typed: an error may come from another realm (jest's VM context), failing instanceof.
function errorText(e: unknown): { message: string; stack?: string } {
  if (typeof e === 'object' && e !== null && typeof (e as Error).message === 'string') {
    const stack = (e as Error).stack;
    return { message: (e as Error).message, stack: typeof stack === 'string' ? stack : undefined };
  }
  return { message: String(e) };
}

export interface SandboxOptions {
  /** Told when the isolate is stopped outside an event's outcome (work left running). */
  onStopped?: (reason: StopReason, message: string) => void;
  /** The host operations the bridge lets through, with their bounds. */
  ops?: HostOpBounds;
}

/** The answer a bot gets instead of one over the result caps (the copy is never made). */
export function resultTooLarge(limit: number, what: string): string {
  return JSON.stringify({ ok: false, error: { code: 'result_too_large', message: `The helper's answer is over ${what} (${limit} characters): ask for less (fewer rows or columns).` } });
}

/** Heap kept free beyond an answer's own copy (its parse, the bot's next steps), in bytes. */
export const ANSWER_HEADROOM_BYTES = 1024 * 1024;

/** The answer the bot gets instead of one its heap has no room for; undefined when it fits. */
export async function heapShortfall(isolate: ivm.Isolate, chars: number, memoryMb: number): Promise<string | undefined> {
  let free: number;
  try {
    // Never the Sync form: it takes the isolate's lock, so a bot looping there would block this
    // process's thread, with it every timer that stops the loop (the process was killed instead).
    const h = await isolate.getHeapStatistics();
    free = h.heap_size_limit - h.used_heap_size - (h.externally_allocated_size ?? 0);
  } catch {
    return undefined;
  }
  // A string of `chars` characters takes up to two bytes each; its parse about as much again.
  const need = chars * 3 + ANSWER_HEADROOM_BYTES;
  if (need <= free) return undefined;
  return JSON.stringify({
    ok: false,
    error: {
      code: 'memory_limit',
      message: `The helper's answer (${chars} characters) does not fit in the bot's free memory (${Math.max(0, Math.round(free / 1048576))} MB free of ${memoryMb} MB): keep less in memory, or ask for less.`,
    },
  });
}

function isEffect(ops: HostOpBounds | undefined, op: string): boolean {
  return !!ops && Object.hasOwn(ops, op) && ops[op].effect === true;
}

const HOST_BUSY = JSON.stringify({ ok: false, error: { code: 'too_many_calls', message: `At most ${MAX_HOST_CALLS} helper calls run at once.` } });

/** Largest declaration (`__platformDeclared`, JSON text) read from a bot at start-up, in characters. */
export const MAX_DECLARED = 64 * 1024;
const READ_DECLARED = `typeof globalThis.__platformDeclared === 'string' && globalThis.__platformDeclared.length <= ${MAX_DECLARED} ? globalThis.__platformDeclared : undefined`;

export class Sandbox {
  /**
   * What the bundle declared at start-up (JSON text its platform code left in `__platformDeclared`:
   * the bot's schedules), read once after the start-up; undefined when none (or over MAX_DECLARED).
   */
  declared?: string;
  private disposedFor?: 'timeout' | 'memory_limit' | 'moved' | StopReason;
  /** Helper calls in progress (the bot waits for the service). */
  private hostPending = 0;
  /** When the last helper call ended (performance.now() milliseconds). */
  private lastAnswerAt = -Infinity;
  /** Events in flight. */
  private events = 0;
  /** Characters of helper answers copied in since the sandbox was last idle. */
  private copiedIn = 0;
  /** When each event in flight reaches its deadline (performance.now() milliseconds). */
  private readonly deadlines = new Map<number, number>();
  private nextEvent = 1;
  /** Set while work may run with no event in flight: CPU counted from `cpuStart`. */
  private leftover?: { cpuStart: bigint; lastCpu: bigint; quietReads: number };
  private watch?: NodeJS.Timeout;
  /** Whether an event ever ran here (before that, only the start-up did). */
  private ranEvent = false;
  /** The CPU counter's last reading, for an isolate disposed by its event (its counter is gone then). */
  private lastCpu?: bigint;

  private constructor(
    private readonly isolate: ivm.Isolate,
    private readonly context: ivm.Context,
    private readonly dispatchRef: ivm.Reference,
    private readonly limits: SandboxLimits,
    private readonly mapper: PositionMapper | undefined,
    private readonly counter: { sandbox?: Sandbox },
    private readonly options: SandboxOptions,
  ) {
    counter.sandbox = this;
  }

  /** Runs the bundle's start-up; StartupError when it throws, loops or exhausts memory. */
  static async create(bundle: string, sourceMap: string | undefined, host: HostFn, limits: SandboxLimits = DEFAULT_LIMITS, options: SandboxOptions = {}): Promise<Sandbox> {
    const mapper = mapperOf(sourceMap);
    const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
    const counter: { sandbox?: Sandbox } = {};
    const counted: HostFn = async (op, args) => {
      const s = counter.sandbox;
      // The bridge keeps to the bound; this holds even if it were got round.
      if (s && s.hostPending >= MAX_HOST_CALLS) return HOST_BUSY;
      const maxResult = maxResultOf(options.ops, op);
      const budget = s ? MAX_EVENT_RESULTS * Math.max(1, s.events) : Infinity;
      // An effect is refused before it runs once the event's budget is spent; a write that took
      // place always answers its result (past the budget by at most that one answer).
      const effect = isEffect(options.ops, op);
      if (s && effect && s.copiedIn >= budget) return resultTooLarge(MAX_EVENT_RESULTS, "the event's limit of answers (checked before the helper ran, so nothing was done)");
      if (s) s.hostPending++;
      let answer: string | undefined;
      try {
        answer = await host(op, args, s?.callContext() ?? {});
        if (typeof answer !== 'string') return answer;
        if (answer.length > maxResult) return resultTooLarge(maxResult, 'the limit of one answer');
        if (s) {
          if (!effect && s.copiedIn + answer.length > budget) return resultTooLarge(MAX_EVENT_RESULTS, "the event's limit of answers");
          s.copiedIn += answer.length;
        }
      } finally {
        if (s) {
          s.hostPending--;
          s.lastAnswerAt = performance.now();
          // The answer's continuation runs in the isolate with no event in flight: watch its CPU.
          if (s.events === 0) s.watchLeftover();
        }
      }
      // Copied in only when the isolate's heap has room for it: a copy into a full heap ends the process.
      // The helper is done: an event's deadline is not held off while the heap is read.
      return (await heapShortfall(isolate, answer.length, limits.memoryMb)) ?? answer;
    };
    try {
      const context = await isolate.createContext();
      await context.evalClosure(bridgeSource(options.ops), [new ivm.Reference(counted)], { timeout: limits.startupTimeoutMs });
      const script = await isolate.compileScript(bundle, { filename: 'bundle.js' });
      await script.run(context, { timeout: limits.startupTimeoutMs });
      const dispatch = await context.global.get('__platformDispatch', { reference: true });
      if (dispatch.typeof !== 'function') {
        throw new StartupError('The bundle did not register the bot (src/main.ts must call registerBot).', 'error');
      }
      const declared: unknown = await context.eval(READ_DECLARED, { timeout: limits.startupTimeoutMs, copy: true });
      const sandbox = new Sandbox(isolate, context, dispatch, limits, mapper, counter, options);
      if (typeof declared === 'string') sandbox.declared = declared;
      sandbox.watchLeftover();
      return sandbox;
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

  /** What a helper call is told: the time left to the earliest deadline of the events in flight. */
  callContext(): HostCall {
    if (this.deadlines.size === 0) return {};
    return { remainingMs: Math.max(0, Math.min(...this.deadlines.values()) - performance.now()) };
  }

  private get leftoverCpuMs(): number {
    return this.limits.leftoverCpuMs ?? LEFTOVER_CPU_MS;
  }

  /** The isolate's CPU so far in ns (its start-up included), or its last reading once disposed. */
  cpuTotalNs(): bigint | undefined {
    return this.cpuNs() ?? this.lastCpu;
  }

  /** Events in flight, or work left running being watched: its CPU may still grow. */
  get busy(): boolean {
    return this.events > 0 || this.leftover !== undefined || this.hostPending > 0;
  }

  /** Stops the isolate: its events in flight are answered `interrupted` (they run again elsewhere, not at fault). */
  interrupt(): void {
    this.disposedFor ??= 'moved';
    this.stopWatch();
    this.disposeIsolate();
  }

  private cpuNs(): bigint | undefined {
    try {
      if (this.isolate.isDisposed) return undefined;
      return (this.lastCpu = this.isolate.cpuTime);
    } catch {
      return undefined;
    }
  }

  /** Starts (or extends) the count of CPU spent with no event in flight. */
  private watchLeftover(): void {
    const cpu = this.cpuNs();
    if (cpu === undefined) return;
    if (this.leftover) this.leftover.quietReads = 0;
    else this.leftover = { cpuStart: cpu, lastCpu: cpu, quietReads: 0 };
    if (!this.watch) {
      this.watch = setInterval(() => this.readLeftover(), WATCH_MS);
      this.watch.unref();
    }
  }

  private stopWatch(): void {
    clearInterval(this.watch);
    this.watch = undefined;
    this.leftover = undefined;
  }

  private readLeftover(): void {
    const w = this.leftover;
    const cpu = this.cpuNs();
    if (!w || cpu === undefined) return this.stopWatch();
    const spentMs = Number(cpu - w.cpuStart) / 1e6;
    if (spentMs > this.leftoverCpuMs) {
      this.stopWatch();
      this.disposedFor = 'leftover_cpu';
      if (!this.isolate.isDisposed) this.isolate.dispose();
      this.options.onStopped?.('leftover_cpu', `The bot kept running after its event ended (over ${this.leftoverCpuMs} ms of CPU) and was stopped.`);
      return;
    }
    // Quiet for a while (a continuation may still be on its way to the isolate's thread): stop watching.
    if (cpu - w.lastCpu < QUIET_NS && this.hostPending === 0) {
      if (++w.quietReads >= QUIET_READS) this.stopWatch();
    } else {
      w.quietReads = 0;
    }
    if (this.leftover) this.leftover.lastCpu = cpu;
  }

  /** Hands one event to the bot, within the event deadline, with the isolate's CPU it spent. Never throws. */
  async dispatch(eventJson: string): Promise<Outcome> {
    const before = this.cpuNs();
    const outcome = await this.run(eventJson);
    const after = this.cpuNs() ?? this.lastCpu;
    if (before !== undefined && after !== undefined) outcome.cpuMs = Math.max(0, Math.round(Number(after - before) / 1e5) / 10);
    return outcome;
  }

  private async run(eventJson: string): Promise<Outcome> {
    const started = performance.now();
    const ms = () => Math.round((performance.now() - started) * 10) / 10;
    if (this.isolate.isDisposed) {
      if (this.disposedFor === 'leftover_cpu') return { status: 'interrupted', message: 'The sandbox was stopped for work left running by an earlier event.', durationMs: 0 };
      if (this.disposedFor === 'moved') return { status: 'interrupted', message: MOVED_MESSAGE, durationMs: 0 };
      return { status: 'error', message: 'The sandbox was disposed.', durationMs: 0 };
    }
    const hardLimit = this.limits.eventTimeoutMs * HARD_LIMIT_FACTOR;
    let timer: NodeJS.Timeout;
    // Past the deadline the event is stopped, unless the bot is waiting for a helper right then or
    // its answer came within ANSWER_GRACE_MS (checked again shortly), and in any case at the hard limit.
    const check = () => {
      const now = performance.now();
      if ((this.hostPending > 0 || now - this.lastAnswerAt < ANSWER_GRACE_MS) && now - started < hardLimit) {
        timer = setTimeout(check, 50);
        return;
      }
      this.disposedFor ??= 'timeout';
      this.disposeIsolate();
    };
    timer = setTimeout(check, this.limits.eventTimeoutMs);
    const eventId = this.nextEvent++;
    this.deadlines.set(eventId, started + this.limits.eventTimeoutMs);
    if (this.events === 0) this.copiedIn = 0;
    // Nothing ran since the last read (or nothing but the start-up: no event ever ran here): no
    // leftover work, so this event's CPU is not counted as such.
    if (this.events++ === 0 && this.leftover) {
      const cpu = this.cpuNs();
      if (!this.ranEvent || (cpu !== undefined && cpu - this.leftover.lastCpu < QUIET_NS)) this.stopWatch();
    }
    this.ranEvent = true;
    try {
      await this.dispatchRef.apply(undefined, [eventJson], {
        arguments: { copy: true },
        result: { promise: true, copy: true },
        timeout: this.limits.eventTimeoutMs,
      });
      return { status: 'ok', durationMs: ms() };
    } catch (e) {
      const { message, stack } = errorText(e);
      if (this.disposedFor === 'leftover_cpu') {
        return { status: 'interrupted', message: 'The sandbox was stopped for work left running by an earlier event.', durationMs: ms() };
      }
      if (this.disposedFor === 'moved') return { status: 'interrupted', message: MOVED_MESSAGE, durationMs: ms() };
      if (this.disposedFor === 'timeout' || /timed out/i.test(message)) {
        this.disposedFor ??= 'timeout';
        this.disposeIsolate();
        return { status: 'timeout', message: `The bot did not finish within ${this.limits.eventTimeoutMs} ms and was stopped.`, durationMs: ms() };
      }
      if (this.isolate.isDisposed || /memory limit/i.test(message)) {
        this.disposeIsolate();
        return { status: 'memory_limit', message: `The bot exceeded its ${this.limits.memoryMb} MB memory limit and was stopped.`, durationMs: ms() };
      }
      const location = locate(stack, this.mapper);
      return { status: 'error', message: `The bot threw: ${message}`, location, durationMs: ms() };
    } finally {
      clearTimeout(timer);
      this.deadlines.delete(eventId);
      if (--this.events === 0) this.watchLeftover();
    }
  }

  /** Disposes the isolate, its CPU counter read first (the event is charged what it spent). */
  private disposeIsolate(): void {
    this.cpuNs();
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }

  dispose(): void {
    this.stopWatch();
    this.dispatchRef.release();
    this.context.release();
    if (!this.isolate.isDisposed) this.isolate.dispose();
  }
}
