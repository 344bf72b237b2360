/**
 * Inserting rows (`POST /v1/tables/{table}/rows`, the dashboard's database page).
 *
 * Policy and why:
 * - 1 to MAX_INSERT_ROWS rows in one transaction as the project's role (lib/tables/isolation.ts):
 *   all are written or none. A column left out takes its default (`DEFAULT` in the VALUES list,
 *   so rows may name different columns); `null` sets NULL. Values are bound and cast to the
 *   column's type, as on update.
 * - Judged against the schema's storage quota before it runs (lib/tables/quota.ts, the rule of
 *   updates): the rows it adds, and an upper bound of their bytes (each value uncompressed plus its
 *   header, a row version's overhead, and an index entry per index), must fit what remains, else
 *   409 `table_quota_exceeded` with nothing written. The measure after the write, in its
 *   transaction, is the safety net.
 * - `dry_run` runs the same insert and rolls it back: the answer shows the rows as they would be
 *   stored (defaults, constraints checked). It is judged against the quota too, so a dry run never
 *   writes more than a real insert could. A serial column's sequence still advances (PostgreSQL's
 *   sequences are not transactional).
 * - The answer is the update/delete shape (lib/tables/writes.ts): `affected` and the rows as stored.
 */
import { ApiError } from '../platform/errors.js';
import { columnOf, loadTable, platformTableForbidden, type ColumnInfo } from './catalogue.js';
import { physicalSchema, withProjectTx, type PlatformDb } from './isolation.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { isPlatformTable, quoteIdent, type TableSchema } from './names.js';
import { mapQueryErrors } from './pg-errors.js';
import { col, Params, valueText } from './sql.js';
import { rowTypes } from './values.js';
import { enforceQuota, judgeGrowth, limitsOf, lockQuota, ROW_VERSION_OVERHEAD, usageOf } from './quota.js';
import type { TablesSettings } from './rows.js';
import type { WriteResult } from './writes.js';

/** At most this many rows per insert (every one comes back in the answer). */
export const MAX_INSERT_ROWS = 50;
/** A value's header in a row (a varlena's 4 bytes at most). */
const VALUE_OVERHEAD = 4;
/** An index entry's header and heap pointer. */
const INDEX_ENTRY_OVERHEAD = 16;

export interface InsertRequest {
  projectId: string;
  table: string;
  schema: TableSchema;
  rows: unknown[];
  dryRun: boolean;
  /** The transaction's last step before COMMIT (not for a dry run): an Idempotency-Key linked to it. */
  beforeCommit?: (client: Tx, result: WriteResult) => Promise<void>;
}

/** Thrown inside the transaction to roll a dry run back; carries its answer out. */
class DryRunDone {
  constructor(readonly result: WriteResult) {}
}

function checkRows(rows: unknown): Record<string, unknown>[] {
  if (!Array.isArray(rows) || rows.length === 0 || rows.length > MAX_INSERT_ROWS) {
    throw new ApiError('invalid_request', `rows must be an array of 1 to ${MAX_INSERT_ROWS} objects of column values.`, {
      fields: [{ field: 'body.rows', message: `must hold 1 to ${MAX_INSERT_ROWS} rows` }],
    });
  }
  return rows.map((r, i) => {
    if (typeof r !== 'object' || r === null || Array.isArray(r)) {
      throw new ApiError('invalid_request', 'Each row must be an object of column values.', { fields: [{ field: `body.rows[${i}]`, message: 'must be an object' }] });
    }
    return r as Record<string, unknown>;
  });
}

/**
 * `db`: the project's transaction is opened through its pool (lib/tables/isolation.ts), the
 * service's reads (schema name, quota) run on its handle. The insert itself stays on the tenant
 * client (`rowMode: 'array'`, the room's parsers: the stored rows come back as they always did).
 */
export async function insertRows(db: PlatformDb, settings: Pick<TablesSettings, 'statementTimeoutMs' | 'quota'>, w: InsertRequest): Promise<WriteResult> {
  if (isPlatformTable(w.table)) throw platformTableForbidden(w.table);
  const rows = checkRows(w.rows);
  const physical = await physicalSchema(db.sql, w.projectId, w.schema);
  const limit = await limitsOf(db.sql, settings.quota, w.projectId, w.schema);
  const timeoutMs = settings.statementTimeoutMs;
  try {
    return await withProjectTx(db, w.projectId, { readOnly: false, statementTimeoutMs: timeoutMs, schema: w.schema }, async (client) => {
      const table = await loadTable(client, physical, w.schema, w.table);
      // The columns any row names, in table order; the others take their defaults.
      const named = new Set<string>();
      for (const [i, row] of rows.entries()) {
        for (const [name, value] of Object.entries(row)) {
          columnOf(table, name, `rows[${i}]`);
          if (value !== null && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
            throw new ApiError('invalid_request', `The value of "${name}" must be a string, number, boolean or null.`, {
              fields: [{ field: `body.rows[${i}].${name}`, message: 'must be a JSON scalar' }],
            });
          }
          named.add(name);
        }
      }
      const columns = table.columns.filter((c) => named.has(c.name));
      const params = new Params();
      const casts: { value: string; column: ColumnInfo }[] = [];
      let bytes = 0;
      const tuples = rows.map((row) => {
        bytes += ROW_VERSION_OVERHEAD;
        const cells = columns.map((c) => {
          if (!(c.name in row)) return 'DEFAULT';
          const value = row[c.name] as string | number | boolean | null;
          if (value === null) return 'NULL';
          const text = valueText(value);
          casts.push({ value: text, column: c });
          bytes += Buffer.byteLength(text) + VALUE_OVERHEAD;
          return params.add(text, c.castType);
        });
        // A row that names no column: the first column's default stands for "all defaults".
        return `(${cells.length ? cells.join(', ') : 'DEFAULT'})`;
      });
      // count(*) is int8: bigint on the handle, read with Number.
      const indexes = Number((await queryRows<{ n: bigint }>(
        client,
        `SELECT count(*) AS n FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`,
        physical,
        table.name,
      ))[0].n);
      bytes += rows.length * INDEX_ENTRY_OVERHEAD * indexes;
      const target = columns.length ? columns.map(col).join(', ') : col(table.columns[0]);
      const from = `${quoteIdent(physical)}.${quoteIdent(table.name)}`;
      const text = `INSERT INTO ${from} (${target}) VALUES ${tuples.join(', ')} RETURNING ${table.columns.map(col).join(', ')}`;
      // Judged before it runs (lib/tables/quota.ts): refused, it has written nothing.
      await lockQuota(client, physical);
      const before = await usageOf(client, physical);
      judgeGrowth(w.schema, limit, before, { rows: rows.length, bytes });
      const res = await mapQueryErrors(client, { timeoutMs, casts }, () => client.query({ text, values: params.values, rowMode: 'array', types: rowTypes }));
      await enforceQuota(client, physical, w.schema, limit, before, true, bytes);
      const stored = (res.rows as unknown[][]).map((r) => Object.fromEntries(table.columns.map((c, i) => [c.name, r[i]])));
      const result: WriteResult = { table: table.name, schema: w.schema, dry_run: w.dryRun, affected: stored.length, rows: stored, rows_truncated: false };
      if (w.dryRun) throw new DryRunDone(result);
      await w.beforeCommit?.(client, result);
      return result;
    });
  } catch (e) {
    if (e instanceof DryRunDone) return e.result;
    throw e;
  }
}
