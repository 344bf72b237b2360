/**
 * A table as CSV, streamed: read page by page through the rows engine (lib/tables/rows.ts: the
 * same isolation, filters, ordering, statement timeout and page byte cap as `GET /v1/tables`), each
 * page written before the next is read, so memory holds one page whatever the table's size.
 *
 * Format (RFC 4180): a header of column names, CRLF line ends, a field quoted when it holds a comma,
 * a quote, CR or LF (quotes doubled); NULL is an empty field; json values as JSON text. A text
 * that starts with =, +, -, @, tab or CR is prefixed with a quote mark (') so a spreadsheet shows it
 * as text instead of running it as a formula (OWASP, "CSV injection").
 */
import type { PlatformDb } from './isolation.js';
import { readRows, type TablesSettings } from './rows.js';
import { describeTable } from './describe.js';
import type { TableSchema } from './names.js';

const PAGE = 50;

export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export const csvLine = (fields: unknown[]) => fields.map(csvField).join(',') + '\r\n';

export interface CsvRequest {
  projectId: string;
  schema: TableSchema;
  table: string;
  filters?: string;
  orderBy?: string;
  direction?: 'asc' | 'desc';
}

/** The CSV's lines; the table is checked (404, 403) before the first line is yielded. */
export async function* tableCsv(db: PlatformDb, settings: TablesSettings, r: CsvRequest): AsyncGenerator<string> {
  const described = await describeTable(db, settings, r.projectId, r.schema, r.table);
  const names = described.columns.map((c) => c.name);
  yield csvLine(names);
  let cursor: string | undefined;
  do {
    const page = await readRows(db, settings, { projectId: r.projectId, table: r.table, schema: r.schema, filters: r.filters, orderBy: r.orderBy, direction: r.direction, limit: PAGE, cursor });
    let chunk = '';
    for (const row of page.rows) chunk += csvLine(names.map((n) => (row as Record<string, unknown>)[n]));
    if (chunk) yield chunk;
    cursor = page.pagination.nextCursor ?? undefined;
  } while (cursor);
}
