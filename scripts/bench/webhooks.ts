/**
 * Issue 5's goal: webhook fan-out, single instance. Ten registrations on local receivers subscribe
 * to one custom event, one of them always answering 500 (10% of receivers failing, so retries run
 * on the production schedule meanwhile). Events are raised through the runtime API at a fixed
 * rate sized for 2,000 successful deliveries per second, then as fast as 64 concurrent emitters
 * go. Reported: events per second raised, deliveries per second received by the healthy
 * receivers, and the event → delivery latency (arrival time minus the event's created_at, both
 * this machine's clock). P3 (issue #36): the best run's deliveries per second at least 60% of bare
 * Express's requests per second, measured in the same run.
 */
import { watchPg } from './pg-watch.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BenchSection } from './context.js';
import { cpuSeconds, load } from './harness.js';
import { goal } from './goals.js';

const RECEIVERS = 10;
/** BENCH_WEBHOOKS_FAILING=0 runs without the failing receiver (what its retries cost, issue 69). */
const FAILING = Number(process.env.BENCH_WEBHOOKS_FAILING ?? 1);
/** The fixed rate's load: deliveries per second to aim the emitters at (a load, not a goal). */
const FIXED_RATE = 2000;

interface Run {
  name: string;
  events: number;
  emitErrors: number;
  seconds: number;
  delivered: number;
  latencies: number[];
  failingAttempts: number;
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

interface Sink {
  latencies: number[];
  delivered: number;
  failingAttempts: number;
  lastAt: number;
}

/** The local receivers: one server, a path per registration; `/fail…` paths always answer 500. */
async function startReceivers() {
  const state = { run: '', sink: newSink() };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url!.startsWith('/fail')) {
        state.sink.failingAttempts++;
        res.writeHead(500).end();
        return;
      }
      const now = Date.now();
      // Cheaper than JSON.parse, so the receiver takes less of the machine from the service.
      const raw = Buffer.concat(chunks).toString('utf8');
      const createdAt = /"created_at":"([^"]+)"/.exec(raw)?.[1];
      if (createdAt && /"run":\s?"([^"]*)"/.exec(raw)?.[1] === state.run) {
        state.sink.delivered++;
        state.sink.latencies.push(now - Date.parse(createdAt));
        state.sink.lastAt = now;
      }
      res.writeHead(200).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function newSink(): Sink {
  return { latencies: [], delivered: 0, failingAttempts: 0, lastAt: 0 };
}

/** Emits `bench.tick` through the runtime API; true when it was accepted (202). */
function emitter(base: string, runtimeToken: string, runName: () => string) {
  let seq = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const url = new URL(`${base}/runtime/events`);
  const emitOne = (): Promise<boolean> =>
    new Promise((resolve) => {
      const body = Buffer.from(JSON.stringify({ name: 'bench.tick', payload: { run: runName(), n: seq++ } }));
      const req = http.request(
        { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent,
          headers: { Authorization: `Bearer ${runtimeToken}`, 'Content-Type': 'application/json', 'Content-Length': body.length } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode === 202));
          res.on('error', () => resolve(false));
        },
      );
      req.on('error', () => resolve(false));
      req.end(body);
    });
  return { emitOne, close: () => agent.destroy() };
}

/** Emits for `seconds`, at `rate` events/s or as fast as `concurrency` emitters go; counts accepted and refused. */
async function emitFor(emitOne: () => Promise<boolean>, seconds: number, opts: { rate?: number; concurrency?: number }): Promise<{ events: number; emitErrors: number; started: number }> {
  let events = 0;
  let emitErrors = 0;
  const started = Date.now();
  const until = started + seconds * 1000;
  const count = (ok: boolean): void => void (ok ? events++ : emitErrors++);
  if (opts.rate) {
    const inflight = new Set<Promise<void>>();
    // Every 10 ms, emit what the schedule owes.
    let sent = 0;
    while (Date.now() < until) {
      const owed = Math.floor(((Date.now() - started) / 1000) * opts.rate) - sent;
      for (let i = 0; i < owed; i++) {
        const p = emitOne().then(count);
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
      }
      sent += Math.max(0, owed);
      await new Promise((r) => setTimeout(r, 10));
    }
    await Promise.all(inflight);
  } else {
    await Promise.all(Array.from({ length: opts.concurrency ?? 64 }, async () => {
      while (Date.now() < until) count(await emitOne());
    }));
  }
  return { events, emitErrors, started };
}

