/**
 * Issue 11's goals, in one run:
 * (c) a contact CSV import of BENCH_IMPORT_ROWS rows (default 1,000,000), generated and streamed:
 *     rows per second and the service's peak RSS (goal: memory independent of the file's size);
 * (a) broadcasts of BENCH_BROADCAST_RECIPIENTS (default 20,000) at a configured 80/s and 250/s:
 *     the rate held between started_at and completed_at (goal: within 5%), nobody lost or doubled;
 * (b) an unpaced broadcast of BENCH_UNPACED_RECIPIENTS (default 100,000) against the simulator,
 *     compared with a bare client loop sending the same template messages straight to the
 *     simulator (goal: at least 80% of its rate), and the service's peak RSS (goal < 300 MB).
 * (d) the cost of the portfolio messaging limit's accounting (lib/pricing/portfolio-reach.ts): the
 *     paced runs of (a) run with a finite limit (TIER_100K, above their size) so every batch
 *     reserves its recipients, and BENCH_LIMIT_RECIPIENTS (default 20,000) go unpaced twice, with
 *     the limit unlimited and then finite: the second rate over the first.
 * P4 in the closing summary (goals.ts).
 */
import { Readable } from 'node:stream';
import { readFileSync } from 'node:fs';
import type { BenchContext, BenchSection } from './context.js';
import { goal } from './goals.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function peakRssMb(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

async function v1(ctx: BenchContext, key: string, method: string, path: string, body?: object) {
  const res = await fetch(ctx.base + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  const json = (await res.json()) as any;
  if (!json.success) throw new Error(`${method} ${path}: ${JSON.stringify(json)}`);
  return json.data;
}

/** Streams a generated CSV of `rows` numbers into the project, waits for the import; answers its figures. */
async function importRows(ctx: BenchContext, projectId: string, rows: number, base: number) {
  let i = 0;
  const csv = Readable.from((function* () {
    yield 'number,name,tags,opted_in\n';
    const chunk: string[] = [];
    for (; i < rows; i++) {
      chunk.push(`+${base + i},Person ${i},bench;wave${i % 7},yes\n`);
      if (chunk.length === 2000) yield chunk.splice(0).join('');
    }
    if (chunk.length) yield chunk.join('');
  })());
  const started = Date.now();
  const res = await fetch(`${ctx.base}/admin/projects/${projectId}/contact-imports?filename=bench.csv`, {
    method: 'POST', headers: { authorization: `Bearer ${ctx.adminToken}`, 'content-type': 'text/csv' }, body: csv as never, duplex: 'half',
  } as RequestInit);
  const json = (await res.json()) as any;
  if (!json.success) throw new Error(`import: ${JSON.stringify(json)}`);
  for (;;) {
    const { import: imp } = await ctx.admin('GET', `/admin/contact-imports/${json.data.import.id}`);
    if (imp.status === 'completed' || imp.status === 'failed') return { imp, seconds: (Date.now() - started) / 1000 };
    await sleep(500);
  }
}

async function project(ctx: BenchContext) {
  const p = await ctx.project(['broadcasts:read', 'broadcasts:manage', 'contacts:write', 'contacts:read', 'templates:manage', 'templates:read']);
  await v1(ctx, p.key, 'POST', '/v1/templates', { name: 'bench_promo', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'Hello {{1}}', example: { body_text: [['Ada']] } }] });
  const sim = (await (await fetch(`${ctx.simulatorUrl}/_sim/templates`)).json()) as any;
  const tpl = (sim.data ?? sim).filter((t: any) => t.name === 'bench_promo').pop();
  await fetch(`${ctx.simulatorUrl}/_sim/templates/${tpl.id}/decision`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ decision: 'APPROVED' }) });
  return p;
}

async function broadcast(ctx: BenchContext, p: { key: string }, tag: string) {
  const created = await v1(ctx, p.key, 'POST', '/v1/broadcasts', {
    name: `bench ${tag}`, template_name: 'bench_promo', template_language: 'en_US',
    audience: { filter: { match: 'all', conditions: [{ field: 'tags', op: 'has', value: tag }] } }, template_variables: { body: ['{{contact.name|friend}}'] },
  });
  const id = created.broadcast.id;
  await ctx.admin('POST', `/admin/broadcasts/${id}/approve`, {});
  for (;;) {
    const { broadcast: b } = await v1(ctx, p.key, 'GET', `/v1/broadcasts/${id}`);
    if (['completed', 'failed', 'canceled'].includes(b.status)) return b;
    await sleep(1000);
  }
}

