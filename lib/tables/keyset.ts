/**
 * Keyset paging over an ordered list of keys, exact with duplicate and NULL values.
 *
 * Policy and why:
 * - The keys are the sort column (may be nullable) followed by unique, non-null tie-breakers (the
 *   primary key, or `ctid` for a table without one), all in the same direction, with PostgreSQL's
 *   default NULL placement (ASC NULLS LAST, DESC NULLS FIRST) so plain indexes serve both directions.
 * - "After the last row" is split into at most two *segments*, each a plain row comparison or an
 *   `IS NULL` test, read one after the other: the non-NULL part and the NULL part of a nullable
 *   sort column. Each segment is a single index range (no OR), so a deep page costs what the first
 *   does; no row is repeated or skipped at the NULL boundary because the segments partition the
 *   rows after the position exactly.
 * - Positions are the keys' text forms (exact for every type), bound back with a cast to the key's type.
 */
import { Params } from './sql.js';

export type Direction = 'asc' | 'desc';

export interface Key {
  /** SQL expression of the key (a quoted column, or `ctid`). */
  expr: string;
  /** Type to cast the position value to. */
  castType: string;
  /** Only the first key may be nullable. */
  nullable: boolean;
}

/** A position: the text form of each key of the last row (null for a NULL sort value). */
export type Position = (string | null)[];

export interface Segment {
  /** The segment's condition, its values bound in `params` (each segment is its own statement). */
  where(params: Params): string;
  orderBy: string;
}

function orderOf(keys: Key[], dir: Direction): string {
  return keys.map((k) => `${k.expr} ${dir === 'asc' ? 'ASC' : 'DESC'}`).join(', ');
}

function rowCompare(keys: Key[], values: Position, dir: Direction, params: Params): string {
  const left = keys.map((k) => k.expr).join(', ');
  const right = keys.map((k, i) => params.add(values[i], k.castType)).join(', ');
  return keys.length === 1 ? `${left} ${dir === 'asc' ? '>' : '<'} ${right}` : `(${left}) ${dir === 'asc' ? '>' : '<'} (${right})`;
}

/** The segments of rows after `position` (all rows when it is undefined), in reading order. */
export function segmentsAfter(keys: Key[], dir: Direction, position: Position | undefined): Segment[] {
  const all = orderOf(keys, dir);
  if (!position) return [{ where: () => 'TRUE', orderBy: all }];
  const [first, ...rest] = keys;
  if (!first.nullable) return [{ where: (p) => rowCompare(keys, position, dir, p), orderBy: all }];
  const v = position[0];
  const restValues = position.slice(1);
  const nulls = `${first.expr} IS NULL`;
  const restOrder = orderOf(rest, dir);
  if (dir === 'asc') {
    // ASC NULLS LAST: the non-NULL values after v, then every NULL.
    if (v === null) return [{ where: (p) => `${nulls} AND ${rowCompare(rest, restValues, dir, p)}`, orderBy: restOrder }];
    return [
      { where: (p) => rowCompare(keys, position, dir, p), orderBy: all },
      { where: () => nulls, orderBy: restOrder },
    ];
  }
  // DESC NULLS FIRST: the NULLs after the position, then every non-NULL value.
  if (v === null) {
    return [
      { where: (p) => `${nulls} AND ${rowCompare(rest, restValues, dir, p)}`, orderBy: restOrder },
      { where: () => `${first.expr} IS NOT NULL`, orderBy: all },
    ];
  }
  return [{ where: (p) => rowCompare(keys, position, dir, p), orderBy: all }];
}
