/** Issue 3's goal: GET /v1/ping at 50% or more of bare Express throughput on the same machine. */
import { load, table } from './harness.js';
import type { BenchSection } from './context.js';

export const benchPing: BenchSection = async (ctx) => {
  const { key } = await ctx.project(['messages:send']);
  const auth = { authorization: `Bearer ${key}` };
  await load('warm-up', { url: `${ctx.bareUrl}/bare`, duration: 2 });
  await load('warm-up', { url: `${ctx.base}/v1/ping`, headers: auth, duration: 2 });
  const bare = await load('bare Express GET /bare', { url: `${ctx.bareUrl}/bare`, duration: ctx.duration });
  const ping = await load('GET /v1/ping (pk_ key)', { url: `${ctx.base}/v1/ping`, headers: auth, duration: ctx.duration });
  console.log('\n' + table([bare, ping]));
  const ratio = ping.rps / bare.rps;
  console.log(`GET /v1/ping throughput = ${(ratio * 100).toFixed(1)}% of bare Express (goal: at least 50%) → ${ratio >= 0.5 ? 'met' : 'NOT met'}`);
};
