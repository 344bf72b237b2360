/**
 * A campaign and the project's daily send quota (lib/messaging/quota.ts): what the pre-flight
 * says before approval (how much of today's quota is left and how many recipients would wait for
 * the next UTC midnight) and the one reason a held campaign gives everywhere (API, CLI,
 * dashboard); the wake-up when an operator raises the quota is campaigns.ts's wakeQuotaHeld. The
 * reason of a campaign the portfolio's messaging limit holds (lib/pricing/portfolio-reach.ts) is
 * worded here too.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import { nextUtcMidnight, utcDay } from '../messaging/quota.js';


export interface PreflightQuota {
  day: string;
  daily_limit: number;
  used: number;
  remaining: number;
  held: number;
  resumes_at: string | null;
  /** Units campaigns leave for conversations (the project's setting); absent from reports made before it. */
  conversation_reserve?: number;
  /** What this campaign leaves of the day's quota for replies; absent from reports made before it. */
  left_for_conversations?: number;
}

/** The date format people read everywhere (the dashboard's `when`, the held reason, the CLI). */
export function utcMinute(d: Date): string {
  return d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** Starts every held campaign's `status_reason`; the engine clears reasons that start with it. */
export const QUOTA_HOLD_PREFIX = 'daily quota used';

export function quotaHoldReason(resume: Date): string {
  return `${QUOTA_HOLD_PREFIX}; sending resumes at ${utcMinute(resume)} or when the quota is raised`;
}

/** Starts the reason of a campaign held by the portfolio's messaging limit (lib/pricing/portfolio-reach.ts). */
export const LIMIT_HOLD_PREFIX = 'messaging limit reached';

export function limitHoldReason(limit: number, releaseAt: Date): string {
  return `${LIMIT_HOLD_PREFIX} (${limit} unique users in 24 hours); held recipients go out as the window frees room, from ${utcMinute(releaseAt)}`;
}

/**
 * Each project's daily send quota and how much of it a UTC day used (the counter sends reserve in,
 * lib/messaging/quota.ts), for any number of projects in one statement: the pre-flight's outlook
 * and the dashboard's overview read it.
 */
export async function quotaUsage(db: Tx, projectIds: string[], day: string): Promise<Map<string, { limit: number | null; used: number; reserve: number }>> {
  const rows = await queryRows<{ id: string; q: number | null; used: number | bigint | null; reserve: number | null }>(
    db,
    `SELECT p.id, p.daily_send_quota AS q, s.count AS used, p.conversation_reserve AS reserve FROM projects p
     LEFT JOIN send_counters s ON s.project_id = p.id AND s.day = $2::date WHERE p.id = ANY($1)`,
    projectIds, day,
  );
  return new Map(rows.map((r) => [r.id, { limit: r.q, used: Number(r.used ?? 0), reserve: Math.max(0, r.reserve ?? 0) }]));
}

/**
 * The quota on the UTC day sending starts (`startsAt`: the scheduled time, or now) for `eligible`
 * recipients. Other campaigns' future sends are not counted: they are not decided yet.
 */
export async function quotaOutlook(db: Tx, projectId: string, eligible: number, startsAt: Date, now: Date): Promise<PreflightQuota> {
  const at = startsAt > now ? startsAt : now;
  const day = utcDay(at);
  const usage = (await quotaUsage(db, [projectId], day)).get(projectId);
  const limit = Math.max(0, usage?.limit ?? 0);
  const used = Math.max(0, usage?.used ?? 0);
  const reserve = usage?.reserve ?? 0;
  // A campaign never takes the conversation reserve (lib/messaging/ledger.ts, reserveUnits).
  const remaining = Math.max(0, limit - reserve - used);
  const held = Math.max(0, eligible - remaining);
  const left = Math.max(0, limit - used - Math.min(eligible, remaining));
  return { day, daily_limit: limit, used, remaining, held, resumes_at: held > 0 ? nextUtcMidnight(at).toISOString() : null, conversation_reserve: reserve, left_for_conversations: left };
}

/** One line for people: the same words in the CLI and the dashboard. */
export function quotaSentence(q: PreflightQuota): string {
  const base = `${q.remaining} of ${q.daily_limit} left on ${q.day} (UTC)`;
  const fits = q.held === 0 ? `${base}: all recipients fit` : `${base}: ${q.held} recipients would be held until ${utcMinute(new Date(q.resumes_at!))} unless the quota is raised`;
  if (q.left_for_conversations === undefined) return fits;
  const kept = q.conversation_reserve ? ` (${q.conversation_reserve} kept for them)` : '';
  return `${fits}; ${q.left_for_conversations} left for replies${kept}`;
}
