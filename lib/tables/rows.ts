/**
 * Reading rows: projection, filters, ordering with primary-key tie-breakers, keyset pages with
 * `hasMore` from one extra row (never a count), and cursors bound to the query.
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { invalidCursor } from '../platform/cursor.js';
import { columnOf, loadTable, platformTableForbidden, type ColumnInfo, type TableInfo } from './catalogue.js';
import { canonicalFilters, compileFilters, parseFilterText } from './filters.js';
import { ensureProjectStorage, physicalSchema, withProjectTx } from './isolation.js';
import { segmentsAfter, type Direction, type Key, type Position } from './keyset.js';
import { decodeTableCursor, encodeTableCursor } from './cursor.js';
import { mapQueryErrors } from './pg-errors.js';
import { col, Params } from './sql.js';
import { rowTypes } from './values.js';
import type { QuotaDefaults } from './quota.js';
import { isPlatformTable, quoteIdent, type TableSchema } from './names.js';

export const MAX_COLUMNS_LENGTH = 2000;

export interface TablesSettings {
  statementTimeoutMs: number;
  cursorSecret: Buffer;
  /** Storage quota defaults (lib/tables/quota.ts); DEFAULT_QUOTAS when absent. */
  quota?: QuotaDefaults;
}

export interface RowsRequest {
  projectId: string;
  table: string;
  schema: TableSchema;
  columns?: string;
  filters?: string;
  orderBy?: string;
  direction?: Direction;
  limit: number;
  cursor?: string;
}

export interface RowsPage {
  table: string;
  schema: TableSchema;
  rows: Record<string, unknown>[];
  pagination: { hasMore: boolean; nextCursor: string | null; ordered: boolean };
}

/** The projected columns (all when `text` is absent), looked up in the catalogue. */
export function projection(table: TableInfo, text: string | undefined): ColumnInfo[] {
  if (text === undefined) return table.columns;
  if (text.length > MAX_COLUMNS_LENGTH) {
    throw new ApiError('invalid_request', `columns is longer than ${MAX_COLUMNS_LENGTH} characters.`, { fields: [{ field: 'query.columns', message: 'too long' }] });
  }
  const names = text.split(',').map((s) => s.trim());
  if (names.some((n) => n === '')) {
    throw new ApiError('invalid_request', 'columns is a comma-separated list of column names without empty entries.', {
      fields: [{ field: 'query.columns', message: 'empty entry' }],
    });
  }
  const seen = new Set<string>();
  const out: ColumnInfo[] = [];
  for (const n of names) {
    const c = columnOf(table, n, 'columns');
    if (!seen.has(c.name)) out.push(c);
    seen.add(c.name);
  }
  return out;
}

/** The keys of the ordering: the sort column, then the primary key (or ctid when there is none). */
export function orderingKeys(table: TableInfo, orderBy: string | undefined): { keys: Key[]; ordered: boolean } {
  const tieBreakers: Key[] = table.primaryKey.length
    ? table.primaryKey.map((c) => ({ expr: col(c), castType: c.castType, nullable: false }))
    : [{ expr: 'ctid', castType: 'tid', nullable: false }];
  // Without a primary key the order is physical (ctid): rows updated while paging may move.
  const ordered = table.primaryKey.length > 0;
  if (orderBy === undefined) return { keys: tieBreakers, ordered };
  const c = columnOf(table, orderBy, 'order_by');
  const rest = tieBreakers.filter((k) => k.expr !== col(c));
  return { keys: [{ expr: col(c), castType: c.castType, nullable: c.nullable }, ...rest], ordered };
}

export function rowsScope(r: RowsRequest, filtersCanonical: string): string {
  return JSON.stringify(['tableRows', r.projectId.toLowerCase(), r.schema, r.table, r.orderBy ?? null, r.direction ?? 'asc', filtersCanonical]);
}

/** Rows as objects keyed by column name (defined properties: a column may be called `__proto__`). */
function toObjects(columns: ColumnInfo[], rows: unknown[][]): Record<string, unknown>[] {
  return rows.map((r) => Object.fromEntries(columns.map((c, i) => [c.name, r[i]])));
}

export async function readRows(pool: pg.Pool, settings: TablesSettings, r: RowsRequest): Promise<RowsPage> {
  const preds = parseFilterText(r.filters);
  const dir: Direction = r.direction ?? 'asc';
  const scope = rowsScope(r, canonicalFilters(preds));
  const physical = await physicalSchema(pool, r.projectId, r.schema);
  // A platform table is refused before anything else (a cursor is not even looked at).
  if (isPlatformTable(r.table)) throw platformTableForbidden(r.table);
  // Cursor positions are read before and stored after the transaction (never two connections at once).
  await ensureProjectStorage(pool, r.projectId);
  const cursorPosition = r.cursor === undefined ? undefined : await decodeTableCursor(pool, settings.statementTimeoutMs, physical, r.cursor, scope, settings.cursorSecret);
  const page = await withProjectTx(pool, r.projectId, { readOnly: true, statementTimeoutMs: settings.statementTimeoutMs, schema: r.schema }, async (client) => {
    const table = await loadTable(client, physical, r.schema, r.table);
    const cols = projection(table, r.columns);
    const params = new Params();
    const filter = compileFilters(preds, table, params);
    const { keys, ordered } = orderingKeys(table, r.orderBy);
    // A position with another number of keys than the ordering has (the table changed) is not ours.
    if (cursorPosition && cursorPosition.length !== keys.length) throw invalidCursor();
    const position = cursorPosition;
    const segments = segmentsAfter(keys, dir, position);
    const select = [...cols.map(col), ...keys.map((k, i) => `CAST(${k.expr} AS text) AS ${quoteIdent(`__key_${i}`)}`)].join(', ');
    const from = `${quoteIdent(physical)}.${quoteIdent(table.name)}`;
    const want = r.limit + 1;
    const got: unknown[][] = [];
    await mapQueryErrors(client, { timeoutMs: settings.statementTimeoutMs, casts: filter.casts }, async () => {
      for (const seg of segments) {
        if (got.length >= want) break;
        const p = params.clone();
        const where = seg.where(p);
        const res = await client.query({
          text: `SELECT ${select} FROM ${from} WHERE (${filter.sql}) AND (${where}) ORDER BY ${seg.orderBy} LIMIT ${p.add(want - got.length)}`,
          values: p.values,
          rowMode: 'array',
          types: rowTypes,
        });
        got.push(...(res.rows as unknown[][]));
      }
    }).catch((e) => {
      // A position that no longer fits its key's type (the table changed) is not a cursor we can honour.
      if (position && e instanceof ApiError && e.code === 'invalid_value' && !e.details?.column) throw invalidCursor();
      throw e;
    });
    const hasMore = got.length > r.limit;
    const rows = got.slice(0, r.limit);
    const last = rows[rows.length - 1];
    return {
      table: table.name,
      rows: toObjects(cols, rows),
      next: hasMore && last ? (last.slice(cols.length) as Position) : undefined,
      ordered,
    };
  });
  const nextCursor = page.next ? await encodeTableCursor(pool, settings.statementTimeoutMs, physical, scope, settings.cursorSecret, page.next) : null;
  return { table: page.table, schema: r.schema, rows: page.rows, pagination: { hasMore: page.next !== undefined, nextCursor, ordered: page.ordered } };
}
