/**
 * The number's throughput level as Meta reports it, kept per number in `channel_throughput` (this
 * module is its writer), so every instance paces by the same value.
 *
 * Policy and why: Meta sets the level, not the operator. A number is `STANDARD` (80 messages per
 * second) until Meta upgrades it to `HIGH` (up to 1,000) by itself; a coexistence number (also on
 * the WhatsApp Business app) is held at 20. The service reads it (`GET /{phone-number-id}?fields=
 * throughput,is_on_biz_app`) when the jobs start, every CHANNEL_THROUGHPUT_REFRESH_MS, and at once
 * on a `phone_number_quality_update` or `account_update` notification (an upgrade is announced as
 * `THROUGHPUT_UPGRADE`). Broadcast pacing (lib/broadcasts/pacing.ts) takes the rate from here,
 * the operator's setting staying a cap below it. A failed read keeps the last known level (state
 * `unknown` records the failure; pacing keeps using the level), logged once when it turns unknown.
 */
import type { Deps } from '../deps.js';
import { execute, queryRows, queryRowsNamed, type Tx } from '../platform/db/tx.js';
import { openChannel } from './settings.js';
import { capability, offers } from '../channel-port/capabilities.js';

export interface ChannelThroughputRow {
  phone_number_id: string;
  state: 'known' | 'unknown';
  level: string | null;
  coexistence: boolean;
  messages_per_second: number | null;
  error: string | null;
  read_at: Date;
  changed_at: Date | null;
}

type RefreshDeps = Pick<Deps, 'db' | 'secretBox' | 'channel' | 'clock' | 'logger' | 'credentialCache'>;

export async function channelThroughputOf(db: Tx, phoneNumberId: string): Promise<ChannelThroughputRow | undefined> {
  const [row] = await queryRowsNamed<ChannelThroughputRow>(db, 'channel-throughput-of', 'SELECT * FROM channel_throughput WHERE phone_number_id = $1', phoneNumberId);
  return row;
}

/**
 * Reads the project's number's level from the channel and stores it. Answers whether the rate
 * changed (a first read that is not the default counts as a change). Never throws.
 */
export async function refreshChannelThroughput(deps: RefreshDeps, projectId: string, why: string): Promise<{ changed: boolean; row?: ChannelThroughputRow }> {
  try {
    const channel = await openChannel(deps, projectId);
    if (!channel || !offers(deps, channel, 'number_limits')) return { changed: false };
    const now = deps.clock.now();
    const before = await channelThroughputOf(deps.db.sql, channel.phoneNumberId);
    try {
      const read = await capability(deps, channel, 'number_limits').getThroughput(channel);
      const changed = !before || before.level !== read.level || before.coexistence !== read.coexistence || before.messages_per_second !== read.messagesPerSecond;
      const rows = await queryRows<ChannelThroughputRow>(
        deps.db.sql,
        `INSERT INTO channel_throughput (phone_number_id, state, level, coexistence, messages_per_second, error, read_at, changed_at)
         VALUES ($1, 'known', $2, $3, $4, NULL, $5, NULL)
         ON CONFLICT (phone_number_id) DO UPDATE SET state = 'known', level = EXCLUDED.level, coexistence = EXCLUDED.coexistence,
           messages_per_second = EXCLUDED.messages_per_second, error = NULL, read_at = EXCLUDED.read_at,
           changed_at = CASE WHEN channel_throughput.level IS DISTINCT FROM EXCLUDED.level OR channel_throughput.coexistence <> EXCLUDED.coexistence
                             OR channel_throughput.messages_per_second IS DISTINCT FROM EXCLUDED.messages_per_second
                             THEN EXCLUDED.read_at ELSE channel_throughput.changed_at END
         RETURNING *`,
        channel.phoneNumberId, read.level.slice(0, 32), read.coexistence, read.messagesPerSecond, now,
      );
      if (before && changed) {
        deps.logger.info(`throughput of number ${channel.phoneNumberId} is now ${read.level}${read.coexistence ? ' (coexistence)' : ''}: ${read.messagesPerSecond ?? 'unknown'} messages per second (was ${before.level ?? 'unknown'}, ${before.messages_per_second ?? 'unknown'}; ${why})`);
      }
      return { changed, row: rows[0] };
    } catch (e) {
      const error = (e instanceof Error ? e.message : String(e)).slice(0, 500);
      // The level read before stays in force: a failed read does not slow a HIGH number down.
      await execute(
        deps.db.sql,
        `INSERT INTO channel_throughput (phone_number_id, state, error, read_at) VALUES ($1, 'unknown', $2, $3)
         ON CONFLICT (phone_number_id) DO UPDATE SET state = 'unknown', error = EXCLUDED.error, read_at = EXCLUDED.read_at`,
        channel.phoneNumberId, error, now,
      );
      if (before?.state !== 'unknown') deps.logger.warn(`throughput of number ${channel.phoneNumberId} could not be read (pacing keeps ${before?.messages_per_second ?? 'the default'}): ${error}`);
      return { changed: false };
    }
  } catch (e) {
    deps.logger.warn(`throughput refresh failed: ${e instanceof Error ? e.message : String(e)}`);
    return { changed: false };
  }
}

/** Every configured number's level (the periodic refresh and the one at start). */
export async function refreshAllChannelThroughput(deps: RefreshDeps, why: string): Promise<number> {
  // Active projects' numbers (a paused or deleted project sends nothing).
  const rows = await queryRows<{ project_id: string }>(
    deps.db.sql,
    `SELECT s.project_id FROM channel_settings s JOIN projects p ON p.id = s.project_id WHERE p.status = 'active' ORDER BY s.project_id`,
  );
  let changed = 0;
  for (const r of rows) if ((await refreshChannelThroughput(deps, r.project_id, why)).changed) changed++;
  return changed;
}
