/**
 * Names of a project's table storage, all derived from the project id (no request text).
 *
 * Policy and why:
 * - A project's data lives in two schemas of the service's database, `p_<stem>_public` and
 *   `p_<stem>_preview`, owned by one NOLOGIN role of its own. The role name also carries a digest of
 *   the database name, because roles are cluster-wide and several service databases (test runs,
 *   environments) may share one cluster.
 * - The stem is the project id when it is a plain `[a-z0-9_]` name of at most 40 characters, else
 *   a digest of it, so every name fits PostgreSQL's 63-byte identifiers and needs no escaping.
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

function stem(projectId: string): string {
  const id = projectId.toLowerCase();
  return /^[a-z0-9_]{1,40}$/.test(id) ? id : `h${digest(id, 24)}`;
}

export function schemaName(projectId: string, schema: TableSchema): string {
  return `p_${stem(projectId)}_${schema}`;
}

/** The project's role in the database named `database` (cluster-wide, hence the digest). */
export function roleName(projectId: string, database: string): string {
  return `t${digest(database, 8)}_${stem(projectId)}`;
}

/** A double-quoted identifier (embedded quotes doubled). Every identifier we emit goes through it. */
export function quoteIdent(name: string): string {
  if (name.includes('\0')) throw new Error('identifier contains NUL');
  return `"${name.replace(/"/g, '""')}"`;
}
