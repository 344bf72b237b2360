/**
 * Issue 12's goal: on a 1,000,000-row project table, the page after 999,950 rows within 1.2× the
 * first page, ordered by the primary key and by an indexed, non-unique, nullable column (10% NULL,
 * so the deep position lies in the NULL partition), with and without a filter on an indexed column.
 *
 * The table is created through the operator API, filled as the project's role straight in the
 * database (there is no bulk insert in the API), and read through GET /v1/tables/{table}/rows.
 * The deep cursor is signed with the service's own cursor secret (derived from the master key in
 * DATA_DIR, as server.ts does), so the service sees exactly the cursor it would have issued.
 * `cat` (the filtered column, 10 values) is independent of which rows have a NULL `grp`, so the
 * filtered deep pages have rows to return. Each case: BENCH_TABLE_REQUESTS sequential requests (default 200) after a warm-up; median and p95.
 */
import pg from 'pg';
import { performance } from 'node:perf_hooks';
import type { BenchSection } from './context.js';
import { goal, type Goal } from './goals.js';
import { physicalSchema, withProjectTx } from '../../lib/tables/isolation.js';
import { pgTx } from '../../lib/platform/db/tx.js';
import { rowsScope } from '../../lib/tables/rows.js';
import { canonicalFilters, parseFilterText } from '../../lib/tables/filters.js';
import { encodeCursorUnchecked } from '../../lib/platform/cursor.js';
import { loadOrCreateMasterKey } from '../../lib/platform/master-key.js';
import { deriveKey } from '../../lib/platform/crypto-box.js';
import { embeddedServiceUrl, readEmbeddedCredentials } from '../../lib/platform/db/embedded.js';

const ROWS = Number(process.env.BENCH_TABLE_ROWS ?? 1_000_000);
const DEEP = ROWS - 50;
const REQUESTS = Number(process.env.BENCH_TABLE_REQUESTS ?? 200);
const LIMIT = 20;

async function databaseUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const credentials = await readEmbeddedCredentials(process.env.DATA_DIR ?? '.data/bench');
  if (!credentials) throw new Error('bench tables: no embedded PostgreSQL credentials in the bench data folder; start the bench service first');
  return embeddedServiceUrl(credentials, Number(process.env.BENCH_PG_PORT ?? '54331'));
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const benchTables: BenchSection = async (ctx) => {
  const { id: projectId, key } = await ctx.project(['tables:read']);
  const pool = new pg.Pool({ connectionString: await databaseUrl(), max: 2 });
  pool.on('error', () => undefined);
  // The tables room takes the platform's database as its pool and its handle.
  const db = { pool, sql: pgTx(pool) };
  try {
    await ctx.admin('POST', `/admin/projects/${projectId}/tables/ddl`, {
      sql: 'CREATE TABLE bench_rows (id bigint PRIMARY KEY, grp integer, cat integer NOT NULL, label text NOT NULL)',
    });
    const fillStarted = performance.now();
    await withProjectTx(db, projectId, { readOnly: false, statementTimeoutMs: 600_000, schema: 'public', ddl: true }, async (c) => {
      await c.query(
        `INSERT INTO bench_rows SELECT g, CASE WHEN g % 10 = 0 THEN NULL ELSE (g::bigint * 7919) % 1000 END, (g / 7) % 10, md5(g::text) FROM generate_series(1, ${ROWS}) g`,
      );
      await c.query('CREATE INDEX bench_rows_grp_id ON bench_rows (grp, id)');
      await c.query('CREATE INDEX bench_rows_cat ON bench_rows (cat)');
      await c.query('ANALYZE bench_rows');
    });
    console.log(`filled ${ROWS} rows in ${((performance.now() - fillStarted) / 1000).toFixed(1)} s`);

    const secret = deriveKey(await loadOrCreateMasterKey(process.env.DATA_DIR ?? '.data/bench', process.env.ENCRYPTION_KEY), 'cursor');
    const table = `${await physicalSchema(db.sql, projectId, 'public')}.bench_rows`;
    const filterText = JSON.stringify([{ column: 'cat', op: 'eq', value: 3 }]);
    const results: Array<{ name: string; p50: number; p95: number }> = [];
    const goals: Goal[] = [];
    for (const orderBy of [undefined, 'grp'] as const) {
      // The position of the 999,950th row of the ordering, as the service writes it (text forms).
      const order = orderBy ? 'grp ASC, id ASC' : 'id ASC';
      const keys = orderBy ? 'CAST(grp AS text), CAST(id AS text)' : 'CAST(id AS text)';
      // Read as the project's role: the service's own role has no rights on a project's tables.
      const pos = (await withProjectTx(db, projectId, { readOnly: true, statementTimeoutMs: 600_000, schema: 'public' }, (c) =>
        c.query({ text: `SELECT ${keys} FROM ${table} ORDER BY ${order} OFFSET ${DEEP - 1} LIMIT 1`, rowMode: 'array' }),
      )).rows[0] as (string | null)[];
      for (const filters of [undefined, filterText]) {
        const request = { projectId, table: 'bench_rows', schema: 'public' as const, orderBy, limit: LIMIT };
        const scope = rowsScope(request, canonicalFilters(parseFilterText(filters)));
        const cursor = encodeCursorUnchecked(['i', ...pos], scope, secret);
        const label = `${orderBy ? 'by grp (nullable, indexed)' : 'by primary key'}${filters ? ', filter cat=3' : ''}`;
        const timed: Record<string, number[]> = {};
        for (const [page, extra] of [['first page', {}], [`after ${DEEP.toLocaleString('en')} rows`, { cursor }]] as const) {
          const qs = new URLSearchParams({ limit: String(LIMIT), ...(orderBy ? { order_by: orderBy } : {}), ...(filters ? { filters } : {}), ...extra });
          const url = `${ctx.base}/v1/tables/bench_rows/rows?${qs}`;
          const times: number[] = [];
          for (let i = 0; i < REQUESTS + 20; i++) {
            const t0 = performance.now();
            const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
            const body = (await res.json()) as any;
            if (!body.success) throw new Error(`${label}, ${page}: ${JSON.stringify(body)}`);
            if (i >= 20) times.push(performance.now() - t0);
          }
          times.sort((a, b) => a - b);
          timed[page] = times;
          results.push({ name: `${label}: ${page}`, p50: quantile(times, 0.5), p95: quantile(times, 0.95) });
        }
        const [first, deep] = Object.values(timed).map((t) => quantile(t, 0.5));
        const ratio = deep / first;
        goals.push({ id: 'P5', what: `table page after ${DEEP.toLocaleString('en')} rows vs the first, ${label}`, ratio, op: '<=', target: 1.2, detail: `median ${deep.toFixed(2)} / ${first.toFixed(2)} ms` });
      }
    }
    const width = Math.max(...results.map((r) => r.name.length));
    console.log(`\n${'case'.padEnd(width)}  median ms  p95 ms`);
    for (const r of results) console.log(`${r.name.padEnd(width)}  ${r.p50.toFixed(2).padStart(9)}  ${r.p95.toFixed(2).padStart(6)}`);
    console.log('');
    for (const g of goals) goal(g);
  } finally {
    await pool.end();
  }
};
