/**
 * What the bench's PostgreSQL is doing, once a second, during a section's runs (`BENCH_PG_WATCH=1`):
 * the statements running over 100 ms and what they wait on, the oldest snapshot held (a transaction
 * that keeps dead rows from being pruned), autovacuum at work, the dead rows of the webhook tables,
 * and each second's batches of the outcome writer's statement. Written to find why a run's statements slow down; printed as one line a second.
 */
import pg from 'pg';

const TABLES = ['webhook_deliveries', 'webhook_attempts', 'webhook_endpoints', 'events'];

export interface PgWatch {
  stop(): Promise<string[]>;
}

export async function watchPg(url: string | undefined, label: string): Promise<PgWatch | undefined> {
  if (!url || process.env.BENCH_PG_WATCH !== '1') return undefined;
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  const lines: string[] = [];
  let last: { calls: number; rows: number; exec: number } | undefined;
  const sample = async () => {
    const xmin = await client.query<{ age: number | null; pid: number; state: string; secs: number | null; query: string; backend_type: string }>(
      `SELECT age(backend_xmin) AS age, pid, state, backend_type, extract(epoch FROM now() - xact_start)::float AS secs, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) AS query
         FROM pg_stat_activity WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid() ORDER BY age(backend_xmin) DESC LIMIT 1`,
    );
    const slow = await client.query<{ pid: number; ms: number; wait: string | null; query: string }>(
      `SELECT pid, (extract(epoch FROM now() - query_start) * 1000)::int AS ms, wait_event_type || ':' || wait_event AS wait,
              left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS query
         FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND now() - query_start > interval '100 ms'
        ORDER BY query_start LIMIT 4`,
    );
    const vac = await client.query<{ relname: string; phase: string }>(
      `SELECT c.relname, p.phase FROM pg_stat_progress_vacuum p JOIN pg_class c ON c.oid = p.relid`,
    );
    const dead = await client.query<{ relname: string; dead: string; live: string }>(
      `SELECT relname, n_dead_tup AS dead, n_live_tup AS live FROM pg_stat_user_tables WHERE relname = ANY($1)`,
      [TABLES],
    );
    const stmt = await client
      .query<{ calls: string; rows: string; exec: number }>(
        `SELECT sum(calls) AS calls, sum(rows) AS rows, sum(total_exec_time) AS exec FROM pg_stat_statements WHERE query LIKE 'WITH o AS (%webhook_attempts%'`,
      )
      .catch(() => ({ rows: [] as Array<{ calls: string; rows: string; exec: number }> }));
    const now = stmt.rows[0] ? { calls: Number(stmt.rows[0].calls ?? 0), rows: Number(stmt.rows[0].rows ?? 0), exec: Number(stmt.rows[0].exec ?? 0) } : undefined;
    let outcomes = '';
    if (now && last && now.calls > last.calls) {
      const calls = now.calls - last.calls;
      outcomes = ` outcomes: ${calls} batches, ${((now.rows - last.rows) / calls).toFixed(0)} rows, ${((now.exec - last.exec) / calls).toFixed(1)} ms each;`;
    }
    last = now;
    const x = xmin.rows[0];
    const oldest = x ? `oldest xmin age ${x.age} (${x.backend_type} pid ${x.pid} ${x.state}, ${x.secs?.toFixed(1) ?? '-'} s: ${x.query})` : 'no snapshot held';
    const deadText = dead.rows.map((r) => `${r.relname} ${r.dead}/${r.live}`).join(', ');
    const vacText = vac.rows.length ? ` vacuum: ${vac.rows.map((r) => `${r.relname} ${r.phase}`).join(', ')};` : '';
    const slowText = slow.rows.length ? ` running: ${slow.rows.map((r) => `${r.pid} ${r.ms} ms ${r.wait ?? 'cpu'} ${r.query}`).join(' | ')};` : '';
    lines.push(`[pg ${label} ${new Date().toISOString().slice(11, 19)}]${outcomes}${slowText}${vacText} dead/live ${deadText}; ${oldest}`);
  };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await sample().catch((e) => lines.push(`[pg ${label}] sample failed: ${(e as Error).message}`));
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await client.end().catch(() => undefined);
      return lines;
    },
  };
}
