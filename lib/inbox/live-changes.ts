/**
 * The inbox's change cursor (issue 68, item 4): what an open inbox page is pushed from. Every change
 * a page shows leaves a row in PostgreSQL, shared by every instance: an event in the outbox (a
 * message received, a status, an echo, an assignment, labels, a note, a call, thread control), a
 * message sent (by anyone: the API, an agent, the bot, a person) or a row of the dashboard's audit
 * trail (who answers, the status). A project's cursor is the newest of each, read through their
 * (project_id, …) indexes: one cheap statement per instance and tick for every project with an
 * open page, whichever instance took the change.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';

/**
 * The cursor of each project asked (a string; a different string means something changed). The
 * count of rows at the newest time tells apart two of one millisecond (a test's frozen clock writes many).
 */
export async function changeCursors(tx: Tx, projectIds: string[]): Promise<Map<string, string>> {
  if (!projectIds.length) return new Map();
  const rows = await queryRows<{ id: string; cursor: string }>(tx,
    `SELECT p.id,
            concat_ws('/', e.at::text, (SELECT count(*) FROM events x WHERE x.project_id = p.id AND x.created_at = e.at)::text,
                      m.at::text, (SELECT count(*) FROM messages y WHERE y.project_id = p.id AND y.sent_at = m.at)::text,
                      (SELECT max(a.id) FROM dashboard_audit a WHERE a.project_id = p.id)::text) AS cursor
       FROM unnest($1::text[]) AS p(id)
       LEFT JOIN LATERAL (SELECT max(created_at) AS at FROM events WHERE project_id = p.id) e ON true
       LEFT JOIN LATERAL (SELECT max(sent_at) AS at FROM messages WHERE project_id = p.id) m ON true`,
    projectIds,
  );
  return new Map(rows.map((r) => [r.id, r.cursor]));
}
