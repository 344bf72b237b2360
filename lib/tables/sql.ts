/** A tiny builder of parameterised SQL: values are always bound, never spliced into the text. */
import { quoteIdent } from './names.js';
import type { ColumnInfo } from './catalogue.js';

export class Params {
  constructor(readonly values: unknown[] = []) {}
  /** A copy, to extend for one statement. */
  clone(): Params {
    return new Params([...this.values]);
  }
  /** `$n` bound to `value`, cast to `type` when given (a type name from the catalogue). */
  add(value: unknown, type?: string): string {
    this.values.push(value);
    return type ? `CAST($${this.values.length} AS ${type})` : `$${this.values.length}`;
  }
}

export function col(c: ColumnInfo): string {
  return quoteIdent(c.name);
}

/** A JSON scalar as the text PostgreSQL parses for the column's type. */
export function valueText(v: string | number | boolean): string {
  return typeof v === 'string' ? v : String(v);
}
