/**
 * Storage quotas of a project's tables: rows and bytes, per schema (public, preview).
 *
 * Policy and why:
 * - Limits are the configured defaults (TABLES_QUOTA_*), or an operator's per-project override
 *   (table `project_table_quotas`, `PUT /admin/projects/{id}/tables/quota`, `ops tables quota`).
 * - Usage: bytes are the disk size of the schema's tables with their indexes and TOAST (what a
 *   tenant costs); rows are PostgreSQL's live-row counts plus the current transaction's own inserts
 *   and deletes (others' counts show within about a second).
 * - A write is judged BEFORE it runs, by what it would write (`judgeGrowth`): PostgreSQL writes a
 *   whole new version of every row an update changes, and a write that ran and was rolled back
 *   leaves its row versions and TOAST chunks on disk until a vacuum (25 refused 800 KB updates grew
 *   a schema from 0.9 to 21.7 MB when the check came after the write). So an update is measured as
 *   the size of its new row versions (lib/tables/writes.ts: the new values' uncompressed size, what
 *   the untouched columns take in the heap, index entries) against what remains of the limit, and
 *   when it does not fit it is 409 `table_quota_exceeded` without having written anything: a
 *   refused write leaves the measured usage where it was. Consequence: near its limit a project
 *   can no longer update large rows even where the new version would reuse freed space (that
 *   cannot be known before writing); deleting rows frees space for later writes but the files,
 *   and so the usage, shrink only after VACUUM FULL or TRUNCATE.
 * - Growing writes of one schema are serialized by a transaction-scoped advisory lock
 *   (`lockQuota`), so two concurrent writes cannot both be judged against the same remainder.
 * - After the write, in its transaction, the schema is measured again as a safety net
 *   (`enforceQuota`): growth past the limit that the judgement did not foresee (beyond the page
 *   granularity of files, `GROWTH_SLACK`) is rolled back with the same 409.
 * - Operator DDL is held to the same limits (lib/tables/ddl.ts): measured before commit, and a
 *   CREATE TABLE … AS bounded while it runs.
 * - Deletes are never refused.
 * - Platform tables (`_platform_…`) do not count.
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { sqlState } from './pg-errors.js';
import { PLATFORM_TABLE_PREFIX, TABLE_SCHEMAS, type TableSchema } from './names.js';
import { physicalSchema } from './isolation.js';
import { lockForTransaction } from '../platform/db/locks.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export interface QuotaLimit {
  rows: number;
  bytes: number;
}

export type QuotaDefaults = Record<TableSchema, QuotaLimit>;

export const DEFAULT_QUOTAS: QuotaDefaults = {
  public: { rows: 1_000_000, bytes: 1024 ** 3 },
  preview: { rows: 100_000, bytes: 100 * 1024 ** 2 },
};

/** The defaults of the typed config. */
export function quotaDefaultsOf(config: { tablesQuotaPublicRows: number; tablesQuotaPublicBytes: number; tablesQuotaPreviewRows: number; tablesQuotaPreviewBytes: number }): QuotaDefaults {
  return {
    public: { rows: config.tablesQuotaPublicRows, bytes: config.tablesQuotaPublicBytes },
    preview: { rows: config.tablesQuotaPreviewRows, bytes: config.tablesQuotaPreviewBytes },
  };
}

interface OverrideRow {
  schema: TableSchema;
  /** int8: bigint on the handle (read with Number). */
  max_rows: bigint | null;
  max_bytes: bigint | null;
}

async function overrides(sql: Tx, projectId: string): Promise<Map<TableSchema, OverrideRow>> {
  try {
    const rows = await queryRows<OverrideRow>(sql, 'SELECT schema, max_rows, max_bytes FROM project_table_quotas WHERE project_id = $1', projectId);
    return new Map(rows.map((x) => [x.schema, x]));
  } catch (e) {
    // lib/tables on a database without the platform's migrations (its own tests): the defaults.
    if (sqlState(e) === '42P01') return new Map();
    throw e;
  }
}

/** The limits in force for one schema of a project (read on the platform's handle, `deps.db.sql`). */
export async function limitsOf(sql: Tx, defaults: QuotaDefaults | undefined, projectId: string, schema: TableSchema): Promise<QuotaLimit> {
  const d = (defaults ?? DEFAULT_QUOTAS)[schema];
  const o = (await overrides(sql, projectId)).get(schema);
  return { rows: o?.max_rows != null ? Number(o.max_rows) : d.rows, bytes: o?.max_bytes != null ? Number(o.max_bytes) : d.bytes };
}

const USAGE_SQL = `
  SELECT coalesce(sum(greatest(pg_catalog.pg_stat_get_live_tuples(c.oid)
                  + pg_catalog.pg_stat_get_xact_tuples_inserted(c.oid)
                  - pg_catalog.pg_stat_get_xact_tuples_deleted(c.oid), 0)) FILTER (WHERE c.relkind = 'r'), 0)::bigint AS rows,
         coalesce(sum(pg_catalog.pg_total_relation_size(c.oid)) FILTER (WHERE c.relkind IN ('r', 'm')), 0)::bigint AS bytes
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = $1 AND c.relkind IN ('r', 'm') AND left(c.relname, ${PLATFORM_TABLE_PREFIX.length}) <> '${PLATFORM_TABLE_PREFIX}'`;

export interface Usage {
  rows: number;
  bytes: number;
}

/** Rows and bytes of a physical schema (on any handle; a transaction's own writes included). */
export async function usageOf(tx: Tx, physicalSchema: string): Promise<Usage> {
  const [r] = await queryRows<{ rows: bigint; bytes: bigint }>(tx, USAGE_SQL, physicalSchema);
  return { rows: Number(r?.rows ?? 0), bytes: Number(r?.bytes ?? 0) };
}

