/**
 * Filters: a JSON array of `{column, op, value}` predicates, AND-joined.
 *
 * Rules (spec "Filter rules", plus our choices):
 * - ops `eq neq gt gte lt lte like ilike is`; `is` takes only null, true or false (JSON or the
 *   strings "null", "true", "false"); `is true/false` only on boolean columns.
 * - For every other op a value of null or the string "null" is 400 `null_filter_value`.
 * - like/ilike: `%` any sequence, `_` one character, `\` escapes the next `%`, `_` or `\` so
 *   `\%`, `\_`, `\\` match literally (any other use of `\` is 400). A `*` is 400. Columns that
 *   are not text are compared through their text form.
 * - Values are JSON scalars; they are bound as parameters and cast to the column's type. A value
 *   that does not fit the type is 400 `invalid_value` (the caller maps the cast failure).
 * - Columns are looked up in the catalogue: an unknown one is 400 `unknown_column`.
 */
import { ApiError } from '../platform/errors.js';
import { columnOf, type ColumnInfo, type TableInfo } from './catalogue.js';
import { col, Params, valueText } from './sql.js';

export const FILTER_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'is'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];
export const MAX_FILTERS = 20;
export const MAX_FILTERS_LENGTH = 4000;

export type Scalar = string | number | boolean | null;
export interface Predicate {
  column: string;
  op: FilterOp;
  value: Scalar;
}

const SQL_OP: Record<Exclude<FilterOp, 'like' | 'ilike' | 'is'>, string> = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' };

function bad(message: string, field = 'query.filters'): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

/** The `filters` query parameter (a JSON array in a string). */
export function parseFilterText(text: string | undefined, field = 'query.filters'): Predicate[] {
  if (text === undefined || text === '') return [];
  if (text.length > MAX_FILTERS_LENGTH) throw bad(`filters is longer than ${MAX_FILTERS_LENGTH} characters.`, field);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw bad('filters is not valid JSON: a JSON array of {"column", "op", "value"} objects is expected.', field);
  }
  return parsePredicates(parsed, field);
}

/** Predicates from parsed JSON (query text or a request body). */
export function parsePredicates(parsed: unknown, field: string, opts: { write?: boolean } = {}): Predicate[] {
  if (!Array.isArray(parsed)) throw bad('filters must be a JSON array of {"column", "op", "value"} objects.', field);
  if (parsed.length > MAX_FILTERS) throw bad(`At most ${MAX_FILTERS} filters are allowed (got ${parsed.length}).`, field);
  return parsed.map((p, i) => parsePredicate(p, `${field}[${i}]`, opts));
}

function parsePredicate(p: unknown, field: string, opts: { write?: boolean }): Predicate {
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw bad('Each filter must be an object {"column", "op", "value"}.', field);
  const keys = Object.keys(p);
  const extra = keys.filter((k) => k !== 'column' && k !== 'op' && k !== 'value');
  if (extra.length > 0) throw bad(`Unknown member "${extra[0]}" in a filter (allowed: column, op, value).`, field);
  const { column, op, value } = p as Record<string, unknown>;
  if (typeof column !== 'string' || column.length === 0 || column.length > 63) throw bad('A filter needs "column": a column name.', `${field}.column`);
  if (typeof op !== 'string' || !(FILTER_OPS as readonly string[]).includes(op)) {
    throw bad(`Unknown op ${JSON.stringify(op)}: one of ${FILTER_OPS.join(', ')} is expected.`, `${field}.op`);
  }
  if (!('value' in (p as object))) throw bad('A filter needs "value".', `${field}.value`);
  if (value !== null && typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw bad('A filter value must be a string, number, boolean or null.', `${field}.value`);
  }
  if (typeof value === 'number' && !Number.isFinite(value)) throw bad('A filter value must be a finite number.', `${field}.value`);
  const o = op as FilterOp;
  if (opts.write && (o === 'like' || o === 'ilike')) {
    throw bad(`"${o}" is not accepted on update or delete: use exact comparisons to say which rows change.`, `${field}.op`);
  }
  if (o === 'is') {
    const v = typeof value === 'string' ? value.toLowerCase() : value;
    if (v === null || v === 'null') return { column, op: o, value: null };
    if (v === true || v === 'true') return { column, op: o, value: true };
    if (v === false || v === 'false') return { column, op: o, value: false };
    throw bad('"is" takes only null, true or false.', `${field}.value`);
  }
  if (value === null || (typeof value === 'string' && value.toLowerCase() === 'null')) {
    throw new ApiError('null_filter_value', `A null comparand is only allowed with "is" (filter on "${column}" with op "${o}"): use {"op":"is","value":null}.`, {
      column,
      op: o,
    });
  }
  if (o === 'like' || o === 'ilike') {
    if (typeof value !== 'string') throw bad(`"${o}" takes a string pattern.`, `${field}.value`);
    checkLikePattern(value, `${field}.value`);
  }
  return { column, op: o, value: value as Scalar };
}

function checkLikePattern(pattern: string, field: string): void {
  if (pattern.includes('*')) throw bad('A like pattern may not contain "*": use "%" for any sequence and "_" for one character.', field);
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '\\') continue;
    const next = pattern[i + 1];
    if (next !== '%' && next !== '_' && next !== '\\') {
      throw bad('In a like pattern "\\" escapes only "%", "_" or "\\" (write "\\\\" for a literal backslash).', field);
    }
    i++;
  }
}

/** A stable JSON form of predicates, for binding cursors to the filters. */
export function canonicalFilters(preds: Predicate[]): string {
  return JSON.stringify(preds.map((p) => [p.column, p.op, p.value]));
}

export interface CompiledFilter {
  sql: string;
  /** Bound values and the columns they are cast to, to name the column when a cast fails. */
  casts: { value: string; column: ColumnInfo }[];
}

/** The WHERE conjunction of `preds` on `table`, values bound in `params`. */
export function compileFilters(preds: Predicate[], table: TableInfo, params: Params, where = 'filters'): CompiledFilter {
  const parts: string[] = [];
  const casts: CompiledFilter['casts'] = [];
  for (const p of preds) {
    const c = columnOf(table, p.column, where);
    const ref = col(c);
    if (p.op === 'is') {
      if (p.value === null) parts.push(`${ref} IS NULL`);
      else {
        if (c.category !== 'B') throw new ApiError('invalid_value', `"is ${p.value}" needs a boolean column; "${c.name}" is ${c.type}.`, { column: c.name, type: c.type });
        parts.push(`${ref} IS ${p.value ? 'TRUE' : 'FALSE'}`);
      }
      continue;
    }
    const text = valueText(p.value as string | number | boolean);
    if (p.op === 'like' || p.op === 'ilike') {
      const target = c.category === 'S' ? ref : `CAST(${ref} AS text)`;
      parts.push(`${target} ${p.op === 'like' ? 'LIKE' : 'ILIKE'} ${params.add(text)} ESCAPE '\\'`);
      continue;
    }
    casts.push({ value: text, column: c });
    parts.push(`${ref} ${SQL_OP[p.op]} ${params.add(text, c.castType)}`);
  }
  return { sql: parts.length ? parts.join(' AND ') : 'TRUE', casts };
}
