/**
 * A project's refused and failed API requests, counted (table project_api_errors; this module is
 * its only writer), so the console's Logs page can say which operations fail and why.
 *
 * Policy and why:
 * - What is kept: per project, UTC day, operationId, HTTP status and error code, a count and when
 *   it last happened. Never a body, header, path, query or value: an error's message can quote
 *   what the caller sent, so it is not kept either. The key space is the contract's operations
 *   times its codes, so a project's rows per day are bounded by the contract, not by its traffic.
 * - Only requests whose credential selected a project count (a 401 names no project).
 * - Writes are batched: each instance adds to counts in memory (at most MAX_PENDING keys; past that
 *   a count is dropped and the drop logged) and writes them every FLUSH_MS in one statement, so a
 *   burst of refusals costs one upsert per interval, not one per request. An instance that stops
 *   loses at most FLUSH_MS of counts. A read flushes this instance first.
 * - Days older than RETENTION_DAYS are deleted by the flush, for the projects it wrote.
 */
import type { Deps } from '../deps.js';
import { execute, queryRows } from '../platform/db/tx.js';

export const RETENTION_DAYS = 30;
const FLUSH_MS = 2000;
const MAX_PENDING = 10_000;

type LogDeps = Pick<Deps, 'db' | 'clock' | 'logger'>;

interface Pending {
  projectId: string;
  day: string;
  operation: string;
  status: number;
  code: string;
  count: number;
  lastAt: Date;
}

export class ApiErrorLog {
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private dropped = 0;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly deps: LogDeps) {}

  record(projectId: string, operation: string, status: number, code: string): void {
    const at = this.deps.clock.now();
    const day = at.toISOString().slice(0, 10);
    const key = `${projectId}\n${day}\n${operation}\n${status}\n${code}`;
    const hit = this.pending.get(key);
    if (hit) {
      hit.count++;
      hit.lastAt = at;
    } else if (this.pending.size >= MAX_PENDING) {
      this.dropped++;
    } else {
      this.pending.set(key, { projectId, day, operation: operation.slice(0, 100), status, code: code.slice(0, 100), count: 1, lastAt: at });
    }
    if (!this.timer) this.timer = setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Writes what is pending (one statement) and the retention's deletes. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const rows = [...this.pending.values()];
    this.pending = new Map();
    if (this.dropped) {
      this.deps.logger.warn('api error counts dropped (too many distinct keys between writes)', { dropped: this.dropped });
      this.dropped = 0;
    }
    if (rows.length === 0) return;
    try {
      await execute(
        this.deps.db.sql,
        `INSERT INTO project_api_errors AS e (project_id, day, operation, status, code, count, last_at)
         SELECT * FROM unnest($1::text[], $2::date[], $3::text[], $4::int[], $5::text[], $6::int[], $7::timestamptz[])
         ON CONFLICT (project_id, day, operation, status, code)
         DO UPDATE SET count = e.count + EXCLUDED.count, last_at = greatest(e.last_at, EXCLUDED.last_at)`,
        rows.map((r) => r.projectId), rows.map((r) => r.day), rows.map((r) => r.operation), rows.map((r) => r.status), rows.map((r) => r.code), rows.map((r) => r.count), rows.map((r) => r.lastAt),
      );
      const oldest = new Date(this.deps.clock.now().getTime() - RETENTION_DAYS * 86_400_000).toISOString().slice(0, 10);
      await execute(this.deps.db.sql, 'DELETE FROM project_api_errors WHERE project_id = ANY($1::text[]) AND day < $2::date', [...new Set(rows.map((r) => r.projectId))], oldest);
    } catch (e) {
      // A project deleted meanwhile, or the database away: these counts are lost, the service goes on.
      this.deps.logger.warn('api error counts could not be written', { error: e instanceof Error ? e.message : String(e), keys: rows.length });
    }
  }
}

const logs = new WeakMap<object, ApiErrorLog>();

/** The instance's log for this database (one per pool). */
export function apiErrorLogOf(deps: LogDeps): ApiErrorLog {
  let log = logs.get(deps.db.pool);
  if (!log) logs.set(deps.db.pool, (log = new ApiErrorLog(deps)));
  return log;
}

export interface ApiErrorCount {
  operation: string;
  status: number;
  code: string;
  count: number;
  last_at: Date;
}

/** The project's errors of the last `days` UTC days, by operation, status and code, most frequent first. */
export async function recentApiErrors(deps: LogDeps, projectId: string, days = 7): Promise<ApiErrorCount[]> {
  await apiErrorLogOf(deps).flush();
  const since = new Date(deps.clock.now().getTime() - (days - 1) * 86_400_000).toISOString().slice(0, 10);
  const rows = await queryRows<{ operation: string; status: number; code: string; n: bigint; last_at: Date }>(
    deps.db.sql,
    `SELECT operation, status, code, sum(count)::bigint AS n, max(last_at) AS last_at FROM project_api_errors
      WHERE project_id = $1 AND day >= $2::date GROUP BY 1, 2, 3 ORDER BY 4 DESC, 5 DESC LIMIT 200`,
    projectId, since,
  );
  return rows.map((x) => ({ operation: x.operation, status: x.status, code: x.code, count: Number(x.n), last_at: x.last_at }));
}
