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
 * - An update that leaves the schema over its byte quota is 409 `table_quota_exceeded`, rolled
 *   back (lib/tables/quota.ts); deletes are never refused.
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { columnOf, loadTable, type ColumnInfo, type TableInfo } from './catalogue.js';
import { compileFilters, parseFilterText, parsePredicates, type Predicate } from './filters.js';
import { physicalSchema, withProjectTx } from './isolation.js';
import { firstBadCast, mapQueryErrors } from './pg-errors.js';
import { col, Params, valueText } from './sql.js';
import { rowTypes } from './values.js';
import { quoteIdent, type TableSchema } from './names.js';
import type { TablesSettings } from './rows.js';
import { enforceQuota, limitsOf, usageOf } from './quota.js';

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

async function runWrite(
  pool: pg.Pool,
  settings: TablesSettings,
  w: WriteRequest,
  grows: boolean,
  statement: (table: TableInfo, from: string, where: string, params: Params) => { sql: string; casts: { value: string; column: ColumnInfo }[] },
): Promise<WriteResult> {
  const physical = await physicalSchema(pool, w.projectId, w.schema);
  // An update may grow the schema past its byte quota (checked after it, in its transaction).
  const quotaLimit = grows && !w.dryRun ? await limitsOf(pool, settings.quota, w.projectId, w.schema) : undefined;
  return withProjectTx(pool, w.projectId, { readOnly: w.dryRun, statementTimeoutMs: settings.statementTimeoutMs, schema: w.schema }, async (client) => {
    const table = await loadTable(client, physical, w.schema, w.table);
    const params = new Params();
    const filter = compileFilters(w.filters, table, params);
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
    const before = quotaLimit ? await usageOf(client, physical) : undefined;
    const res = await mapQueryErrors(client, { timeoutMs: settings.statementTimeoutMs, casts }, () =>
      client.query({ text, values: params.values, rowMode: 'array', types: rowTypes }),
    );
    const rows = res.rows as unknown[][];
    const affected = Number(rows[0]?.[0] ?? 0);
    if (w.maxAffected !== undefined && affected > w.maxAffected) {
      // Thrown inside the transaction: it rolls back, nothing changed.
      throw new ApiError('max_affected_exceeded', `The change would affect ${affected} rows, more than max_affected (${w.maxAffected}); nothing was changed.`, {
        affected,
        max_affected: w.maxAffected,
      });
    }
    if (quotaLimit && before && affected > 0) await enforceQuota(client, physical, w.schema, quotaLimit, before, false);
    const changed = affected === 0 ? [] : toObjects(table.columns, rows, 1);
    return { table: table.name, schema: w.schema, dry_run: w.dryRun, affected, rows: changed, rows_truncated: affected > changed.length };
  });
}

export function updateRows(pool: pg.Pool, settings: TablesSettings, w: WriteRequest & { set: Record<string, unknown> }): Promise<WriteResult> {
  return runWrite(pool, settings, w, true, (table, from, where, params) => {
    const sets = assignments(table, w.set);
    if (sets.length === 0) throw new ApiError('invalid_request', '"set" needs at least one column.', { fields: [{ field: 'body.set', message: 'empty' }] });
    const casts: { value: string; column: ColumnInfo }[] = [];
    const list = sets.map(({ column, value }) => {
      if (value === null) return `${col(column)} = NULL`;
      casts.push({ value: valueText(value), column });
      return `${col(column)} = ${params.add(valueText(value), column.castType)}`;
    });
    return { sql: `UPDATE ${from} SET ${list.join(', ')} WHERE ${where}`, casts };
  });
}

export function deleteRows(pool: pg.Pool, settings: TablesSettings, w: WriteRequest): Promise<WriteResult> {
  return runWrite(pool, settings, w, false, (_table, from, where) => ({ sql: `DELETE FROM ${from} WHERE ${where}`, casts: [] }));
}
