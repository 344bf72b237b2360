/**
 * The bot's scheduled tasks: the schedules the active release declares (`export const schedules`,
 * read at deploy: lib/deploy/schedules.ts) and their runs. This module is the only writer of
 * `bot_schedules` and `bot_schedule_runs`.
 *
 * Policy and why:
 * - The rows are the truth, timers only carry them: `next_run_at` is when a schedule runs next (null
 *   while paused). Firing a due time is one transaction that locks the schedule's row, moves
 *   `next_run_at` past now only if it still names that due time, inserts the run (unique per
 *   schedule and due time) and puts it in the bot's inbox (lib/bot/inbox.ts), leased to the
 *   instance that fired it. Two instances, a timer and a sweep, or a repeated timer: one run.
 * - The schedules follow the active release: a deploy or rollback records what its bundle declares;
 *   `syncFromRelease` makes the rows match (a new or changed schedule's next due time counts from
 *   now; an unchanged one keeps its next due time and its paused state; a removed one goes, its
 *   runs stay in the history).
 * - A due time found late (the service was down, or no instance ran) runs once, for the latest due
 *   time missed, if it is at most SCHEDULE_GRACE_SECONDS late (trigger `catch_up`); otherwise it is
 *   skipped, recorded as such and logged. Earlier missed due times are not run (at most one run per
 *   catch-up).
 * - One run at a time per schedule: a due time whose previous run is still in the inbox (waiting,
 *   running, or to be tried again after an abnormal end) is recorded `skipped` with that reason;
 *   on one instance the runtime also runs one schedule's events in order (lib/bot/runtime.ts).
 * - A paused or deleted project's schedules advance without running.
 * - Operators pause, resume and run a schedule now (a `manual` run, its due time the request's
 *   time); each is in the audit trail. Resuming counts the next due time from now (no catch-up of
 *   the paused time).
 */
import type { Deps } from '../deps.js';
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { recordAuditOn, type AuditActor } from '../accounts/audit.js';
import { latestDueUpTo, nextDue, spreadMs, type ScheduleSpec } from '../deploy/schedule-rules.js';
import type { DeclaredSchedule } from '../deploy/schedules.js';
import { addRunToInbox, scheduleRunPending } from './inbox.js';
import type { BotScheduleRun } from './types.js';
import { lockForTransaction } from '../platform/db/locks.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

/** A run more than this late (and within the grace) is a catch-up rather than an on-time run. */
export const CATCH_UP_AFTER_MS = 60_000;
export const MAX_RUNS_LISTED = 100;

export type RunTrigger = BotScheduleRun['trigger'];
export type RunOutcome = 'queued' | 'running' | 'ok' | 'error' | 'timeout' | 'memory_limit' | 'crashed' | 'interrupted' | 'skipped' | 'set_aside';

