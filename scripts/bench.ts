/**
 * `npm run bench`: measures the service against a baseline in the same run, on this machine.
 * The service runs as `npm start` runs it (compiled into dist/, embedded PostgreSQL in .data/bench
 * unless DATABASE_URL is set), with limits raised, against the Cloud API simulator started alone.
 * Each section prints a table and its goals as ratios to a baseline of the same run (goals.ts),
 * and the run ends with a table of them all; goals are reported, not asserted (benchmarks are not
 * tests).
 * `npm run bench -- ping messages` runs only the named sections.
 */
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { buildService, installInterrupt, startProcess, stopProcess } from './bench/harness.js';
import { loadavg } from 'node:os';
import type { BenchContext, BenchSection } from './bench/context.js';
import { summary } from './bench/goals.js';
import { benchPing } from './bench/ping.js';
import { benchMessages } from './bench/messages.js';
import { benchWebhooks } from './bench/webhooks.js';
import { benchStatuses } from './bench/statuses.js';
import { benchUploads } from './bench/uploads.js';
import { benchTables } from './bench/tables.js';
import { benchBroadcasts } from './bench/broadcasts.js';
import { benchBot } from './bench/bot.js';
import { benchFlows } from './bench/flows.js';
import { benchSoak } from './bench/soak.js';
import { benchAgents } from './bench/agents.js';
import { benchTenants } from './bench/tenants.js';
import { benchInstances } from './bench/instances.js';
import { configurePgStats, embeddedSuperuserUrl, openPgStats } from './bench/pg-stats.js';
import { memoryLine } from './bench/memory.js';

const SECTIONS: Record<string, BenchSection> = {
  ping: benchPing,
  messages: benchMessages,
  webhooks: benchWebhooks,
  statuses: benchStatuses,
  uploads: benchUploads,
  tables: benchTables,
  broadcasts: benchBroadcasts,
  bot: benchBot,
  flows: benchFlows,
  agents: benchAgents,
  // Not run by default (about 9 minutes): `npm run bench -- soak`.
  soak: benchSoak,
  // Not run by default (long: 1,000 deployed bots; docs/benchmarks.md): `npm run bench -- tenants` (issue 66).
  tenants: benchTenants,
  // Not run by default (starts instances of its own): `npm run bench -- instances` (issue 66, item 5).
  instances: benchInstances,
};

/** Sections that run only when named. */
const OPT_IN = new Set(['soak', 'tenants', 'instances']);

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = wanted.filter((w) => !SECTIONS[w]);
  if (unknown.length) throw new Error(`Unknown section(s) ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}`);
  const adminToken = 'adm_bench_' + randomBytes(12).toString('hex');
  // Every process started is stopped at the end, whatever happens.
  const started: ChildProcess[] = [];
  const start = async (...args: Parameters<typeof startProcess>) => {
    const p = await startProcess(...args);
    started.unshift(p.child);
    return p;
  };
  // The started processes have their own process group (harness.ts): a Ctrl-C stops them here.
  installInterrupt(() => {
    void Promise.all(started.map((c) => stopProcess(c))).finally(() => process.exit(130));
  });
  try {
    await run(wanted, adminToken, start);
  } finally {
    for (const child of started) await stopProcess(child);
  }
}