export function quotaExceeded(schema: TableSchema, limit: QuotaLimit, usage: Usage, what: 'rows' | 'bytes'): ApiError {
  return new ApiError(
    'table_quota_exceeded',
    `The ${schema} tables of this project would hold ${what === 'rows' ? `${usage.rows} rows, over the quota of ${limit.rows}` : `${usage.bytes} bytes, over the quota of ${limit.bytes}`}; nothing was changed. Delete rows, or ask the operator to raise the quota.`,
    { schema, max_rows: limit.rows, max_bytes: limit.bytes, rows: usage.rows, bytes: usage.bytes },
  );
}

/**
 * Takes the schema's quota lock until the transaction ends: growing writes of one schema are
 * judged and written one at a time (waits are bounded by the transaction's lock timeout).
 */
export async function lockQuota(client: pg.PoolClient, physicalSchema: string): Promise<void> {
  // A pg connection: advisory locks are pg's (lib/platform/db/locks.ts takes the client).
  await lockForTransaction(client, `tables-quota:${physicalSchema}`, 'text');
}

/** A row version's own cost beside its values: tuple header (24), line pointer (4), null bitmap and alignment. */
export const ROW_VERSION_OVERHEAD = 40;

/** What a write would add: rows, and an upper bound of the bytes of its row versions. */
export interface Growth {
  rows: number;
  bytes: number;
}

/**
 * Refuses, before anything is written, a write whose growth does not fit what remains of the
 * limits (`usage` measured under `lockQuota`). Only what grows is judged: 0 added rows (an update)
 * is never refused for rows.
 */
export function judgeGrowth(schema: TableSchema, limit: QuotaLimit, usage: Usage, growth: Growth): void {
  const after = { rows: usage.rows + growth.rows, bytes: usage.bytes + growth.bytes };
  if (growth.rows > 0 && after.rows > limit.rows) throw quotaExceeded(schema, limit, after, 'rows');
  if (growth.bytes > 0 && after.bytes > limit.bytes) throw quotaExceeded(schema, limit, after, 'bytes');
}

/**
 * Files grow by pages (8 KB for the heap, TOAST, each index; the free-space and visibility maps
 * appear at some point), so a write's measured growth can pass its judged size by a few pages.
 */
export function growthSlack(judgedBytes: number): number {
  return Math.ceil(judgedBytes / 4) + 256 * 1024;
}

/**
 * Checks the schema after a write inside its transaction (`before` measured just before the
 * write); throws (the caller's transaction rolls back) when the write grew it past a limit.
 * Only growth is refused. With `judgedBytes` (the write was judged by `judgeGrowth` first), only
 * growth beyond the judgement and its page slack is refused: a safety net for what the judgement
 * could not foresee, not the rule. `addsRows` is false for updates.
 */
export async function enforceQuota(tx: Tx, physicalSchema: string, schema: TableSchema, limit: QuotaLimit, before: Usage, addsRows: boolean, judgedBytes?: number): Promise<void> {
  const usage = await usageOf(tx, physicalSchema);
  if (addsRows && usage.rows > limit.rows && usage.rows > before.rows) throw quotaExceeded(schema, limit, usage, 'rows');
  const allowed = judgedBytes === undefined ? 0 : judgedBytes + growthSlack(judgedBytes);
  if (usage.bytes > limit.bytes && usage.bytes > before.bytes + allowed) throw quotaExceeded(schema, limit, usage, 'bytes');
}

export interface QuotaReportEntry {
  schema: TableSchema;
  max_rows: number;
  max_bytes: number;
  rows_overridden: boolean;
  bytes_overridden: boolean;
  rows: number;
  bytes: number;
}

/** Limits and usage of both schemas, for operators (read as the service: catalogs and statistics only). */
export async function quotaReport(sql: Tx, defaults: QuotaDefaults | undefined, projectId: string): Promise<{ schemas: QuotaReportEntry[] }> {
  const o = await overrides(sql, projectId);
  const d = defaults ?? DEFAULT_QUOTAS;
  const schemas: QuotaReportEntry[] = [];
  for (const s of TABLE_SCHEMAS) {
    const row = o.get(s);
    const usage = await usageOf(sql, await physicalSchema(sql, projectId, s));
    schemas.push({
      schema: s,
      max_rows: row?.max_rows != null ? Number(row.max_rows) : d[s].rows,
      max_bytes: row?.max_bytes != null ? Number(row.max_bytes) : d[s].bytes,
      rows_overridden: row?.max_rows != null,
      bytes_overridden: row?.max_bytes != null,
      ...usage,
    });
  }
  return { schemas };
}

/** Sets (a number) or clears (null) a project's override; an absent field is left as it is. */
export async function setQuota(sql: Tx, projectId: string, schema: TableSchema, change: { max_rows?: number | null; max_bytes?: number | null }, now: Date): Promise<void> {
  const rows = change.max_rows === undefined ? null : change.max_rows;
  const bytes = change.max_bytes === undefined ? null : change.max_bytes;
  await execute(
    sql,
    `INSERT INTO project_table_quotas (project_id, schema, max_rows, max_bytes, updated_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (project_id, schema) DO UPDATE SET
       max_rows = CASE WHEN $6 THEN project_table_quotas.max_rows ELSE EXCLUDED.max_rows END,
       max_bytes = CASE WHEN $7 THEN project_table_quotas.max_bytes ELSE EXCLUDED.max_bytes END,
       updated_at = EXCLUDED.updated_at`,
    projectId, schema, rows, bytes, now, change.max_rows === undefined, change.max_bytes === undefined,
  );
}
