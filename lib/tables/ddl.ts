/**
 * Operator DDL on a project's schemas (the dashboard's database tab): list tables, create a table
 * from a structured description, run one DDL statement, and copy preview's structure to public.
 *
 * Policy and why:
 * - Everything runs as the project's role (lib/tables/isolation.ts, DDL mode: the target schema
 *   first in search_path), so objects are created in, and owned within, the project's storage.
 * - A statement is parsed by PostgreSQL's own parser and judged on its tree (lib/tables/ddl-check.ts:
 *   one statement of the documented kinds, no session changes, no functions but harmless built-ins,
 *   no subqueries, no qualified or temporary names), then sent alone through the extended protocol.
 *   It runs on a login of the project's role (a member of no other role), so even what the check
 *   let through, and the default and check expressions it wrote, cannot leave the project.
 * - Platform tables (`_platform_…`) are neither listed, created, changed nor copied.
 * - Storage quotas hold for DDL (`runDdl`; lib/tables/quota.ts). Every statement runs in a
 *   transaction that is measured before commit: when it left the schema over its byte limit and
 *   bigger than before, it is rolled back with 409 `table_quota_exceeded`, and a rolled-back
 *   CREATE TABLE … AS, CREATE INDEX or table rewrite leaves nothing on disk (PostgreSQL removes the
 *   files a transaction created when it aborts). That alone would still let a statement grow the
 *   disk without bound until it ends (a cross join made 770 MB in 25 s against a 2 MB quota), so:
 *   - CREATE TABLE … AS, the statement whose size is the operator's to choose, is bounded while it
 *     runs: its query is wrapped so that rows are counted, and their sizes summed, as they are
 *     produced, and the first row past what remains of the row or byte quota stops the statement
 *     with an error (a cast of a marker string: plain SQL has no raise). It then writes at most the
 *     remainder, whatever its plan estimates, and stops as soon as it would pass it. Chosen over
 *     a LIMIT of the remaining rows (rows of 1 MB each pass a byte quota in a few rows) and over
 *     refusing on EXPLAIN's estimate (estimates are easily wrong). The cost: the query's text is
 *     re-wrapped (found with PostgreSQL's scanner, by the `AS` that starts it).
 *   - CREATE INDEX and ALTER TABLE (rewrites, a volatile default) read tables the quota already
 *     bounds; they are bounded while running only by the DDL statement timeout (DDL_TIMEOUT_MS),
 *     and measured before commit. (`temp_file_limit`, which would bound sorts' temporary files, is
 *     a superuser setting: set it on the server.)
 *   - Rows are not judged after DDL: a rewrite counts its rows as the transaction's inserts.
 * - Copying preview to public is additive: missing tables are created (`LIKE … INCLUDING ALL`, their
 *   own sequences for serial columns, then foreign keys), missing columns, indexes, constraints and
 *   views are added;
 *   nothing in public is dropped or retyped (differences are reported). One transaction; `dry_run`
 *   returns the statements without running them.
 */
import type pg from 'pg';
import { randomBytes } from 'node:crypto';
import { ApiError } from '../platform/errors.js';
import { withProjectTx, type PlatformDb, type TenantTx } from './isolation.js';
import { loadTable } from './catalogue.js';
import { checkDdl, ddlParser, loadDdlParser } from './ddl-check.js';
import { IDENT_PATTERN, quoteIdent, isPlatformTable, type TableSchema } from './names.js';
import { queryTimeout, sqlState } from './pg-errors.js';
import { enforceQuota, limitsOf, usageOf, type QuotaDefaults, type QuotaLimit, type Usage } from './quota.js';
import { setLocal } from '../platform/db/transaction.js';
import { execute, executeNamed, queryRows, type Tx } from '../platform/db/tx.js';
import { isDatabaseUnavailable } from '../platform/db/errors.js';

export const DDL_TIMEOUT_MS = 30000;

function ddlError(e: unknown, timeoutMs: number): unknown {
  const state = sqlState(e);
  if (!state) return e;
  const message = (e as Error).message;
  if (state === '57014' || state === '55P03') return queryTimeout(timeoutMs);
  // The server refusing writes for now (read-only, a standby: 25006, or 0A000 "cannot set
  // transaction read-write mode during recovery") or out of reach: the error handler's 503
  // service_unavailable, not the caller's 400 (issue 71).
  if (isDatabaseUnavailable(e)) return e;
  if (state.startsWith('23') || state === '2BP01' || state === '55006') return new ApiError('conflict', message, { sqlstate: state });
  if (state.startsWith('42') || state.startsWith('22') || state.startsWith('0A')) {
    return new ApiError('invalid_request', message, { sqlstate: state });
  }
  return e;
}

