/**
 * P1 (issue #36): GET /v1/ping, the pipeline every operation pays (request id, access log,
 * credential, rate limit, project, scopes, validation, envelope, metrics), at least 70% of bare
 * Express's requests per second in the same run. The two alternate in rounds, so a neighbour's
 * load on a shared machine falls on both; CPU per request of each process is printed beside.
 */
import { cpuSeconds, load, table, type Result } from './harness.js';
import type { BenchSection } from './context.js';
import { goal } from './goals.js';

const ROUNDS = 2;

export const benchPing: BenchSection = async (ctx) => {
  const { key } = await ctx.project(['messages:send']);
  const auth = { authorization: `Bearer ${key}` };
  await load('warm-up', { url: `${ctx.bareUrl}/bare`, duration: 2 });
  await load('warm-up', { url: `${ctx.base}/v1/ping`, headers: auth, duration: 2 });
  const duration = Math.max(1, Math.round(ctx.duration / ROUNDS));
  const runs = { bare: [] as Result[], ping: [] as Result[] };
  const cpu = { bare: 0, ping: 0 };
  const measure = async (kind: 'bare' | 'ping', name: string, opts: Parameters<typeof load>[1]) => {
    const pid = kind === 'bare' ? ctx.pids.bare : ctx.pids.service;
    const before = cpuSeconds(pid)?.self ?? NaN;
    runs[kind].push(await load(name, { ...opts, duration }));
    cpu[kind] += (cpuSeconds(pid)?.self ?? NaN) - before;
  };
  for (let i = 0; i < ROUNDS; i++) {
    await measure('bare', 'bare Express GET /bare', { url: `${ctx.bareUrl}/bare` });
    await measure('ping', 'GET /v1/ping (pk_ key)', { url: `${ctx.base}/v1/ping`, headers: auth });
  }
  console.log('\n' + table([...runs.bare, ...runs.ping]));
  const rate = (rs: Result[]) => rs.reduce((s, r) => s + r.rps, 0) / rs.length;
  const bare = rate(runs.bare);
  const ping = rate(runs.ping);
  const perRequest = (kind: 'bare' | 'ping') => (cpu[kind] * 1e6) / (rate(runs[kind]) * duration * ROUNDS);
  console.log(`CPU per request: service ${perRequest('ping').toFixed(0)} µs, bare Express ${perRequest('bare').toFixed(0)} µs (${(perRequest('ping') / perRequest('bare')).toFixed(2)}×)`);
  goal({ id: 'P1', what: 'GET /v1/ping req/s vs bare Express', ratio: ping / bare, op: '>=', target: 0.7, detail: `${ping.toFixed(0)} / ${bare.toFixed(0)} req/s` });
};
