/**
 * P2 (issues #24, #36): POST /v1/messages (text) against the simulator, single instance, limits
 * raised, against bare Express in the same run: sends per second at least 25% of bare requests
 * per second, service CPU per send at most 4× a bare request's, and with an Idempotency-Key a
 * send's CPU at most 10% more than without. Also the latency at 150 per second, below saturation.
 * Recipients rotate over 200 numbers whose window is open; the simulator sends its usual status
 * callbacks (sent, delivered, read) meanwhile.
 *
 * `BENCH_MESSAGES_MODE=peer` (issue 62): the mode a side-by-side comparison with another service
 * (a peer) reuses: a fixed set of customers (`BENCH_PEER_CUSTOMERS`, default 200) whose windows
 * are open, 50 connections, the simulator's automatic statuses off (so only sends are measured),
 * no paced phase. `BENCH_PEER_SENDS=<sends/s>`: the peer's rate measured in that mode on this
 * machine, for the goal of at least 4× it.
 */
import { randomUUID } from 'node:crypto';
import { cpuSeconds, load, paced, table, type Result } from './harness.js';
import { openWindows, type BenchContext, type BenchSection } from './context.js';
import { benchDatabaseUrl, benchPool, quietStart } from './quiet.js';
import { goal } from './goals.js';
import { operations } from './pg-stats.js';

function cpuOf(ctx: BenchContext) {
  const service = cpuSeconds(ctx.pids.service);
  const simulator = cpuSeconds(ctx.pids.simulator);
  return service && simulator ? { service: service.self, postgres: service.descendants, simulator: simulator.self } : undefined;
}

const peer = process.env.BENCH_MESSAGES_MODE === 'peer';
/** Goals measured in the peer mode say so. */
const tag = peer ? ' (peer mode)' : '';
const RECIPIENTS = peer ? Number(process.env.BENCH_PEER_CUSTOMERS ?? 200) : 200;

/** The simulator's automatic statuses: read, set (null: off), and put back as they were. */
async function simulatorStatuses(simulatorUrl: string, delays?: unknown): Promise<unknown> {
  const res = await fetch(`${simulatorUrl}/_sim/config`, delays === undefined ? {} : {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ auto_status_delays_ms: delays }),
  });
  if (!res.ok) throw new Error(`simulator config: ${res.status}`);
  const json = (await res.json()) as { auto_status_delays_ms?: unknown; data?: { auto_status_delays_ms?: unknown } };
  return json.data?.auto_status_delays_ms ?? json.auto_status_delays_ms ?? null;
}

export const benchMessages: BenchSection = async (ctx) => {
  const { key, phoneNumberId } = await ctx.project(['messages:send']);
  if (peer) console.log(`mode: peer (${RECIPIENTS} customers with open windows, 50 connections, the simulator's automatic statuses off)`);
  const phones = Array.from({ length: RECIPIENTS }, (_, i) => `1415555${String(i).padStart(4, '0')}`);
  await openWindows(ctx, phoneNumberId, phones);
  let n = 0;
  const body = () => JSON.stringify({ type: 'text', phone: `+${phones[n++ % RECIPIENTS]}`, content: `Order ${n} shipped` });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const plain = { method: 'POST' as const, path: '/v1/messages', setupRequest: (r: any) => ({ ...r, body: body() }) };
  const keyed = { ...plain, setupRequest: (r: any) => ({ ...r, body: body(), headers: { ...r.headers, 'idempotency-key': randomUUID() } }) };

  const statusesBefore = peer ? await simulatorStatuses(ctx.simulatorUrl) : undefined;
  if (peer) await simulatorStatuses(ctx.simulatorUrl, null);
  try {
    await phases(ctx, headers, plain, keyed, body);
  } finally {
    if (peer) await simulatorStatuses(ctx.simulatorUrl, statusesBefore);
  }
};