/** `db`: the project's transaction is opened through its pool (lib/tables/isolation.ts, DDL mode). */
function ddlTx<T>(db: PlatformDb, projectId: string, schema: TableSchema, fn: (c: TenantTx) => Promise<T>): Promise<T> {
  return withProjectTx(db, projectId, { readOnly: false, statementTimeoutMs: DDL_TIMEOUT_MS, schema, ddl: true }, fn).catch((e) => {
    throw ddlError(e, DDL_TIMEOUT_MS);
  });
}

/** One statement through the extended protocol (a named, unprepared-after statement). */
async function runOne(c: Tx, sql: string): Promise<void> {
  const name = `ddl_${randomBytes(6).toString('hex')}`;
  await executeNamed(c, name, sql);
  await execute(c, `DEALLOCATE ${name}`).catch(() => undefined);
}

/**
 * `CREATE TABLE … AS <query> [WITH DATA]` split at its query (`head` ends with the `AS`), or
 * undefined for any other statement (and for WITH NO DATA: nothing is written). Offsets of
 * PostgreSQL's scanner are bytes of the UTF-8 text.
 */
export function createTableAsParts(text: string): { head: string; query: string } | undefined {
  const { parseSync, scanSync } = ddlParser();
  const stmt = (parseSync(text) as { stmts?: Array<{ stmt?: Record<string, any> }> }).stmts?.[0]?.stmt;
  const ctas = stmt?.CreateTableAsStmt;
  if (!ctas || ctas.objtype !== 'OBJECT_TABLE' || ctas.into?.skipData === true) return undefined;
  if (!ctas.query?.SelectStmt) throw new ApiError('invalid_request', 'This DDL is not accepted: CREATE TABLE … AS takes a SELECT, VALUES or TABLE query.');
  const tokens = scanSync(text).tokens;
  let depth = 0;
  let as = -1;
  for (const [i, t] of tokens.entries()) {
    if (t.text === '(') depth++;
    else if (t.text === ')') depth--;
    else if (depth === 0 && t.keywordKind !== 0 && t.text.toUpperCase() === 'AS') {
      as = i;
      break;
    }
  }
  let end = tokens.length;
  if (end >= 2 && tokens[end - 1].text.toUpperCase() === 'DATA' && tokens[end - 2].text.toUpperCase() === 'WITH') end -= 2;
  if (as < 0 || as + 1 >= end) throw new ApiError('invalid_request', 'This DDL is not accepted: the query of CREATE TABLE … AS was not found.');
  const bytes = Buffer.from(text, 'utf8');
  return { head: bytes.subarray(0, tokens[as].end).toString('utf8'), query: bytes.subarray(tokens[as + 1].start, tokens[end - 1].end).toString('utf8') };
}

/**
 * The CREATE TABLE … AS with its query wrapped: rows are counted and their sizes (as a row value,
 * plus a line pointer) summed in the order they come, and the first row past `rows` or `bytes`
 * fails the statement with `marker` in the message. The window frame ends at the current row, so
 * nothing is read ahead: the statement stops at that row. Built-ins are qualified (DDL puts the
 * project's schema first in search_path).
 */
function boundedCreateTableAs(parts: { head: string; query: string }, rows: number, bytes: number, marker: string): string {
  return (
    `${parts.head} SELECT (x.r).* FROM (SELECT q AS r, pg_catalog.count(*) OVER w AS n, pg_catalog.sum(pg_catalog.pg_column_size(q.*) + 4) OVER w AS b ` +
    `FROM (${parts.query}\n) AS q WINDOW w AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS x ` +
    `WHERE CAST(CASE WHEN x.n > ${Math.max(0, rows)} THEN '${marker}:rows' WHEN x.b > ${Math.max(0, bytes)} THEN '${marker}:bytes' ELSE '1' END AS pg_catalog.int4) = 1`
  );
}

function ddlOverQuota(schema: TableSchema, limit: QuotaLimit, usage: Usage, what: 'rows' | 'bytes'): ApiError {
  const left = what === 'rows' ? `${Math.max(0, limit.rows - usage.rows)} rows` : `${Math.max(0, limit.bytes - usage.bytes)} bytes`;
  return new ApiError(
    'table_quota_exceeded',
    `The statement would write more than the ${left} left of the ${schema} tables' quota (${what === 'rows' ? `${limit.rows} rows` : `${limit.bytes} bytes`}); it was stopped there and nothing was created. Write less (a narrower query, fewer rows), delete data, or ask the operator to raise the quota.`,
    { schema, max_rows: limit.rows, max_bytes: limit.bytes, rows: usage.rows, bytes: usage.bytes, exceeded: what },
  );
}

