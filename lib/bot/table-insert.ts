/**
 * `tables.insert` for the bot: one row into a project table through the one insert path
 * (lib/tables/inserts.ts, also `POST /v1/tables/{table}/rows` and the dashboard): as the
 * project's role, values bound and cast to the column types, judged against the storage quota
 * before it is written (409 `table_quota_exceeded`), answered with the row as stored.
 */
import type { Database } from '../platform/db/database.js';
import { ApiError } from '../platform/errors.js';
import { insertRows } from '../tables/inserts.js';
import type { TableSchema } from '../tables/names.js';
import type { QuotaDefaults } from '../tables/quota.js';

/** `db`: its pool opens the insert's transaction as the project's role, its handle reads the schema name and quota (insertRows). */
export async function insertRow(db: Pick<Database, 'pool' | 'sql'>, statementTimeoutMs: number, projectId: string, schema: TableSchema, tableName: string, row: unknown, quota?: QuotaDefaults): Promise<Record<string, unknown>> {
  if (typeof tableName !== 'string') throw new ApiError('invalid_request', 'table must be a string.');
  if (typeof row !== 'object' || row === null || Array.isArray(row)) throw new ApiError('invalid_request', 'row must be an object of column values.');
  const result = await insertRows(db, { statementTimeoutMs, quota }, { projectId, table: tableName, schema, rows: [row], dryRun: false });
  return result.rows[0];
}
