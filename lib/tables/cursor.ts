/**
 * Table-row cursors: opaque, signed (lib/platform/cursor.ts), bound to the query, at most 200 characters.
 *
 * Policy and why:
 * - The MAC covers a scope made of the project, schema, table, sort column, direction and the
 *   canonical filters, so a cursor reused with another query is 400 `invalid_cursor`.
 * - A position that fits is carried inline (`["i", …keys]`). One that does not (long text sort
 *   values, long text primary keys) is stored by reference: the position is kept in the project's
 *   platform table `_platform_cursor_positions` under a 128-bit digest of (scope, position), and the
 *   cursor carries `["r", digest]`. Nothing is ever truncated, so paging stays exact at any value length.
 *   Stored positions are kept at least 7 days.
 */
import { createHash } from 'node:crypto';
import { decodeCursor, encodeCursor, encodeCursorUnchecked, invalidCursor } from '../platform/cursor.js';
import { quoteIdent, PLATFORM_TABLE_PREFIX } from './names.js';
import type { Position } from './keyset.js';
import { queryTimeout, sqlState } from './pg-errors.js';
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { queryRows } from '../platform/db/tx.js';

export const MAX_TABLE_CURSOR_LENGTH = 200;
export const CURSOR_POSITIONS_TABLE = `${PLATFORM_TABLE_PREFIX}cursor_positions`;
const KEEP_DAYS = 7;

function positionsTable(physicalSchema: string): string {
  return `${quoteIdent(physicalSchema)}.${quoteIdent(CURSOR_POSITIONS_TABLE)}`;
}

/** DDL of the positions table, run at provisioning (as the service: the project role has no grant on it). */
export function positionsTableDdl(physicalSchema: string): string {
  return `CREATE TABLE IF NOT EXISTS ${positionsTable(physicalSchema)} (id text PRIMARY KEY, position jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * One statement on the positions table, as the service, under the statement timeout: its own
 * transaction (for SET LOCAL), opened on `db.pool`, the statement on its handle.
 */
async function positionsQuery<R>(db: Pick<Database, 'pool'>, timeoutMs: number, text: string, ...values: unknown[]): Promise<R[]> {
  const ms = Math.max(1, Math.floor(timeoutMs));
  try {
    return await inTransaction(db.pool, (tx) => queryRows<R>(tx, text, ...values), { local: { statement_timeout: ms, lock_timeout: ms } });
  } catch (e) {
    const state = sqlState(e);
    if (state === '57014' || state === '55P03') throw queryTimeout(timeoutMs);
    throw e;
  }
}

function isPosition(v: unknown): v is Position {
  return Array.isArray(v) && v.length > 0 && v.length <= 64 && v.every((x) => x === null || typeof x === 'string');
}

/** The cursor of `position`; call it after the project's transaction (see decodeTableCursor). */
export async function encodeTableCursor(db: Pick<Database, 'pool'>, timeoutMs: number, physicalSchema: string, scope: string, secret: Buffer, position: Position): Promise<string> {
  const inline = encodeCursorUnchecked(['i', ...position], scope, secret);
  if (inline.length <= MAX_TABLE_CURSOR_LENGTH) return inline;
  const id = createHash('sha256').update(`${scope.length}:${scope}\n${JSON.stringify(position)}`, 'utf8').digest('base64url').slice(0, 22);
  await positionsQuery(db, timeoutMs, `INSERT INTO ${positionsTable(physicalSchema)} (id, position) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, id, JSON.stringify(position));
  if (Math.random() < 0.01) {
    await positionsQuery(db, timeoutMs, `DELETE FROM ${positionsTable(physicalSchema)} WHERE created_at < now() - make_interval(days => $1)`, KEEP_DAYS).catch(() => undefined);
  }
  return encodeCursor(['r', id], scope, secret, MAX_TABLE_CURSOR_LENGTH);
}

/**
 * The position of a cursor issued for `scope` (the caller checks it has as many keys as the
 * ordering). Call it outside the project's transaction: it may read the positions table as the
 * service, on a connection of its own, and a request must never hold two connections at once
 * (a full pool would wait on itself).
 */
export async function decodeTableCursor(db: Pick<Database, 'pool'>, timeoutMs: number, physicalSchema: string, cursor: string, scope: string, secret: Buffer): Promise<Position> {
  const payload = decodeCursor(cursor, scope, secret, MAX_TABLE_CURSOR_LENGTH);
  const [kind, ...rest] = payload;
  if (kind === 'i' && isPosition(rest)) return rest;
  if (kind === 'r' && rest.length === 1 && typeof rest[0] === 'string') {
    const rows = await positionsQuery<{ position: unknown }>(db, timeoutMs, `SELECT position FROM ${positionsTable(physicalSchema)} WHERE id = $1`, rest[0]);
    const position = rows[0]?.position;
    if (isPosition(position)) return position;
  }
  throw invalidCursor();
}