export async function runDdl(db: PlatformDb, projectId: string, schema: TableSchema, sql: string, quota?: QuotaDefaults): Promise<{ schema: TableSchema; command: string }> {
  await loadDdlParser();
  const text = checkDdl(sql);
  const ctas = createTableAsParts(text);
  const limit = await limitsOf(db.sql, quota, projectId, schema);
  return ddlTx(db, projectId, schema, async (c) => {
    const physical = (await queryRows<{ s: string }>(c, 'SELECT (current_schemas(false))[1] AS s'))[0].s;
    const before = await usageOf(c, physical);
    const marker = `table_quota_${randomBytes(8).toString('hex')}`;
    try {
      await runOne(c, ctas ? boundedCreateTableAs(ctas, limit.rows - before.rows, limit.bytes - before.bytes, marker) : text);
    } catch (e) {
      const m = sqlState(e) === '22P02' ? new RegExp(`${marker}:(rows|bytes)`).exec((e as Error).message) : null;
      if (m) throw ddlOverQuota(schema, limit, before, m[1] as 'rows' | 'bytes');
      throw e;
    }
    // Measured before commit: over the byte limit and grown, it is rolled back (rows: see above).
    await enforceQuota(c, physical, schema, limit, before, false);
    return { schema, command: text.split(/\s+/).slice(0, 2).join(' ').toUpperCase() };
  });
}

// ------------------------------------------------------------------ listing

export async function listTables(db: PlatformDb, projectId: string, schema: TableSchema) {
  return ddlTx(db, projectId, schema, async (c) => {
    const physical = (await queryRows<{ s: string }>(c, 'SELECT (current_schemas(false))[1] AS s'))[0].s;
    const names = await queryRows<{ name: string }>(
      c,
      `SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname`,
      physical,
    );
    const tables = [];
    for (const { name } of names) {
      if (isPlatformTable(name)) continue;
      const t = await loadTable(c, physical, schema, name, { catalogueTypes: true });
      tables.push({
        name,
        columns: t.columns.map((col) => ({ name: col.name, type: col.type, nullable: col.nullable, default_value: col.defaultValue, is_primary_key: col.pkPosition > 0 })),
      });
    }
    return { schema, tables };
  });
}

// ------------------------------------------------------------------ structured create

export interface ColumnSpec {
  name: string;
  type: string;
  nullable?: boolean;
  default?: string;
  primary_key?: boolean;
}

/** A type name: words, an optional (n) or (p,s) modifier, optional []. No quotes, no semicolons. */
const TYPE_PATTERN = /^[a-z][a-z0-9_ ]{0,62}(\(\s*\d{1,4}\s*(,\s*\d{1,4}\s*)?\))?( with(out)? time zone)?(\[\])?$/i;

export async function createTable(db: PlatformDb, projectId: string, schema: TableSchema, name: string, columns: ColumnSpec[]) {
  if (!IDENT_PATTERN.test(name)) throw new ApiError('invalid_request', `Table name "${name}" must match ${IDENT_PATTERN}.`);
  if (isPlatformTable(name)) throw new ApiError('platform_table_forbidden', `"${name}" is a platform table name.`);
  const seen = new Set<string>();
  const defs: string[] = [];
  for (const col of columns) {
    if (!IDENT_PATTERN.test(col.name)) throw new ApiError('invalid_request', `Column name "${col.name}" must match ${IDENT_PATTERN}.`);
    if (seen.has(col.name)) throw new ApiError('invalid_request', `Column "${col.name}" appears twice.`);
    seen.add(col.name);
    if (!TYPE_PATTERN.test(col.type)) throw new ApiError('invalid_request', `"${col.type}" is not a type name.`, { column: col.name });
    if (col.default !== undefined && col.default.includes(';')) throw new ApiError('invalid_request', 'A default expression may not contain ";".', { column: col.name });
    defs.push(
      `${quoteIdent(col.name)} ${col.type}` +
        (col.nullable === false || col.primary_key ? ' NOT NULL' : '') +
        (col.default !== undefined ? ` DEFAULT ${col.default}` : ''),
    );
  }
  const pk = columns.filter((c) => c.primary_key).map((c) => quoteIdent(c.name));
  if (pk.length) defs.push(`PRIMARY KEY (${pk.join(', ')})`);
  // Held to the same rules as operator DDL (default expressions are free text).
  await loadDdlParser();
  const sql = checkDdl(`CREATE TABLE ${quoteIdent(name)} (${defs.join(', ')})`);
  return ddlTx(db, projectId, schema, async (c) => {
    await runOne(c, sql);
    const physical = (await queryRows<{ s: string }>(c, 'SELECT (current_schemas(false))[1] AS s'))[0].s;
    const t = await loadTable(c, physical, schema, name);
    return {
      schema,
      table: name,
      columns: t.columns.map((col) => ({ name: col.name, type: col.type, nullable: col.nullable, default_value: col.defaultValue, is_primary_key: col.pkPosition > 0 })),
    };
  });
}

