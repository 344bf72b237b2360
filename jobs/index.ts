/**
 * The service's background work: one job runner (Agenda on PostgreSQL) on one background pool,
 * created at start. Each job module registers itself here, in order; stopping runs in reverse:
 * every module stops taking work, the runner stops, then every module drains.
 */
import { createJobRunner, type JobRunner } from './runner.js';
import { backgroundPool, type JobContext, type JobDeps, type JobModule } from './context.js';
import { registerWebhookDelivery, type WebhookDelivery, type WebhookDeliveryOptions } from './webhook-delivery.js';
import { registerBroadcastEngine, type BroadcastEngineOptions, type RunningEngine } from './broadcast-engine.js';
import { registerBotInboxReclaim } from './bot-inbox.js';
import { registerBotSchedules } from './bot-schedules.js';
import type { BotScheduler } from '../lib/bot/scheduler.js';
import { registerSendSettle } from './send-settle.js';
import { registerChannelThroughput } from './channel-throughput.js';
import type { BotHook } from '../lib/bot/types.js';

export interface JobsOptions {
  /** Connections of the background pool (the runner holds one for LISTEN). */
  poolSize?: number;
  /** How often the runner scans for due jobs, in ms. */
  processEveryMs?: number;
  /** How long a claimed job stays locked before another runner may take it, in ms. */
  lockLifetimeMs?: number;
  webhooks?: WebhookDeliveryOptions;
  /** The broadcast engine's options, or false to run without it (tests drive their own engines). */
  broadcasts?: BroadcastEngineOptions | false;
  /** How often messages the bot never finished are handed to it again, in ms (lib/bot/inbox.ts). */
  botReclaimEveryMs?: number;
  /** How often the bot schedules' sweep runs, in ms (jobs/bot-schedules.ts). */
  botSchedulesEveryMs?: number;
}

export interface Jobs {
  runner: JobRunner;
  webhooks: WebhookDelivery;
  broadcasts?: RunningEngine;
  /** The bot's scheduler (with a bot runtime). */
  schedules?: BotScheduler;
  stop(): Promise<void>;
}

export async function startJobs(deps: JobDeps & { bot?: BotHook }, opts: JobsOptions = {}): Promise<Jobs> {
  const pool = backgroundPool(deps, opts.poolSize ?? 16);
  const runner = createJobRunner({ pool, logger: deps.logger, processEveryMs: opts.processEveryMs, lockLifetimeMs: opts.lockLifetimeMs, name: `service-${process.pid}` });
  const ctx: JobContext = { deps, runner, pool };

  const webhooks = registerWebhookDelivery(ctx, opts.webhooks);
  const broadcasts = opts.broadcasts === false ? undefined : registerBroadcastEngine(ctx, opts.broadcasts);
  const botInbox = deps.bot ? registerBotInboxReclaim(ctx, deps.bot, opts.botReclaimEveryMs) : undefined;
  const schedules = deps.bot ? registerBotSchedules(ctx, deps.bot, opts.botSchedulesEveryMs) : undefined;
  const sendSettle = registerSendSettle(ctx);
  const throughput = registerChannelThroughput(ctx);
  const modules: JobModule[] = [webhooks, ...(broadcasts ? [broadcasts] : []), ...(botInbox ? [botInbox] : []), ...(schedules ? [schedules] : []), sendSettle, throughput];

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const m of [...modules].reverse()) await m.stopIntake?.().catch((e) => deps.logger.warn('job module stop failed', { error: String(e) }));
    await runner.stop().catch((e) => deps.logger.warn('job runner stop failed', { error: String(e) }));
    for (const m of [...modules].reverse()) await m.drain?.().catch((e) => deps.logger.warn('job module drain failed', { error: String(e) }));
    await pool.end().catch(() => undefined);
  };
  try {
    await runner.start();
    for (const m of modules) await m.start?.();
  } catch (e) {
    await stop();
    throw e;
  }
  return { runner, webhooks, broadcasts, schedules: schedules?.scheduler, stop };
}
