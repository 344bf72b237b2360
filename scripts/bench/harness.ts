/**
 * Benchmark plumbing: start processes, wait for readiness, run autocannon and summarise.
 * Servers run in child processes so the load generator does not share their event loop.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';

export interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** Requests answered in all (load and paced). */
  total?: number;
}

/**
 * Builds dist/ as `npm start` does (scripts/build.mjs: skipped when dist/ matches the sources).
 * The bench runs what users run: the compiled service, not its TypeScript through tsx.
 */
export function buildService(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}

/**
 * How a script runs: a `.js` file under dist/ as `npm start` runs the service (node, the
 * compiled code, source maps off: issue 69, 17 MB of resident memory); anything else (the bench's own helpers) from TypeScript via tsx.
 */
function runnerArgs(script: string): string[] {
  // --no-node-snapshot: isolated-vm (the bot runtime) needs it on Node 20+. The service's heap
  // bound as `npm start` and the image's CMD set it (package.json, Dockerfile; docs/benchmarks.md,
  // issue 49 item 3); not the simulator's, whose saved state (.data/simulator) can outgrow it.
  // --liftoff-only (issue 62): Prisma's WebAssembly query compiler kept in baseline code;
  // --max-semi-space-size=8: a 16 MB young generation instead of 32 (issue 62, item 4).
  const heap = script === 'dist/server.js' ? ['--max-old-space-size=512', '--max-semi-space-size=8', '--liftoff-only'] : [];
  return script.startsWith('dist/') ? ['--no-node-snapshot', ...heap, script] : ['--no-node-snapshot', '--import', 'tsx', script];
}

/** The service's allocator setting, as `npm start` and the image set it (a value already set wins). */
function runnerEnv(script: string): Record<string, string> {
  return script === 'dist/server.js' ? { MALLOC_ARENA_MAX: '2' } : {};
}

export function startProcess(script: string, env: Record<string, string>, ready: RegExp, timeoutMs = 60_000): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each started process there, on exit.
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    // BENCH_HEAP_SNAPSHOT=<dir>: SIGUSR2 writes a heap snapshot there (memory.ts sends it after each phase).
    const heap = process.env.BENCH_HEAP_SNAPSHOT ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${process.env.BENCH_HEAP_SNAPSHOT}`] : [];
    // BENCH_NODE_FLAGS: more node flags for each started process (--trace-gc, which NODE_OPTIONS refuses).
    const extra = process.env.BENCH_NODE_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
    const child = spawn(process.execPath, [...profile, ...heap, ...extra, ...runnerArgs(script)], {
      env: { ...runnerEnv(script), ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: a Ctrl-C reaches the bench alone, which then stops what it started
      // (a soak stopped midway still reads its figures from the running service).
      detached: true,
    });
    let out = '';
    // BENCH_LOG_DIR=<dir> keeps each started process's output there, for diagnosis.
    if (process.env.BENCH_LOG_DIR) {
      const file = createWriteStream(`${process.env.BENCH_LOG_DIR}/${script.replace(/\W+/g, '_')}.log`);
      child.stdout!.pipe(file);
      child.stderr!.pipe(file);
    }
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} not ready after ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      if (out.length < 100_000) out += chunk.toString();
      const match = out.match(ready);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        // Keep draining output so the child never blocks on a full pipe.
        child.stdout!.resume();
        resolve({ child, match });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (c: Buffer) => {
      if (out.length < 100_000) out += c.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code}:\n${out}`));
    });
  });
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.removeAllListeners('exit');
  await new Promise<void>((resolve) => {
    const kill = setTimeout(() => {
      console.error(`${child.pid} did not stop within 10 s of SIGTERM: killed`);
      child.kill('SIGKILL');
    }, 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export async function load(name: string, opts: autocannon.Options): Promise<Result> {
  const r = await autocannon({ connections: 50, duration: 10, ...opts });
  return {
    name,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    total: r.requests.total,
  };
}

export interface PacedOptions {
  url: string;
  path: string;
  method: string;
  headers: Record<string, string>;
  /** Requests per second, spread evenly (not in bursts). */
  rate: number;
  durationSeconds: number;
  body: () => string;
  /** Connections at most (keep-alive). */
  connections?: number;
}

/**
 * An open-loop load at a steady rate: request i leaves at start + i/rate whatever the answers
 * do, and its latency counts from that moment (so a backlog shows, no coordinated omission).
 * autocannon's fixed rates send each connection's share of a second in one burst at its start,
 * which measures the burst's queue rather than the service at that rate.
 */
export async function paced(name: string, opts: PacedOptions): Promise<Result> {
  const rec = recorder(opts, opts.connections ?? 100);
  const total = Math.round(opts.rate * opts.durationSeconds);
  const started = performance.now();
  const one = (due: number) => rec.one(due);
  const inFlight: Promise<void>[] = [];
  let sent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const dueNow = Math.min(total, Math.floor(((performance.now() - started) / 1000) * opts.rate) + 1);
      while (sent < dueNow) inFlight.push(one(started + (sent++ * 1000) / opts.rate));
      if (sent >= total) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(inFlight);
  return rec.result(name, (performance.now() - started) / 1000);
}

/**
 * A closed loop of `concurrency` clients, each sending its next request when the last is answered,
 * for `durationSeconds`: what "10 in parallel" costs, beside paced()'s steady rate.
 */
export async function parallel(name: string, opts: Omit<PacedOptions, 'rate'> & { concurrency: number }): Promise<Result> {
  const rec = recorder(opts, opts.concurrency);
  const started = performance.now();
  const until = started + opts.durationSeconds * 1000;
  const worker = async () => {
    while (performance.now() < until) await rec.one(performance.now());
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  return rec.result(name, (performance.now() - started) / 1000);
}

/** Requests of `opts` on one keep-alive agent, each timed from a given moment; then their Result. */
function recorder(opts: Omit<PacedOptions, 'rate' | 'durationSeconds'>, sockets: number) {
  // `timeout` lets the agent honour the service's `Keep-Alive: timeout=5` (idle sockets closed a
  // second early) instead of reusing one the service is closing (ECONNRESET, a send counted as an error).
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets, timeout: 30_000 });
  const target = new URL(opts.path, opts.url);
  const latencies: number[] = [];
  let errors = 0;
  let non2xx = 0;
  const one = (from: number) =>
    new Promise<void>((resolve) => {
      const req = http.request(target, { method: opts.method, agent, headers: opts.headers }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - from);
          if (res.statusCode! < 200 || res.statusCode! >= 300) non2xx++;
          resolve();
        });
      });
      req.on('error', () => {
        errors++;
        resolve();
      });
      req.end(opts.body());
    });
  const result = (name: string, elapsed: number): Result => {
    agent.destroy();
    latencies.sort((a, b) => a - b);
    const q = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN);
    return { name, rps: Math.round(latencies.length / elapsed), p50: q(0.5), p99: q(0.99), errors, non2xx, total: latencies.length };
  };
  return { one, result };
}

