/**
 * `npm run bench -- instances` (issue 66, item 5): bot capacity across instances. The same burst of
 * customers' messages to deployed bots, answered by one instance and then by two on one PostgreSQL
 * behind a round-robin balancer (a proxy in this process, which the simulator's callbacks go
 * through, as Meta's would through a load balancer).
 *
 * Each instance is started as `npm start` runs it (dist/server.js) on a database of the section's
 * own on the bench's PostgreSQL, with BOT_SANDBOX_IN_FLIGHT small (BENCH_INSTANCES_IN_FLIGHT,
 * default 8) and bots that hold each event on a slow backend (BENCH_INSTANCES_HOLD_MS, default
 * 1,000 ms, awaited through `http.fetch`: waiting, not CPU, so the bound is the instances' event
 * slots, not this 2-core machine). One instance then answers at most IN_FLIGHT / HOLD events a
 * second; two should answer twice that. Every project's bot is warmed on every instance first (its
 * start-ups are not the capacity measured). Printed per case: answered, lost, doubled, the drain time
 * and rate, and each instance's runs (`bot_event_runs_total` from its /metrics). Goal: two
 * instances answer the burst at ≥ 1.8× one instance's rate, nothing lost or doubled.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { ChildProcess } from 'node:child_process';
import type { BenchContext, BenchSection } from './context.js';
import { startProcess, stopProcess } from './harness.js';
import { goal } from './goals.js';

const PROJECTS = 8;
const MESSAGES = Number(process.env.BENCH_INSTANCES_MESSAGES ?? 320);
const IN_FLIGHT = Number(process.env.BENCH_INSTANCES_IN_FLIGHT ?? 8);
// Long enough that the event slots, not this 2-core machine's CPU, bound both cases.
const HOLD_MS = Number(process.env.BENCH_INSTANCES_HOLD_MS ?? 1000);
const WRITERS = 32;

const bot = (slowUrl: string) => `import { http, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await http.fetch('${slowUrl}/hold?ms=${HOLD_MS}');
  await sendText(m.from, 'echo: ' + (m.text ?? ''));
}
`;

interface Case {
  instances: number;
  answered: number;
  lost: number;
  doubled: number;
  seconds: number;
  perSecond: number;
  /** Seconds the customers took to write (each write waits for the service's answer to its notification). */
  written: number;
  runs: number[];
}

export const benchInstances: BenchSection = async (ctx) => {
  if (!ctx.databaseUrl) {
    console.log('instances: skipped (no superuser URL of the bench\'s PostgreSQL)');
    return;
  }
  const slow = await listen(http.createServer((req, res) => {
    const ms = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('ms') ?? HOLD_MS);
    setTimeout(() => res.end('ok'), ms);
  }));
  const cases: Case[] = [];
  try {
    for (const n of [1, 2]) cases.push(await runCase(ctx, n, slow.url));
  } finally {
    await slow.close();
  }
  console.log(`\n| instances | answered | lost | doubled | written in (s) | drain (s) | answered/s | runs per instance |\n|---|---|---|---|---|---|---|---|`);
  for (const c of cases) {
    console.log(`| ${c.instances} | ${c.answered} of ${MESSAGES} | ${c.lost} | ${c.doubled} | ${c.written.toFixed(1)} | ${c.seconds.toFixed(1)} | ${c.perSecond.toFixed(1)} | ${c.runs.join(' + ')} |`);
  }
  const [one, two] = cases;
  goal({
    id: 'T5',
    what: `bot events answered/s, two instances vs one (${IN_FLIGHT} events in flight each, ${HOLD_MS} ms held)`,
    ratio: one.lost || two.lost || one.doubled || two.doubled ? 0 : two.perSecond / one.perSecond,
    op: '>=',
    target: 1.8,
    detail: `${two.perSecond.toFixed(1)} vs ${one.perSecond.toFixed(1)}/s; lost ${one.lost}+${two.lost}, doubled ${one.doubled}+${two.doubled}`,
  });
};

