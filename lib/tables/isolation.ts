/**
 * Isolation of a project's tables: every query on them runs on a connection logged in as the
 * project's own role (lib/tables/tenant-pool.ts), inside a transaction that pins `search_path`.
 *
 * Policy and why:
 * - The role logs in only with a derived password and is a member of no other role; it may use
 *   and create in the project's two schemas (owned by the service)
 *   and owns what it creates there. It has no grant on the service's tables, on other projects'
 *   schemas, or on the platform tables inside its own schemas. So even a bug in query building can
 *   reach nothing but the project's own data: PostgreSQL refuses the rest.
 * - `search_path` is `pg_catalog, <schema>`: pg_catalog first, so a project's own functions or
 *   operators can never shadow the built-ins our generated SQL uses (DDL mode puts the schema first
 *   so unqualified names are created there).
 * - Reads run in READ ONLY transactions; every statement has a statement timeout and a lock timeout.
 * - Provisioning works as a superuser (CI) and as a non-superuser owner of the service database
 *   with CREATEROLE (PostgreSQL 16+ gives the creator ADMIN on the role, which ALTER ROLE needs).
 *   The service also keeps a SET membership of each project role (for an operator's maintenance
 *   as the project); the project role is a member of nothing, so this grants the project nothing.
 * - Because the session itself is the project's role, even arbitrary SQL (operator DDL, default and
 *   check expressions it wrote) cannot leave it: `RESET ROLE` or `set_config('role', …)` lands on
 *   the same role. Operator DDL is still parsed and limited (lib/tables/ddl-check.ts).
 */
import type pg from 'pg';
import type { Database } from '../platform/db/database.js';
import { execute, pgTx, queryRows, type Tx } from '../platform/db/tx.js';
import { CURSOR_POSITIONS_TABLE, positionsTableDdl } from './cursor.js';
import { queryTimeout, sqlState } from './pg-errors.js';
import { scramVerifier, tenantPoolsOf } from './tenant-pool.js';
import { ApiError } from '../platform/errors.js';
import { asStorageKey, isPlatformTable, quoteIdent, roleName, schemaName, TABLE_SCHEMAS, type StorageKey, type TableSchema, PLATFORM_TABLE_PREFIX } from './names.js';
import { lockForTransaction } from '../platform/db/locks.js';
import { inTransaction, transactionOn } from '../platform/db/transaction.js';
import { isUnconfirmedCommit } from '../platform/db/commit-guard.js';

export interface ProjectStorage {
  role: string;
  schemas: Record<TableSchema, string>;
}

export interface TxOptions {
  readOnly: boolean;
  /** Statement timeout in milliseconds for every statement of the transaction. */
  statementTimeoutMs: number;
  /** The schema `search_path` points at (after pg_catalog). */
  schema: TableSchema;
  /**
   * DDL mode: the schema comes first in `search_path`, so unqualified names are created there
   * (operator DDL). Data queries keep pg_catalog first (every name they use is qualified).
   */
  ddl?: boolean;
}

/**
 * The platform's database as this room needs it: `sql`, the handle the service's own statements run
 * on (storage keys, provisioning, quotas, cursor positions); `pool`, only to open the service's
 * transactions and to find the tenant pools that belong to it (tenant-pool.ts), and as the key
 * of what is provisioned once per process.
 */
export type PlatformDb = Pick<Database, 'pool' | 'sql'>;

/** A tenant transaction's connection: a pg client (for what needs one: row-mode reads, savepoints) and the handle. */
export type TenantTx = pg.PoolClient & Tx;

const databaseNames = new WeakMap<Tx, Promise<string>>();
const ensured = new WeakMap<pg.Pool, Map<string, Promise<ProjectStorage>>>();

function databaseOf(sql: Tx): Promise<string> {
  let name = databaseNames.get(sql);
  if (!name) {
    name = queryRows<{ db: string }>(sql, 'SELECT current_database() AS db').then((rows) => rows[0].db);
    name.catch(() => databaseNames.delete(sql));
    databaseNames.set(sql, name);
  }
  return name;
}

const storageKeys = new WeakMap<Tx, Map<string, Promise<StorageKey>>>();

/**
 * The project's storage key (`projects.storage_key`, lib/tables/names.ts), read on `sql` (the
 * platform's handle, `deps.db.sql`). Keys never change, so each is read once per process and
 * handle; an unknown project is 404 and is not remembered.
 */
export function storageKeyOf(sql: Tx, projectId: string): Promise<StorageKey> {
  return oncePerProject(storageKeys, sql, projectId, (id) =>
    queryRows<{ key: string }>(sql, 'SELECT storage_key AS key FROM projects WHERE id = $1', id).then((rows) => {
      if (!rows[0]) throw new ApiError('PROJECT_NOT_FOUND', `No project "${projectId}".`);
      return asStorageKey(rows[0].key);
    }));
}

