/**
 * The overview's figures for a person's projects, today (UTC): messages sent, delivered and failed
 * (outbound messages by their status, the rows the API's message reads and the billing page
 * count), the daily send quota used (the send counter the quota reserves in, as the pre-flight's
 * quota outlook reads it) and the conversations waiting for a reply (the customer wrote last, as
 * the conversations list's "needs a reply" filter says, inside the 24-hour window). One query per figure set for all the
 * projects at once, whatever their number: the page costs three queries.
 */
import type { Deps } from '../deps.js';
import { utcDay } from '../messaging/quota.js';

export interface ProjectFigures {
  sent: number;
  delivered: number;
  failed: number;
  quotaUsed: number;
  quotaLimit: number | null;
  waiting: number;
}

const WINDOW_MS = 24 * 3600_000;

export async function projectFigures(deps: Pick<Deps, 'db' | 'clock'>, projectIds: string[]): Promise<Map<string, ProjectFigures>> {
  const out = new Map<string, ProjectFigures>(projectIds.map((id) => [id, { sent: 0, delivered: 0, failed: 0, quotaUsed: 0, quotaLimit: null, waiting: 0 }]));
  if (!projectIds.length) return out;
  const now = deps.clock.now();
  const day = utcDay(now);
  const midnight = new Date(`${day}T00:00:00Z`);
  const pool = deps.db.pool;
  const [messages, quota, waiting] = await Promise.all([
    pool.query<{ project_id: string; sent: string; delivered: string; failed: string }>(
      `SELECT project_id, count(*)::bigint AS sent,
              count(*) FILTER (WHERE status IN ('delivered', 'read'))::bigint AS delivered,
              count(*) FILTER (WHERE status = 'failed')::bigint AS failed
       FROM messages WHERE project_id = ANY($1) AND direction = 'outbound' AND sent_at >= $2 GROUP BY project_id`,
      [projectIds, midnight],
    ),
    pool.query<{ id: string; q: number | null; used: string | null }>(
      `SELECT p.id, p.daily_send_quota AS q, s.count AS used FROM projects p
       LEFT JOIN send_counters s ON s.project_id = p.id AND s.day = $2::date WHERE p.id = ANY($1)`,
      [projectIds, day],
    ),
    pool.query<{ project_id: string; n: string }>(
      `SELECT v.project_id, count(*)::bigint AS n FROM conversations v
       WHERE v.project_id = ANY($1) AND v.last_inbound_at IS NOT NULL AND v.last_inbound_at >= v.last_message_at AND v.last_inbound_at > $2 GROUP BY v.project_id`,
      [projectIds, new Date(now.getTime() - WINDOW_MS)],
    ),
  ]);
  for (const r of messages.rows) Object.assign(out.get(r.project_id)!, { sent: Number(r.sent), delivered: Number(r.delivered), failed: Number(r.failed) });
  for (const r of quota.rows) Object.assign(out.get(r.id)!, { quotaUsed: Number(r.used ?? 0), quotaLimit: r.q });
  for (const r of waiting.rows) out.get(r.project_id)!.waiting = Number(r.n);
  return out;
}
