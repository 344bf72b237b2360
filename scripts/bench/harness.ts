/**
 * Benchmark plumbing: start processes, wait for readiness, run autocannon and summarise.
 * Servers run in child processes so the load generator does not share their event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import autocannon from 'autocannon';

export interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export function startProcess(script: string, env: Record<string, string>, ready: RegExp, timeoutMs = 60_000): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  return new Promise((resolve, reject) => {
    // BENCH_CPU_PROF=<dir> writes a V8 CPU profile of each started process there, on exit.
    const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    const child = spawn(process.execPath, [...profile, '--import', 'tsx', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
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
  };
}

export function table(results: Result[]): string {
  const rows = [['benchmark', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx'], ...results.map((r) => [r.name, r.rps, r.p50, r.p99, r.errors, r.non2xx].map(String))];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n');
}
