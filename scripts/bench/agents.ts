/**
 * Agents (issue 45, issue 67 item 5): a send through the MCP server (`tools/call` of sendMessage at
 * /mcp, as a 2025-11-25 client sends it and as a 2026-07-28 one does) against the same send as POST
 * /v1/messages, at the same steady rate and then 10 at once (a closed loop of 10 clients) in the
 * same run: the service CPU per tool call is at most 1.3× the CPU per HTTP send, both ways. All
 * reach the simulator; recipients rotate over numbers whose window is open.
 */
import { cpuSeconds, paced, parallel, table, type Result } from './harness.js';
import { openWindows, type BenchSection } from './context.js';
import { benchDatabaseUrl, benchPool, quietStart } from './quiet.js';
import { goal } from './goals.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';

const RECIPIENTS = 200;
const RATE = 100;
/** Sends at once in the parallel rounds (issue 67: "10 parallel tool calls"). */
const PARALLEL = 10;

export const benchAgents: BenchSection = async (ctx) => {
  const { key, phoneNumberId } = await ctx.project(['messages:send']);
  const phones = Array.from({ length: RECIPIENTS }, (_, i) => `1415556${String(i).padStart(4, '0')}`);
  await openWindows(ctx, phoneNumberId, phones);
  let n = 0;
  const message = () => ({ type: 'text', phone: `+${phones[n++ % RECIPIENTS]}`, content: `Order ${n} shipped` });
  const http = { url: ctx.base, path: '/v1/messages', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: () => JSON.stringify(message()) };
  const mcpHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const call = () => JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'sendMessage', arguments: { body: message() } } });
  const mcp = { url: ctx.base, path: '/mcp', method: 'POST', headers: mcpHeaders, body: call };
  // MCP 2026-07-28: no handshake; the version and method in headers and in each request's _meta.
  const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  const modernHeaders = { ...mcpHeaders, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'sendMessage' };
  const modernCall = () => JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'sendMessage', arguments: { body: message() }, _meta: modernMeta } });
  const modern = { url: ctx.base, path: '/mcp', method: 'POST', headers: modernHeaders, body: modernCall };

  // A tool error is an HTTP 200: check once that the tool call really sends.
  const check = await fetch(`${ctx.base}/mcp`, { method: 'POST', headers: mcpHeaders, body: call() }).then((r) => r.json() as Promise<any>);
  if (check.result?.isError !== false && !check.result?.structuredContent?.id) throw new Error(`the sendMessage tool did not send: ${JSON.stringify(check).slice(0, 300)}`);
  const checkModern = await fetch(`${ctx.base}/mcp`, { method: 'POST', headers: modernHeaders, body: modernCall() }).then((r) => r.json() as Promise<any>);
  if (!checkModern.result?.structuredContent?.id) throw new Error(`the sendMessage tool did not send at 2026-07-28: ${JSON.stringify(checkModern).slice(0, 300)}`);

  await toolListCost(ctx);

  const pool = benchPool(await benchDatabaseUrl());
  const cpu = () => cpuSeconds(ctx.pids.service)?.self;
  await paced('warm-up', { ...http, rate: RATE, durationSeconds: 2 });
  await paced('warm-up', { ...mcp, rate: RATE, durationSeconds: 2 });
  await paced('warm-up', { ...modern, rate: RATE, durationSeconds: 2 });
  const results: Result[] = [];
  type Way = { name: string; opts: typeof http; kind: 'http' | 'mcp' | 'modern' };
  const ways: Way[] = [
    { name: 'POST /v1/messages', opts: http, kind: 'http' },
    { name: 'MCP tools/call sendMessage (2025-11-25)', opts: mcp, kind: 'mcp' },
    { name: 'MCP tools/call sendMessage (2026-07-28)', opts: modern, kind: 'modern' },
  ];
  /** CPU ms per send of each way, steady then 10 at once; each alternated twice, so a drift of the machine weighs on all alike. */
  const measure = async (mode: 'steady' | 'parallel') => {
    const per: Record<Way['kind'], number[]> = { http: [], mcp: [], modern: [] };
    for (const round of [1, 2]) {
      for (const way of ways) {
        await quietStart(pool);
        const before = cpu();
        const label = `${way.name}${mode === 'steady' ? ` at ${RATE}/s` : ', 10 at once'}${round === 2 ? ' (again)' : ''}`;
        const r = mode === 'steady'
          ? await paced(label, { ...way.opts, rate: RATE, durationSeconds: ctx.duration })
          : await parallel(label, { ...way.opts, concurrency: PARALLEL, durationSeconds: ctx.duration });
        const after = cpu();
        results.push(r);
        per[way.kind].push(before !== undefined && after !== undefined && (r.total ?? 0) > 0 ? ((after - before) * 1000) / r.total! : NaN);
      }
    }
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    return { http: avg(per.http), mcp: avg(per.mcp), modern: avg(per.modern) };
  };
  // BENCH_AGENTS_ONLY=http|mcp|modern runs one way alone, 10 at once, to profile it (BENCH_CPU_PROF) without the others.
  const only = process.env.BENCH_AGENTS_ONLY;
  if (only) {
    const way = ways.find((w) => w.kind === only);
    if (!way) throw new Error(`BENCH_AGENTS_ONLY: one of ${ways.map((w) => w.kind).join(', ')}`);
    await quietStart(pool);
    const before = cpu();
    const r = await parallel(`${way.name}, 10 at once, alone`, { ...way.opts, concurrency: PARALLEL, durationSeconds: ctx.duration });
    const after = cpu();
    console.log('\n' + table([r]));
    if (before !== undefined && after !== undefined) console.log(`service CPU per send, ${way.name} alone: ${(((after - before) * 1000) / r.total!).toFixed(3)} ms`);
    await pool.end();
    return;
  }
  const steady = await measure('steady');
  const together = await measure('parallel');
  console.log('\n' + table(results));
  for (const [mode, m] of [['steady', steady], ['10 at once', together]] as const) {
    console.log(`service CPU per send, ${mode}: HTTP ${m.http.toFixed(3)} ms, MCP 2025-11-25 ${m.mcp.toFixed(3)} ms (${(m.mcp / m.http).toFixed(2)}×), MCP 2026-07-28 ${m.modern.toFixed(3)} ms (${(m.modern / m.http).toFixed(2)}×)`);
  }
  goal({ id: 'A1', what: 'service CPU per MCP send vs per POST /v1/messages', ratio: steady.mcp / steady.http, op: '<=', target: 1.3, detail: `${steady.mcp.toFixed(3)} / ${steady.http.toFixed(3)} ms` });
  goal({ id: 'A1p', what: 'the same, 10 sends at once', ratio: together.mcp / together.http, op: '<=', target: 1.3, detail: `${together.mcp.toFixed(3)} / ${together.http.toFixed(3)} ms` });
  goal({ id: 'A1m', what: 'the same at MCP 2026-07-28, steady and 10 at once (the larger)', ratio: Math.max(steady.modern / steady.http, together.modern / together.http), op: '<=', target: 1.3, detail: `steady ${(steady.modern / steady.http).toFixed(2)}×, 10 at once ${(together.modern / together.http).toFixed(2)}×` });
  await pool.end();
};

/** What tools/list costs an agent holding every scope (issue 58): its bytes as JSON and as sent gzip-compressed. */
async function toolListCost(ctx: Parameters<BenchSection>[0]): Promise<void> {
  const { key } = await ctx.project([...SCOPES]);
  const list = (encoding: string) =>
    fetch(`${ctx.base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'accept-encoding': encoding },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
  const plain = await list('identity');
  const text = await plain.text();
  const tools = (JSON.parse(text) as { result?: { tools?: unknown[] } }).result?.tools?.length ?? 0;
  const gzip = await list('gzip');
  const sent = gzip.headers.get('content-encoding') === 'gzip' ? Number(gzip.headers.get('content-length') ?? NaN) : NaN;
  await gzip.arrayBuffer();
  const bytes = Buffer.byteLength(text);
  console.log(`tools/list for every scope: ${bytes} bytes as JSON (${tools} tools listed, about ${Math.round(bytes / 4)} tokens), ${sent} bytes sent gzip`);
  goal({ id: 'A2', what: 'tools/list bytes for a key holding every scope, over 40,000', ratio: bytes / 40_000, op: '<=', target: 1, detail: `${bytes} B, ${tools} tools, ${sent} B gzip` });
}
