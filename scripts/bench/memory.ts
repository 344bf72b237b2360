/**
 * The service's memory by phase (issue 49, item 3): after start and after each section, its
 * resident set now and at its peak (the kernel's VmRSS and VmHWM) and, from its metrics, the V8
 * heap in use and the memory outside it (external: buffers, WebAssembly, isolates). The peak is
 * the process's high-water mark since start, so a section's line says whether it raised it.
 */
import { readFileSync } from 'node:fs';

function procMb(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

async function metrics(base: string, adminToken: string, names: string[]): Promise<Record<string, number | undefined>> {
  const out: Record<string, number | undefined> = {};
  try {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
    for (const name of names) {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
      out[name] = m ? Number(m[1]) : undefined;
    }
  } catch {
    // Metrics unavailable: the kernel's figures still print.
  }
  return out;
}

/**
 * One line: RSS now and peak, heap used and external memory of the service, after `phase`; and
 * its event loop's longest delay and p99 since the last read (prom-client resets them at each
 * scrape, so per section): a stall of the loop shows there, where a TCP SYN retry would not.
 */
export async function memoryLine(phase: string, pid: number, base: string, adminToken: string): Promise<string> {
  const m = await metrics(base, adminToken, [
    'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes', 'nodejs_eventloop_lag_max_seconds', 'nodejs_eventloop_lag_p99_seconds',
  ]);
  const mb = (v: number | undefined) => (v === undefined ? '?' : `${Math.round(v / 1048576)} MB`);
  const ms = (v: number | undefined) => (v === undefined ? '?' : `${Math.round(v * 1000)} ms`);
  const kernel = (field: 'VmRSS' | 'VmHWM') => procMb(pid, field) ?? '?';
  return `memory after ${phase}: RSS ${kernel('VmRSS')} MB, peak ${kernel('VmHWM')} MB; heap used ${mb(m.nodejs_heap_size_used_bytes)} of ${mb(m.nodejs_heap_size_total_bytes)}, external ${mb(m.nodejs_external_memory_bytes)}; event loop delay max ${ms(m.nodejs_eventloop_lag_max_seconds)}, p99 ${ms(m.nodejs_eventloop_lag_p99_seconds)}`;
}