function report(runs: Run[], duration: number, healthy: number): void {
  const rows = [
    ['webhook fan-out (10 receivers, 1 failing)', 'events/s', 'deliveries/s', 'delivered', 'p50 ms', 'p99 ms', 'max ms', 'failing attempts', 'emit errors'],
    ...runs.map((r) => [
      r.name,
      (r.events / duration).toFixed(0),
      (r.delivered / r.seconds).toFixed(0),
      `${r.delivered}/${r.events * healthy}`,
      String(quantile(r.latencies, 0.5)),
      String(quantile(r.latencies, 0.99)),
      String(r.latencies[r.latencies.length - 1] ?? NaN),
      String(r.failingAttempts),
      String(r.emitErrors),
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  console.log('\n' + rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')).join('\n'));
  const fixed = runs[0];
  const complete = fixed.delivered === fixed.events * healthy;
  console.log(
    `deliveries per second at the fixed rate: ${(fixed.delivered / fixed.seconds).toFixed(0)} with p99 event→delivery ${quantile(fixed.latencies, 0.99)} ms` +
      `${complete ? '' : ' (INCOMPLETE: some deliveries missing)'}`,
  );
  console.log(`at half the fixed rate: p99 event→delivery ${quantile(runs[1].latencies, 0.99)} ms`);
}

export const benchWebhooks: BenchSection = async (ctx) => {
  const { id: projectId, key } = await ctx.project(['webhooks:manage']);
  const { secret: runtime } = await ctx.admin('POST', `/admin/projects/${projectId}/runtime-tokens`);
  const receivers = await startReceivers();
  const webhookIds: string[] = [];
  for (let i = 0; i < RECEIVERS; i++) {
    const path = i < FAILING ? `/fail${i}` : `/ok${i}`;
    const res = await fetch(`${ctx.base}/v1/webhooks`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: receivers.url + path, events: ['bench.tick'] }),
    });
    const json = (await res.json()) as any;
    if (res.status !== 201) throw new Error(`register webhook: ${JSON.stringify(json)}`);
    webhookIds.push(json.data.webhook.id);
  }
  const healthy = RECEIVERS - FAILING;
  const { emitOne, close } = emitter(ctx.base, runtime, () => receivers.state.run);

  /** One run: emits, then waits for the healthy receivers to get every event (or gives up after 30 s). */
  const run = async (name: string, seconds: number, opts: { rate?: number; concurrency?: number }): Promise<Run> => {
    receivers.state.run = name;
    const sink = (receivers.state.sink = newSink());
    const watch = await watchPg(ctx.databaseUrl, name);
    const { events, emitErrors, started } = await emitFor(emitOne, seconds, opts);
    const deadline = Date.now() + 30_000;
    while (sink.delivered < events * healthy && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const line of (await watch?.stop()) ?? []) console.log(line);
    const took = ((sink.lastAt || Date.now()) - started) / 1000;
    return { name, events, emitErrors, seconds: took, delivered: sink.delivered, latencies: sink.latencies.sort((a, b) => a - b), failingAttempts: sink.failingAttempts };
  };

  // Issue #24: deliveries per second against bare Express requests per second, in this run. Measured
  // first, on the machine as the other sections measure it: measured after the runs (until issue 69),
  // it shared the machine with the failing receiver's retries, which go on for a minute after them.
  const bare = await load('bare Express GET /bare, max rate', { url: `${ctx.bareUrl}/bare`, duration: ctx.duration, connections: 50 });
  const targetEventRate = Math.ceil(FIXED_RATE / healthy);
  await run('warm-up', 2, { rate: 50 });
  const halfRate = Math.ceil(targetEventRate / 2);
  const runs = [await run(`fixed ${targetEventRate} events/s (≈${targetEventRate * healthy} deliveries/s)`, ctx.duration, { rate: targetEventRate })];
  // CPU per delivery at half the fixed rate: the service, its PostgreSQL, and this process (the receivers
  // and the emitters), which shares the machine with them.
  const before = { service: cpuSeconds(ctx.pids.service), bench: process.cpuUsage() };
  runs.push(await run(`fixed ${halfRate} events/s (≈${halfRate * healthy} deliveries/s)`, ctx.duration, { rate: halfRate }));
  const after = { service: cpuSeconds(ctx.pids.service), bench: process.cpuUsage(before.bench) };
  runs.push(await run('max rate, 64 emitters', ctx.duration, { concurrency: 64 }));

  report(runs, ctx.duration, healthy);
  if (before.service && after.service && runs[1].delivered > 0) {
    const per = (seconds: number) => ((seconds * 1000) / runs[1].delivered).toFixed(2);
    console.log(
      `CPU per delivery at half the fixed rate: service ${per(after.service.self - before.service.self)} ms, ` +
        `its PostgreSQL ${per(after.service.descendants - before.service.descendants)} ms, ` +
        `receivers and emitters (this process) ${per((after.bench.user + after.bench.system) / 1e6)} ms`,
    );
  }
  console.log(`max rate: ${(runs[2].delivered / runs[2].seconds).toFixed(0)} deliveries/s, p99 ${quantile(runs[2].latencies, 0.99)} ms`);
  const best = Math.max(...runs.map((r) => r.delivered / r.seconds));
  goal({ id: 'P3', what: 'webhook deliveries/s (best run) vs bare Express req/s', ratio: best / bare.rps, op: '>=', target: 0.6, detail: `${best.toFixed(0)} / ${bare.rps}` });

  for (const id of webhookIds) {
    await fetch(`${ctx.base}/v1/webhooks/${id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${key}` } }).catch(() => undefined);
  }
  close();
  await receivers.close();
};