async function run(wanted: string[], adminToken: string, start: typeof startProcess): Promise<void> {
  // What users run: `npm start` compiles into dist/ and runs node on it; so does the bench.
  buildService();
  console.log('service: dist/server.js, compiled by scripts/build.mjs and run by node as `npm start` runs it (not tsx)');
  // The simulator runs in its own process, as Meta would: its work is not the service's.
  const simulator = await start('dist/simulator/main.js', {
    SIMULATOR_PORT: '0',
    SIMULATOR_TEMPLATE_AUTO_APPROVE_MS: 'off',
    SIMULATOR_LOG: 'warn',
  }, /listening on (http:\/\/127\.0\.0\.1:\d+)/);
  const dataDir = '.data/bench';
  const pgPort = process.env.BENCH_PG_PORT ?? '54331';
  const serviceEnv = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: pgPort,
    SIMULATOR_PORT: '0',
    GRAPH_BASE_URL: '',
    SIMULATOR_URL: simulator.match[1],
    RATE_LIMIT_PER_MINUTE: '1000000000',
    RUNTIME_EVENTS_PER_MINUTE: '1000000000',
    BOT_EVENTS_PER_MINUTE: '1000000000',
    BOT_EMITS_PER_MINUTE: '1000000000',
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    // Not NODE_ENV=production: production refuses the embedded PostgreSQL and a generated master
    // key (lib/platform/production.ts); `npm start` on a developer's machine runs so too.
    // The webhook section delivers to receivers on 127.0.0.1 (a local-development setting).
    DEV_ALLOW_PRIVATE_TARGETS: 'true',
    // Broadcasts: the configured rate is the rate measured; numbers without a setting are unpaced.
    BROADCAST_RATE_SHARE: '1',
    BROADCAST_DEFAULT_MPS: '100000',
  };
  const serviceReady = /listening on http:\/\/localhost:(\d+)[\s\S]*simulator on (http:\/\/127\.0\.0\.1:\d+)/;
  // The embedded server runs with pg_stat_statements (bench/pg-stats.ts); a first run creates its
  // data folder with a start of the service, then sets it.
  if (!configurePgStats(dataDir) && !process.env.DATABASE_URL) {
    await stopProcess((await start('dist/server.js', serviceEnv, serviceReady)).child);
    configurePgStats(dataDir);
  }
  const service = await start('dist/server.js', serviceEnv, serviceReady);
  const pgStats = await openPgStats(dataDir, Number(pgPort));
  const bare = await start('scripts/bench/bare-server.ts', { PORT: '0' }, /READY (\d+)/);
  const base = `http://127.0.0.1:${service.match[1]}`;
  const admin = async (method: string, path: string, body?: object) => {
    const res = await fetch(base + path, {
      method,
      headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as any;
    if (!json.success) throw new Error(`${method} ${path}: ${JSON.stringify(json)}`);
    return json.data;
  };
  const ctx: BenchContext = {
    base,
    simulatorUrl: simulator.match[1],
    pids: { service: service.child.pid!, simulator: simulator.child.pid!, bare: bare.child.pid! },
    bareUrl: `http://127.0.0.1:${bare.match[1]}`,
    adminToken,
    databaseUrl: process.env.DATABASE_URL ?? (await embeddedSuperuserUrl(dataDir, Number(pgPort))),
    duration: Number(process.env.BENCH_DURATION ?? 10),
    admin,
    async project(scopes) {
      const { project } = await admin('POST', '/admin/projects', { name: 'bench', daily_send_quota: 100_000_000 });
      const { secret } = await admin('POST', `/admin/projects/${project.id}/keys`, { name: 'bench', scopes });
      const { channel } = await admin('GET', `/admin/projects/${project.id}/channel`);
      return { id: project.id, key: secret, phoneNumberId: channel.phone_number_id };
    },
  };
  console.log(await memoryLine('start', ctx.pids.service, base, adminToken));
  for (const [name, section] of Object.entries(SECTIONS)) {
    if (wanted.length ? !wanted.includes(name) : OPT_IN.has(name)) continue;
    console.log(`\n## ${name} (load average ${loadAverage()})`);
    await pgStats?.reset();
    await section(ctx);
    if (pgStats) console.log('\n' + (await pgStats.report()));
    console.log(await memoryLine(name, ctx.pids.service, base, adminToken));
  }
  await pgStats?.close();
  console.log('\n' + summary(loadAverage()));
}

/** The machine's 1, 5 and 15 minute load averages: on a shared machine, read the ratios beside them. */
function loadAverage(): string {
  return loadavg().map((l) => l.toFixed(2)).join(', ');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
