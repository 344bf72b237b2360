/**
 * Reading rows: projection, filters, ordering with primary-key tie-breakers, keyset pages with
 * `hasMore` from one extra row (never a count), and cursors bound to the query.
 *
 * A page holds at most `pageMaxBytes` of row data (TABLES_PAGE_MAX_BYTES, 4 MiB by default; the
 * tables API and the bot's `tables.select` alike), counted as the text form of the projected
 * columns and the ordering keys, which is what the service receives. Fifty rows of 1 MB values
 * were a 54 MB page, and twelve such requests at once took the service from 548 to 973 MB
 * resident. The cap is enforced in SQL, so the service never receives more than it: a window
 * function sums the rows' sizes in page order, and the first row that would pass the cap comes
 * back as a marker without its values. Choice: a page that reaches the cap is shorter than `limit`
 * and has a `nextCursor` (integrators page on, as with any page); only a row that alone passes the
 * cap is refused, 400 `row_too_large` naming the cap and the row's size, because no page can hold
 * it: fewer columns (`columns`) can.
 */
import { ApiError } from '../platform/errors.js';
import { invalidCursor } from '../platform/cursor.js';
import { columnOf, loadTable, platformTableForbidden, type ColumnInfo, type TableInfo } from './catalogue.js';
import { canonicalFilters, compileFilters, parseFilterText } from './filters.js';
import { ensureProjectStorage, physicalSchema, withProjectTx, type PlatformDb } from './isolation.js';
import { segmentsAfter, type Direction, type Key, type Position } from './keyset.js';
import { decodeTableCursor, encodeTableCursor } from './cursor.js';
import { mapQueryErrors } from './pg-errors.js';
import { col, Params } from './sql.js';
import { rowTypes } from './values.js';
import type { QuotaDefaults } from './quota.js';
import { isPlatformTable, quoteIdent, type TableSchema } from './names.js';

export const MAX_COLUMNS_LENGTH = 2000;

/** Default byte cap of a page's row data (TABLES_PAGE_MAX_BYTES). */
export const DEFAULT_PAGE_MAX_BYTES = 4 * 1024 * 1024;

