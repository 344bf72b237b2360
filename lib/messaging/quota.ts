/**
 * The daily send quota: messages accepted per project per UTC calendar day. A send reserves one
 * unit before calling the channel and releases it when the channel fails, so a failed send does
 * not count. Every reservation is an atomic statement, which keeps the count exact under any
 * concurrency (1,200 concurrent sends against a quota of 1,000 accept exactly 1,000), and the
 * reservations of one instance are batched (see `reserveSends`) so that they do not queue on
 * the counter row commit by commit.
 */
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';

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

/** The project's own daily quota, read in the reserving statement (saves a round trip per send). */
const PROJECT_QUOTA_SQL = '(SELECT daily_send_quota FROM projects WHERE id = $1)';

/**
 * Reserves one send for today, or throws 429 quota_exceeded. `limit` null: the project's own
 * daily quota, read in the same statement.
 */
export async function reserveSend(pool: pg.Pool, projectId: string, limit: number | null, now: Date): Promise<void> {
  if (limit !== null && limit <= 0) throw quotaExceeded(limit, now);
  const { rows } = await pool.query<{ q: number | null; granted: boolean }>({
    name: 'quota-reserve',
    text: `WITH lim AS (SELECT COALESCE($3::int, ${PROJECT_QUOTA_SQL}, 0) AS q), r AS (
             INSERT INTO send_counters (project_id, day, count) SELECT $1, $2::date, 1 FROM lim WHERE lim.q > 0
             ON CONFLICT (project_id, day) DO UPDATE SET count = send_counters.count + 1
             WHERE send_counters.count < (SELECT q FROM lim)
             RETURNING count
           )
           SELECT (SELECT q FROM lim) AS q, EXISTS (SELECT 1 FROM r) AS granted`,
    values: [projectId, utcDay(now), limit],
  });
  if (!rows[0].granted) throw quotaExceeded(rows[0].q ?? 0, now);
}

/** Gives back a reservation whose send did not happen. */
export async function releaseSend(pool: pg.Pool, projectId: string, reservedAt: Date): Promise<void> {
  await pool.query({
    name: 'quota-release',
    text: 'UPDATE send_counters SET count = count - 1 WHERE project_id = $1 AND day = $2::date AND count > 0',
    values: [projectId, utcDay(reservedAt)],
  });
}

interface Waiter {
  /** null: the project's own quota. */
  limit: number | null;
  now: Date;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * The counter row of a project's day is one row: sends updating it one by one queue on its lock,
 * each holding it until its commit is on disk. So while one reservation statement of this
 * instance is in flight, the next sends of the same project and day wait, and then go in one
 * statement that takes all their units at once when they all fit. A batch that does not fit
 * whole (the quota is nearly used) falls back to one atomic reservation per send, so the count
 * stays exact. Nothing here outlives a request: the database holds the count.
 */
class ReservationBatcher {
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly draining = new Set<string>();

  constructor(private readonly pool: pg.Pool) {}

  reserve(projectId: string, limit: number | null, now: Date): Promise<void> {
    if (limit !== null && limit <= 0) return Promise.reject(quotaExceeded(limit, now));
    const day = utcDay(now);
    const key = `${projectId}|${day}`;
    return new Promise<void>((resolve, reject) => {
      const list = this.waiting.get(key);
      if (list) list.push({ limit, now, resolve, reject });
      else this.waiting.set(key, [{ limit, now, resolve, reject }]);
      if (!this.draining.has(key)) void this.drain(key, projectId, day);
    });
  }

  private async drain(key: string, projectId: string, day: string): Promise<void> {
    this.draining.add(key);
    try {
      for (let batch = this.take(key); batch.length > 0; batch = this.take(key)) await this.grant(projectId, day, batch);
    } finally {
      this.draining.delete(key);
    }
  }

  private take(key: string): Waiter[] {
    const list = this.waiting.get(key) ?? [];
    this.waiting.delete(key);
    return list;
  }

  private async grant(projectId: string, day: string, batch: Waiter[]): Promise<void> {
    if (batch.length > 1) {
      try {
        const explicit = batch.filter((w) => w.limit !== null).map((w) => w.limit as number);
        const { rowCount } = await this.pool.query({
          name: 'quota-reserve-many',
          text: `UPDATE send_counters SET count = count + $3 WHERE project_id = $1 AND day = $2::date
                 AND count + $3 <= LEAST(COALESCE($4::int, 2147483647), CASE WHEN $5 THEN ${PROJECT_QUOTA_SQL} ELSE 2147483647 END)`,
          values: [projectId, day, batch.length, explicit.length ? Math.min(...explicit) : null, explicit.length < batch.length],
        });
        if (rowCount === 1) {
          for (const w of batch) w.resolve();
          return;
        }
      } catch (e) {
        for (const w of batch) w.reject(e);
        return;
      }
    }
    await Promise.all(batch.map((w) => reserveSend(this.pool, projectId, w.limit, w.now).then(w.resolve, w.reject)));
  }
}

const batchers = new WeakMap<pg.Pool, ReservationBatcher>();

/**
 * Reserves one send for today through this instance's batcher, or throws 429 quota_exceeded;
 * `limit` null: the project's own daily quota, read in the reserving statement.
 */
export function reserveSends(pool: pg.Pool, projectId: string, limit: number | null, now: Date): Promise<void> {
  let batcher = batchers.get(pool);
  if (!batcher) batchers.set(pool, (batcher = new ReservationBatcher(pool)));
  return batcher.reserve(projectId, limit, now);
}