/** What is made once per process, owner (a pool or a handle) and project (by its lower-cased id); a failure is forgotten, so the next call tries again. */
function oncePerProject<K extends object, T>(made: WeakMap<K, Map<string, Promise<T>>>, owner: K, projectId: string, make: (id: string) => Promise<T>): Promise<T> {
  let byProject = made.get(owner);
  if (!byProject) made.set(owner, (byProject = new Map()));
  const id = projectId.toLowerCase();
  let p = byProject.get(id);
  if (!p) {
    p = make(id);
    p.catch(() => byProject!.delete(id));
    byProject.set(id, p);
  }
  return p;
}

/** The project's role and schema names (read on the platform's handle, `deps.db.sql`). */
export async function storageNames(sql: Tx, projectId: string): Promise<ProjectStorage> {
  const [db, key] = await Promise.all([databaseOf(sql), storageKeyOf(sql, projectId)]);
  return {
    role: roleName(key, db),
    schemas: { public: schemaName(key, 'public'), preview: schemaName(key, 'preview') },
  };
}

/** The physical name of one of the project's schemas. */
export async function physicalSchema(sql: Tx, projectId: string, schema: TableSchema): Promise<string> {
  return schemaName(await storageKeyOf(sql, projectId), schema);
}

/** The platform's own table in each project schema; owned by the service, never granted to the project role. */
export const PLATFORM_META_TABLE = `${PLATFORM_TABLE_PREFIX}meta`;

/** Bound on creating a project's storage (it waits for a concurrent provisioning of the same project). */
const PROVISION_TIMEOUT_MS = 30000;

async function provision(db: PlatformDb, projectId: string): Promise<ProjectStorage> {
  const names = await storageNames(db.sql, projectId);
  try {
    return await inTransaction(
      db.pool,
      async (client) => {
        // One provisioning at a time per role name (CREATE ROLE is not idempotent under races).
        await lockForTransaction(client, `tables-provision:${names.role}`, 'text');
        const role = quoteIdent(names.role);
        const [me] = await queryRows<{ superuser: boolean; version: number }>(
          client,
          "SELECT rolsuper AS superuser, current_setting('server_version_num')::int AS version FROM pg_roles WHERE rolname = current_user",
        );
        const exists = await queryRows(client, 'SELECT 1 FROM pg_roles WHERE rolname = $1', names.role);
        if (exists.length === 0) await execute(client, `CREATE ROLE ${role} NOLOGIN NOINHERIT`);
        // Tenant work logs in as this role (lib/tables/tenant-pool.ts): the password is derived (only its
        // SCRAM verifier is sent), and the role stays a member of no other role, so nothing run on its
        // sessions can become anyone else.
        await execute(client, `ALTER ROLE ${role} LOGIN PASSWORD ${client.escapeLiteral(scramVerifier(tenantPoolsOf(db.pool).passwordOf(names.role)))}`);
        if (!me.superuser) {
          // Maintenance as the project (SET ROLE) needs membership with SET. PostgreSQL 16+ gives a
          // CREATEROLE creator ADMIN only; our own grant adds SET (no INHERIT: no ambient project rights).
          if (me.version >= 160000) await execute(client, `GRANT ${role} TO CURRENT_USER WITH INHERIT FALSE, SET TRUE`);
          else if (!(await queryRows<{ m: boolean }>(client, 'SELECT pg_has_role(current_user, $1, $2) AS m', names.role, 'MEMBER'))[0].m) {
            await execute(client, `GRANT ${role} TO CURRENT_USER`);
          }
        }
        for (const s of TABLE_SCHEMAS) {
          const schema = quoteIdent(names.schemas[s]);
          // The service owns the schema (so it can keep platform tables there and drop it); the project
          // role may use it and create in it, and owns what it creates. Nobody else may even look inside.
          await execute(client, `CREATE SCHEMA IF NOT EXISTS ${schema}`);
          await execute(client, `REVOKE ALL ON SCHEMA ${schema} FROM PUBLIC`);
          await execute(client, `GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role}`);
          await execute(
            client,
            `CREATE TABLE IF NOT EXISTS ${schema}.${quoteIdent(PLATFORM_META_TABLE)} (key text PRIMARY KEY, value text NOT NULL)`,
          );
          // Created by the service, so owned by it: the project role has no grant on it at all.
          await execute(client, `REVOKE ALL ON ${schema}.${quoteIdent(PLATFORM_META_TABLE)} FROM PUBLIC, ${role}`);
          await execute(client, positionsTableDdl(names.schemas[s]));
          await execute(client, `REVOKE ALL ON ${schema}.${quoteIdent(CURSOR_POSITIONS_TABLE)} FROM PUBLIC, ${role}`);
          await execute(
            client,
            `INSERT INTO ${schema}.${quoteIdent(PLATFORM_META_TABLE)} (key, value) VALUES ('layout', '1'), ('project_id', $1) ON CONFLICT (key) DO NOTHING`,
            projectId.toLowerCase(),
          );
        }
        return names;
      },
      { local: { statement_timeout: PROVISION_TIMEOUT_MS, lock_timeout: PROVISION_TIMEOUT_MS } },
    );
  } catch (e) {
    const state = sqlState(e);
    if (state === '57014' || state === '55P03') throw queryTimeout(PROVISION_TIMEOUT_MS);
    if (state === '42501') {
      throw new Error(`Cannot create the storage of project ${projectId}: the service's database role must be a superuser or have CREATEROLE (${(e as Error).message})`);
    }
    throw e;
  }
}

