/**
 * Operator DDL judged on PostgreSQL's own parse tree (libpg-query), not on its words.
 *
 * Policy and why:
 * - Exactly one statement, of the documented kinds: CREATE/ALTER/DROP TABLE, INDEX, SEQUENCE,
 *   VIEW, TYPE (composite or enum), ALTER ... RENAME, COMMENT ON, TRUNCATE, and
 *   CREATE TABLE ... AS (seeding a table from VALUES or from the project's own tables).
 * - Nothing in it may change the session or reach outside the project: no function calls but a
 *   short list of harmless built-ins (defaults such as `now()`, `gen_random_uuid()`,
 *   `nextval('…')`), no subqueries, no functions in FROM, no schema-qualified names (so no
 *   `pg_temp`, `public` or another project's schema), no TEMP objects, no `pg_…` relations (the
 *   catalogs), no platform tables, no owner changes.
 * - The catalogue stays closed: no cast to `oid` or to a `reg*` type (regclass, regrole,
 *   regnamespace, regproc, regprocedure, regoper, regoperator, regtype, regconfig, regdictionary,
 *   regcollation, their arrays, in any spelling: `::`, CAST, `regclass 'x'`), as a column type
 *   too. Those types turn any number into the name of a relation, role, schema or function of the
 *   whole database (other tenants' included) and a qualified name into "permission denied" versus
 *   "does not exist". `to_regclass()` and the like are not among the accepted functions; the
 *   accepted functions that look names up (`nextval`, `to_tsvector`'s configuration) take only a
 *   constant, unqualified name.
 * - Nothing reveals the session's identity: `current_user`, `current_role`, `user`, `session_user`,
 *   `current_schema`, `current_catalog` (and functions such as `current_setting()`, `version()`,
 *   `pg_backend_pid()`, `inet_server_addr()`, which are not on the list) name the project's role,
 *   schema and database or the server; system columns (`tableoid`, `xmin`, `xmax`, `cmin`, `cmax`,
 *   `ctid`) give catalogue oids and the cluster's transaction counters.
 * - Every identifier is judged on the tree, where the parser has already decoded `U&"\0061"`
 *   escapes and quotes: any name containing `_platform_` is a platform name (403), and the names of
 *   created or renamed objects (RENAME TO, index, constraint and type names) follow the rules of
 *   created relations (no `pg_` prefix). The raw text is checked for `_platform_` as well.
 * - This is the second wall: every statement runs on a login of the project's own role, a member
 *   of no other role (lib/tables/tenant-pool.ts), so even an accepted expression cannot leave it.
 */
import { ApiError } from '../platform/errors.js';
import { PLATFORM_TABLE_PREFIX } from './names.js';

/** Statement node kinds operators may run. */
const STATEMENTS = new Set([
  'CreateStmt', 'CreateTableAsStmt', 'IndexStmt', 'CreateSeqStmt', 'AlterSeqStmt', 'ViewStmt',
  'CompositeTypeStmt', 'CreateEnumStmt', 'AlterEnumStmt', 'AlterTableStmt', 'RenameStmt',
  'DropStmt', 'CommentStmt', 'TruncateStmt',
]);

const OBJECT_KINDS = new Set(['OBJECT_TABLE', 'OBJECT_INDEX', 'OBJECT_SEQUENCE', 'OBJECT_VIEW', 'OBJECT_TYPE', 'OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT', 'OBJECT_DOMCONSTRAINT']);

/** Built-ins that read nothing and change nothing: what column defaults and checks commonly use. */
const FUNCTIONS = new Set([
  'now', 'clock_timestamp', 'statement_timestamp', 'transaction_timestamp', 'timezone', 'gen_random_uuid', 'nextval',
  'lower', 'upper', 'length', 'char_length', 'btrim', 'ltrim', 'rtrim', 'abs', 'round', 'floor', 'ceil', 'date_trunc',
  'jsonb_typeof', 'json_typeof', 'array_length', 'cardinality', 'to_tsvector',
  'count', 'sum', 'avg', 'min', 'max',
]);

