/**
 * Pacing: one token bucket per channel number, shared by every broadcast on that number and by
 * every instance, kept in PostgreSQL (`broadcast_pacing`), never in process memory.
 *
 * Policy and why:
 * - The number's throughput is Meta's: its level read from the channel (channel_throughput,
 *   lib/channel-settings/throughput.ts: STANDARD 80 messages per second, HIGH up to 1,000, a
 *   coexistence number 20), `BROADCAST_DEFAULT_MPS` (80) until it has been read. The operator's
 *   setting stays a cap below it (`operator_throughput`), never a way above it. `throughput` is
 *   the ceiling in force, brought in step at every take (so a campaign follows an upgrade Meta
 *   makes mid-way, on every instance) and when the operator sets the cap. Broadcasts draw `share`
 *   of it (default 90%), leaving the rest for conversation replies, which never wait for a campaign.
 * - The bucket is a virtual schedule (GCRA): taking n messages moves `next_slot_at` forward by
 *   n / rate in one atomic UPDATE and answers when the taker may send them. Two engines on one
 *   number therefore interleave and together never exceed the rate. A slot left idle is not
 *   saved up beyond `burstSeconds` (0.5 s), so a quiet number does not burst and a sender that
 *   fell behind by a moment catches up.
 * - On the channel's throughput error (130429) the rate in force halves (at least 1/s); each
 *   quiet `recoverEveryMs` it climbs back by a tenth of the ceiling (AIMD).
 */
import { execute, executeNamed, queryRows, queryRowsNamed, type Tx } from '../platform/db/tx.js';

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

/** What holds a number's broadcasts: Meta's level, the operator's cap, the default (level not read yet), or a 130429 slow-down. */
export type PacingLimit = 'channel' | 'operator' | 'default' | 'throttled';

export interface PacingReport {
  /** Meta's level (`STANDARD`, `HIGH`, …), `COEXISTENCE` for a number also on the WhatsApp Business app; null until read. */
  tier: string | null;
  /** Messages per second the level allows; null until read. */
  channel_messages_per_second: number | null;
  /** The operator's cap; null when none. */
  operator_messages_per_second: number | null;
  /** The number's throughput in force: the level (or the default) capped by the operator. */
  messages_per_second: number;
  /** What campaigns may use now (the broadcast share of it, lower after a 130429). */
  broadcast_rate: number;
  limited_by: PacingLimit;
  /** When the level was last read from the channel. */
  read_at: string | null;
}

/** The ceiling in SQL, for number $1 and the default throughput `defaultParam`: Meta's level (else the default) under the operator's cap. */
const ceilingSql = (operator: string, defaultParam: string) =>
  `LEAST(${MAX_THROUGHPUT}, COALESCE(${operator}, ${MAX_THROUGHPUT}), COALESCE((SELECT ct.messages_per_second FROM channel_throughput ct WHERE ct.phone_number_id = $1), ${defaultParam}))::int`;

/** Where a number's broadcasts stand: its level, the caps, the rate in force and what holds it. */
export async function pacingReport(db: Tx, phoneNumberId: string | undefined, s: PacingSettings): Promise<PacingReport> {
  const fallback: PacingReport = {
    tier: null, channel_messages_per_second: null, operator_messages_per_second: null, messages_per_second: s.defaultThroughput,
    broadcast_rate: s.defaultThroughput * s.share, limited_by: 'default', read_at: null,
  };
  if (!phoneNumberId) return fallback;
  const [r] = await queryRows<{ level: string | null; coexistence: boolean | null; mps: number | null; read_at: Date | null; operator: number | null; current_rate: number | null; throttled_at: Date | null }>(
    db,
    `SELECT ct.level, ct.coexistence, ct.messages_per_second AS mps, ct.read_at, b.operator_throughput AS operator, b.current_rate, b.throttled_at
     FROM (SELECT $1::text AS pnid) k
     LEFT JOIN channel_throughput ct ON ct.phone_number_id = k.pnid
     LEFT JOIN broadcast_pacing b ON b.phone_number_id = k.pnid`,
    phoneNumberId,
  );
  const channel = r?.mps ?? null;
  const operator = r?.operator ?? null;
  const base = Math.min(MAX_THROUGHPUT, channel ?? s.defaultThroughput);
  const ceiling = Math.min(base, operator ?? MAX_THROUGHPUT);
  const full = ceiling * s.share;
  // Not slowed down by a 130429: the full share (the stored rate catches up at the next take).
  const current = r?.current_rate == null || !r.throttled_at ? full : Math.min(Number(r.current_rate), full);
  const limited: PacingLimit = current < full - 1e-9 ? 'throttled' : operator !== null && operator < base ? 'operator' : channel !== null ? 'channel' : 'default';
  return {
    tier: r?.level == null ? null : r.coexistence ? 'COEXISTENCE' : r.level,
    channel_messages_per_second: channel,
    operator_messages_per_second: operator,
    messages_per_second: ceiling,
    broadcast_rate: current,
    limited_by: limited,
    read_at: r?.read_at ? r.read_at.toISOString() : null,
  };
}

