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

async function metricMb(base: string, adminToken: string, names: string[]): Promise<Record<string, number | undefined>> {
  const out: Record<string, number | undefined> = {};
  try {
    const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${adminToken}` } })).text();
    for (const name of names) {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text);
      out[name] = m ? Math.round(Number(m[1]) / 1048576) : undefined;
    }
  } catch {
    // Metrics unavailable: the kernel's figures still print.
  }
  return out;
}

/** One line: RSS now and peak, heap used and external memory of the service, after `phase`. */
export async function memoryLine(phase: string, pid: number, base: string, adminToken: string): Promise<string> {
  const m = await metricMb(base, adminToken, ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes']);
  const mb = (v: number | undefined) => (v === undefined ? '?' : `${v} MB`);
  return `memory after ${phase}: RSS ${mb(procMb(pid, 'VmRSS'))}, peak ${mb(procMb(pid, 'VmHWM'))}; heap used ${mb(m.nodejs_heap_size_used_bytes)} of ${mb(m.nodejs_heap_size_total_bytes)}, external ${mb(m.nodejs_external_memory_bytes)}`;
}
