/**
 * The bot inbox's reclaim pass as a job module: a recurring `bot-inbox-reclaim` job (one runner at
 * a time) hands the messages whose lease ran out (their process died, or could not settle them) to
 * this instance's bot again (lib/bot/inbox.ts, lib/bot/runtime.ts).
 */
import type { BotHook } from '../lib/bot/types.js';
import type { JobContext, JobModule } from './context.js';

export const BOT_INBOX_RECLAIM_JOB = 'bot-inbox-reclaim';
export const RECLAIM_EVERY_MS = 5000;

export function registerBotInboxReclaim(ctx: JobContext, bot: BotHook, everyMs = RECLAIM_EVERY_MS): JobModule {
  ctx.runner.define(BOT_INBOX_RECLAIM_JOB, async () => {
    await bot.reclaim();
  }, { concurrency: 1, removeOnComplete: false });
  return {
    async start() {
      await ctx.runner.every(everyMs, BOT_INBOX_RECLAIM_JOB);
    },
  };
}
