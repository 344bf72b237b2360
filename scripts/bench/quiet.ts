/**
 * A quiet start for a measured phase: the service's backlog drained (every event dispatched, the
 * status callbacks of the last phase applied) and the hot tables vacuumed, so that one phase's
 * backlog and dead rows are not billed to the next. Reads the bench service's database directly.
 */
import pg from 'pg';
import { embeddedServiceUrl, readEmbeddedCredentials } from '../../lib/platform/db/embedded.js';

export const HOT_TABLES = ['conversations', 'messages', 'contacts', 'send_counters', 'events'] as const;

export async function benchDatabaseUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const credentials = await readEmbeddedCredentials(process.env.DATA_DIR ?? '.data/bench');
  if (!credentials) throw new Error('bench: no embedded PostgreSQL credentials in the bench data folder');
  return embeddedServiceUrl(credentials, Number(process.env.BENCH_PG_PORT ?? '54331'));
}

export function benchPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  return pool;
}

/** Waits (up to a minute) until no event waits for dispatch and nothing new arrives for 2 s, then vacuums the hot tables. */
export async function quietStart(pool: pg.Pool): Promise<void> {
  const count = async () => Number((await pool.query<{ n: string }>(`SELECT
      (SELECT count(*) FROM events WHERE dispatched_at IS NULL) + (SELECT count(*) FROM messages WHERE status IN ('pending', 'sent')) AS n`)).rows[0].n);
  // Messages still `sent` await their delivered/read callbacks; a bench's own failures may leave
  // some for good, so the wait is bounded and also ends when the count stops moving.
  let last = -1;
  for (let i = 0; i < 30; i++) {
    const n = await count();
    if (n === 0 || n === last) break;
    last = n;
    await new Promise((r) => setTimeout(r, 2000));
  }
  for (const t of HOT_TABLES) await pool.query(`VACUUM (ANALYZE) ${t}`);
}
