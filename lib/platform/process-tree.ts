/**
 * A process and its children as Linux's /proc shows them: their CPU (all threads, utime + stime)
 * and their threads' priority. Used for the build process and its esbuild child
 * (lib/deploy/build-process.ts) and the sandbox processes (lib/sandbox/supervisor.ts); elsewhere than
 * Linux the readings are undefined.
 */
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';

/** Clock ticks per second of /proc/<pid>/stat's CPU times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU time of `pid` (all its threads) in ms, undefined when unreadable. */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The thread ids of `pid` (just `pid` when /proc cannot say). */
export function threadsOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return [pid];
  }
}

/** The direct children of `pid` (any of its threads may have spawned one). */
export function childrenOf(pid: number): number[] {
  const out = new Set<number>();
  for (const tid of threadsOf(pid)) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) if (c) out.add(Number(c));
    } catch {
      // The thread ended meanwhile, or no /proc.
    }
  }
  return [...out];
}

/** CPU of `pid` and of its direct children, in ms (0 when unreadable). */
export function treeCpuMs(pid: number): number {
  return [pid, ...childrenOf(pid)].reduce((sum, p) => sum + (cpuMsOf(p) ?? 0), 0);
}

/**
 * Sets `nice` on every thread of `pid` (Linux sets a priority per thread; threads started later
 * inherit their starter's). Lowering needs no privilege.
 */
export function setNiceOfThreads(pid: number, nice: number): void {
  for (const tid of threadsOf(pid)) {
    try {
      os.setPriority(tid, nice);
    } catch {
      // Ended meanwhile.
    }
  }
}

/** The nice value of every thread of `pid` (tests, checks), empty when unreadable. */
export function nicesOf(pid: number): number[] {
  return threadsOf(pid).flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return [Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])];
    } catch {
      return [];
    }
  });
}
