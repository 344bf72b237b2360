/**
 * The portfolio's reach budget: the only writer of `portfolio_reach`.
 *
 * Meta refuses business-initiated sends to new users once a portfolio has reached its messaging
 * limit of unique users in a moving 24 hours (lib/pricing/messaging-limit.ts reads the limit).
 * Campaigns reserve their recipients here before they are sent, so a campaign larger than what
 * is left sends what fits and holds the rest instead of letting Meta refuse them:
 * - a user reached in the window costs nothing more (their 24 hours start again);
 * - a new user is granted while the window holds fewer than the limit;
 * - one transaction under an advisory lock per account, so two campaigns and two instances share
 *   one budget exactly (neither can grant the last place twice).
 * The budget is keyed by WhatsApp Business Account (we do not know the portfolio's accounts) and
 * counts campaign sends; a single template sent through POST /v1/messages is seen by the
 * pre-flight's report (from the messages table) but reserves nothing here.
 */
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { executeNamed, queryRowsNamed, type Tx } from '../platform/db/tx.js';
import { lockForTransaction } from '../platform/db/locks.js';

export const REACH_WINDOW_MS = 24 * 3600_000;

/** How a recipient is counted: the phone, else the business-scoped user id. */
export function reachKey(to: { phone: string | null; user_id: string | null }): string {
  return to.phone ?? `u:${to.user_id}`;
}

/** The SQL of a recipient row's reach key (columns `phone`, `user_id` of alias `r`). */
export const REACH_KEY_SQL = `COALESCE(r.phone, 'u:' || r.user_id)`;

export type PortfolioLimit = { state: 'unknown' } | { state: 'known'; limit: number | null };

/** The limit the channel last reported for a number (null: unlimited); unknown when never read or the read failed. */
export async function portfolioLimit(db: Tx, phoneNumberId: string): Promise<PortfolioLimit> {
  const [row] = await queryRowsNamed<{ state: string; user_limit: number | null }>(
    db, 'portfolio-limit', 'SELECT state, user_limit FROM channel_messaging_limits WHERE phone_number_id = $1', phoneNumberId,
  );
  return row?.state === 'known' ? { state: 'known', limit: row.user_limit } : { state: 'unknown' };
}

export interface Reservation {
  /** Keys granted (already reached, or new within the limit). */
  granted: Set<string>;
  /** When the oldest user in the window leaves it (room for one more); null when all were granted. */
  releaseAt: Date | null;
}

/** Reserves reach for `keys` (in their order of priority) under `limit` unique users per moving 24 hours. */
export async function reserveReach(db: Pick<Database, 'pool'>, wabaId: string, limit: number, keys: string[], now: Date): Promise<Reservation> {
  const since = new Date(now.getTime() - REACH_WINDOW_MS);
  return inTransaction(db.pool, async (tx) => {
    await lockForTransaction(tx, `portfolio_reach:${wabaId}`, 'text', { prepared: true });
    // Users whose 24 hours are over leave the budget (and the table).
    await executeNamed(tx, 'reach-prune', 'DELETE FROM portfolio_reach WHERE waba_id = $1 AND reached_at <= $2', wabaId, since);
    const rows = await queryRowsNamed<{ user_key: string; granted: boolean; oldest: Date | null }>(
      tx,
      'reach-reserve',
      `WITH input AS (
               SELECT * FROM unnest($2::text[]) WITH ORDINALITY AS i(user_key, ord)
             ), used AS (
               SELECT count(*)::int AS n, min(reached_at) AS oldest FROM portfolio_reach WHERE waba_id = $1
             ), ranked AS (
               SELECT i.user_key, i.ord, p.user_key IS NOT NULL AS known,
                      row_number() OVER (PARTITION BY p.user_key IS NULL ORDER BY i.ord) AS rn
               FROM input i LEFT JOIN portfolio_reach p ON p.waba_id = $1 AND p.user_key = i.user_key
             ), decided AS (
               SELECT r.user_key, r.ord, (r.known OR r.rn <= $4 - (SELECT n FROM used)) AS granted FROM ranked r
             ), kept AS (
               INSERT INTO portfolio_reach (waba_id, user_key, reached_at)
               SELECT $1, user_key, $3 FROM decided WHERE granted
               ON CONFLICT (waba_id, user_key) DO UPDATE SET reached_at = EXCLUDED.reached_at
             )
             SELECT d.user_key, d.granted, (SELECT oldest FROM used) AS oldest FROM decided d ORDER BY d.ord`,
      wabaId, keys, now, limit,
    );
    const granted = new Set(rows.filter((r) => r.granted).map((r) => r.user_key));
    const full = rows.some((r) => !r.granted);
    const oldest = rows[0]?.oldest ?? now;
    return { granted, releaseAt: full ? new Date(oldest.getTime() + REACH_WINDOW_MS) : null };
  });
}
