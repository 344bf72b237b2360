/**
 * `npm run bench`: measures the service against a baseline in the same run, on this machine.
 * The service runs as `npm start` would (embedded PostgreSQL in .data/bench unless DATABASE_URL
 * is set), with the rate limit raised. Figures are printed as a table; goals are checked, not
 * asserted (benchmarks are not tests).
 */
import { randomBytes } from 'node:crypto';
import { load, startProcess, stopProcess, table, type Result } from './bench/harness.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 10);

async function main(): Promise<void> {
  const adminToken = 'adm_bench_' + randomBytes(12).toString('hex');
  const service = await startProcess('server.ts', {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: '.data/bench',
    EMBEDDED_PG_PORT: process.env.BENCH_PG_PORT ?? '54331',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    ADMIN_TOKEN: adminToken,
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    NODE_ENV: 'production',
  }, /listening on http:\/\/localhost:(\d+)/);
  const bare = await startProcess('scripts/bench/bare-server.ts', { PORT: '0' }, /READY (\d+)/);
  const base = `http://127.0.0.1:${service.match[1]}`;
  try {
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
    const { project } = await admin('POST', '/admin/projects', { name: 'bench' });
    const { secret } = await admin('POST', `/admin/projects/${project.id}/keys`, { name: 'bench', scopes: ['messages:send'] });

    const results: Result[] = [];
    const warm = { duration: 2 };
    await load('warm-up', { url: `http://127.0.0.1:${bare.match[1]}/bare`, ...warm });
    await load('warm-up', { url: `${base}/v1/ping`, headers: { authorization: `Bearer ${secret}` }, ...warm });
    results.push(await load('bare Express GET /bare', { url: `http://127.0.0.1:${bare.match[1]}/bare`, duration: DURATION }));
    results.push(await load('GET /v1/ping (pk_ key)', { url: `${base}/v1/ping`, headers: { authorization: `Bearer ${secret}` }, duration: DURATION }));

    console.log('\n' + table(results));
    const ratio = results[1].rps / results[0].rps;
    console.log(`\nGET /v1/ping throughput = ${(ratio * 100).toFixed(1)}% of bare Express (goal: at least 50%) → ${ratio >= 0.5 ? 'met' : 'NOT met'}`);
  } finally {
    await stopProcess(bare.child);
    await stopProcess(service.child);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
