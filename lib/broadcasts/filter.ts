/**
 * The audience filter language of segments and inline broadcast audiences (documented in
 * openapi.yaml, `AudienceFilter`): a group `{ match: all | any, conditions }` of conditions
 * `{ field, op, value? }` and nested groups. It is validated whole before use (every mistake is a
 * 400 naming its path, never a 500), then compiled to one parameterised SQL predicate over the
 * `contacts` table (alias `c`): values never enter the SQL text.
 */
import { Params } from '../platform/db/params.js';
export { Params };
import { ApiError } from '../platform/errors.js';

export interface FilterGroup {
  match: 'all' | 'any';
  conditions: Array<FilterGroup | FilterCondition>;
}

export interface FilterCondition {
  field: string;
  op: string;
  value?: unknown;
}

export const MAX_DEPTH = 3;
export const MAX_CONDITIONS = 50;
const ATTRIBUTE_KEY = /^attributes\.([A-Za-z0-9_.-]{1,100})$/;

const OPS: Record<string, string[]> = {
  phone: ['eq', 'starts_with'],
  name: ['eq', 'contains', 'exists', 'not_exists'],
  tags: ['has', 'has_any', 'has_all', 'has_none'],
  opted_in: ['eq'],
  opted_out: ['eq'],
  created_at: ['before', 'after'],
  attribute: ['eq', 'neq', 'in', 'contains', 'gt', 'gte', 'lt', 'lte', 'exists', 'not_exists'],
};

function bad(path: string, message: string): ApiError {
  return new ApiError('invalid_request', `Invalid filter at ${path}: ${message}`, { fields: [{ field: path, message }] });
}

const isScalar = (v: unknown) => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** Checks a filter and returns it in canonical form; throws 400 invalid_request naming the path. */
export function parseFilter(input: unknown, path = 'filter'): FilterGroup {
  let count = 0;
  const group = (g: unknown, at: string, depth: number): FilterGroup => {
    if (typeof g !== 'object' || g === null || Array.isArray(g)) throw bad(at, 'a group { match, conditions } is expected');
    const o = g as Record<string, unknown>;
    const extra = Object.keys(o).filter((k) => k !== 'match' && k !== 'conditions');
    if (extra.length) throw bad(at, `unknown member ${extra[0]}`);
    if (o.match !== 'all' && o.match !== 'any') throw bad(`${at}.match`, 'must be "all" or "any"');
    if (!Array.isArray(o.conditions)) throw bad(`${at}.conditions`, 'must be an array');
    if (depth > MAX_DEPTH) throw bad(at, `groups nest at most ${MAX_DEPTH} levels`);
    return {
      match: o.match,
      conditions: o.conditions.map((c, i) => {
        const here = `${at}.conditions[${i}]`;
        if (typeof c === 'object' && c !== null && 'match' in c) return group(c, here, depth + 1);
        if (++count > MAX_CONDITIONS) throw bad(here, `at most ${MAX_CONDITIONS} conditions in all`);
        return condition(c, here);
      }),
    };
  };
  return group(input, path, 1);
}

function condition(c: unknown, at: string): FilterCondition {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) throw bad(at, 'a condition { field, op, value } is expected');
  const o = c as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => !['field', 'op', 'value'].includes(k));
  if (extra.length) throw bad(at, `unknown member ${extra[0]}`);
  if (typeof o.field !== 'string') throw bad(`${at}.field`, 'must be a string');
  const kind = ATTRIBUTE_KEY.test(o.field) ? 'attribute' : o.field;
  const ops = OPS[kind];
  if (!ops) throw bad(`${at}.field`, `unknown field "${o.field.slice(0, 100)}" (phone, name, tags, opted_in, opted_out, created_at, attributes.<key>)`);
  if (typeof o.op !== 'string' || !ops.includes(o.op)) throw bad(`${at}.op`, `${o.field} takes ${ops.join(', ')}`);
  const op = o.op;
  const v = o.value;
  const needsNone = op === 'exists' || op === 'not_exists';
  if (needsNone) {
    if (v !== undefined) throw bad(`${at}.value`, `${op} takes no value`);
    return { field: o.field, op };
  }
  const valueAt = `${at}.value`;
  if (['has_any', 'has_all', 'has_none', 'in'].includes(op)) {
    if (!Array.isArray(v) || v.length < 1 || v.length > 100) throw bad(valueAt, 'must be an array of 1 to 100 values');
    const ok = op === 'in' ? v.every(isScalar) : v.every((x) => typeof x === 'string' && x.length <= 100);
    if (!ok) throw bad(valueAt, op === 'in' ? 'values must be strings, numbers or booleans' : 'tags are strings of at most 100 characters');
  } else if (kind === 'opted_in' || kind === 'opted_out') {
    if (typeof v !== 'boolean') throw bad(valueAt, 'must be true or false');
  } else if (kind === 'created_at') {
    if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) throw bad(valueAt, 'must be a timestamp');
  } else if (['gt', 'gte', 'lt', 'lte'].includes(op)) {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(valueAt, 'must be a number');
  } else if (op === 'eq' || op === 'neq') {
    if (!isScalar(v) || (kind !== 'attribute' && typeof v !== 'string')) throw bad(valueAt, kind === 'attribute' ? 'must be a string, number or boolean' : 'must be a string');
  } else if (typeof v !== 'string' || v.length === 0 || v.length > 1000) {
    throw bad(valueAt, 'must be a text of 1 to 1,000 characters');
  }
  return { field: o.field, op, value: v };
}