/** Parse-tree nodes that are refused wherever they occur. */
const REFUSED_NODES: Record<string, string> = {
  SubLink: 'subqueries are not accepted',
  RangeSubselect: 'subqueries are not accepted',
  RangeFunction: 'functions in FROM are not accepted',
  RangeTableFunc: 'XMLTABLE is not accepted',
  JsonTable: 'JSON_TABLE is not accepted',
  withClause: 'WITH is not accepted',
  RoleSpec: 'roles may not be named',
  CallStmt: 'CALL is not accepted',
};

/**
 * The SQL-standard "functions" without parentheses that name the session's role, schema or
 * database (parsed as SQLValueFunction, not FuncCall): refused, as the functions outside FUNCTIONS
 * are. The date and time ones (current_date, current_timestamp, localtime…) stay accepted.
 */
const SESSION_VALUES: Record<string, string> = {
  SVFOP_CURRENT_ROLE: 'current_role',
  SVFOP_CURRENT_USER: 'current_user',
  SVFOP_USER: 'user',
  SVFOP_SESSION_USER: 'session_user',
  SVFOP_CURRENT_CATALOG: 'current_catalog',
  SVFOP_CURRENT_SCHEMA: 'current_schema',
};

/**
 * System columns: `tableoid` is the catalogue oid of the table, `xmin`/`xmax`/`cmin`/`cmax` the
 * cluster-wide transaction counters (other tenants' write rate), `ctid` the row's physical place.
 * No user column can carry these names (PostgreSQL reserves them), so a column reference ending in
 * one is always a system column.
 */
const SYSTEM_COLUMNS = new Set(['tableoid', 'xmin', 'xmax', 'cmin', 'cmax', 'ctid']);

/** Types whose values name catalogue objects (and `oid`, the step to them); arrays are `_<name>`. */
const CATALOGUE_TYPES = new Set([
  'oid', 'regclass', 'regrole', 'regnamespace', 'regproc', 'regprocedure', 'regoper', 'regoperator',
  'regtype', 'regconfig', 'regdictionary', 'regcollation',
]);

export function isCatalogueType(name: string): boolean {
  const n = name.toLowerCase();
  return CATALOGUE_TYPES.has(n.startsWith('_') ? n.slice(1) : n);
}

/** Keys whose string value names an object being created (a rename's target: checkDdl). */
const NEW_OBJECT_NAMES = new Set(['idxname', 'conname']);

type Parser = typeof import('libpg-query');
let parser: Parser | undefined;
let loaded: Promise<void> | undefined;
/**
 * Loads the parser (WebAssembly) once; call before checkDdl and ddlParser. Imported here, at the
 * first DDL, not with the service: its module reserves 128 MB of WebAssembly memory at import.
 */
export function loadDdlParser(): Promise<void> {
  loaded ??= import('libpg-query').then(async (m) => {
    await m.loadModule();
    parser = m;
  });
  return loaded;
}

/** The parser loadDdlParser loaded. */
export function ddlParser(): Parser {
  if (!parser) throw new Error('The DDL parser is not loaded: await loadDdlParser() first.');
  return parser;
}

function refuse(why: string): never {
  throw new ApiError('invalid_request', `This DDL is not accepted: ${why}.`);
}

function platformName(): never {
  throw new ApiError('platform_table_forbidden', `Platform tables (${PLATFORM_TABLE_PREFIX}…) are managed by the platform.`);
}

function strings(list: unknown): string[] {
  return ((list as Array<{ String?: { sval?: string } }> | undefined) ?? []).map((n) => n?.String?.sval ?? '');
}

/** A name list (operator, collation, operator class) is unqualified or in pg_catalog. */
function judgeQualified(list: unknown, what: string): void {
  const parts = strings(list);
  if (parts.length > 1 && parts[0] !== 'pg_catalog') refuse(`${what} may not be qualified with a schema`);
}

