/**
 * The catalogue: what a table is, read from pg_catalog inside the project's transaction.
 *
 * Every identifier that reaches generated SQL comes from here (a column is looked up by the
 * request's name and the catalogue's own spelling is used), never from the request text.
 *
 * A table with a column of a catalogue type (oid's reg* kin, their arrays or domains over them) is
 * not served to the tables API or the bot: reading such a column turns numbers into the names of
 * any relation, role or function of the database, and a value cast to it into a lookup by name.
 * Operator DDL refuses those types (lib/tables/ddl-check.ts); only a table from before can have one,
 * and the operator's listing still shows it so that it can be dropped or changed.
 */
import { ApiError } from '../platform/errors.js';
import { isPlatformTable, type TableSchema } from './names.js';
import { queryRows, type Tx } from '../platform/db/tx.js';

/** pg_catalog's types whose values name catalogue objects (oid itself only prints numbers). */
const CATALOGUE_TYPE_NAMES = ['regclass', 'regrole', 'regnamespace', 'regproc', 'regprocedure', 'regoper', 'regoperator', 'regtype', 'regconfig', 'regdictionary', 'regcollation'];

export interface ColumnInfo {
  name: string;
  /** Type as PostgreSQL names it, with modifiers (`character varying(20)`). */
  type: string;
  /** Type without modifiers, used for casts of bound values (a typmod cast would truncate silently). */
  castType: string;
  nullable: boolean;
  defaultValue: string | null;
  /** 1-based position in the primary key, 0 when not part of it. */
  pkPosition: number;
  /** PostgreSQL type category: S string, B boolean, N numeric, D date/time, … */
  category: string;
}

export interface TableInfo {
  schema: TableSchema;
  /** The physical schema name. */
  physicalSchema: string;
  name: string;
  columns: ColumnInfo[];
  byName: Map<string, ColumnInfo>;
  /** Primary-key columns in key order; empty when the table has none. */
  primaryKey: ColumnInfo[];
}

export function platformTableForbidden(table: string): ApiError {
  return new ApiError('platform_table_forbidden', `"${table}" is a platform table: it is managed by the platform and not readable or writable through the API.`);
}

export function tableNotFound(table: string, schema: TableSchema): ApiError {
  return new ApiError('table_not_found', `No table "${table}" in the project's ${schema} schema (views and other relations are not served).`, { table, schema });
}

function catalogueColumn(table: string, column: ColumnInfo): ApiError {
  return new ApiError(
    'invalid_request',
    `Table "${table}" has a column of a system-catalogue type ("${column.name}" ${column.type}), which is not served: drop the column or change its type with operator DDL.`,
    { table, column: column.name, type: column.type },
  );
}

export function unknownColumn(column: string, table: TableInfo, where: string): ApiError {
  return new ApiError('unknown_column', `Unknown column "${column}" in ${where}: table "${table.name}" has no such column.`, {
    column,
    table: table.name,
    where,
  });
}

/**
 * The base table `table` of the project's `schema`; 403 for platform tables, 404 for anything else,
 * 400 for a table with a column of a catalogue type unless `opts.catalogueTypes` (operators' listing).
 */
export async function loadTable(tx: Tx, physicalSchema: string, schema: TableSchema, table: string, opts: { catalogueTypes?: boolean } = {}): Promise<TableInfo> {
  if (isPlatformTable(table)) throw platformTableForbidden(table);
  const [r] = await queryRows<{ oid: number; relkind: string }>(
    tx,
    `SELECT c.oid, c.relkind FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2`,
    physicalSchema,
    table,
  );
  // Ordinary and partitioned tables only: views, materialized views, sequences, indexes, foreign tables are 404.
  if (!r || (r.relkind !== 'r' && r.relkind !== 'p')) throw tableNotFound(table, schema);
  const cols = await queryRows<{
    name: string;
    type: string;
    cast_type: string;
    notnull: boolean;
    default_value: string | null;
    pk_position: number | null;
    category: string;
    catalogue: boolean;
  }>(
    tx,
    `SELECT a.attname AS name,
            pg_catalog.format_type(a.atttypid, a.atttypmod) AS type,
            pg_catalog.format_type(a.atttypid, NULL) AS cast_type,
            a.attnotnull AS notnull,
            pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default_value,
            (SELECT k.n FROM pg_catalog.pg_index i, unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
              WHERE i.indrelid = a.attrelid AND i.indisprimary AND k.attnum = a.attnum)::int AS pk_position,
            t.typcategory AS category,
            -- The type, its domain's base, and their elements (arrays), against pg_catalog's (oid 11) reg* types.
            EXISTS (SELECT 1 FROM pg_catalog.pg_type b LEFT JOIN pg_catalog.pg_type e ON e.oid = b.typelem
                     WHERE b.oid IN (t.oid, t.typbasetype)
                       AND ((b.typnamespace = 11 AND b.typname = ANY ($2)) OR (e.typnamespace = 11 AND e.typname = ANY ($2)))) AS catalogue
       FROM pg_catalog.pg_attribute a
       JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
       LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    r.oid,
    CATALOGUE_TYPE_NAMES,
  );
  const columns: ColumnInfo[] = cols.map((c) => ({
    name: c.name,
    type: c.type,
    castType: c.cast_type,
    nullable: !c.notnull,
    defaultValue: c.default_value,
    pkPosition: c.pk_position ?? 0,
    category: c.category,
  }));
  if (!opts.catalogueTypes) {
    const bad = cols.findIndex((c) => c.catalogue);
    if (bad >= 0) throw catalogueColumn(table, columns[bad]);
  }
  return {
    schema,
    physicalSchema,
    name: table,
    columns,
    byName: new Map(columns.map((c) => [c.name, c])),
    primaryKey: columns.filter((c) => c.pkPosition > 0).sort((a, b) => a.pkPosition - b.pkPosition),
  };
}

export function columnOf(table: TableInfo, name: string, where: string): ColumnInfo {
  const c = table.byName.get(name);
  if (!c) throw unknownColumn(name, table, where);
  return c;
}
