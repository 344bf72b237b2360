/**
 * P1 (issue #36): GET /v1/ping, the pipeline every operation pays (request id, access log,
 * credential, rate limit, project, scopes, validation, envelope, metrics), at least 70% of bare
 * Express's requests per second in the same run. The two alternate in short rounds, so a
 * neighbour's load on a shared machine falls on both; CPU per request of each process is printed
 * beside (steadier than throughput on a loaded machine).
 */
import { cpuSeconds, load, table, type Result } from './harness.js';
import type { BenchSection } from './context.js';
import { goal } from './goals.js';
import { operations } from './pg-stats.js';

/** Seconds per round: short rounds, so a neighbour's burst of load falls on both sides alike. */
const ROUND_SECONDS = 2;

export const benchPing: BenchSection = async (ctx) => {
  const { key } = await ctx.project(['messages:send']);
  const auth = { authorization: `Bearer ${key}` };
  await load('warm-up', { url: `${ctx.bareUrl}/bare`, duration: 2 });
  operations((await load('warm-up', { url: `${ctx.base}/v1/ping`, headers: auth, duration: 2 })).total ?? 0, 'ping');
  const rounds = Math.max(2, Math.round(ctx.duration / ROUND_SECONDS));
  const duration = Math.min(ROUND_SECONDS, ctx.duration);
  const runs = { bare: [] as Result[], ping: [] as Result[] };
  const cpu = { bare: 0, ping: 0 };
  // CPU per request of each round: the least of the rounds is the cost with the least
  // interference from the machine's other work (a loaded machine only ever adds to it).
  const perRound = { bare: [] as number[], ping: [] as number[] };
  const measure = async (kind: 'bare' | 'ping', name: string, opts: Parameters<typeof load>[1]) => {
    const pid = kind === 'bare' ? ctx.pids.bare : ctx.pids.service;
    const before = cpuSeconds(pid)?.self ?? NaN;
    const r = await load(name, { ...opts, duration });
    runs[kind].push(r);
    if (kind === 'ping') operations(r.total ?? 0, 'ping');
    const used = (cpuSeconds(pid)?.self ?? NaN) - before;
    cpu[kind] += used;
    perRound[kind].push((used * 1e6) / (r.rps * duration));
  };
  for (let i = 0; i < rounds; i++) {
    await measure('bare', 'bare Express GET /bare', { url: `${ctx.bareUrl}/bare` });
    await measure('ping', 'GET /v1/ping (pk_ key)', { url: `${ctx.base}/v1/ping`, headers: auth });
  }
  const rate = (rs: Result[]) => rs.reduce((s, r) => s + r.rps, 0) / rs.length;
  const sum = (name: string, rs: Result[]): Result => ({ name: `${name} (${rs.length} rounds of ${duration} s)`, rps: Math.round(rate(rs)), p50: Math.max(...rs.map((r) => r.p50)), p99: Math.max(...rs.map((r) => r.p99)), errors: rs.reduce((s, r) => s + r.errors, 0), non2xx: rs.reduce((s, r) => s + r.non2xx, 0) });
  console.log('\n' + table([sum('bare Express GET /bare', runs.bare), sum('GET /v1/ping (pk_ key)', runs.ping)]) + '\n(p50 and p99: the worst round)');
  const bare = rate(runs.bare);
  const ping = rate(runs.ping);
  const perRequest = (kind: 'bare' | 'ping') => (cpu[kind] * 1e6) / (rate(runs[kind]) * duration * rounds);
  const least = (kind: 'bare' | 'ping') => Math.min(...perRound[kind]);
  console.log(`CPU per request: service ${perRequest('ping').toFixed(0)} µs, bare Express ${perRequest('bare').toFixed(0)} µs (${(perRequest('ping') / perRequest('bare')).toFixed(2)}×); least of the rounds ${least('ping').toFixed(0)} µs and ${least('bare').toFixed(0)} µs (${(least('ping') / least('bare')).toFixed(2)}×)`);
  goal({ id: 'P1', what: 'GET /v1/ping req/s vs bare Express', ratio: ping / bare, op: '>=', target: 0.7, detail: `${ping.toFixed(0)} / ${bare.toFixed(0)} req/s` });
};
