/**
 * A V8 CPU profile (BENCH_CPU_PROF=<dir> npm run bench -- …) as text: the functions with the most
 * self time, and the same summed by file (node's internals and each package as one line), as a
 * share of the busy (non-idle) time. `node --import tsx scripts/bench/profile-summary.ts <file.cpuprofile> [rows] [from seconds]`:
 * with `from`, only the samples that many seconds after the profile's start (leaving start-up out).
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function place(url: string): string {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  return url.replace(/^file:\/\//, '').replace(/^.*?\/(dist|scripts)\//, '$1/');
}

export function summarise(profile: Profile, rows = 25, fromSeconds = 0): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = 0;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at >= fromSeconds * 1e6) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)') {
      if (functionName !== '(idle)') {
        fn.set(functionName, (fn.get(functionName) ?? 0) + us);
        file.set(functionName, (file.get(functionName) ?? 0) + us);
        busy += us;
      }
      continue;
    }
    busy += us;
    const key = `${functionName || '(anonymous)'} ${place(url)}:${lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    file.set(place(url), (file.get(place(url)) ?? 0) + us);
  }
  const top = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, rows).map(([k, us]) => `${((100 * us) / busy).toFixed(1).padStart(5)}%  ${k}`);
  return [`busy ${(busy / 1e6).toFixed(2)} s`, 'self time by function:', ...top(fn), '', 'self time by file or package:', ...top(file)].join('\n');
}

if (process.argv[2]) console.log(summarise(JSON.parse(readFileSync(process.argv[2], 'utf8')) as Profile, Number(process.argv[3] ?? 25), Number(process.argv[4] ?? 0)));