// ------------------------------------------------------------------ copy preview → public

interface ColumnRow {
  table: string;
  name: string;
  type: string;
  notnull: boolean;
  default_value: string | null;
  identity: string;
}

async function setPath(c: pg.PoolClient, physical: string): Promise<void> {
  await setLocal(c, 'search_path', `${quoteIdent(physical)}, pg_catalog`);
}

async function columnsOf(c: Tx, physical: string): Promise<ColumnRow[]> {
  const rows = await queryRows<ColumnRow>(
    c,
    `SELECT cl.relname AS table, a.attname AS name, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
            pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default_value, a.attidentity AS identity
       FROM pg_catalog.pg_attribute a
       JOIN pg_catalog.pg_class cl ON cl.oid = a.attrelid
       JOIN pg_catalog.pg_namespace n ON n.oid = cl.relnamespace
       LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = $1 AND cl.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY cl.relname, a.attnum`,
    physical,
  );
  return rows.filter((row) => !isPlatformTable(row.table));
}

export interface CopyResult {
  dry_run: boolean;
  statements: string[];
  created_tables: string[];
  added_columns: string[];
  added_indexes: string[];
  added_views: string[];
  differences: string[];
}

export async function copyPreviewToPublic(db: PlatformDb, projectId: string, dryRun: boolean): Promise<CopyResult> {
  return ddlTx(db, projectId, 'public', async (c) => {
    const [pub] = (await queryRows<{ s: string }>(c, 'SELECT (current_schemas(false))[1] AS s')).map((r) => r.s);
    const prev = pub.replace(/_public$/, '_preview');
    // Definitions are read with preview on the search path, so they print without its schema name
    // and apply unchanged in public.
    await setPath(c, prev);
    const pcols = await columnsOf(c, prev);
    const qcols = await columnsOf(c, pub);
    const pubTables = new Set(qcols.map((r) => r.table));
    const prevTables = [...new Set(pcols.map((r) => r.table))];
    const indexes = await queryRows<{ table: string; name: string; def: string; constraint: boolean }>(
      c,
      `SELECT t.relname AS table, i.relname AS name, pg_catalog.pg_get_indexdef(i.oid) AS def,
              EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.oid) AS constraint
         FROM pg_catalog.pg_index x JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid JOIN pg_catalog.pg_class t ON t.oid = x.indrelid
         JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 ORDER BY t.relname, i.relname`,
      prev,
    );
    const pubIndexes = await queryRows<{ name: string }>(
      c,
      `SELECT i.relname AS name FROM pg_catalog.pg_class i JOIN pg_catalog.pg_namespace n ON n.oid = i.relnamespace WHERE n.nspname = $1 AND i.relkind IN ('i', 'I')`,
      pub,
    );
    const constraints = await queryRows<{ table: string; name: string; def: string; type: string }>(
      c,
      `SELECT t.relname AS table, k.conname AS name, pg_catalog.pg_get_constraintdef(k.oid) AS def, k.contype AS type
         FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class t ON t.oid = k.conrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
        WHERE n.nspname = $1 AND k.contype IN ('f', 'u', 'c') ORDER BY k.contype DESC, t.relname, k.conname`,
      prev,
    );
    // Index and constraint definitions may name preview's schema: make them apply to public's tables.
    const local = (def: string) => def.split(` ON ${prev}.`).join(' ON ').split(` ON ONLY ${prev}.`).join(' ON ONLY ').split(`REFERENCES ${prev}.`).join('REFERENCES ');
    const pubConstraints = await queryRows<{ table: string; name: string }>(
      c,
      `SELECT t.relname AS table, k.conname AS name FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class t ON t.oid = k.conrelid
         JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1`,
      pub,
    );
    const views = await queryRows<{ name: string; def: string }>(
      c,
      `SELECT v.relname AS name, pg_catalog.pg_get_viewdef(v.oid) AS def FROM pg_catalog.pg_class v
         JOIN pg_catalog.pg_namespace n ON n.oid = v.relnamespace WHERE n.nspname = $1 AND v.relkind = 'v' ORDER BY v.oid`,
      prev,
    );
    const pubViews = await queryRows<{ name: string }>(
      c,
      `SELECT v.relname AS name FROM pg_catalog.pg_class v JOIN pg_catalog.pg_namespace n ON n.oid = v.relnamespace WHERE n.nspname = $1 AND v.relkind = 'v'`,
      pub,
    );
    const result: CopyResult = { dry_run: dryRun, statements: [], created_tables: [], added_columns: [], added_indexes: [], added_views: [], differences: [] };
    const q = quoteIdent;
    const prevSchema = q(prev);
    for (const table of prevTables) {
      const cols = pcols.filter((r) => r.table === table);
      if (!pubTables.has(table)) {
        result.created_tables.push(table);
        result.statements.push(`CREATE TABLE ${q(table)} (LIKE ${prevSchema}.${q(table)} INCLUDING ALL)`);
        for (const col of cols) {
          // A serial column's default names preview's sequence: give public its own.
          const m = col.default_value?.match(/^nextval\('([^']+)'::regclass\)$/);
          if (!m) continue;
          const seq = `${table}_${col.name}_seq`;
          result.statements.push(`CREATE SEQUENCE ${q(seq)} OWNED BY ${q(table)}.${q(col.name)}`);
          result.statements.push(`ALTER TABLE ${q(table)} ALTER COLUMN ${q(col.name)} SET DEFAULT nextval('${seq.replace(/'/g, "''")}'::regclass)`);
        }
        continue;
      }
      const have = new Map(qcols.filter((r) => r.table === table).map((r) => [r.name, r]));
      for (const col of cols) {
        const existing = have.get(col.name);
        if (!existing) {
          if (col.identity) {
            result.differences.push(`${table}.${col.name}: identity column missing in public (not added)`);
            continue;
          }
          result.added_columns.push(`${table}.${col.name}`);
          result.statements.push(
            `ALTER TABLE ${q(table)} ADD COLUMN ${q(col.name)} ${col.type}` +
              (col.default_value && !col.default_value.startsWith('nextval(') ? ` DEFAULT ${col.default_value}` : '') +
              (col.notnull ? ' NOT NULL' : ''),
          );
        } else if (existing.type !== col.type || existing.notnull !== col.notnull) {
          result.differences.push(`${table}.${col.name}: public ${existing.type}${existing.notnull ? ' not null' : ''}, preview ${col.type}${col.notnull ? ' not null' : ''} (not changed)`);
        }
      }
      for (const name of have.keys()) if (!cols.some((col) => col.name === name)) result.differences.push(`${table}.${name}: only in public (kept)`);
      const pubIndexNames = new Set(pubIndexes.map((r) => r.name));
      for (const ix of indexes.filter((r) => r.table === table && !r.constraint)) {
        if (pubIndexNames.has(ix.name)) continue;
        result.added_indexes.push(ix.name);
        result.statements.push(local(ix.def));
      }
    }
    for (const t of [...pubTables].filter((name) => !prevTables.includes(name))) result.differences.push(`${t}: only in public (kept)`);
    // Foreign keys last (their targets exist by then); unique and check constraints only for tables
    // that existed (LIKE … INCLUDING ALL brought them along for the new ones).
    const have = new Set(pubConstraints.map((r) => `${r.table}.${r.name}`));
    for (const k of constraints) {
      if (have.has(`${k.table}.${k.name}`) || isPlatformTable(k.table)) continue;
      if (k.type !== 'f' && result.created_tables.includes(k.table)) continue;
      result.statements.push(`ALTER TABLE ${q(k.table)} ADD CONSTRAINT ${q(k.name)} ${local(k.def)}`);
    }
    // Views last, in creation order (a view may read an earlier one); existing ones are left alone.
    const havePubViews = new Set(pubViews.map((v) => v.name));
    for (const v of views) {
      if (havePubViews.has(v.name)) continue;
      result.added_views.push(v.name);
      result.statements.push(`CREATE VIEW ${q(v.name)} AS ${v.def.trim().replace(/;$/, '').split(`${prev}.`).join('')}`);
    }
    if (!dryRun) {
      await setPath(c, pub);
      for (const s of result.statements) await runOne(c, s);
    }
    return result;
  });
}
