/**
 * Each table's rows and bytes in one schema of a project, for the console's database page beside
 * the quota (lib/tables/quota.ts measures the same way, per schema): rows are PostgreSQL's live-row
 * statistics (about a second behind), bytes the disk size with indexes and TOAST. Read as the
 * service from the catalogs and statistics only, never the rows. Platform tables are left out.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import { isPlatformTable, type TableSchema } from './names.js';
import { physicalSchema } from './isolation.js';

export interface TableSize {
  rows: number;
  bytes: number;
}

/** Read on the platform's handle (`deps.db.sql`). */
export async function tableSizes(sql: Tx, projectId: string, schema: TableSchema): Promise<Map<string, TableSize>> {
  const physical = await physicalSchema(sql, projectId, schema);
  // int8 columns: bigint on the handle, read with Number.
  const rows = await queryRows<{ name: string; rows: bigint; bytes: bigint }>(
    sql,
    `SELECT c.relname AS name, pg_catalog.pg_stat_get_live_tuples(c.oid)::bigint AS rows, pg_catalog.pg_total_relation_size(c.oid)::bigint AS bytes
       FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
    physical,
  );
  return new Map(rows.filter((x) => !isPlatformTable(x.name)).map((x) => [x.name, { rows: Number(x.rows), bytes: Number(x.bytes) }]));
}