async function phases(ctx: BenchContext, headers: Record<string, string>, plain: any, keyed: any, body: () => string): Promise<void> {
  // Each phase starts quiet: the last one's callbacks applied, the hot tables vacuumed.
  const pool = benchPool(await benchDatabaseUrl());
  const settle = () => quietStart(pool);
  operations((await load('warm-up', { url: ctx.base, headers, requests: [plain], duration: 2, connections: 20 })).total ?? 0, peer ? 'send (statuses off)' : 'send (with its status callbacks)');
  await load('warm-up', { url: `${ctx.bareUrl}/bare`, duration: 2 });
  const results: Result[] = [];
  // The baseline in the same run (issue #24): bare Express requests per second and CPU per request.
  await settle();
  const bareCpu0 = cpuSeconds(ctx.pids.bare);
  const bare = await load('bare Express GET /bare, max rate', { url: `${ctx.bareUrl}/bare`, duration: ctx.duration, connections: 50 });
  const bareCpu1 = cpuSeconds(ctx.pids.bare);
  results.push(bare);
  // Sends without and with an Idempotency-Key alternate in rounds (ABBA: without, with, with,
  // without), each from a quiet start, so that the machine's drift falls on both alike; their CPU
  // and counts are summed per kind.
  const half = Math.max(1, ctx.duration / 2);
  const spent = { plain: { service: 0, postgres: 0, simulator: 0 }, keyed: { service: 0, postgres: 0, simulator: 0 } };
  const rounds = { plain: [] as Result[], keyed: [] as Result[] };
  let measured = true;
  for (const kind of ['plain', 'keyed', 'keyed', 'plain'] as const) {
    await settle();
    const before = cpuOf(ctx);
    rounds[kind].push(await load(kind, { url: ctx.base, headers, requests: [kind === 'plain' ? plain : keyed], duration: half, connections: 50 }));
    const after = cpuOf(ctx);
    if (!before || !after) measured = false;
    else for (const k of ['service', 'postgres', 'simulator'] as const) spent[kind][k] += after[k] - before[k];
  }
  const merged = (name: string, rs: Result[]): Result => ({
    name, rps: Math.round(rs.reduce((a, r) => a + r.rps, 0) / rs.length), p50: Math.max(...rs.map((r) => r.p50)), p99: Math.max(...rs.map((r) => r.p99)),
    errors: rs.reduce((a, r) => a + r.errors, 0), non2xx: rs.reduce((a, r) => a + r.non2xx, 0), total: rs.reduce((a, r) => a + (r.total ?? 0), 0),
  });
  results.push(merged(`POST /v1/messages text, max rate (2 rounds of ${half} s)`, rounds.plain));
  results.push(merged(`… with Idempotency-Key, max rate (2 rounds of ${half} s)`, rounds.keyed));
  const maxCpu0 = measured ? { service: 0, postgres: 0, simulator: 0 } : undefined;
  const maxCpu1 = measured ? spent.plain : undefined;
  const keyedCpu0 = maxCpu0;
  const keyedCpu1 = measured ? spent.keyed : undefined;
  // Below saturation on this machine, for the latency the service adds when it keeps up.
  await settle();
  const cpuBefore = peer ? undefined : cpuOf(ctx);
  if (!peer) results.push(await paced('… text at a steady 150/s', { url: ctx.base, path: '/v1/messages', method: 'POST', headers, body, rate: 150, durationSeconds: ctx.duration }));
  const cpuAfter = peer ? undefined : cpuOf(ctx);
  for (const r of results.slice(1)) operations(r.total ?? 0, peer ? 'send (statuses off)' : 'send (with its status callbacks)');
  console.log('\n' + table(results));
  const [, max, withKey, light] = results;
  if (light) console.log(`p99 at a steady 150/s: ${light.p99} ms (p50 ${light.p50} ms)`);
  const peerSends = Number(process.env.BENCH_PEER_SENDS ?? NaN);
  if (peer && peerSends > 0) goal({ id: 'P2', what: 'sends/s vs the peer\'s (peer mode)', ratio: max.rps / peerSends, op: '>=', target: 4, detail: `${max.rps} / ${peerSends}` });
  if (cpuBefore && cpuAfter && light) {
    // CPU per message is steadier than throughput on a shared machine: it says where the time goes.
    const sent = light.rps * ctx.duration;
    const per = (k: keyof typeof cpuBefore) => (((cpuAfter[k] - cpuBefore[k]) * 1000) / sent).toFixed(2);
    console.log(`CPU per message at 150/s: service ${per('service')} ms, its PostgreSQL ${per('postgres')} ms, simulator ${per('simulator')} ms`);
  }
  // The ratios, measured in this run: throughput, and CPU per send at saturation against CPU per bare request.
  const sendsAtMax = max.total ?? max.rps * ctx.duration;
  const bareRequests = bare.total ?? bare.rps * ctx.duration;
  goal({ id: 'P2', what: 'POST /v1/messages sends/s vs bare Express req/s' + tag, ratio: max.rps / bare.rps, op: '>=', target: 0.25, detail: `${max.rps} / ${bare.rps}` });
  if (maxCpu0 && maxCpu1 && bareCpu0 && bareCpu1 && sendsAtMax > 0 && bareRequests > 0) {
    const perSend = ((maxCpu1.service - maxCpu0.service) * 1000) / sendsAtMax;
    const perBare = ((bareCpu1.self - bareCpu0.self) * 1000) / bareRequests;
    const perPg = ((maxCpu1.postgres - maxCpu0.postgres) * 1000) / sendsAtMax;
    console.log(`CPU per send at max rate: service ${perSend.toFixed(3)} ms, its PostgreSQL ${perPg.toFixed(3)} ms; bare Express ${perBare.toFixed(3)} ms a request`);
    goal({ id: 'P2', what: 'service CPU per send vs per bare Express request' + tag, ratio: perSend / perBare, op: '<=', target: 4, detail: `${perSend.toFixed(3)} / ${perBare.toFixed(3)} ms` });
    if (keyedCpu0 && keyedCpu1 && withKey.rps > 0) {
      const perKeyed = ((keyedCpu1.service - keyedCpu0.service) * 1000) / (withKey.total ?? withKey.rps * ctx.duration);
      console.log(`with Idempotency-Key: ${withKey.rps} sends/s, service CPU ${perKeyed.toFixed(3)} ms a send`);
      goal({ id: 'P2', what: 'service CPU per send with Idempotency-Key vs without' + tag, ratio: perKeyed / perSend, op: '<=', target: 1.1, detail: `${perKeyed.toFixed(3)} / ${perSend.toFixed(3)} ms` });
    }
  }
  await pool.end();
}
