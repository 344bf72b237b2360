/**
 * The overview's figures for a person's projects, today (UTC): messages sent, delivered and failed
 * (outbound messages by their status, the rows the API's message reads and the billing page
 * count), the daily send quota used (quotaUsage, which the pre-flight's quota outlook reads too)
 * and the conversations waiting for a reply (the conversations list's "needs a reply" condition,
 * conversationConditionSql, inside the 24-hour window). One query per figure set for all the
 * projects at once, whatever their number: the page costs three queries.
 */
import type { Deps } from '../deps.js';
import { utcDay } from '../messaging/quota.js';
import { quotaUsage } from '../broadcasts/quota-hold.js';
import { conversationConditionSql } from '../conversations/console-filters.js';
import { queryRows } from '../platform/db/tx.js';

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
  const [messages, quota, waiting] = await Promise.all([
    queryRows<{ project_id: string; sent: bigint; delivered: bigint; failed: bigint }>(
      deps.db.sql,
      `SELECT project_id, count(*)::bigint AS sent,
              count(*) FILTER (WHERE status IN ('delivered', 'read'))::bigint AS delivered,
              count(*) FILTER (WHERE status = 'failed')::bigint AS failed
       FROM messages WHERE project_id = ANY($1) AND direction = 'outbound' AND sent_at >= $2 GROUP BY project_id`,
      projectIds, midnight,
    ),
    quotaUsage(deps.db.sql, projectIds, day),
    queryRows<{ project_id: string; n: bigint }>(
      deps.db.sql,
      `SELECT v.project_id, count(*)::bigint AS n FROM conversations v
       WHERE v.project_id = ANY($1) AND ${conversationConditionSql('v', 'needs_reply', '$3')} AND v.last_inbound_at > $2 GROUP BY v.project_id`,
      projectIds, new Date(now.getTime() - WINDOW_MS), now,
    ),
  ]);
  for (const r of messages) Object.assign(out.get(r.project_id)!, { sent: Number(r.sent), delivered: Number(r.delivered), failed: Number(r.failed) });
  for (const [id, q] of quota) Object.assign(out.get(id)!, { quotaUsed: q.used, quotaLimit: q.limit });
  for (const r of waiting) out.get(r.project_id)!.waiting = Number(r.n);
  return out;
}
