/**
 * The service's memory by phase (issue 49, item 3): after start and after each section, its
 * resident set now and at its peak (the kernel's VmRSS and VmHWM) and what it is made of: the
 * kernel's split (anonymous memory, mapped files) and, from its metrics, the V8 heap in use and
 * committed, its young generation ("new" space) and the memory outside it (external: buffers,
 * WebAssembly, isolates). The peak is the process's high-water mark since start, so a section's
 * line says whether it raised it.
 * BENCH_HEAP_SNAPSHOT=<dir> (harness.ts starts the service with --heapsnapshot-signal): a heap
 * snapshot after each phase, <dir>/<pid>-<phase>.heapsnapshot. Writing one roughly doubles the
 * heap for a moment, so the peaks of such a run are not the service's.
 */
import { readdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';

/** A `<field>: <n> kB` line of /proc/<pid>/<file>, in MB. */
function procMb(pid: number, field: string, file = 'status'): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/${file}`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** Each series' value; a name may carry its labels (`x{space="new"}`) to pick one series. */
async function metrics(base: string, adminToken: string, names: string[]): Promise<Record<string, number | undefined>> {
  const out: Record<string, number | undefined> = {};
  try {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
    const lines = text.split('\n');
    for (const name of names) {
      const line = lines.find((l) => (name.includes('{') ? l.startsWith(name + ' ') : new RegExp(`^${name}(?:\\{[^}]*\\})? `).test(l)));
      out[name] = line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : undefined;
    }
  } catch {
    // Metrics unavailable: the kernel's figures still print.
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Asks the service for a heap snapshot (SIGUSR2) and waits until it is written; answers its path. */
async function heapSnapshot(dir: string, pid: number, phase: string): Promise<string | undefined> {
  const mine = () => readdirSync(dir).filter((f) => f.startsWith('Heap.') && f.includes(`.${pid}.`) && f.endsWith('.heapsnapshot'));
  const before = new Set(mine());
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0, size = -1; waited < 300_000; waited += 1000) {
    await sleep(1000);
    const file = mine().find((f) => !before.has(f));
    if (!file) continue;
    // Written in one go by the service's main thread: done when its size stops changing.
    const now = statSync(path.join(dir, file)).size;
    if (now > 0 && now === size) {
      const named = path.join(dir, `${pid}-${phase}.heapsnapshot`);
      renameSync(path.join(dir, file), named);
      return named;
    }
    size = now;
  }
  return undefined;
}

/**
 * One line: RSS now and peak, its anonymous and file-backed parts, heap used, committed and young
 * generation, and external memory of the service, after `phase`; and its event loop's longest
 * delay and p99 since the last read (prom-client resets them at each scrape, so per section): a
 * stall of the loop shows there, where a TCP SYN retry would not.
 */
export async function memoryLine(phase: string, pid: number, base: string, adminToken: string): Promise<string> {
  const m = await metrics(base, adminToken, [
    'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes',
    'nodejs_heap_space_size_total_bytes{space="new"}', 'nodejs_heap_space_size_used_bytes{space="old"}',
    'nodejs_eventloop_lag_max_seconds', 'nodejs_eventloop_lag_p99_seconds',
  ]);
  const mb = (v: number | undefined) => (v === undefined ? '?' : `${Math.round(v / 1048576)} MB`);
  const ms = (v: number | undefined) => (v === undefined ? '?' : `${Math.round(v * 1000)} ms`);
  const kernel = (field: string, file?: string) => procMb(pid, field, file) ?? '?';
  let line = `memory after ${phase}: RSS ${kernel('VmRSS')} MB, peak ${kernel('VmHWM')} MB (anonymous ${kernel('RssAnon')} MB, files ${kernel('RssFile')} MB); ` +
    `heap used ${mb(m.nodejs_heap_size_used_bytes)} of ${mb(m.nodejs_heap_size_total_bytes)} (old space used ${mb(m['nodejs_heap_space_size_used_bytes{space="old"}'])}, new space ${mb(m['nodejs_heap_space_size_total_bytes{space="new"}'])}), external ${mb(m.nodejs_external_memory_bytes)}; ` +
    `event loop delay max ${ms(m.nodejs_eventloop_lag_max_seconds)}, p99 ${ms(m.nodejs_eventloop_lag_p99_seconds)}`;
  const dir = process.env.BENCH_HEAP_SNAPSHOT;
  if (dir) line += `; heap snapshot ${(await heapSnapshot(dir, pid, phase)) ?? 'not written within 5 minutes'}`;
  return line;
}