/** The name of an object being created or renamed: the rules of created relations. */
function judgeNewName(name: string): void {
  if (name.toLowerCase().startsWith('pg_')) refuse('names starting with pg_ are reserved for the system');
}

/** An accepted function that looks a name up takes it as a constant, unqualified name. */
function judgeNameArgument(fn: string, args: unknown[]): void {
  if (fn !== 'nextval' && !(fn === 'to_tsvector' && args.length === 2)) return;
  const text = (args[0] as { A_Const?: { sval?: { sval?: string } } } | undefined)?.A_Const?.sval?.sval;
  if (typeof text !== 'string' || /[."]/.test(text)) refuse(`${fn}() takes the name of one of this project's objects as a plain string constant, without a schema or a cast (e.g. nextval('orders_id_seq'))`);
}

function funcName(names: unknown): string {
  const parts = (names as Array<{ String?: { sval?: string } }> | undefined)?.map((n) => n.String?.sval ?? '') ?? [];
  if (parts.length === 2 && parts[0] === 'pg_catalog') return parts[1];
  if (parts.length !== 1) refuse(`the function ${parts.join('.')} is not accepted`);
  return parts[0];
}

/** Every node under `node`, judged. */
function walk(node: unknown, seen: { platform: boolean }): void {
  if (Array.isArray(node)) {
    for (const x of node) walk(x, seen);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  // A relation reference (RangeVar), wrapped or not.
  if (typeof o.relname === 'string') {
    if (o.schemaname !== undefined || o.catalogname !== undefined) refuse('names may not be qualified with a schema (objects live in the chosen schema)');
    if (o.relpersistence === 't') refuse('temporary objects are not accepted');
    if (o.relname.toLowerCase().startsWith('pg_')) refuse('system catalogs may not be used');
  }
  // A type name (TypeName, under whichever key: a column's type, a cast, `CREATE TABLE … OF`, a
  // sequence's AS): unqualified, and no catalogue type.
  if (Array.isArray(o.names) && 'typemod' in o) {
    const names = strings(o.names);
    if (names.length > 1 && names[0] !== 'pg_catalog') refuse('type names may not be qualified with a schema');
    const last = names.at(-1);
    if (last !== undefined && isCatalogueType(last)) {
      refuse(`the type ${last} is not accepted (oid and reg* types read the system catalogue; use bigint or text)`);
    }
  }
  for (const [key, value] of Object.entries(o)) {
    if (key in REFUSED_NODES) refuse(REFUSED_NODES[key]);
    // Every name and string, as the parser decoded it (U& escapes, quotes).
    if (typeof value === 'string' && value.toLowerCase().includes(PLATFORM_TABLE_PREFIX)) seen.platform = true;
    if (typeof value === 'string' && NEW_OBJECT_NAMES.has(key)) judgeNewName(value);
    if (key === 'SQLValueFunction') {
      const op = (value as { op?: string }).op ?? '';
      if (op in SESSION_VALUES) refuse(`${SESSION_VALUES[op]} is not accepted (it names the session's role, schema or database)`);
    }
    if (key === 'ColumnRef') {
      const column = strings((value as { fields?: unknown }).fields).at(-1) ?? '';
      if (SYSTEM_COLUMNS.has(column)) refuse(`the system column ${column} is not accepted`);
    }
    if (key === 'FuncCall') {
      const call = value as { funcname?: unknown; args?: unknown[] };
      const name = funcName(call.funcname);
      if (!FUNCTIONS.has(name)) refuse(`the function ${name}() is not accepted`);
      judgeNameArgument(name, call.args ?? []);
    }
    if (key === 'CreateEnumStmt') {
      // The new type's name, a list of strings (a composite type's is a RangeVar, judged as relations are).
      const names = strings((value as { typeName?: unknown }).typeName);
      if (names.length > 1) refuse('names may not be qualified with a schema');
      if (names.length === 1) judgeNewName(names[0]);
    }
    if (key === 'A_Expr') judgeQualified((value as { name?: unknown }).name, 'operators');
    if (key === 'CollateClause') judgeQualified((value as { collname?: unknown }).collname, 'collations');
    if (key === 'IndexElem') {
      judgeQualified((value as { opclass?: unknown }).opclass, 'operator classes');
      judgeQualified((value as { collation?: unknown }).collation, 'collations');
    }
    if (key === 'subtype' && (value === 'AT_ChangeOwner' || value === 'AT_SetTableSpace' || value === 'AT_EnableRule' || value === 'AT_EnableAlwaysRule' || value === 'AT_EnableReplicaRule')) {
      refuse('ownership, tablespaces and rules may not be changed');
    }
    if (key === 'tableSpace' || key === 'tablespacename') refuse('tablespaces may not be named');
    walk(value, seen);
  }
}

/**
 * The statement if it is accepted (trimmed, one trailing `;` dropped); otherwise 400
 * `invalid_request` (403 `platform_table_forbidden` for a platform table).
 */
export function checkDdl(sql: string): string {
  const text = sql.trim().replace(/;\s*$/, '');
  if (text.length === 0) throw new ApiError('invalid_request', 'sql is empty.');
  let stmts: Array<{ stmt?: Record<string, unknown> }>;
  try {
    stmts = (ddlParser().parseSync(text) as { stmts?: Array<{ stmt?: Record<string, unknown> }> }).stmts ?? [];
  } catch (e) {
    throw new ApiError('invalid_request', `The statement does not parse: ${(e as Error).message}`);
  }
  if (stmts.length !== 1 || !stmts[0].stmt) refuse('send exactly one statement');
  const [kind, body] = Object.entries(stmts[0].stmt!)[0] as [string, Record<string, unknown>];
  if (!STATEMENTS.has(kind)) {
    throw new ApiError(
      'invalid_request',
      'Only one DDL statement of these forms is accepted: CREATE TABLE (also AS VALUES/SELECT from the project\'s tables)/INDEX/SEQUENCE/VIEW/TYPE, ALTER or DROP TABLE/INDEX/SEQUENCE/VIEW/TYPE, COMMENT ON, TRUNCATE.',
    );
  }
  for (const key of ['objtype', 'removeType', 'renameType']) {
    const v = body[key];
    if (typeof v === 'string' && !OBJECT_KINDS.has(v)) refuse(`${v.replace('OBJECT_', '').toLowerCase()} objects are not accepted`);
  }
  if (kind === 'DropStmt' || kind === 'CommentStmt') {
    // Their objects are lists of names, not RangeVars: the same rules by hand.
    const objects = kind === 'DropStmt' ? (body.objects as unknown[]) ?? [] : [body.object];
    for (const obj of objects) {
      const names = (Array.isArray((obj as { List?: { items?: unknown[] } })?.List?.items) ? (obj as { List: { items: unknown[] } }).List.items : [obj])
        .map((n) => (n as { String?: { sval?: string } })?.String?.sval)
        .filter((n): n is string => typeof n === 'string');
      const maxParts = body.objtype === 'OBJECT_COLUMN' || body.objtype === 'OBJECT_TABCONSTRAINT' ? 2 : 1;
      if (names.length > maxParts) refuse('names may not be qualified with a schema');
      if (names.some((n) => n.toLowerCase().startsWith(PLATFORM_TABLE_PREFIX))) platformName();
    }
  }
  // A rename's target follows the rules of created names (a column's, only the platform prefix).
  if (kind === 'RenameStmt' && body.renameType !== 'OBJECT_COLUMN' && typeof body.newname === 'string') judgeNewName(body.newname);
  const seen = { platform: false };
  walk({ [kind]: body }, seen);
  if (seen.platform || text.toLowerCase().includes(PLATFORM_TABLE_PREFIX)) platformName();
  return text;
}