interface ScheduleRow {
  project_id: string;
  name: string;
  cron: string;
  time_zone: string;
  deployment_id: string;
  source: string | null;
  next_run_at: Date | null;
  paused_at: Date | null;
  paused_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ScheduleView {
  name: string;
  cron: string;
  time_zone: string;
  source: string | null;
  deployment_id: string;
  paused: boolean;
  paused_at: string | null;
  next_run_at: string | null;
  last_run: RunView | null;
}

interface RunRow {
  /** int8: a bigint as read, a number inside row_to_json's JSON (listSchedules). */
  id: bigint | number;
  schedule: string;
  due_at: Date;
  trigger: string;
  outcome: string;
  started_at: Date | null;
  finished_at: Date | null;
  duration_ms: number | null;
  error: string | null;
  error_file: string | null;
  error_line: number | null;
  error_column: number | null;
  deployment_id: string | null;
}

export interface RunView {
  id: string;
  schedule: string;
  due_at: string;
  trigger: RunTrigger;
  outcome: RunOutcome;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  error: { message: string; file: string | null; line: number | null; column: number | null } | null;
}

const RUN_COLUMNS = 'id, schedule, due_at, trigger, outcome, started_at, finished_at, duration_ms, error, error_file, error_line, error_column, deployment_id';

function runView(r: RunRow): RunView {
  return {
    id: String(r.id), schedule: r.schedule, due_at: r.due_at.toISOString(), trigger: r.trigger as RunTrigger, outcome: r.outcome as RunOutcome,
    started_at: r.started_at?.toISOString() ?? null, finished_at: r.finished_at?.toISOString() ?? null, duration_ms: r.duration_ms,
    error: r.error === null ? null : { message: r.error, file: r.error_file, line: r.error_line, column: r.error_column },
  };
}

/** A stored schedule's spec, with its spread within the minute (BOT_SCHEDULE_SPREAD_SECONDS). */
const specOf = (r: { project_id: string; name: string; cron: string; time_zone: string }, spreadSeconds: number): ScheduleSpec =>
  ({ cron: r.cron, timeZone: r.time_zone, offsetMs: spreadMs(r.project_id, r.name, spreadSeconds) });

/** The event a fired run is handed to the bot as. */
function runEvent(s: { name: string; cron: string; time_zone: string }, runId: string, dueAt: Date, trigger: RunTrigger): BotScheduleRun {
  return { name: s.name, run_id: runId, due_at: dueAt.toISOString(), trigger, cron: s.cron, time_zone: s.time_zone };
}

// ---------------------------------------------------------------------------------------------
// Following the active release

/** Projects whose schedules do not match their active release's (a deploy, a rollback, a lost sync). */
export async function projectsToSync(sql: Tx, limit = 100): Promise<string[]> {
  const rows = await queryRows<{ project_id: string }>(sql,
    `SELECT r.project_id FROM bot_releases r JOIN deployments d ON d.id = r.deployment_id
      WHERE (d.schedules IS NOT NULL AND d.schedules <> '{}'::jsonb
             AND NOT EXISTS (SELECT 1 FROM bot_schedules s WHERE s.project_id = r.project_id AND s.deployment_id = r.deployment_id))
         OR EXISTS (SELECT 1 FROM bot_schedules s WHERE s.project_id = r.project_id AND s.deployment_id <> r.deployment_id)
      LIMIT $1`,
    limit,
  );
  return rows.map((r) => r.project_id);
}

/** Makes the project's schedules those its active release declares; true when anything changed. */
export async function syncFromRelease(db: Pick<Database, 'pool'>, projectId: string, now: Date, spreadSeconds = 0): Promise<boolean> {
  return inTransaction(db.pool, async (tx) => {
    await lockForTransaction(tx, `bot_schedules:${projectId}`);
    const [rel] = await queryRows<{ deployment_id: string; schedules: Record<string, DeclaredSchedule> | null }>(tx,
      `SELECT r.deployment_id, d.schedules FROM bot_releases r JOIN deployments d ON d.id = r.deployment_id WHERE r.project_id = $1`,
      projectId,
    );
    const declared = rel?.schedules ?? {};
    const rows = await queryRows<ScheduleRow>(tx, 'SELECT * FROM bot_schedules WHERE project_id = $1 FOR UPDATE', projectId);
    const have = new Map(rows.map((r) => [r.name, r]));
    let changed = false;
    for (const r of rows) {
      if (!rel || !Object.hasOwn(declared, r.name)) {
        await execute(tx, 'DELETE FROM bot_schedules WHERE project_id = $1 AND name = $2', projectId, r.name);
        changed = true;
      }
    }
    if (!rel) return changed;
    for (const [name, d] of Object.entries(declared)) {
      const old = have.get(name);
      const same = old && old.cron === d.cron && old.time_zone === d.timeZone;
      if (same && old.deployment_id === rel.deployment_id && old.source === d.source) continue;
      const next = same ? old.next_run_at : old?.paused_at ? null : (nextDue({ ...d, offsetMs: spreadMs(projectId, name, spreadSeconds) }, now) ?? null);
      await execute(tx,
        `INSERT INTO bot_schedules (project_id, name, cron, time_zone, deployment_id, source, next_run_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz, $8::timestamptz)
         ON CONFLICT (project_id, name) DO UPDATE SET cron = EXCLUDED.cron, time_zone = EXCLUDED.time_zone, deployment_id = EXCLUDED.deployment_id,
           source = EXCLUDED.source, next_run_at = EXCLUDED.next_run_at, updated_at = EXCLUDED.updated_at`,
        projectId, name, d.cron, d.timeZone, rel.deployment_id, d.source, next, now,
      );
      changed = true;
    }
    return changed;
  });
}

// ---------------------------------------------------------------------------------------------
// Timers and firing

/** Schedules whose timer is not set for their next due time: marked armed, answered for the caller to set. */
export async function unarmed(sql: Tx, limit = 500): Promise<Array<{ projectId: string; name: string; dueAt: Date }>> {
  const rows = await queryRows<{ project_id: string; name: string; next_run_at: Date }>(sql,
    `WITH due AS (
       SELECT project_id, name FROM bot_schedules WHERE next_run_at IS NOT NULL AND armed_for IS DISTINCT FROM next_run_at
        ORDER BY next_run_at LIMIT $1 ${CLAIM_ROWS}
     )
     UPDATE bot_schedules s SET armed_for = s.next_run_at FROM due WHERE s.project_id = due.project_id AND s.name = due.name
     RETURNING s.project_id, s.name, s.next_run_at`,
    limit,
  );
  return rows.map((r) => ({ projectId: r.project_id, name: r.name, dueAt: r.next_run_at }));
}

/** Schedules due at `now` (their timer was missed, lost, or fires on another instance first). */
export async function overdue(sql: Tx, now: Date, limit = 500): Promise<Array<{ projectId: string; name: string; dueAt: Date }>> {
  const rows = await queryRows<{ project_id: string; name: string; next_run_at: Date }>(sql,
    `SELECT project_id, name, next_run_at FROM bot_schedules WHERE next_run_at <= $1::timestamptz ORDER BY next_run_at LIMIT $2`,
    now, limit,
  );
  return rows.map((r) => ({ projectId: r.project_id, name: r.name, dueAt: r.next_run_at }));
}

export type FireResult =
  | { fired: true; key: string; event: BotScheduleRun }
  | { fired: false; skipped?: { dueAt: Date; reason: string }; missed?: number };

/**
 * Fires the schedule's due time `dueAt` if it is still its next one and has come (`now`): one
 * transaction (see the policy above). The caller hands a fired run to the bot.
 */
export async function fireDue(db: Pick<Database, 'pool'>, projectId: string, name: string, dueAt: Date, now: Date, opts: { graceMs: number; leaseMs: number; spreadSeconds?: number }): Promise<FireResult> {
  if (dueAt.getTime() > now.getTime()) return { fired: false };
  return inTransaction(db.pool, async (tx) => {
    const [row] = await queryRows<ScheduleRow & { project_status: string }>(tx,
      `SELECT s.*, p.status AS project_status FROM bot_schedules s JOIN projects p ON p.id = s.project_id
        WHERE s.project_id = $1 AND s.name = $2 AND s.next_run_at = $3::timestamptz FOR UPDATE OF s`,
      projectId, name, dueAt,
    );
    if (!row) return { fired: false }; // fired already, paused, changed or gone
    const spec = specOf(row, opts.spreadSeconds ?? 0);
    const latest = latestDueUpTo(spec, new Date(dueAt.getTime() - 1), now) ?? dueAt;
    const missed = countBetween(spec, dueAt, latest);
    await execute(tx, 'UPDATE bot_schedules SET next_run_at = $3::timestamptz, updated_at = $4::timestamptz WHERE project_id = $1 AND name = $2', projectId, name, nextDue(spec, now) ?? null, now);
    if (row.project_status !== 'active') return { fired: false };
    const late = now.getTime() - latest.getTime();
    const trigger: RunTrigger = late > CATCH_UP_AFTER_MS ? 'catch_up' : 'cron';
    const skip = async (reason: string): Promise<FireResult> => {
      await insertRun(tx, { projectId, name, dueAt: latest, trigger, outcome: 'skipped', error: reason, deploymentId: row.deployment_id, now });
      return { fired: false, skipped: { dueAt: latest, reason }, missed };
    };
    if (late > opts.graceMs) {
      return skip(`Missed: the service was not running at its due time; found ${Math.round(late / 1000)} s late, over the grace of ${Math.round(opts.graceMs / 1000)} s (SCHEDULE_GRACE_SECONDS).`);
    }
    if (await scheduleRunPending(tx, projectId, name)) return skip('The previous run of this schedule had not finished (one run at a time per schedule).');
    const runId = await insertRun(tx, { projectId, name, dueAt: latest, trigger, outcome: 'queued', deploymentId: row.deployment_id, now });
    if (!runId) return { fired: false };
    const key = await addRunToInbox(tx, projectId, BigInt(runId), now, opts.leaseMs);
    return { fired: true, key, event: runEvent(row, runId, latest, trigger) };
  });
}

/** Due times in [from, to) (the runs a catch-up does not make). */
function countBetween(spec: ScheduleSpec, from: Date, to: Date): number {
  let n = 0;
  for (let at: Date | undefined = from; at && at.getTime() < to.getTime() && n < 100_000; at = nextDue(spec, at)) n++;
  return n;
}

/** The new run's id as text (the event and the audit carry it as a string); undefined when the due time has one. */
async function insertRun(
  tx: Tx,
  r: { projectId: string; name: string; dueAt: Date; trigger: RunTrigger; outcome: RunOutcome; error?: string; deploymentId: string; now: Date },
): Promise<string | undefined> {
  const [row] = await queryRows<{ id: string }>(tx,
    `INSERT INTO bot_schedule_runs (project_id, schedule, due_at, trigger, outcome, error, deployment_id, created_at)
     VALUES ($1, $2, $3::timestamptz, $4, $5, $6, $7, $8::timestamptz) ON CONFLICT (project_id, schedule, due_at) DO NOTHING RETURNING id::text`,
    r.projectId, r.name, r.dueAt, r.trigger, r.outcome, r.error ?? null, r.deploymentId, r.now,
  );
  return row?.id;
}

// ---------------------------------------------------------------------------------------------
// A run's life (lib/bot/runtime.ts)

/** The bot starts (or starts again) on the run. */
export async function runStarted(sql: Tx, runId: string, now: Date, deploymentId: string): Promise<void> {
  await execute(sql, `UPDATE bot_schedule_runs SET outcome = 'running', started_at = $2::timestamptz, finished_at = NULL, deployment_id = $3 WHERE id = $1::bigint`, runId, now, deploymentId);
}

/** The run ended (or will be tried again: `outcome` is then the abnormal end, `running` follows). */
export async function runEnded(
  sql: Tx, runId: string, now: Date,
  end: { outcome: RunOutcome; durationMs?: number; error?: string; location?: { file: string; line: number; column: number } },
): Promise<void> {
  await execute(sql,
    `UPDATE bot_schedule_runs SET outcome = $2, finished_at = $3::timestamptz, duration_ms = $4::int, error = $5, error_file = $6, error_line = $7::int, error_column = $8::int WHERE id = $1::bigint`,
    runId, end.outcome, now, end.durationMs === undefined ? null : Math.round(end.durationMs), end.error ?? null, end.location?.file ?? null, end.location?.line ?? null, end.location?.column ?? null,
  );
}

// ---------------------------------------------------------------------------------------------
// Operators

async function scheduleOf(tx: Tx, projectId: string, name: string, lock = false): Promise<ScheduleRow> {
  const [row] = await queryRows<ScheduleRow>(tx, `SELECT * FROM bot_schedules WHERE project_id = $1 AND name = $2${lock ? ' FOR UPDATE' : ''}`, projectId, name);
  if (!row) throw notFound(name);
  return row;
}

const notFound = (name: string) => new ApiError('not_found', `No schedule "${name.slice(0, 80)}" in the project's active release.`);

function view(r: ScheduleRow, last: RunRow | undefined): ScheduleView {
  return {
    name: r.name, cron: r.cron, time_zone: r.time_zone, source: r.source, deployment_id: r.deployment_id,
    paused: r.paused_at !== null, paused_at: r.paused_at?.toISOString() ?? null, next_run_at: r.next_run_at?.toISOString() ?? null,
    last_run: last ? runView(last) : null,
  };
}

/** The project's schedules with their next and last runs. */
export async function listSchedules(sql: Tx, projectId: string): Promise<ScheduleView[]> {
  const rows = await queryRows<ScheduleRow & { last: RunRow | null }>(sql,
    `SELECT s.*, (SELECT row_to_json(x) FROM (SELECT ${RUN_COLUMNS} FROM bot_schedule_runs r WHERE r.project_id = s.project_id AND r.schedule = s.name ORDER BY r.id DESC LIMIT 1) x) AS last
       FROM bot_schedules s WHERE s.project_id = $1 ORDER BY s.name COLLATE "C"`,
    projectId,
  );
  return rows.map((r) => view(r, r.last ? revive(r.last) : undefined));
}

/** row_to_json gives timestamps as text. */
function revive(r: RunRow): RunRow {
  const d = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return { ...r, due_at: d(r.due_at)!, started_at: d(r.started_at), finished_at: d(r.finished_at) };
}

export async function getSchedule(sql: Tx, projectId: string, name: string): Promise<ScheduleView> {
  const found = (await listSchedules(sql, projectId)).find((s) => s.name === name);
  if (!found) throw notFound(name);
  return found;
}

/** A schedule's recent runs, newest first; `before` (a run's id) gives the page after that run (keyset). */
export async function listRuns(sql: Tx, projectId: string, name: string, limit: number, before?: bigint): Promise<RunView[]> {
  await scheduleOf(sql, projectId, name);
  const rows = await queryRows<RunRow>(sql,
    `SELECT ${RUN_COLUMNS} FROM bot_schedule_runs WHERE project_id = $1 AND schedule = $2 AND ($4::bigint IS NULL OR id < $4) ORDER BY id DESC LIMIT $3`,
    projectId, name, Math.min(limit, MAX_RUNS_LISTED), before?.toString() ?? null,
  );
  return rows.map(runView);
}

/** Pauses or resumes a schedule (audited); a no-op when it already is. */
export async function setPaused(deps: Pick<Deps, 'db' | 'clock' | 'config'>, actor: AuditActor, projectId: string, name: string, paused: boolean): Promise<ScheduleView> {
  const now = deps.clock.now();
  await inTransaction(deps.db.pool, async (tx) => {
    const row = await scheduleOf(tx, projectId, name, true);
    if ((row.paused_at !== null) === paused) return;
    const next = paused ? null : (nextDue(specOf(row, deps.config.botScheduleSpreadSeconds), now) ?? null);
    await execute(tx,
      'UPDATE bot_schedules SET paused_at = $3::timestamptz, paused_by = $4, next_run_at = $5::timestamptz, updated_at = $6::timestamptz WHERE project_id = $1 AND name = $2',
      projectId, name, paused ? now : null, paused ? actor.email : null, next, now,
    );
    await recordAuditOn(tx, now, actor, {
      projectId, action: paused ? 'schedule.pause' : 'schedule.resume', subject: name,
      before: { paused: !paused }, after: { paused, next_run_at: next?.toISOString() ?? null },
    });
  });
  return getSchedule(deps.db.sql, projectId, name);
}

/** An operator's "run now": a `manual` run in the inbox (audited); the caller hands it to the bot. */
export async function runNow(deps: Pick<Deps, 'db' | 'clock' | 'config'>, actor: AuditActor, projectId: string, name: string):
  Promise<{ run: RunView; key: string; event: BotScheduleRun }> {
  const now = deps.clock.now();
  return inTransaction(deps.db.pool, async (tx) => {
    const row = await scheduleOf(tx, projectId, name, true);
    if (await scheduleRunPending(tx, projectId, name)) {
      throw new ApiError('conflict', `The schedule "${name}" has a run in progress; run it again once it has finished (one run at a time per schedule).`);
    }
    const runId = await insertRun(tx, { projectId, name, dueAt: now, trigger: 'manual', outcome: 'queued', deploymentId: row.deployment_id, now });
    if (!runId) throw new ApiError('conflict', `The schedule "${name}" already has a run for ${now.toISOString()}.`);
    const key = await addRunToInbox(tx, projectId, BigInt(runId), now, deps.config.botInboxLeaseMs);
    await recordAuditOn(tx, now, actor, { projectId, action: 'schedule.run', subject: name, after: { run_id: runId } });
    const [run] = await queryRows<RunRow>(tx, `SELECT ${RUN_COLUMNS} FROM bot_schedule_runs WHERE id = $1::bigint`, runId);
    return { run: runView(run), key, event: runEvent(row, runId, now, 'manual') };
  });
}