/**
 * Creates the project's role and schemas when missing (once per process, platform pool and
 * project). `db.pool` opens the provisioning's transaction.
 */
export function ensureProjectStorage(db: PlatformDb, projectId: string): Promise<ProjectStorage> {
  return oncePerProject(ensured, db.pool, projectId, (id) => provision(db, id));
}

/**
 * Drops a project's schemas and role (tests, and operators removing a project for good).
 * `db.pool`: the tenant pools of the role are closed first (tenant-pool.ts keys them by it).
 */
export async function dropProjectStorage(db: PlatformDb, projectId: string): Promise<void> {
  const names = await storageNames(db.sql, projectId);
  ensured.get(db.pool)?.delete(projectId.toLowerCase());
  await tenantPoolsOf(db.pool).forget(names.role);
  for (const s of TABLE_SCHEMAS) await execute(db.sql, `DROP SCHEMA IF EXISTS ${quoteIdent(names.schemas[s])} CASCADE`);
  await execute(db.sql, `DROP ROLE IF EXISTS ${quoteIdent(names.role)}`);
}

/**
 * Runs `fn` in a transaction on a login of the project's role (lib/tables/tenant-pool.ts), with
 * `search_path` and the timeouts set. Nothing `fn` runs has any right beyond the project's role.
 * `db.pool` only finds the tenant pools (and provisions the project, once); `fn` gets the tenant
 * connection as a client and as the handle (`TenantTx`). Statements that return a user table's
 * values stay on the client (`rowMode: 'array'` with the room's own parsers, lib/tables/values.ts),
 * and so do the savepoints of lib/tables/pg-errors.ts; the others run through queryRows/execute.
 */
export async function withProjectTx<T>(
  db: PlatformDb,
  projectId: string,
  opts: TxOptions,
  fn: (client: TenantTx, storage: ProjectStorage) => Promise<T>,
): Promise<T> {
  const storage = await ensureProjectStorage(db, projectId);
  // Operator DDL (30 s statements) never takes the slots kept for projects holding none.
  const conn = await tenantPoolsOf(db.pool).connect(projectId.toLowerCase(), storage.role, { reserve: !opts.ddl });
  const client = pgTx(conn.client);
  const state: { broken?: boolean } = {};
  const timeout = Math.max(1, Math.floor(opts.statementTimeoutMs));
  const schema = quoteIdent(storage.schemas[opts.schema]);
  try {
    return await transactionOn(client, () => fn(client, storage), {
      // Reads see one snapshot across their statements (a page may be read in two segments).
      isolation: opts.readOnly ? 'REPEATABLE READ' : 'READ COMMITTED',
      readOnly: !!opts.readOnly,
      local: {
        // Stable text forms: values come back, and cursor positions go round, in these.
        timezone: "'UTC'",
        datestyle: "'ISO, YMD'",
        intervalstyle: "'postgres'",
        extra_float_digits: 1,
        search_path: opts.ddl ? `${schema}, pg_catalog` : `pg_catalog, ${schema}`,
        statement_timeout: timeout,
        lock_timeout: timeout,
        idle_in_transaction_session_timeout: Math.max(timeout * 4, 10000),
      },
    }, state);
  } catch (e) {
    const code = sqlState(e);
    // A commit not confirmed by a synchronous standby is unavailability (503), not a slow query.
    if ((code === '57014' && !isUnconfirmedCommit(e)) || code === '55P03') throw queryTimeout(opts.statementTimeoutMs);
    throw e;
  } finally {
    await conn.release(!!state.broken);
  }
}

export { isPlatformTable };
