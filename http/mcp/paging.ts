/**
 * One paging style for every list tool: operations that page by `offset` (listBroadcasts,
 * listSegments, …; their REST form is the contract's and stays) take a `cursor` as a tool and
 * answer a `nextCursor`, as the keyset-paged ones do. The cursor is the next offset made opaque, so
 * a model passes back what it was given and never does arithmetic on pages.
 */
const PREFIX = 'o1.';
/** The Offset parameter's own bound in the contract. */
const MAX_OFFSET = 1_000_000;

export function cursorOf(offset: number): string {
  return PREFIX + Buffer.from(`offset:${offset}`).toString('base64url');
}

/** The offset a cursor stands for, or undefined when the MCP layer did not issue it. */
export function offsetOf(cursor: unknown): number | undefined {
  if (typeof cursor !== 'string' || !cursor.startsWith(PREFIX) || cursor.length > 64) return undefined;
  const m = /^offset:(\d{1,7})$/.exec(Buffer.from(cursor.slice(PREFIX.length), 'base64url').toString('utf8'));
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) && n <= MAX_OFFSET && cursorOf(n) === cursor ? n : undefined;
}

/**
 * The page's data with `nextCursor`: the offset after the items it holds while `total` says more
 * remain, else null (the last page), as the keyset-paged lists say it.
 */
export function withNextCursor(data: unknown): unknown {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return data;
  const d = data as Record<string, unknown>;
  const items = Object.values(d).find(Array.isArray);
  if (typeof d.offset !== 'number' || typeof d.total !== 'number' || !items) return data;
  const next = d.offset + items.length;
  return { ...d, nextCursor: items.length > 0 && next < d.total && next <= MAX_OFFSET ? cursorOf(next) : null };
}
