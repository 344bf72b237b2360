/**
 * The business portfolio's messaging limit, as the pre-flight reports it.
 *
 * Since October 2025 Meta sets one limit per business portfolio: the unique users all its numbers
 * may reach with business-initiated messages in a moving 24 hours (250, 2,000, 10,000, 100,000,
 * unlimited), read from the number's `whatsapp_business_manager_messaging_limit` (Meta,
 * "Messaging limits"). We keep the last read per number in `channel_messaging_limits`, so every
 * instance reports the same value; a pre-flight reads it again through the channel when it is
 * older than MESSAGING_LIMIT_REFRESH_MS, and takes the value Meta announces in the business
 * account's `business_capability_update` and `phone_number_quality_update` webhooks
 * (`max_daily_conversations_per_business`, -1 for unlimited) without a read. A failed read stores `unknown` (the pre-flight says so)
 * and is logged once, when the state turns unknown, not at every pre-flight.
 *
 * Usage is counted from our messages table: the unique users reached with templates (the messages
 * a business may send outside the service window) in the last 24 hours, over the projects whose
 * numbers share the WhatsApp Business Account (we do not know the portfolio itself: a portfolio
 * holds one or more accounts, so this is a lower bound when it holds several). Failed sends do
 * not count. Sends made outside this service are not seen.
 */
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { openChannel } from '../channel-settings/settings.js';
import type { RecipientSource } from './estimate.js';
import { capability, offers } from '../channel-port/capabilities.js';

export type MessagingLimitReport = components['schemas']['MessagingLimitReport'];

const WINDOW_MS = 24 * 3600_000;

interface LimitRow {
  phone_number_id: string;
  state: 'known' | 'unknown';
  tier: string | null;
  user_limit: number | null;
  error: string | null;
  read_at: Date;
}

type RefreshDeps = Pick<Deps, 'db' | 'secretBox' | 'channel' | 'clock' | 'logger' | 'config'>;

async function limitRow(db: Tx, phoneNumberId: string): Promise<LimitRow | undefined> {
  const [row] = await queryRows<LimitRow>(db, 'SELECT * FROM channel_messaging_limits WHERE phone_number_id = $1', phoneNumberId);
  return row;
}

async function storeLimit(db: Tx, row: LimitRow): Promise<void> {
  await execute(
    db,
    `INSERT INTO channel_messaging_limits (phone_number_id, state, tier, user_limit, error, read_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (phone_number_id) DO UPDATE SET state = EXCLUDED.state, tier = EXCLUDED.tier, user_limit = EXCLUDED.user_limit,
       error = EXCLUDED.error, read_at = EXCLUDED.read_at`,
    row.phone_number_id, row.state, row.tier, row.user_limit, row.error, row.read_at,
  );
}

/**
 * The channel announced the portfolio's limit (a webhook of the business account `wabaId`): it is
 * stored, as read now, for every number of that account we serve. Campaigns held by the limit see
 * it at their next look (lib/broadcasts/engine.ts).
 */
export async function storeAnnouncedLimit(db: Tx, wabaId: string, read: { tier: string; limit: number | null }, at: Date): Promise<number> {
  return execute(
    db,
    `INSERT INTO channel_messaging_limits (phone_number_id, state, tier, user_limit, error, read_at)
     SELECT phone_number_id, 'known', $2, $3, NULL, $4 FROM channel_settings WHERE waba_id = $1
     ON CONFLICT (phone_number_id) DO UPDATE SET state = 'known', tier = EXCLUDED.tier, user_limit = EXCLUDED.user_limit,
       error = NULL, read_at = EXCLUDED.read_at`,
    wabaId, read.tier.slice(0, 64), read.limit, at,
  );
}

/**
 * Reads the project's number's messaging limit from the channel when the stored read is older than
 * the refresh interval (or `force`). Never throws: a failed read is stored as `unknown`.
 */