async function runCase(ctx: BenchContext, n: number, slowUrl: string): Promise<Case> {
  const dbName = `bench_instances_${n}`;
  const admin = new pg.Client({ connectionString: ctx.databaseUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${dbName}`);
  const url = new URL(ctx.databaseUrl!);
  url.pathname = `/${dbName}`;
  const targets: string[] = [];
  const balancer = await roundRobin(targets);
  const started: ChildProcess[] = [];
  const folders: string[] = [];
  const encryptionKey = randomBytes(32).toString('hex');
  try {
    for (let i = 0; i < n; i++) {
      const folder = mkdtempSync(path.join(tmpdir(), 'bench-instance-'));
      folders.push(folder);
      // One after the other: the first migrates the new database.
      const p = await startProcess('dist/server.js', {
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: folder,
        DATABASE_URL: url.toString(),
        ENCRYPTION_KEY: encryptionKey,
        ADMIN_TOKEN: ctx.adminToken,
        INSTANCE_NAME: `instance-${i + 1}`,
        SIMULATOR_URL: ctx.simulatorUrl,
        SIMULATOR_CALLBACK_BASE_URL: balancer.url,
        GRAPH_BASE_URL: '',
        DEV_ALLOW_PRIVATE_TARGETS: 'true',
        BOT_SANDBOX_IN_FLIGHT: String(IN_FLIGHT),
        BOT_EVENTS_PER_MINUTE: '1000000',
        BOT_HTTP_PER_MINUTE: '1000000',
        BOT_HTTP_CONCURRENCY: '64',
        RATE_LIMIT_PER_MINUTE: '1000000000',
        LOG_LEVEL: 'warn',
      }, /listening on http:\/\/localhost:(\d+)/, 120_000);
      started.push(p.child);
      targets.push(`http://127.0.0.1:${p.match[1]}`);
    }
    const call = async (base: string, method: string, p: string, body?: object, key = ctx.adminToken) => {
      const res = await fetch(base + p, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
      const json = (await res.json().catch(() => ({}))) as any;
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };
    const projects: Array<{ phoneNumberId: string }> = [];
    for (let i = 0; i < PROJECTS; i++) {
      const { project } = await call(targets[0], 'POST', '/admin/projects', { name: `instances ${i}`, daily_send_quota: 100_000_000 });
      const { secret } = await call(targets[0], 'POST', `/admin/projects/${project.id}/keys`, { name: 'bench', scopes: ['code:read', 'code:write', 'messages:send'] });
      const { channel } = await call(targets[0], 'GET', `/admin/projects/${project.id}/channel`);
      await call(targets[0], 'PUT', '/v1/files/src%2Fbot.ts', { content: bot(slowUrl) }, secret);
      await call(targets[0], 'POST', '/v1/deployments', {}, secret);
      projects.push({ phoneNumberId: channel.phone_number_id });
    }
    // Every message from a customer of its own (no conversation waits for another), its text unique.
    const burst = async (prefix: string, count: number, firstCustomer: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: Math.min(WRITERS, count) }, async () => {
        while (next < count) {
          const i = next++;
          const p = projects[i % PROJECTS];
          await fetch(`${ctx.simulatorUrl}/_sim/inbound`, {
            method: 'POST', headers: { 'Content-Type': 'application/json' },
            body: JSON.stringify({ phone_number_id: p.phoneNumberId, from: String(firstCustomer + i), name: 'Bench', text: `${prefix}${i}` }),
          });
        }
      }));
    };
    // Warm: every project's bot started on every instance (start-ups are not the capacity measured).
    const warm = `w${n}-${randomBytes(3).toString('hex')}-`;
    await burst(warm, PROJECTS * n * 4, 15_560_000_000 + n * 100_000);
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
      if ((await repliesOf(ctx.simulatorUrl, projects.map((p) => p.phoneNumberId), warm)).size >= PROJECTS * n * 4) break;
    }
    const prefix = `b${n}-${randomBytes(3).toString('hex')}-`;
    const t0 = Date.now();
    await burst(prefix, MESSAGES, 15_550_000_000 + n * 100_000);
    const written = (Date.now() - t0) / 1000;
    // Drained: every reply in, or no new one for 20 s.
    let replies = new Map<string, number>();
    let lastCount = -1;
    let lastChange = Date.now();
    let lastReplyAt = t0;
    for (;;) {
      replies = await repliesOf(ctx.simulatorUrl, projects.map((p) => p.phoneNumberId), prefix);
      const total = [...replies.values()].reduce((a, b) => a + b, 0);
      if (total !== lastCount) {
        lastCount = total;
        lastChange = Date.now();
        lastReplyAt = Date.now();
      }
      if (replies.size >= MESSAGES || Date.now() - lastChange > 20_000) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = (lastReplyAt - t0) / 1000;
    const runs = await Promise.all(targets.map(async (base) => {
      const text = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${ctx.adminToken}` } })).text();
      const line = text.split('\n').find((l) => l.startsWith('bot_event_runs_total') && l.includes('kind="message"'));
      return line ? Number(line.trim().split(/\s+/).pop()) : 0;
    }));
    return {
      instances: n,
      answered: replies.size,
      lost: MESSAGES - replies.size,
      doubled: [...replies.values()].filter((c) => c > 1).length,
      seconds,
      perSecond: replies.size / seconds,
      written,
      runs,
    };
  } finally {
    for (const c of started) await stopProcess(c);
    await balancer.close();
    for (const f of folders) rmSync(f, { recursive: true, force: true });
    await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

/** Replies per message text (`echo: <text>`) the simulator was asked to send from the numbers. */
async function repliesOf(simulatorUrl: string, numbers: string[], prefix: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const pnid of numbers) {
    const res = await fetch(`${simulatorUrl}/_sim/messages?phone_number_id=${pnid}&limit=5000`);
    const body = (await res.json()) as any;
    const all: any[] = Array.isArray(body) ? body : (body.messages ?? body.data ?? []);
    for (const m of all) {
      const text = m.payload?.text?.body as string | undefined;
      if (!text?.startsWith(`echo: ${prefix}`)) continue;
      out.set(text, (out.get(text) ?? 0) + 1);
    }
  }
  return out;
}

/** A round-robin HTTP balancer over `targets` (read at each request: filled once they start). */
async function roundRobin(targets: string[]): Promise<{ url: string; close(): Promise<void> }> {
  let turn = 0;
  return listen(http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', targets[turn++ % targets.length]);
    const out = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(out);
  }));
}

async function listen(server: http.Server): Promise<{ url: string; close(): Promise<void> }> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}