export interface TablesSettings {
  statementTimeoutMs: number;
  cursorSecret: Buffer;
  /** Storage quota defaults (lib/tables/quota.ts); DEFAULT_QUOTAS when absent. */
  quota?: QuotaDefaults;
  /** Byte cap of a page's row data; DEFAULT_PAGE_MAX_BYTES when absent. */
  pageMaxBytes?: number;
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

export function rowTooLarge(table: string, rowBytes: number, cap: number): ApiError {
  return new ApiError(
    'row_too_large',
    `A row of "${table}" is ${rowBytes} bytes in the requested columns, over the ${cap}-byte cap of a page: ask for fewer columns (\`columns\`), leaving out the large ones.`,
    { table, row_bytes: rowBytes, max_bytes: cap },
  );
}

/** SQL of a value's size as the service receives it (its text form; a text value's length needs no detoasting). */
function textBytes(expr: string): string {
  return `coalesce(pg_catalog.octet_length(CAST(${expr} AS text)), 0)`;
}

/** Rows as objects keyed by column name (defined properties: a column may be called `__proto__`). */
function toObjects(columns: ColumnInfo[], rows: unknown[][]): Record<string, unknown>[] {
  return rows.map((r) => Object.fromEntries(columns.map((c, i) => [c.name, r[i]])));
}

/**
 * `db`: the project's transaction is opened through its pool (lib/tables/isolation.ts), the
 * service's statements run on its handle. The page's own statement stays on the tenant client
 * (`rowMode: 'array'`, the room's parsers: users' values come back as they always did).
 */
export async function readRows(db: PlatformDb, settings: TablesSettings, r: RowsRequest): Promise<RowsPage> {
  const preds = parseFilterText(r.filters);
  const dir: Direction = r.direction ?? 'asc';
  const scope = rowsScope(r, canonicalFilters(preds));
  const physical = await physicalSchema(db.sql, r.projectId, r.schema);
  // A platform table is refused before anything else (a cursor is not even looked at).
  if (isPlatformTable(r.table)) throw platformTableForbidden(r.table);
  // Cursor positions are read before and stored after the transaction (never two connections at once).
  await ensureProjectStorage(db, r.projectId);
  const cursorPosition = r.cursor === undefined ? undefined : await decodeTableCursor(db, settings.statementTimeoutMs, physical, r.cursor, scope, settings.cursorSecret);
  const page = await withProjectTx(db, r.projectId, { readOnly: true, statementTimeoutMs: settings.statementTimeoutMs, schema: r.schema }, async (client) => {
    const table = await loadTable(client, physical, r.schema, r.table);
    const cols = projection(table, r.columns);
    const params = new Params();
    const filter = compileFilters(preds, table, params);
    const ordering = orderingKeys(table, r.orderBy);
    // Qualified with the table's alias: a bare name in ORDER BY would mean an output column of
    // the same name first (the page's own v0…, sz, run, n).
    const keys = ordering.keys.map((k) => ({ ...k, expr: `t.${k.expr}` }));
    const ordered = ordering.ordered;
    // A position with another number of keys than the ordering has (the table changed) is not ours.
    if (cursorPosition && cursorPosition.length !== keys.length) throw invalidCursor();
    const position = cursorPosition;
    const segments = segmentsAfter(keys, dir, position);
    const exprs = [...cols.map(col), ...keys.map((k) => `CAST(${k.expr} AS text)`)];
    const size = exprs.map(textBytes).join(' + ');
    const from = `${quoteIdent(physical)}.${quoteIdent(table.name)}`;
    const cap = settings.pageMaxBytes ?? DEFAULT_PAGE_MAX_BYTES;
    const want = r.limit + 1;
    const got: unknown[][] = [];
    let used = 0;
    let full = false;
    await mapQueryErrors(client, { timeoutMs: settings.statementTimeoutMs, casts: filter.casts }, async () => {
      for (const seg of segments) {
        if (got.length >= want || full) break;
        const p = params.clone();
        const where = seg.where(p);
        const limit = p.add(want - got.length);
        const budget = p.add(cap - used);
        // Sizes summed in page order (the frame ends at the current row: nothing is read ahead);
        // a row past the budget comes back as a marker, its values left in the database.
        const inner =
          `SELECT ${exprs.map((e, i) => `${e} AS v${i}`).join(', ')}, ${size} AS sz, pg_catalog.sum(${size}) OVER w AS run, pg_catalog.row_number() OVER w AS n ` +
          `FROM ${from} AS t WHERE (${filter.sql}) AND (${where}) WINDOW w AS (ORDER BY ${seg.orderBy} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) ` +
          `ORDER BY ${seg.orderBy} LIMIT ${limit}`;
        const res = await client.query({
          text: `SELECT ${exprs.map((_, i) => `CASE WHEN s.run <= ${budget} THEN s.v${i} END`).join(', ')}, s.run, s.sz FROM (${inner}) AS s WHERE s.run - s.sz <= ${budget} ORDER BY s.n`,
          values: p.values,
          rowMode: 'array',
          types: rowTypes,
        });
        let run = 0;
        for (const row of res.rows as unknown[][]) {
          if (Number(row[exprs.length]) > cap - used) {
            if (got.length === 0) throw rowTooLarge(table.name, Number(row[exprs.length + 1]), cap);
            full = true;
            break;
          }
          run = Number(row[exprs.length]);
          got.push(row.slice(0, exprs.length));
        }
        used += run;
      }
    }).catch((e) => {
      // A position that no longer fits its key's type (the table changed) is not a cursor we can honour.
      if (position && e instanceof ApiError && e.code === 'invalid_value' && !e.details?.column) throw invalidCursor();
      throw e;
    });
    const hasMore = got.length > r.limit || full;
    const rows = got.slice(0, r.limit);
    const last = rows[rows.length - 1];
    return {
      table: table.name,
      rows: toObjects(cols, rows),
      next: hasMore && last ? (last.slice(cols.length) as Position) : undefined,
      ordered,
    };
  });
  const nextCursor = page.next ? await encodeTableCursor(db, settings.statementTimeoutMs, physical, scope, settings.cursorSecret, page.next) : null;
  return { table: page.table, schema: r.schema, rows: page.rows, pagination: { hasMore: page.next !== undefined, nextCursor, ordered: page.ordered } };
}
