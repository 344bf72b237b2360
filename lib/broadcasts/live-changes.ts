/**
 * A campaign's change cursor (issue 68, item 4): what its open page is pushed from, read from
 * PostgreSQL as every instance sees it. The campaign's own row (status, reason, start, completion,
 * the next wave), its recipients not yet sent counted by state (an index-only read of
 * (broadcast_id, state, id) that skips the sent ones, the bulk). Its sends and their statuses (a
 * delivery, the channel's price) move its project's inbox cursor (lib/inbox/live-changes.ts), which
 * the page's source adds (http/dashboard/broadcast-pages.ts).
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import { UUID } from '../platform/ids.js';

/** Each campaign asked: its project and its own cursor (a different string means its page may show something new). */
export async function campaignCursors(db: Tx, broadcastIds: string[]): Promise<Map<string, { projectId: string; cursor: string }>> {
  const ids = broadcastIds.filter((id) => UUID.test(id));
  if (!ids.length) return new Map();
  const rows = await queryRows<{ id: string; project_id: string; cursor: string }>(
    db,
    `SELECT b.id::text, b.project_id,
            concat_ws('/', b.status, b.status_reason, b.started_at::text, b.completed_at::text, b.wave_scheduled_at::text,
                      b.wave_scheduled_count::text, b.retarget_due_at::text,
                      (SELECT string_agg(r.state || ':' || r.n, ',' ORDER BY r.state)
                         FROM (SELECT state, count(*) AS n FROM broadcast_recipients
                               WHERE broadcast_id = b.id AND state IN ('held', 'queued', 'sending', 'unknown', 'failed', 'canceled')
                               GROUP BY state) r)) AS cursor
       FROM broadcasts b WHERE b.id = ANY($1::uuid[])`,
    ids,
  );
  return new Map(rows.map((r) => [r.id, { projectId: r.project_id, cursor: r.cursor }]));
}