const likeLiteral = (t: string) => t.replace(/[\\%_]/g, (c) => `\\${c}`);

/** The SQL predicate of a (parsed) filter over `contacts c`. */
export function compileFilter(filter: FilterGroup, p: Params): string {
  const parts = filter.conditions.map((c) => ('match' in c ? compileFilter(c, p) : compileCondition(c, p)));
  if (parts.length === 0) return 'TRUE';
  return `(${parts.join(filter.match === 'all' ? ' AND ' : ' OR ')})`;
}

function compileCondition(c: FilterCondition, p: Params): string {
  const v = c.value;
  switch (c.field) {
    case 'phone': {
      const digits = String(v).replace(/[^0-9]/g, '');
      return c.op === 'eq' ? `c.phone = ${p.add(digits)}` : `c.phone LIKE ${p.add(likeLiteral(digits) + '%')}`;
    }
    case 'name':
      if (c.op === 'exists') return `(c.name IS NOT NULL AND c.name <> '')`;
      if (c.op === 'not_exists') return `(c.name IS NULL OR c.name = '')`;
      if (c.op === 'eq') return `c.name = ${p.add(v)}`;
      return `c.name ILIKE ${p.add('%' + likeLiteral(String(v)) + '%')} ESCAPE '\\'`;
    case 'tags':
      if (c.op === 'has') return `c.tags @> ARRAY[${p.add(v)}::text]`;
      if (c.op === 'has_any') return `c.tags && ${p.add(v)}::text[]`;
      if (c.op === 'has_all') return `c.tags @> ${p.add(v)}::text[]`;
      return `NOT (c.tags && ${p.add(v)}::text[])`;
    case 'opted_in':
      return v ? '(c.opted_in AND c.opted_out_at IS NULL)' : 'NOT (c.opted_in AND c.opted_out_at IS NULL)';
    case 'opted_out':
      return v ? 'c.opted_out_at IS NOT NULL' : 'c.opted_out_at IS NULL';
    case 'created_at':
      return c.op === 'before' ? `c.created_at < ${p.add(new Date(String(v)))}` : `c.created_at > ${p.add(new Date(String(v)))}`;
  }
  const key = ATTRIBUTE_KEY.exec(c.field)![1];
  const k = p.add(key);
  switch (c.op) {
    case 'exists':
      return `(c.attributes ? ${k})`;
    case 'not_exists':
      return `NOT (c.attributes ? ${k})`;
    case 'eq':
      return `(c.attributes -> ${k}) = ${p.add(JSON.stringify(v))}::jsonb`;
    case 'neq':
      return `((c.attributes -> ${k}) IS DISTINCT FROM ${p.add(JSON.stringify(v))}::jsonb)`;
    case 'in':
      return `(c.attributes -> ${k}) IN (SELECT jsonb_array_elements(${p.add(JSON.stringify(v))}::jsonb))`;
    case 'contains':
      return `(jsonb_typeof(c.attributes -> ${k}) = 'string' AND (c.attributes ->> ${k}) ILIKE ${p.add('%' + likeLiteral(String(v)) + '%')} ESCAPE '\\')`;
    default: {
      const cmp = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[c.op]!;
      return `(jsonb_typeof(c.attributes -> ${k}) = 'number' AND (c.attributes ->> ${k})::numeric ${cmp} ${p.add(v)}::numeric)`;
    }
  }
}
