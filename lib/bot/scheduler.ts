/**
 * The bot's scheduler: turns the schedules' due times (lib/bot/schedules.ts) into events of the
 * bot's inbox and hands them to this instance's bot (lib/bot/runtime.ts). The job runner drives it
 * (jobs/bot-schedules.ts): a timer per next due time (`fire`), and a sweep (`tick`) that is the
 * safety net — it follows deploys and rollbacks (the schedules of the active release), sets the
 * timers not yet set, and fires any due time whose timer was missed (a crash, a restart: the
 * catch-up within SCHEDULE_GRACE_SECONDS). Firing is exclusive in the database, so timers and
 * sweeps of any number of instances make one run per due time.
 * Skipped runs (too late, the previous run still going) are written to the bot log.
 */
import type { Deps } from '../deps.js';
import type { Database } from '../platform/db/database.js';
import type { BotHook } from './types.js';
import { writeBotLog } from './bot-log.js';
import { fireDue, overdue, projectsToSync, syncFromRelease, unarmed, type FireResult } from './schedules.js';

export type SchedulerDeps = Pick<Deps, 'db' | 'clock' | 'logger' | 'config'> & { bot?: BotHook };

/** Sets a timer for a schedule's due time (the job runner's `bot-schedule-due`). */
export type ArmTimer = (at: Date, projectId: string, name: string) => Promise<void>;

export class BotScheduler {
  /** The pool (to open a firing's or a sync's transaction) and its handle (for the sweep's statements). */
  private readonly db: Pick<Database, 'pool' | 'sql'>;

  /** `db`: the job runner's background pool and its handle (else the service's). */
  constructor(private readonly deps: SchedulerDeps, db?: Pick<Database, 'pool' | 'sql'>, private readonly arm?: ArmTimer) {
    this.db = db ?? deps.db;
  }

  /** Fires the schedule's due time `dueAt` if it is still due and unfired; the run goes to this instance's bot. */
  async fire(projectId: string, name: string, dueAt: Date): Promise<FireResult> {
    const { config, clock } = this.deps;
    const result = await fireDue(this.db, projectId, name, dueAt, clock.now(), { graceMs: config.scheduleGraceSeconds * 1000, leaseMs: config.botInboxLeaseMs, spreadSeconds: config.botScheduleSpreadSeconds });
    if (result.fired) {
      this.deps.bot?.onEvent(projectId, result.key, { kind: 'schedule', schedule: result.event });
    } else if (result.skipped) {
      const missed = result.missed ? ` ${result.missed} earlier due time(s) were missed too.` : '';
      await writeBotLog({ db: { ...this.deps.db, ...this.db }, clock }, projectId, {
        level: 'warn', kind: 'schedule',
        message: `Schedule "${name}" did not run for ${result.skipped.dueAt.toISOString()}: ${result.skipped.reason}${missed}`,
      }).catch(() => undefined);
    }
    // Its next due time needs a timer (set by the next sweep otherwise).
    if (this.arm) await this.armAll();
    return result;
  }

  /** One sweep: follow releases, set missing timers, fire what is due. Answers how many runs it fired. */
  async tick(): Promise<number> {
    const now = this.deps.clock.now();
    for (const projectId of await projectsToSync(this.db.sql)) {
      await syncFromRelease(this.db, projectId, now, this.deps.config.botScheduleSpreadSeconds).catch((e) => this.deps.logger.warn('bot schedules not synced', { project_id: projectId, error: String(e) }));
    }
    if (this.arm) await this.armAll();
    let fired = 0;
    for (const due of await overdue(this.db.sql, this.deps.clock.now())) {
      try {
        if ((await this.fire(due.projectId, due.name, due.dueAt)).fired) fired++;
      } catch (e) {
        this.deps.logger.warn('bot schedule not fired', { project_id: due.projectId, schedule: due.name, error: String(e) });
      }
    }
    return fired;
  }

  /** A deploy or rollback in this process: its schedules now (the sweep would see it too). */
  async releaseChanged(projectId: string): Promise<void> {
    await syncFromRelease(this.db, projectId, this.deps.clock.now(), this.deps.config.botScheduleSpreadSeconds);
    if (this.arm) await this.armAll();
  }

  private async armAll(): Promise<void> {
    for (const t of await unarmed(this.db.sql)) {
      await this.arm!(t.dueAt, t.projectId, t.name).catch((e) => this.deps.logger.warn('bot schedule timer not set; the sweep fires it', { error: String(e) }));
    }
  }
}
