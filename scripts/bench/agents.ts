/**
 * Agents (issue 45): a send through the MCP server (`tools/call` of sendMessage at /mcp) against
 * the same send as POST /v1/messages, at the same steady rate in the same run: the service CPU
 * per tool call is at most 1.3× the CPU per HTTP send. Both reach the simulator; recipients
 * rotate over numbers whose window is open.
 */
import { cpuSeconds, paced, table, type Result } from './harness.js';
import type { BenchSection } from './context.js';
import { benchDatabaseUrl, benchPool, quietStart } from './quiet.js';
import { goal } from './goals.js';
import { SCOPES } from '../../lib/access/scope-catalogue.js';

const RECIPIENTS = 200;
const RATE = 100;

export const benchAgents: BenchSection = async (ctx) => {
  const { key, phoneNumberId } = await ctx.project(['messages:send']);
  const phones = Array.from({ length: RECIPIENTS }, (_, i) => `1415556${String(i).padStart(4, '0')}`);
  for (const from of phones) {
    const res = await fetch(`${ctx.simulatorUrl}/_sim/inbound`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ phone_number_id: phoneNumberId, from, text: 'hi' }),
    });
    if (!res.ok) throw new Error(`inbound failed: ${res.status}`);
  }
  let n = 0;
  const message = () => ({ type: 'text', phone: `+${phones[n++ % RECIPIENTS]}`, content: `Order ${n} shipped` });
  const http = { url: ctx.base, path: '/v1/messages', method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: () => JSON.stringify(message()) };
  const mcpHeaders = { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const call = () => JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'sendMessage', arguments: { body: message() } } });
  const mcp = { url: ctx.base, path: '/mcp', method: 'POST', headers: mcpHeaders, body: call };

  // A tool error is an HTTP 200: check once that the tool call really sends.
  const check = await fetch(`${ctx.base}/mcp`, { method: 'POST', headers: mcpHeaders, body: call() }).then((r) => r.json() as Promise<any>);
  if (check.result?.isError !== false && !check.result?.structuredContent?.id) throw new Error(`the sendMessage tool did not send: ${JSON.stringify(check).slice(0, 300)}`);

  await toolListCost(ctx);

  const pool = benchPool(await benchDatabaseUrl());
  const cpu = () => cpuSeconds(ctx.pids.service)?.self;
  await paced('warm-up', { ...http, rate: RATE, durationSeconds: 2 });
  await paced('warm-up', { ...mcp, rate: RATE, durationSeconds: 2 });
  const results: Result[] = [];
  const perCall: number[] = [];
  // Alternated twice, so a drift of the machine weighs on both alike.
  for (const [name, opts] of [['POST /v1/messages', http], ['MCP tools/call sendMessage', mcp], ['POST /v1/messages (again)', http], ['MCP tools/call sendMessage (again)', mcp]] as const) {
    await quietStart(pool);
    const before = cpu();
    const r = await paced(`${name} at ${RATE}/s`, { ...opts, rate: RATE, durationSeconds: ctx.duration });
    const after = cpu();
    results.push(r);
    perCall.push(before !== undefined && after !== undefined ? ((after - before) * 1000) / (r.rps * ctx.duration) : NaN);
  }
  console.log('\n' + table(results));
  const httpMs = (perCall[0] + perCall[2]) / 2;
  const mcpMs = (perCall[1] + perCall[3]) / 2;
  console.log(`service CPU per send: HTTP ${httpMs.toFixed(3)} ms, MCP tool call ${mcpMs.toFixed(3)} ms`);
  goal({ id: 'A1', what: 'service CPU per MCP send vs per POST /v1/messages', ratio: mcpMs / httpMs, op: '<=', target: 1.3, detail: `${mcpMs.toFixed(3)} / ${httpMs.toFixed(3)} ms` });
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
