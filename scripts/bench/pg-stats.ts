/**
 * What the service asks of PostgreSQL, per bench section (issue 49, item 1): the embedded server
 * runs with pg_stat_statements (planning tracked too), its counters are reset before a section
 * and read after it. Printed: statements, PostgreSQL's planning and execution time, in all and
 * per operation of the section (a send, a ping: what the section counted with `operations`), and
 * the statements that took the most time. Only the service role's statements count (the bench's
 * own reads and VACUUMs are left out). Against an external DATABASE_URL nothing is printed.
 */
import { existsSync, readFileSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { EMBEDDED_SUPERUSER, fallbackPgDir, readEmbeddedCredentials } from '../../lib/platform/db/embedded.js';

const SETTINGS = {
  shared_preload_libraries: `'pg_stat_statements'`,
  'pg_stat_statements.track_planning': 'on',
  'pg_stat_statements.max': '5000',
};

/**
 * Writes the settings into the embedded server's postgresql.auto.conf (read at its start).
 * False when its data folder does not exist yet (the first start creates it) or DATABASE_URL is set.
 */
export function configurePgStats(dataDir: string): boolean {
  if (process.env.DATABASE_URL) return false;
  // In the data folder, or where the embedded server keeps it when `postgres` cannot enter it.
  const pgDir = [path.join(dataDir, 'pg'), fallbackPgDir(dataDir)].find((d) => existsSync(path.join(d, 'PG_VERSION')));
  const file = pgDir && path.join(pgDir, 'postgresql.auto.conf');
  if (!file || !existsSync(file)) return false;
  const text = readFileSync(file, 'utf8');
  const missing = Object.entries(SETTINGS).filter(([k]) => !new RegExp(`^${k.replace('.', '\\.')}\\s*=`, 'm').test(text));
  if (missing.length) appendFileSync(file, missing.map(([k, v]) => `${k} = ${v}\n`).join(''));
  return true;
}

interface Operations {
  count: number;
  what: string;
}

let ops: Operations = { count: 0, what: 'operation' };

/** A section says how many operations (sends, requests) its statements served, for the per-operation figures. */
export function operations(count: number, what: string): void {
  ops = { count: ops.what === what ? ops.count + count : count, what };
}

export interface PgStats {
  reset(): Promise<void>;
  report(): Promise<string>;
  close(): Promise<void>;
}

/** The bench's embedded server's superuser URL (its `service` database), or undefined before its first start. */
export async function embeddedSuperuserUrl(dataDir: string, port: number): Promise<string | undefined> {
  const credentials = await readEmbeddedCredentials(dataDir);
  return credentials && `postgres://${EMBEDDED_SUPERUSER}:${encodeURIComponent(credentials.superuserPassword)}@127.0.0.1:${port}/service`;
}

/** A superuser connection to the bench's embedded server, or undefined when it has no pg_stat_statements. */
export async function openPgStats(dataDir: string, port: number): Promise<PgStats | undefined> {
  if (process.env.DATABASE_URL) return undefined;
  const credentials = await readEmbeddedCredentials(dataDir);
  if (!credentials) return undefined;
  const client = new pg.Client({ connectionString: `postgres://${EMBEDDED_SUPERUSER}:${credentials.superuserPassword}@127.0.0.1:${port}/service` });
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await client.query('SELECT 1 FROM pg_stat_statements LIMIT 1');
  } catch (e) {
    console.log(`pg_stat_statements unavailable: ${(e as Error).message}`);
    await client.end();
    return undefined;
  }
  // pg_stat_database counts deadlocks since the server's statistics began: read before and after.
  const deadlocks = async () => Number((await client.query<{ n: string }>(`SELECT deadlocks AS n FROM pg_stat_database WHERE datname = 'service'`)).rows[0]?.n ?? 0);
  let deadlocksBefore = await deadlocks();
  return {
    async reset() {
      ops = { count: 0, what: 'operation' };
      await client.query('SELECT pg_stat_statements_reset()');
      deadlocksBefore = await deadlocks();
    },
    async report() {
      const { rows } = await client.query<{ calls: string; plans: string; plan: number; exec: number; max: number; query: string }>(
        `SELECT s.calls, s.plans, s.total_plan_time AS plan, s.total_exec_time AS exec, s.max_exec_time AS max, s.query
         FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid JOIN pg_database d ON d.oid = s.dbid
         WHERE r.rolname = 'service' AND d.datname = 'service' AND s.query NOT ILIKE 'vacuum%'
           AND s.query NOT LIKE '%(SELECT count(*) FROM events WHERE dispatched_at IS NULL) + (SELECT count(*) FROM messages%'`,
      );
      const sum = (k: 'calls' | 'plans' | 'plan' | 'exec') => rows.reduce((s, r) => s + Number(r[k]), 0);
      const lines = [`PostgreSQL (pg_stat_statements, the service's statements): ${sum('calls')} statements, ${sum('plans')} planned; plan ${sum('plan').toFixed(0)} ms, execution ${sum('exec').toFixed(0)} ms`];
      if (ops.count > 0) {
        lines.push(`per ${ops.what} (${ops.count}): ${(sum('calls') / ops.count).toFixed(2)} statements, ${(sum('plans') / ops.count).toFixed(2)} planned, plan ${((sum('plan') * 1000) / ops.count).toFixed(0)} µs, execution ${((sum('exec') * 1000) / ops.count).toFixed(0)} µs`);
      }
      // A deadlock waits deadlock_timeout (1 s) before PostgreSQL breaks it: a request's one-second tail.
      lines.push(`deadlocks: ${(await deadlocks()) - deadlocksBefore}; the slowest execution of a statement: ${Math.max(0, ...rows.map((r) => r.max)).toFixed(0)} ms`);
      const top = rows.sort((a, b) => b.plan + b.exec - (a.plan + a.exec)).slice(0, 10);
      lines.push('   calls  planned  plan µs/call  exec µs/call  max ms  statement');
      for (const r of top) {
        const calls = Number(r.calls);
        lines.push(`${String(calls).padStart(8)}  ${String(r.plans).padStart(7)}  ${((r.plan * 1000) / calls).toFixed(0).padStart(12)}  ${((r.exec * 1000) / calls).toFixed(0).padStart(12)}  ${r.max.toFixed(0).padStart(6)}  ${r.query.replace(/\s+/g, ' ').slice(0, 90)}`);
      }
      return lines.join('\n');
    },
    async close() {
      await client.end().catch(() => undefined);
    },
  };
}
