/**
 * The bot's scheduled tasks on the service's one job runner (lib/bot/scheduler.ts does the work):
 * - `bot-schedule-due` jobs are the timers: one per schedule's next due time, carrying only its
 *   project, name and due time; the row decides (a timer for a due time already fired, paused or
 *   changed does nothing), so a timer may run late, twice, or on another instance. A timer wakes
 *   WAKE_EARLY_MS before the due time, has the project's sandbox made ready (a cold start takes
 *   hundreds of milliseconds), waits for the due time on the service's clock, then fires;
 * - `bot-schedules-sweep` (one runner at a time, every SWEEP_EVERY_MS) is the safety net: it follows
 *   deploys and rollbacks, sets missing timers and fires what is overdue (a run missed while the
 *   service was down, within SCHEDULE_GRACE_SECONDS, at start).
 */
import type { BotHook } from '../lib/bot/types.js';
import { BotScheduler } from '../lib/bot/scheduler.js';
import { stableHash } from '../lib/platform/stable-hash.js';
import { onPool, type JobContext, type JobModule } from './context.js';

export const BOT_SCHEDULE_DUE_JOB = 'bot-schedule-due';
export const BOT_SCHEDULES_SWEEP_JOB = 'bot-schedules-sweep';
export const SWEEP_EVERY_MS = 5000;
export const WAKE_EARLY_MS = 2000;

interface DueJobData {
  projectId: string;
  name: string;
  /** ISO time. */
  dueAt: string;
}

export function registerBotSchedules(ctx: JobContext, bot: BotHook, everyMs = SWEEP_EVERY_MS): { scheduler: BotScheduler } & JobModule {
  const { deps, runner } = ctx;
  // A timer wakes WAKE_EARLY_MS plus a stable part of a second early: due times fall on whole
  // seconds, and timers of one phase would be locked by one instance's poll (jobs/runner.ts).
  const scheduler = new BotScheduler({ ...deps, bot }, onPool(deps.db, ctx.pool), (at, projectId, name) =>
    runner.schedule<DueJobData>(new Date(at.getTime() - WAKE_EARLY_MS - (stableHash(`${projectId}\n${name}`) % 1000)), BOT_SCHEDULE_DUE_JOB, { projectId, name, dueAt: at.toISOString() }));
  // A deploy or rollback in this process: its schedules (and their timers) at once.
  bot.onReleaseChanged?.((projectId) => {
    void scheduler.releaseChanged(projectId).catch((e) => deps.logger.warn('bot schedules not synced; the sweep does it', { project_id: projectId, error: String(e) }));
  });
  runner.define<DueJobData>(BOT_SCHEDULE_DUE_JOB, async (data) => {
    if (!data?.projectId || !data.name || !data.dueAt) return;
    const dueAt = new Date(data.dueAt);
    await bot.warm?.(data.projectId);
    const wait = dueAt.getTime() - deps.clock.now().getTime();
    if (wait > 0 && wait <= WAKE_EARLY_MS + 1000) await new Promise((r) => setTimeout(r, wait));
    await scheduler.fire(data.projectId, data.name, dueAt).catch((e) => deps.logger.warn('bot schedule not fired; the sweep tries again', { project_id: data.projectId, schedule: data.name, error: String(e) }));
  }, { concurrency: 20 });
  runner.define(BOT_SCHEDULES_SWEEP_JOB, async () => {
    await scheduler.tick().catch((e) => deps.logger.warn('bot schedules sweep failed', { error: String(e) }));
  }, { concurrency: 1, removeOnComplete: false });
  return {
    scheduler,
    async start() {
      await scheduler.tick().catch((e) => deps.logger.warn('bot schedules sweep failed', { error: String(e) }));
      await runner.every(everyMs, BOT_SCHEDULES_SWEEP_JOB);
    },
  };
}
