/**
 * Each number's throughput level read from the channel (lib/channel-settings/throughput.ts) as a
 * job module: once when the jobs start, then every CHANNEL_THROUGHPUT_REFRESH_MS (one runner at a
 * time). Notifications that announce a change (phone_number_quality_update, account_update) read it
 * at once, outside this job (lib/messaging/inbound.ts). The stored level is the truth every
 * instance paces by; a run missed or made twice changes nothing.
 */
import { onPool, type JobContext, type JobModule } from './context.js';
import { refreshAllChannelThroughput } from '../lib/channel-settings/throughput.js';

export const CHANNEL_THROUGHPUT_JOB = 'channel-throughput-refresh';

export function registerChannelThroughput(ctx: JobContext): JobModule {
  const deps = { ...ctx.deps, db: onPool(ctx.deps.db, ctx.pool) };
  let starting: Promise<void> | undefined;
  ctx.runner.define(CHANNEL_THROUGHPUT_JOB, async () => {
    await refreshAllChannelThroughput(deps, 'periodic read');
  }, { concurrency: 1, removeOnComplete: false });
  return {
    async start() {
      await ctx.runner.every(ctx.deps.config.channelThroughputRefreshMs, CHANNEL_THROUGHPUT_JOB);
      // At start too, by this instance: one (re)started after an upgrade paces by it at once.
      starting = refreshAllChannelThroughput(deps, 'start').then(() => undefined);
    },
    async drain() {
      await starting;
    },
  };
}