export function table(results: Result[]): string {
  const rows = [['benchmark', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'], ...results.map((r) => [r.name, r.rps, r.p50, r.p99, r.errors, r.non2xx].map(String))];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n');
}

/**
 * CPU seconds (user + system) used so far by a process and, separately, by all its descendants
 * (the embedded PostgreSQL runs under the service). Linux only (/proc); undefined elsewhere.
 */
export function cpuSeconds(pid: number): { self: number; descendants: number } | undefined {
  try {
    const stats = new Map<number, { ppid: number; ticks: number; ended: number }>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const raw = readFileSync(`/proc/${entry}/stat`, 'utf8');
        // Fields after the parenthesised command name: state ppid … utime stime cutime cstime (14-17).
        const fields = raw.slice(raw.lastIndexOf(')') + 2).split(' ');
        // utime + stime, plus cutime + cstime: children that ended (PostgreSQL backends) count in their parent.
        stats.set(Number(entry), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), ended: Number(fields[13]) + Number(fields[14]) });
      } catch {
        // The process ended meanwhile.
      }
    }
    const own = stats.get(pid);
    if (!own) return undefined;
    let descendants = 0;
    const isDescendant = (p: number): boolean => {
      for (let cur = stats.get(p)?.ppid; cur !== undefined && cur > 1; cur = stats.get(cur)?.ppid) if (cur === pid) return true;
      return false;
    };
    for (const [p, s] of stats) if (p !== pid && isDescendant(p)) descendants += s.ticks + s.ended;
    // Clock ticks are USER_HZ, 100 per second on Linux.
    return { self: own.ticks / 100, descendants: descendants / 100 };
  } catch {
    return undefined;
  }
}

let interruptHandler: (() => void) | undefined;

/**
 * While a section runs that can stop early (the soak), SIGINT calls `handler` instead of ending
 * the bench; returns the function that gives SIGINT back. See installInterrupt.
 */
export function onInterrupt(handler: () => void): () => void {
  interruptHandler = handler;
  return () => {
    if (interruptHandler === handler) interruptHandler = undefined;
  };
}

/** SIGINT: the running section's handler if it has one, else `otherwise` (stop everything and exit). */
export function installInterrupt(otherwise: () => void): void {
  process.on('SIGINT', () => (interruptHandler ? interruptHandler() : otherwise()));
}
