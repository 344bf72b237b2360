/**
 * Pacing: one token bucket per channel number, shared by every broadcast on that number and by
 * every instance, kept in PostgreSQL (`broadcast_pacing`), never in process memory.
 *
 * Policy and why:
 * - The number's throughput (default 80 messages per second, at most 1,000) is an operator
 *   setting. Broadcasts draw `share` of it (default 90%), leaving the rest for conversation
 *   replies, which never wait for a campaign.
 * - The bucket is a virtual schedule (GCRA): taking n messages moves `next_slot_at` forward by
 *   n / rate in one atomic UPDATE and answers when the taker may send them. Two engines on one
 *   number therefore interleave and together never exceed the rate. A slot left idle is not
 *   saved up beyond `burstSeconds` (0.5 s), so a quiet number does not burst and a sender that
 *   fell behind by a moment catches up.
 * - On the channel's throughput error (130429) the rate in force halves (at least 1/s); each
 *   quiet `recoverEveryMs` it climbs back by a tenth of the ceiling (AIMD).
 */
import type { Queryable } from './audience.js';

export interface PacingSettings {
  /** Throughput of a number without an operator setting (messages per second). */
  defaultThroughput: number;
  /** Part of the throughput broadcasts may use (the rest stays free for replies). */
  share: number;
  burstSeconds: number;
  recoverEveryMs: number;
}

export const MAX_THROUGHPUT = 1000;

/** The settings' defaults; the composition root sets them from the typed config at start (BROADCAST_DEFAULT_MPS, BROADCAST_RATE_SHARE). */
let configured: Pick<PacingSettings, 'defaultThroughput' | 'share'> = { defaultThroughput: 80, share: 0.9 };

/** Called once at start with the validated configuration (lib/platform/config.ts). */
export function configurePacing(config: { broadcastDefaultMps: number; broadcastRateShare: number }): void {
  configured = { defaultThroughput: config.broadcastDefaultMps, share: config.broadcastRateShare };
}

export function pacingSettings(over: Partial<PacingSettings> = {}): PacingSettings {
  return { ...configured, burstSeconds: 0.5, recoverEveryMs: 5000, ...over };
}

export interface PacingRow {
  throughput: number;
  current_rate: number;
}

/** The broadcast rate of a number now (messages per second). */
export async function broadcastRate(db: Queryable, phoneNumberId: string | undefined, s: PacingSettings): Promise<number> {
  if (!phoneNumberId) return s.defaultThroughput * s.share;
  const { rows } = await db.query<PacingRow>('SELECT throughput, current_rate FROM broadcast_pacing WHERE phone_number_id = $1', [phoneNumberId]);
  return rows[0] ? Math.min(rows[0].current_rate, rows[0].throughput * s.share) : s.defaultThroughput * s.share;
}

/** Sets a number's throughput (operator). */
export async function setThroughput(db: Queryable, phoneNumberId: string, throughput: number, s: PacingSettings, now: Date): Promise<void> {
  const t = Math.max(1, Math.min(MAX_THROUGHPUT, Math.floor(throughput)));
  await db.query(
    `INSERT INTO broadcast_pacing (phone_number_id, throughput, current_rate, next_slot_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (phone_number_id) DO UPDATE SET throughput = $2, current_rate = $3`,
    [phoneNumberId, t, t * s.share, now],
  );
}

/**
 * Takes `n` sending slots; answers the time at which they may be used (now or later). The rate
 * recovers here too: a bucket not throttled for `recoverEveryMs` climbs a step.
 */
export async function takeSlots(db: Queryable, phoneNumberId: string, n: number, now: Date, s: PacingSettings): Promise<{ at: Date; rate: number }> {
  // Recovery: a step up per quiet period, until the ceiling is back.
  await db.query({
    name: 'broadcast-pacing-recover',
    text: `UPDATE broadcast_pacing SET current_rate = LEAST(throughput * $3::float8, current_rate + throughput * $3::float8 / 10),
             throttled_at = CASE WHEN current_rate + throughput * $3::float8 / 10 >= throughput * $3::float8 THEN NULL ELSE $2::timestamptz END
           WHERE phone_number_id = $1 AND throttled_at IS NOT NULL AND throttled_at < $2::timestamptz - make_interval(secs => $4::float8 / 1000)`,
    values: [phoneNumberId, now, s.share, s.recoverEveryMs],
  });
  const { rows } = await db.query<{ at: Date; rate: number }>({
    name: 'broadcast-take-slots',
    text: `INSERT INTO broadcast_pacing AS b (phone_number_id, throughput, current_rate, next_slot_at)
           VALUES ($1, $5::int, $5::int * $6::float8, $2::timestamptz + make_interval(secs => $3::float8 / ($5::int * $6::float8)))
           ON CONFLICT (phone_number_id) DO UPDATE SET
             next_slot_at = GREATEST(b.next_slot_at, $2::timestamptz - make_interval(secs => $4::float8))
                            + make_interval(secs => $3::float8 / LEAST(b.throughput * $6::float8, b.current_rate))
           RETURNING next_slot_at - make_interval(secs => $3::float8 / LEAST(b.throughput * $6::float8, b.current_rate)) AS at,
                     LEAST(b.throughput * $6::float8, b.current_rate) AS rate`,
    values: [phoneNumberId, now, n, s.burstSeconds, s.defaultThroughput, s.share],
  });
  const at = rows[0].at < now ? now : rows[0].at;
  return { at, rate: Number(rows[0].rate) };
}

/** The channel said 130429: halve the rate in force (at least 1 per second). */
export async function throttled(db: Queryable, phoneNumberId: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE broadcast_pacing SET current_rate = GREATEST(1, current_rate / 2), throttled_at = $2,
            next_slot_at = GREATEST(next_slot_at, $2::timestamptz + interval '1 second')
     WHERE phone_number_id = $1 AND (throttled_at IS NULL OR throttled_at < $2::timestamptz - interval '1 second')`,
    [phoneNumberId, now],
  );
}