/** The broadcast rate of a number now (messages per second). */
export async function broadcastRate(db: Tx, phoneNumberId: string | undefined, s: PacingSettings): Promise<number> {
  return (await pacingReport(db, phoneNumberId, s)).broadcast_rate;
}

/** Sets the operator's cap on a number's throughput (1 to 1,000); the ceiling is the smaller of it and the channel's level. */
export async function setThroughput(db: Tx, phoneNumberId: string, throughput: number, s: PacingSettings, now: Date): Promise<void> {
  const t = Math.max(1, Math.min(MAX_THROUGHPUT, Math.floor(throughput)));
  await execute(
    db,
    `INSERT INTO broadcast_pacing AS b (phone_number_id, throughput, operator_throughput, current_rate, next_slot_at)
     SELECT $1, c.t, $2, c.t * $4::float8, $3 FROM (SELECT ${ceilingSql('$2::int', '$5::int')} AS t) c
     ON CONFLICT (phone_number_id) DO UPDATE SET throughput = EXCLUDED.throughput, operator_throughput = $2, current_rate = EXCLUDED.current_rate`,
    phoneNumberId, t, now, s.share, s.defaultThroughput,
  );
}

/**
 * Brings the number's ceiling in step with Meta's level and the operator's cap (a no-op when it
 * is): a raise takes effect at once unless a 130429 slow-down is recovering (it then climbs back
 * by its steps), a cut at once.
 */
export async function syncCeiling(db: Tx, phoneNumberId: string, s: PacingSettings): Promise<void> {
  await executeNamed(
    db,
    'broadcast-pacing-ceiling',
    `UPDATE broadcast_pacing b SET throughput = x.t,
             current_rate = CASE WHEN b.throttled_at IS NULL THEN x.t * $2::float8 ELSE LEAST(b.current_rate, x.t * $2::float8) END
           FROM (SELECT ${ceilingSql('(SELECT operator_throughput FROM broadcast_pacing WHERE phone_number_id = $1)', '$3::int')} AS t) x
           WHERE b.phone_number_id = $1 AND b.throughput <> x.t`,
    phoneNumberId, s.share, s.defaultThroughput,
  );
}

/**
 * Takes `n` sending slots; answers the time at which they may be used (now or later). The rate
 * recovers here too: a bucket not throttled for `recoverEveryMs` climbs a step.
 */
export async function takeSlots(db: Tx, phoneNumberId: string, n: number, now: Date, s: PacingSettings): Promise<{ at: Date; rate: number }> {
  // Recovery: a step up per quiet period, until the ceiling is back.
  await executeNamed(
    db,
    'broadcast-pacing-recover',
    `UPDATE broadcast_pacing SET current_rate = LEAST(throughput * $3::float8, current_rate + throughput * $3::float8 / 10),
             throttled_at = CASE WHEN current_rate + throughput * $3::float8 / 10 >= throughput * $3::float8 THEN NULL ELSE $2::timestamptz END
           WHERE phone_number_id = $1 AND throttled_at IS NOT NULL AND throttled_at < $2::timestamptz - make_interval(secs => $4::float8 / 1000)`,
    phoneNumberId, now, s.share, s.recoverEveryMs,
  );
  await syncCeiling(db, phoneNumberId, s);
  const rows = await queryRowsNamed<{ at: Date; rate: number }>(
    db,
    'broadcast-take-slots',
    `INSERT INTO broadcast_pacing AS b (phone_number_id, throughput, current_rate, next_slot_at)
           SELECT $1, c.t, c.t * $6::float8, $2::timestamptz + make_interval(secs => $3::float8 / (c.t * $6::float8))
           FROM (SELECT ${ceilingSql('NULL::int', '$5::int')} AS t) c
           ON CONFLICT (phone_number_id) DO UPDATE SET
             next_slot_at = GREATEST(b.next_slot_at, $2::timestamptz - make_interval(secs => $4::float8))
                            + make_interval(secs => $3::float8 / LEAST(b.throughput * $6::float8, b.current_rate))
           RETURNING next_slot_at - make_interval(secs => $3::float8 / LEAST(b.throughput * $6::float8, b.current_rate)) AS at,
                     LEAST(b.throughput * $6::float8, b.current_rate) AS rate`,
    phoneNumberId, now, n, s.burstSeconds, s.defaultThroughput, s.share,
  );
  const at = rows[0].at < now ? now : rows[0].at;
  return { at, rate: Number(rows[0].rate) };
}

/** The channel said 130429: halve the rate in force (at least 1 per second). */
export async function throttled(db: Tx, phoneNumberId: string, now: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcast_pacing SET current_rate = GREATEST(1, current_rate / 2), throttled_at = $2,
            next_slot_at = GREATEST(next_slot_at, $2::timestamptz + interval '1 second')
     WHERE phone_number_id = $1 AND (throttled_at IS NULL OR throttled_at < $2::timestamptz - interval '1 second')`,
    phoneNumberId, now,
  );
}
