/**
 * The daily send quota: messages accepted per project per UTC calendar day. A send reserves one
 * unit before calling the channel and releases it when the channel fails, so a failed send does
 * not count. The reservation is one atomic statement, which keeps the count exact under any
 * concurrency (1,200 concurrent sends against a quota of 1,000 accept exactly 1,000).
 */
import type pg from 'pg';
import { ApiError } from '../errors.js';

export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function quotaExceeded(limit: number, now: Date): ApiError {
  const resetAt = nextUtcMidnight(now);
  const retryAfter = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
  return new ApiError(
    'quota_exceeded',
    `The project's daily send quota of ${limit} messages is used; it resets at ${resetAt.toISOString()} (UTC midnight).`,
    { limit, resetAt: resetAt.toISOString() },
    { 'Retry-After': String(retryAfter) },
  );
}

/** Reserves one send for today, or throws 429 quota_exceeded. */
export async function reserveSend(pool: pg.Pool, projectId: string, limit: number, now: Date): Promise<void> {
  if (limit <= 0) throw quotaExceeded(limit, now);
  const { rowCount } = await pool.query({
    name: 'quota-reserve',
    text: `INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, 1)
           ON CONFLICT (project_id, day) DO UPDATE SET count = send_counters.count + 1
           WHERE send_counters.count < $3
           RETURNING count`,
    values: [projectId, utcDay(now), limit],
  });
  if (rowCount === 0) throw quotaExceeded(limit, now);
}

/** Gives back a reservation whose send did not happen. */
export async function releaseSend(pool: pg.Pool, projectId: string, reservedAt: Date): Promise<void> {
  await pool.query({
    name: 'quota-release',
    text: 'UPDATE send_counters SET count = count - 1 WHERE project_id = $1 AND day = $2::date AND count > 0',
    values: [projectId, utcDay(reservedAt)],
  });
}
