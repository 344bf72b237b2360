/**
 * Updating and deleting rows by filter.
 *
 * Policy and why (Hasura once deleted whole tables on a null filter; PostgREST leaves it to an
 * extension):
 * - A non-empty filter is required; `like`/`ilike` are refused (say exactly which rows change);
 *   a null comparand is 400 `null_filter_value` as on reads.
 * - `dry_run` reports what would change and changes nothing.
 * - `max_affected` refuses (409 `max_affected_exceeded`, nothing changed) a change larger than the
 *   caller expects.
 * - The answer carries the affected count and at most MAX_RETURNED_ROWS of the changed rows (new
 *   values for an update, the removed rows for a delete), with `rows_truncated`.
 * - Each runs in one transaction as the project's role, under the statement and lock timeouts.
 * - An update is judged against the schema's byte quota before it runs (lib/tables/quota.ts): the
 *   size of the row versions it would write (`rowVersionBytes`) must fit what remains, else 409
 *   `table_quota_exceeded` and nothing is written (so nothing is left on disk either). The estimate
 *   is an upper bound: new values count uncompressed, once in the heap or TOAST (plus the chunks'
 *   overhead) and once more for every index that holds them; untouched columns count what they take
 *   in the heap (a TOASTed value only its pointer: an update keeps the old value's chunks). A
 *   larger change than `max_affected` is refused before it runs as well. Deletes are never refused.
 */
import { ApiError } from '../platform/errors.js';
import { columnOf, loadTable, type ColumnInfo, type TableInfo } from './catalogue.js';
import { compileFilters, parseFilterText, parsePredicates, type Predicate } from './filters.js';
import { physicalSchema, withProjectTx, type PlatformDb } from './isolation.js';
import { firstBadCast, mapQueryErrors } from './pg-errors.js';
import { col, Params, valueText } from './sql.js';
import { rowTypes } from './values.js';
import { quoteIdent, type TableSchema } from './names.js';
import type { TablesSettings } from './rows.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { enforceQuota, judgeGrowth, limitsOf, lockQuota, ROW_VERSION_OVERHEAD, usageOf, type Usage } from './quota.js';

export const MAX_RETURNED_ROWS = 50;

export interface WriteRequest {
  projectId: string;
  table: string;
  schema: TableSchema;
  filters: Predicate[];
  dryRun: boolean;
  maxAffected?: number;
}

export interface WriteResult {
  table: string;
  schema: TableSchema;
  dry_run: boolean;
  affected: number;
  rows: Record<string, unknown>[];
  rows_truncated: boolean;
}

function requireFilter(preds: Predicate[], field: string): void {
  if (preds.length === 0) {
    throw new ApiError('invalid_request', 'A non-empty filter is required: say which rows change (there is no whole-table update or delete).', {
      fields: [{ field, message: 'must hold at least one predicate' }],
    });
  }
}

/** Write filters from a request body (a JSON array). */
export function writeFiltersFromBody(raw: unknown): Predicate[] {
  const preds = parsePredicates(raw, 'body.filters', { write: true });
  requireFilter(preds, 'body.filters');
  return preds;
}

/** Write filters from a query string (the delete endpoint). */
export function writeFiltersFromQuery(text: string | undefined): Predicate[] {
  const preds = parseFilterText(text, 'query.filters');
  for (const [i, p] of preds.entries()) {
    if (p.op === 'like' || p.op === 'ilike') {
      throw new ApiError('invalid_request', `"${p.op}" is not accepted on update or delete: use exact comparisons to say which rows change.`, {
        fields: [{ field: `query.filters[${i}].op`, message: 'like and ilike are not accepted here' }],
      });
    }
  }
  requireFilter(preds, 'query.filters');
  return preds;
}

type Assignment = { column: ColumnInfo; value: string | number | boolean | null };

function assignments(table: TableInfo, set: Record<string, unknown>): Assignment[] {
  const out: Assignment[] = [];
  for (const [name, value] of Object.entries(set)) {
    const c = columnOf(table, name, 'set');
    if (value !== null && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw new ApiError('invalid_request', `The new value of "${name}" must be a string, number, boolean or null.`, {
        fields: [{ field: `body.set.${name}`, message: 'must be a JSON scalar' }],
      });
    }
    out.push({ column: c, value });
  }
  return out;
}

