/**
 * Each table's rows and bytes in one schema of a project, for the console's database page beside
 * the quota (lib/tables/quota.ts measures the same way, per schema): rows are PostgreSQL's live-row
 * statistics (about a second behind), bytes the disk size with indexes and TOAST. Read as the
 * service from the catalogs and statistics only, never the rows. Platform tables are left out.
 */
import type pg from 'pg';
import { isPlatformTable, type TableSchema } from './names.js';
import { physicalSchema } from './isolation.js';

export interface TableSize {
  rows: number;
  bytes: number;
}

export async function tableSizes(pool: pg.Pool, projectId: string, schema: TableSchema): Promise<Map<string, TableSize>> {
  const physical = await physicalSchema(pool, projectId, schema);
  const r = await pool.query<{ name: string; rows: string; bytes: string }>(
    `SELECT c.relname AS name, pg_catalog.pg_stat_get_live_tuples(c.oid)::bigint AS rows, pg_catalog.pg_total_relation_size(c.oid)::bigint AS bytes
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
    [physical],
  );
  return new Map(r.rows.filter((x) => !isPlatformTable(x.name)).map((x) => [x.name, { rows: Number(x.rows), bytes: Number(x.bytes) }]));
}