/** Sets the simulated number's portfolio limit; the simulator announces it to the service's webhook (business_capability_update). */
async function setLimit(ctx: BenchContext, phoneNumberId: string, tier: string) {
  const res = await fetch(`${ctx.simulatorUrl}/_sim/phone-numbers/${phoneNumberId}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messaging_limit: tier }) });
  if (!res.ok) throw new Error(`messaging limit ${tier}: ${res.status}`);
}

async function seed(ctx: BenchContext, projectId: string, n: number, tag: string, base: number) {
  let i = 0;
  const csv = Readable.from((function* () {
    yield 'number,tags,opted_in\n';
    const chunk: string[] = [];
    for (; i < n; i++) {
      chunk.push(`+${base + i},${tag},yes\n`);
      if (chunk.length === 2000) yield chunk.splice(0).join('');
    }
    if (chunk.length) yield chunk.join('');
  })());
  const res = await fetch(`${ctx.base}/admin/projects/${projectId}/contact-imports`, {
    method: 'POST', headers: { authorization: `Bearer ${ctx.adminToken}`, 'content-type': 'text/csv' }, body: csv as never, duplex: 'half',
  } as RequestInit);
  const json = (await res.json()) as any;
  for (;;) {
    const { import: imp } = await ctx.admin('GET', `/admin/contact-imports/${json.data.import.id}`);
    if (imp.status !== 'queued' && imp.status !== 'running') return;
    await sleep(300);
  }
}

/** Messages the simulator accepted so far (all numbers): a broadcast's delta must equal its recipients. */
async function simSent(ctx: BenchContext): Promise<number> {
  return ((await (await fetch(`${ctx.simulatorUrl}/_sim/stats`)).json()) as any).messages_sent;
}

export const benchBroadcasts: BenchSection = async (ctx) => {
  const lines: string[] = [];
  // (c) import
  const importRowsN = env('BENCH_IMPORT_ROWS', 1_000_000);
  if (importRowsN > 0) {
    const p = await ctx.project(['contacts:read']);
    const rssBefore = peakRssMb(ctx.pids.service);
    const { imp, seconds } = await importRows(ctx, p.id, importRowsN, 16_000_000_000);
    const rssAfter = peakRssMb(ctx.pids.service);
    lines.push(`(c) import of ${importRowsN.toLocaleString()} rows: ${imp.status}, ${Math.round(importRowsN / seconds).toLocaleString()} rows/s (${seconds.toFixed(1)} s; created ${imp.counts.created}, rejected ${imp.counts.rejected}); service peak RSS ${rssBefore} MB before → ${rssAfter} MB after`);
    console.log(lines.at(-1));
  }
  // (a) paced
  const n = env('BENCH_BROADCAST_RECIPIENTS', 20_000);
  for (const [i, mps] of [80, 250].entries()) {
    const p = await project(ctx);
    await ctx.admin('PUT', `/admin/projects/${p.id}/broadcast-throughput`, { messages_per_second: mps });
    // The limit's accounting on: every batch reserves its recipients (the limit is above n).
    await setLimit(ctx, p.phoneNumberId, 'TIER_100K');
    await seed(ctx, p.id, n, `paced${mps}`, 17_000_000_000 + i * 1_000_000);
    const before = await simSent(ctx);
    const b = await broadcast(ctx, p, `paced${mps}`);
    const seconds = (Date.parse(b.completed_at) - Date.parse(b.started_at)) / 1000;
    const rate = n / seconds;
    const sent = (await simSent(ctx)) - before;
    const reached = b.counts.sent + b.counts.delivered + b.counts.read;
    lines.push(`(a) ${n.toLocaleString()} recipients at a configured ${mps}/s, limit accounting on (TIER_100K): held ${rate.toFixed(1)}/s over ${seconds.toFixed(1)} s (${((rate / mps - 1) * 100).toFixed(1)}%); simulator accepted ${sent} messages, ${reached} recipients reached; counts ${JSON.stringify(b.counts)}`);
    console.log(lines.at(-1));
    // Within 5% of the configured rate either way, and nobody lost or doubled (else no ratio).
    goal({ id: 'P4', what: `broadcast at ${mps}/s: held rate's deviation from the configured`, ratio: sent === n && reached === n ? Math.abs(rate / mps - 1) : NaN, op: '<=', target: 0.05, detail: `${rate.toFixed(1)} / ${mps} per s${sent === n && reached === n ? '' : ', some lost or doubled'}` });
  }
  // (b) unpaced vs a bare loop
  const m = env('BENCH_UNPACED_RECIPIENTS', 100_000);
  {
    const p = await project(ctx);
    await seed(ctx, p.id, m, 'unpaced', 18_000_000_000);
    const before = await simSent(ctx);
    const b = await broadcast(ctx, p, 'unpaced');
    const accepted = (await simSent(ctx)) - before;
    const seconds = (Date.parse(b.completed_at) - Date.parse(b.started_at)) / 1000;
    const engineRate = m / seconds;
    const rss = peakRssMb(ctx.pids.service);
    // The bare loop: the same template messages straight to the simulator, 32 in flight.
    const pn = (await (await fetch(`${ctx.simulatorUrl}/_sim/phone-numbers/${p.phoneNumberId}`)).json()) as any;
    const url = `${ctx.simulatorUrl}/v26.0/${p.phoneNumberId}/messages`;
    let next = 0;
    const started = Date.now();
    await Promise.all(Array.from({ length: 32 }, async () => {
      for (let i = next++; i < m; i = next++) {
        const res = await fetch(url, {
          method: 'POST', headers: { authorization: `Bearer ${pn.access_token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', to: String(19_000_000_000 + i), type: 'template',
            template: { name: 'bench_promo', language: { policy: 'deterministic', code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'friend' }] }] } }),
        });
        await res.arrayBuffer();
      }
    }));
    const bareRate = m / ((Date.now() - started) / 1000);
    lines.push(`(b) ${m.toLocaleString()} recipients unpaced: engine ${engineRate.toFixed(0)}/s (${seconds.toFixed(1)} s, simulator accepted ${accepted}, counts ${JSON.stringify(b.counts)}), bare loop ${bareRate.toFixed(0)}/s; service peak RSS ${rss} MB`);
    console.log(lines.at(-1));
    goal({ id: 'P4', what: 'unpaced broadcast rate vs a bare client loop', ratio: engineRate / bareRate, op: '>=', target: 0.8, detail: `${engineRate.toFixed(0)} / ${bareRate.toFixed(0)} per s` });
    goal({ id: 'P4', what: 'service peak RSS vs 300 MB', ratio: (rss ?? NaN) / 300, op: '<=', target: 1, detail: `${rss} MB` });
  }
  // (d) the limit accounting's cost, unpaced: the same audience size without and with a finite limit
  const l = env('BENCH_LIMIT_RECIPIENTS', 20_000);
  if (l > 0) {
    const rates: number[] = [];
    for (const [i, tier] of ['TIER_UNLIMITED', 'TIER_100K'].entries()) {
      const p = await project(ctx);
      await setLimit(ctx, p.phoneNumberId, tier);
      await seed(ctx, p.id, l, `limit${i}`, 18_500_000_000 + i * 1_000_000);
      const b = await broadcast(ctx, p, `limit${i}`);
      rates.push(l / ((Date.parse(b.completed_at) - Date.parse(b.started_at)) / 1000));
    }
    lines.push(`(d) ${l.toLocaleString()} recipients unpaced: ${rates[0].toFixed(0)}/s with an unlimited tier, ${rates[1].toFixed(0)}/s with the limit's accounting on (${((rates[1] / rates[0] - 1) * 100).toFixed(1)}%)`);
    console.log(lines.at(-1));
    goal({ id: 'P4', what: 'unpaced rate with the messaging limit accounted vs without', ratio: rates[1] / rates[0], op: '>=', target: 0.95, detail: `${rates[1].toFixed(0)} / ${rates[0].toFixed(0)} per s` });
  }
  console.log('\n' + lines.join('\n'));
};
