/**
 * A campaign's change cursor (issue 68, item 4): what its open page is pushed from, read from
 * PostgreSQL as every instance sees it. The campaign's own row (status, reason, start, completion,
 * the next wave), its recipients not yet sent counted by state (an index-only read of
 * (broadcast_id, state, id) that skips the sent ones, the bulk), and its project's inbox cursor
 * (lib/inbox/live-changes.ts): a send is a message, a delivery or the channel's price a status event.
 */
import type { Queryable } from '../platform/db/transaction.js';
import { UUID } from '../platform/ids.js';
import { changeCursors } from '../inbox/live-changes.js';

/** The cursor of each campaign asked (a string; a different string means its page may show something new). */
export async function campaignCursors(db: Queryable, broadcastIds: string[]): Promise<Map<string, string>> {
  const ids = broadcastIds.filter((id) => UUID.test(id));
  if (!ids.length) return new Map();
  const { rows } = await db.query<{ id: string; project_id: string; cursor: string }>(
    `SELECT b.id::text, b.project_id,
            concat_ws('/', b.status, b.status_reason, b.started_at::text, b.completed_at::text, b.wave_scheduled_at::text,
                      b.wave_scheduled_count::text, b.retarget_due_at::text,
                      (SELECT string_agg(r.state || ':' || r.n, ',' ORDER BY r.state)
                         FROM (SELECT state, count(*) AS n FROM broadcast_recipients
                               WHERE broadcast_id = b.id AND state IN ('held', 'queued', 'sending', 'unknown', 'failed', 'canceled')
                               GROUP BY state) r)) AS cursor
       FROM broadcasts b WHERE b.id = ANY($1::uuid[])`,
    [ids],
  );
  const projects = await changeCursors(db, [...new Set(rows.map((r) => r.project_id))]);
  return new Map(rows.map((r) => [r.id, `${r.cursor}|${projects.get(r.project_id) ?? ''}`]));
}
