/**
 * Names of a project's table storage, all derived from the project's storage key (no request text).
 *
 * Policy and why:
 * - A project's data lives in two schemas of the service's database, `p_<key>_public` and
 *   `p_<key>_preview`, owned by one NOLOGIN role of its own. The role name also carries a digest of
 *   the database name, because roles are cluster-wide and several service databases (test runs,
 *   environments) may share one cluster.
 * - The key is `projects.storage_key`: assigned once by the database (at random), unique and never
 *   changed (a trigger refuses it). It is never derived from the id, because a name computed from
 *   the id (the id itself, or a digest of it when it was not a plain name) could be produced by
 *   another project's chosen id: `h<24 hex of sha256("proj-c")>` named `proj-c`'s storage. Projects
 *   from before keep the names their storage had (migration storage_key). Keys are `[a-z0-9_]`, at
 *   most 40 characters, so every name fits PostgreSQL's 63-byte identifiers and needs no escaping.
 *   lib/tables/isolation.ts looks the key up (`storageNames`); a type of its own keeps a project id
 *   from being passed where a key belongs.
 * - Platform tables (managed by the platform inside a project's schemas) are recognised by name
 *   alone, so the 403 does not depend on whether such a table exists yet.
 */
import { createHash } from 'node:crypto';

export const TABLE_SCHEMAS = ['public', 'preview'] as const;
export type TableSchema = (typeof TABLE_SCHEMAS)[number];

/** The contract's table and column name pattern. */
export const IDENT_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/;

/** Prefix of the tables the platform manages in a project's schemas (e.g. `_platform_meta`). */
export const PLATFORM_TABLE_PREFIX = '_platform_';

export function isPlatformTable(name: string): boolean {
  return name.startsWith(PLATFORM_TABLE_PREFIX);
}

function digest(text: string, chars: number): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, chars);
}

/** A project's `projects.storage_key`, as read by lib/tables/isolation.ts (never a project id). */
export type StorageKey = string & { readonly __brand: 'StorageKey' };

const KEY_PATTERN = /^[a-z0-9_]{1,40}$/;

/** Checks a key read from the database (it names schemas and roles unquoted in operators' SQL). */
export function asStorageKey(key: string): StorageKey {
  if (!KEY_PATTERN.test(key)) throw new Error(`Malformed storage key ${JSON.stringify(key)} (projects.storage_key must match ${KEY_PATTERN}).`);
  return key as StorageKey;
}

export function schemaName(key: StorageKey, schema: TableSchema): string {
  return `p_${key}_${schema}`;
}

/** The project's role in the database named `database` (cluster-wide, hence the digest). */
export function roleName(key: StorageKey, database: string): string {
  return `t${digest(database, 8)}_${key}`;
}

/** A double-quoted identifier (embedded quotes doubled). Every identifier we emit goes through it. */
export function quoteIdent(name: string): string {
  if (name.includes('\0')) throw new Error('identifier contains NUL');
  return `"${name.replace(/"/g, '""')}"`;
}
