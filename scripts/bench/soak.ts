/**
 * `npm run bench -- soak [--rows=N] [--rate=N] [--customers=N] [--replies=N]` (issue #18): sustained load, to
 * show whether the cost of a message stays constant as the tables churn.
 *
 * A steady mix at a fixed rate (default 170 messages a second): conversations with a few hundred
 * customers (default 300), each an inbound message (through the simulator, as Meta would send
 * it) followed by the business's replies (default 4 sends), with the simulator's automatic
 * statuses on (sent, delivered, read). It runs until `--rows` message rows are written (default
 * 100,000: about 10 minutes). It starts from a quiet database (drained and vacuumed) and
 * prints, per tenth of the run: p50 and p99 latency of the sends, CPU per message of the service
 * and of its PostgreSQL, the service's RSS, dead tuples and HOT share of the updates of the hot
 * tables, and their index sizes. SIGINT stops the load and prints the tenths measured so far.
 * Goal: the last tenth within 15% of the first on latency and CPU per message, RSS flat.
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { cpuSeconds, onInterrupt } from './harness.js';
import type { BenchSection } from './context.js';
import { benchDatabaseUrl, benchPool, quietStart } from './quiet.js';
import { goal } from './goals.js';

const HOT_TABLES = ['conversations', 'messages', 'contacts'] as const;

function option(name: string, fallback: number): number {
  const arg = process.argv.find((a) => a.startsWith(`--${name}=`));
  const value = arg ? Number(arg.slice(name.length + 3)) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`bench soak: --${name} must be a positive number`);
  return value;
}

function rssMb(pid: number): number {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

interface TableSample { dead: number; upd: number; hot: number; indexBytes: number }
type Tables = Record<string, TableSample>;

async function tableSample(pool: pg.Pool): Promise<Tables> {
  const { rows } = await pool.query<{ relname: string; dead: string; upd: string; hot: string; idx: string }>(
    `SELECT relname, n_dead_tup AS dead, n_tup_upd AS upd, n_tup_hot_upd AS hot, pg_indexes_size(relid) AS idx
     FROM pg_stat_user_tables WHERE relname = ANY($1)`,
    [HOT_TABLES],
  );
  return Object.fromEntries(rows.map((r) => [r.relname, { dead: Number(r.dead), upd: Number(r.upd), hot: Number(r.hot), indexBytes: Number(r.idx) }]));
}

interface Sample { at: number; messages: number; cpu: { service: number; postgres: number }; rss: number; tables?: Tables }

function quantile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
}

export const benchSoak: BenchSection = async (ctx) => {
  const rows = option('rows', 100_000);
  const rate = option('rate', 170);
  const customers = option('customers', 300);
  const replies = option('replies', 4);
  const { key, phoneNumberId } = await ctx.project(['messages:send']);
  const phones = Array.from({ length: customers }, (_, i) => `1415777${String(i).padStart(4, '0')}`);
  const pool = benchPool(await benchDatabaseUrl());

  /** Requests that got no answer, by error code (status 0 in the failure counts). */
  const socketErrors = new Map<string, number>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 200 });
  const post = (url: string, headers: Record<string, string>, body: string) =>
    new Promise<number>((resolve) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        socketErrors.set(e.code ?? e.message, (socketErrors.get(e.code ?? e.message) ?? 0) + 1);
        resolve(0);
      });
      req.end(body);
    });
  const inbound = (from: string, text: string) =>
    post(`${ctx.simulatorUrl}/_sim/inbound`, {}, JSON.stringify({ phone_number_id: phoneNumberId, from, name: 'Soak', text }));
  const send = (phone: string, content: string) =>
    post(`${ctx.base}/v1/messages`, { authorization: `Bearer ${key}` }, JSON.stringify({ type: 'text', phone: `+${phone}`, content }));

  // Every customer has written once (their window is open), then a quiet, vacuumed start.
  for (const from of phones) if ((await inbound(from, 'hi')) !== 200) throw new Error('bench soak: inbound failed');
  await quietStart(pool);

  const perTenth = rows / 10;
  const latencies: number[][] = Array.from({ length: 10 }, () => []);
  const failures = new Array<number>(10).fill(0);
  /** Non-200 answers by kind and status (0: no answer), so a failure column can be read. */
  const failureKinds = new Map<string, number>();
  const failed = (tenth: number, kind: string, status: number) => {
    failures[tenth]++;
    const k = `${kind} ${status}`;
    failureKinds.set(k, (failureKinds.get(k) ?? 0) + 1);
  };
  const sendsIssued = new Array<number>(10).fill(0);
  const samples: Sample[] = [];
  const sample = async (messages: number): Promise<void> => {
    const cpu = cpuSeconds(ctx.pids.service);
    const s: Sample = { at: performance.now(), messages, cpu: { service: cpu?.self ?? NaN, postgres: cpu?.descendants ?? NaN }, rss: rssMb(ctx.pids.service) };
    samples.push(s);
    s.tables = await tableSample(pool).catch(() => undefined);
  };

  let stopped = false;
  const release = onInterrupt(() => {
    stopped = true;
    console.log('\nsoak: interrupted, stopping the load and printing what was measured');
  });

  console.log(`soak: ${rows} message rows at ${rate}/s (${customers} customers, 1 inbound + ${replies} replies per exchange)`);
  await sample(0);
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  let issued = 0;
  const tenthOf = (n: number) => Math.min(9, Math.floor(n / perTenth));
  const one = (n: number, due: number) => {
    const exchange = Math.floor(n / (replies + 1));
    const phone = phones[exchange % customers];
    const tenth = tenthOf(n);
    const p = (n % (replies + 1) === 0
      ? inbound(phone, `question ${exchange}`).then((status) => {
          if (status !== 200) failed(tenth, 'inbound', status);
        })
      : (sendsIssued[tenth]++, send(phone, `answer ${n}`)).then((status) => {
          if (status !== 200) failed(tenth, 'send', status);
          else latencies[tenth].push(performance.now() - due);
        })
    ).then(() => {
      inFlight.delete(p);
    });
    inFlight.add(p);
  };
  await new Promise<void>((resolve) => {
    let nextBoundary = 1;
    const tick = () => {
      const dueNow = stopped ? issued : Math.min(rows, Math.floor(((performance.now() - started) / 1000) * rate) + 1);
      while (issued < dueNow) {
        one(issued, started + (issued * 1000) / rate);
        issued++;
      }
      if (issued >= nextBoundary * perTenth && nextBoundary < 10) {
        void sample(issued);
        nextBoundary++;
      }
      if (issued >= rows || stopped) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(inFlight);
  await sample(issued);
  release();
  agent.destroy();

  const lines = [
    '| tenth | messages | sends/s | p50 ms | p99 ms | failed | service CPU ms/msg | PostgreSQL CPU ms/msg | service RSS MB | conversations dead / HOT % | messages dead / status HOT % | contacts upd | index MB conv / msg |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  const figures: Array<{ p50: number; p99: number; cpu: number }> = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1];
    const b = samples[i];
    const n = b.messages - a.messages;
    if (n <= 0) continue;
    const lat = latencies[i - 1].sort((x, y) => x - y);
    const cpuService = ((b.cpu.service - a.cpu.service) * 1000) / n;
    const cpuPg = ((b.cpu.postgres - a.cpu.postgres) * 1000) / n;
    // For messages, one update per send gives it the channel's wamid (indexed: never HOT); the
    // share shown is of the status updates, the rest.
    const hot = (t: string, unhotable = 0) => {
      const ta = a.tables?.[t];
      const tb = b.tables?.[t];
      if (!ta || !tb) return 'n/a';
      const upd = tb.upd - ta.upd - unhotable;
      return `${tb.dead} / ${upd > 0 ? Math.round(((tb.hot - ta.hot) * 100) / upd) : '-'}`;
    };
    const contactsUpd = a.tables && b.tables ? String(b.tables.contacts.upd - a.tables.contacts.upd) : 'n/a';
    const idx = b.tables ? `${(b.tables.conversations.indexBytes / 2 ** 20).toFixed(2)} / ${(b.tables.messages.indexBytes / 2 ** 20).toFixed(1)}` : 'n/a';
    const p50 = quantile(lat, 0.5);
    const p99 = quantile(lat, 0.99);
    figures.push({ p50, p99, cpu: cpuService + cpuPg });
    lines.push(`| ${i} | ${n} | ${Math.round(lat.length / ((b.at - a.at) / 1000))} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${failures[i - 1]} | ${cpuService.toFixed(2)} | ${cpuPg.toFixed(2)} | ${b.rss} | ${hot('conversations')} | ${hot('messages', sendsIssued[i - 1])} | ${contactsUpd} | ${idx} |`);
  }
  console.log('\n' + lines.join('\n'));
  // Table counters reach pg_stat a moment after the statements: the last tenth's HOT share settles within a second or two.
  if (figures.length >= 2) {
    const first = figures[0];
    const last = figures[figures.length - 1];
    console.log(`last tenth vs first: p50 ${first.p50.toFixed(1)} → ${last.p50.toFixed(1)} ms, p99 ${first.p99.toFixed(1)} → ${last.p99.toFixed(1)} ms, CPU (service + PostgreSQL) ${first.cpu.toFixed(2)} → ${last.cpu.toFixed(2)} ms/msg`);
    goal({ id: 'soak', what: 'CPU per message (service + PostgreSQL), last tenth vs first', ratio: last.cpu / first.cpu, op: '<=', target: 1.15, detail: `${last.cpu.toFixed(2)} / ${first.cpu.toFixed(2)} ms` });
    goal({ id: 'soak', what: 'p99, last tenth vs first', ratio: last.p99 / first.p99, op: '<=', target: 1.15, detail: `${last.p99.toFixed(1)} / ${first.p99.toFixed(1)} ms` });
    console.log(`service RSS: ${samples[1].rss} → ${samples[samples.length - 1].rss} MB`);
  }
  if (failureKinds.size > 0) console.log(`non-200 answers: ${[...failureKinds].map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  if (socketErrors.size > 0) console.log(`no answer (status 0), by error: ${[...socketErrors].map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  if (stopped) console.log(`(interrupted after ${issued} of ${rows} messages)`);
  await pool.end();
};