export async function refreshMessagingLimit(deps: RefreshDeps, projectId: string, force = false): Promise<void> {
  try {
    const channel = await openChannel(deps, projectId);
    if (!channel || !offers(deps, channel, 'number_limits')) return;
    const now = deps.clock.now();
    const before = await limitRow(deps.db.sql, channel.phoneNumberId);
    if (!force && before && now.getTime() - before.read_at.getTime() < deps.config.messagingLimitRefreshMs) return;
    try {
      const read = await capability(deps, channel, 'number_limits').getMessagingLimit(channel);
      await storeLimit(deps.db.sql, { phone_number_id: channel.phoneNumberId, state: 'known', tier: read.tier, user_limit: read.limit, error: null, read_at: now });
    } catch (e) {
      const why = (e instanceof Error ? e.message : String(e)).slice(0, 500);
      await storeLimit(deps.db.sql, { phone_number_id: channel.phoneNumberId, state: 'unknown', tier: null, user_limit: null, error: why, read_at: now });
      // Once per turn to unknown: a channel that keeps failing does not fill the log at every pre-flight.
      if (before?.state !== 'unknown') deps.logger.warn(`messaging limit of number ${channel.phoneNumberId} could not be read (pre-flights say unknown): ${why}`);
    }
  } catch (e) {
    deps.logger.warn(`messaging limit refresh failed: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/**
 * The limit, its use in the moving 24 hours, and how many of the recipients (`source`, counted
 * `eligible`) fit now: those already reached in the window cost nothing more.
 */
export async function messagingLimitReport(db: Tx, projectId: string, source: RecipientSource, eligible: number, now: Date): Promise<MessagingLimitReport> {
  const { p } = source;
  const project = p.add(projectId);
  const since = p.add(new Date(now.getTime() - WINDOW_MS));
  const rows = await queryRows<{ reached: bigint; reached_eligible: bigint; next_release: Date | null; pnid: string | null }>(
    db,
    `WITH siblings AS (
       SELECT s.project_id FROM channel_settings s
       WHERE s.waba_id = (SELECT waba_id FROM channel_settings WHERE project_id = ${project})
       UNION SELECT ${project}
     ), reached AS (
       SELECT ct.phone, max(m.sent_at) AS last_at
       FROM messages m JOIN conversations cv ON cv.id = m.conversation_id JOIN contacts ct ON ct.id = cv.contact_id
       WHERE m.project_id IN (SELECT project_id FROM siblings) AND m.sent_at > ${since}
         AND m.direction = 'outbound' AND m.type = 'template' AND m.status <> 'failed'
       GROUP BY ct.phone
     )
     SELECT (SELECT count(*) FROM reached)::bigint AS reached,
            (SELECT count(*) FROM (${source.sql}) x WHERE x.phone IN (SELECT phone FROM reached))::bigint AS reached_eligible,
            (SELECT min(last_at) FROM reached) AS next_release,
            (SELECT phone_number_id FROM channel_settings WHERE project_id = ${project}) AS pnid`,
    ...p.values,
  );
  const r = rows[0];
  const reached = Number(r.reached);
  const nextRelease = r.next_release ? new Date(r.next_release.getTime() + WINDOW_MS).toISOString() : null;
  const row = r.pnid ? await limitRow(db, r.pnid) : undefined;
  if (!row || row.state !== 'known') {
    return { state: 'unknown', tier: null, limit: null, unlimited: false, reached_24h: reached, remaining: null, fits_now: null, next_release_at: nextRelease, read_at: row ? row.read_at.toISOString() : null };
  }
  if (row.user_limit === null) {
    return { state: 'known', tier: row.tier, limit: null, unlimited: true, reached_24h: reached, remaining: null, fits_now: eligible, next_release_at: null, read_at: row.read_at.toISOString() };
  }
  const remaining = Math.max(0, row.user_limit - reached);
  return {
    state: 'known',
    tier: row.tier,
    limit: row.user_limit,
    unlimited: false,
    reached_24h: reached,
    remaining,
    fits_now: Math.min(eligible, remaining + Number(r.reached_eligible)),
    next_release_at: nextRelease,
    read_at: row.read_at.toISOString(),
  };
}