function toObjects(columns: ColumnInfo[], rows: unknown[][], offset: number): Record<string, unknown>[] {
  return rows.map((r) => Object.fromEntries(columns.map((c, i) => [c.name, r[i + offset]])));
}

/** A write's statement; an update also says what each set column's new value takes (SQL, bound values). */
interface Statement {
  sql: string;
  casts: { value: string; column: ColumnInfo }[];
  sets?: { column: ColumnInfo; bytes: string | null }[];
}

function maxAffectedExceeded(affected: number, max: number): ApiError {
  return new ApiError('max_affected_exceeded', `The change would affect ${affected} rows, more than max_affected (${max}); nothing was changed.`, {
    affected,
    max_affected: max,
  });
}

/** The table's indexes, each as the columns it holds (null: an expression index, which may hold any). */
async function indexesOf(tx: Tx, physical: string, table: string): Promise<(string[] | null)[]> {
  const rows = await queryRows<{ cols: string[]; expr: boolean }>(
    tx,
    `SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey) AS k(n) JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n) AS cols,
            i.indexprs IS NOT NULL AS expr
       FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    physical,
    table,
  );
  return rows.map((x) => (x.expr ? null : x.cols));
}

/** An index entry's header and heap pointer, per index (a non-HOT update adds one to every index). */
const INDEX_ENTRY_OVERHEAD = 16;
/** Past this a value is moved out of the row (TOAST_TUPLE_THRESHOLD): the row keeps an 18-byte pointer. */
const TOAST_THRESHOLD = 2032;

/**
 * SQL for an upper bound of the bytes one new version of a matched row takes (see the policy above).
 * Each new value's size is a bound expression of `sets`; the untouched columns are read from the row.
 */
function rowVersionBytes(table: TableInfo, sets: { column: ColumnInfo; bytes: string | null }[], indexes: (string[] | null)[]): string {
  const parts = [String(ROW_VERSION_OVERHEAD + INDEX_ENTRY_OVERHEAD * indexes.length)];
  const set = new Set(sets.map((x) => x.column.name));
  for (const { column, bytes } of sets) {
    if (bytes === null) continue;
    const held = 1 + indexes.filter((ix) => ix === null || ix.includes(column.name)).length;
    // TOAST stores about 2 KB per chunk row: 1/16 more covers its headers and index entries.
    parts.push(`(${bytes} + ${bytes} / 16) * ${held}`);
  }
  for (const c of table.columns) {
    if (set.has(c.name)) continue;
    const size = `pg_catalog.pg_column_size(${col(c)})`;
    parts.push(`CASE WHEN ${size} > ${TOAST_THRESHOLD} THEN 18 ELSE coalesce(${size}, 0) END`);
  }
  return parts.join(' + ');
}

/**
 * `db`: the project's transaction is opened through its pool (lib/tables/isolation.ts), the
 * service's reads (schema name, quota) run on its handle. The write itself stays on the tenant
 * client (`rowMode: 'array'`, the room's parsers: the changed rows come back as they always did).
 */
async function runWrite(
  db: PlatformDb,
  settings: TablesSettings,
  w: WriteRequest,
  grows: boolean,
  statement: (table: TableInfo, from: string, where: string, params: Params) => Statement,
): Promise<WriteResult> {
  const physical = await physicalSchema(db.sql, w.projectId, w.schema);
  // An update may grow the schema past its byte quota (judged before it, in its transaction).
  const quotaLimit = grows && !w.dryRun ? await limitsOf(db.sql, settings.quota, w.projectId, w.schema) : undefined;
  return withProjectTx(db, w.projectId, { readOnly: w.dryRun, statementTimeoutMs: settings.statementTimeoutMs, schema: w.schema }, async (client) => {
    const table = await loadTable(client, physical, w.schema, w.table);
    const params = new Params();
    const filter = compileFilters(w.filters, table, params);
    const filterParams = params.clone();
    const from = `${quoteIdent(physical)}.${quoteIdent(table.name)}`;
    const cols = table.columns.map(col).join(', ');
    const limit = MAX_RETURNED_ROWS + 0;
    let text: string;
    let casts = filter.casts;
    if (w.dryRun) {
      // The change is still checked (columns and value types), on a copy of the parameters.
      const st = statement(table, from, filter.sql, params.clone());
      const bad = await firstBadCast(client, st.casts);
      if (bad) throw bad;
      // Count and sample the rows the change would touch, without touching them.
      text =
        `WITH matched AS (SELECT ${cols} FROM ${from} WHERE ${filter.sql}) ` +
        `SELECT (SELECT count(*) FROM matched), s.* FROM (SELECT 1) AS one LEFT JOIN (SELECT * FROM matched LIMIT ${limit}) AS s ON TRUE`;
    } else {
      const st = statement(table, from, filter.sql, params);
      casts = [...casts, ...st.casts];
      text =
        `WITH changed AS (${st.sql} RETURNING ${cols}) ` +
        `SELECT (SELECT count(*) FROM changed), s.* FROM (SELECT 1) AS one LEFT JOIN (SELECT * FROM changed LIMIT ${limit}) AS s ON TRUE`;
    }
    let judged: { before: Usage; bytes: number } | undefined;
    if (quotaLimit) {
      await lockQuota(client, physical);
      const before = await usageOf(client, physical);
      // What the change would write, on a copy of the parameters (nothing is written yet).
      const estParams = filterParams.clone();
      const est = statement(table, from, filter.sql, estParams);
      const growth = await mapQueryErrors(client, { timeoutMs: settings.statementTimeoutMs, casts }, async () => {
        // count(*) is int8: bigint on the handle, read with Number.
        const [r] = await queryRows<{ n: bigint; b: number }>(
          client,
          `SELECT count(*) AS n, coalesce(sum(${rowVersionBytes(table, est.sets ?? [], await indexesOf(client, physical, table.name))}), 0)::float8 AS b FROM ${from} WHERE ${filter.sql}`,
          ...estParams.values,
        );
        return { affected: Number(r.n), bytes: Math.ceil(r.b) };
      });
      if (w.maxAffected !== undefined && growth.affected > w.maxAffected) throw maxAffectedExceeded(growth.affected, w.maxAffected);
      if (growth.affected > 0) judgeGrowth(w.schema, quotaLimit, before, { rows: 0, bytes: growth.bytes });
      judged = { before, bytes: growth.bytes };
    }
    const res = await mapQueryErrors(client, { timeoutMs: settings.statementTimeoutMs, casts }, () =>
      client.query({ text, values: params.values, rowMode: 'array', types: rowTypes }),
    );
    const rows = res.rows as unknown[][];
    const affected = Number(rows[0]?.[0] ?? 0);
    // Thrown inside the transaction: it rolls back, nothing changed.
    if (w.maxAffected !== undefined && affected > w.maxAffected) throw maxAffectedExceeded(affected, w.maxAffected);
    // The safety net after the judgement (growth it could not foresee): rolled back, 409.
    if (quotaLimit && judged && affected > 0) await enforceQuota(client, physical, w.schema, quotaLimit, judged.before, false, judged.bytes);
    const changed = affected === 0 ? [] : toObjects(table.columns, rows, 1);
    return { table: table.name, schema: w.schema, dry_run: w.dryRun, affected, rows: changed, rows_truncated: affected > changed.length };
  });
}

export function updateRows(db: PlatformDb, settings: TablesSettings, w: WriteRequest & { set: Record<string, unknown> }): Promise<WriteResult> {
  return runWrite(db, settings, w, true, (table, from, where, params) => {
    const sets = assignments(table, w.set);
    if (sets.length === 0) throw new ApiError('invalid_request', '"set" needs at least one column.', { fields: [{ field: 'body.set', message: 'empty' }] });
    const casts: { value: string; column: ColumnInfo }[] = [];
    const sizes: { column: ColumnInfo; bytes: string | null }[] = [];
    const list = sets.map(({ column, value }) => {
      if (value === null) {
        sizes.push({ column, bytes: null });
        return `${col(column)} = NULL`;
      }
      casts.push({ value: valueText(value), column });
      const bound = params.add(valueText(value), column.castType);
      // The value as the column stores it, uncompressed (compression is not known before writing).
      sizes.push({ column, bytes: `pg_catalog.pg_column_size(${bound})::bigint` });
      return `${col(column)} = ${bound}`;
    });
    return { sql: `UPDATE ${from} SET ${list.join(', ')} WHERE ${where}`, casts, sets: sizes };
  });
}

export function deleteRows(db: PlatformDb, settings: TablesSettings, w: WriteRequest): Promise<WriteResult> {
  return runWrite(db, settings, w, false, (_table, from, where) => ({ sql: `DELETE FROM ${from} WHERE ${where}`, casts: [] }));
}
