/**
 * Keyset paging, once for every list: read `take + 1` rows after the position a signed cursor
 * carries, return `take` and a cursor after the last one when more follow. A list says how its
 * position goes into a cursor and back; the cursor is bound to the list's scope (operation,
 * project, filters), so a cursor of another list is 400 `invalid_cursor`. Page and cursor bounds
 * are the list's own (conversations: 1 to 100, default 50; table rows: 1 to 50, default 20,
 * cursors of at most 200 characters).
 */
import { cursorId, cursorTime, decodeCursor, encodeCursor, invalidCursor, MAX_CURSOR_LENGTH, pageSize, type PageBounds } from './cursor.js';

export interface KeysetList<Row, Position> {
  /** cursorScope(operation, project, filters) */
  scope: string;
  secret: Buffer;
  /** The position a cursor's payload names; anything malformed throws invalidCursor(). */
  decode(payload: unknown[]): Position;
  /** The payload of the cursor that continues after `row`. */
  encode(row: Row): unknown[];
  /** Up to `take` rows after `after` (from the start without one), in list order. */
  read(after: Position | undefined, take: number): Promise<Row[]>;
  bounds?: PageBounds;
  maxCursorLength?: number;
}

export interface KeysetPage<Row> {
  page: Row[];
  nextCursor: string | null;
}

export async function keysetPage<Row, Position>(query: { cursor?: unknown; limit?: unknown }, list: KeysetList<Row, Position>): Promise<KeysetPage<Row>> {
  const take = pageSize(query.limit, list.bounds);
  const maxLength = list.maxCursorLength ?? MAX_CURSOR_LENGTH;
  const after = query.cursor === undefined ? undefined : list.decode(decodeCursor(String(query.cursor), list.scope, list.secret, maxLength));
  const rows = await list.read(after, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const nextCursor = rows.length > take && last ? encodeCursor(list.encode(last), list.scope, list.secret, maxLength) : null;
  return { page, nextCursor };
}

/** Positions the lists use. */
export const positions = {
  /** `[id]`: a bigint id as a decimal string. */
  id(payload: unknown[]): bigint {
    if (payload.length !== 1) throw invalidCursor();
    return cursorId(payload[0]);
  },
  /** `[epoch ms, id]`: a time and a bigint id as a decimal string (a conversation's messages by their own time). */
  timeAndId(payload: unknown[]): { at: Date; id: bigint } {
    if (payload.length !== 2) throw invalidCursor();
    return { at: cursorTime(payload[0]), id: cursorId(payload[1]) };
  },
  /** `[epoch ms, id]`: a time and a text id (newest first lists of templates, media). */
  timeAndText(payload: unknown[]): { at: Date; id: string } {
    if (payload.length !== 2 || typeof payload[1] !== 'string') throw invalidCursor();
    return { at: cursorTime(payload[0]), id: payload[1] };
  },
};
