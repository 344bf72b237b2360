/**
 * Per-project rates of a bot, counted in the shared counters (lib/platform/counters: Redis when
 * REDIS_URL is set, so every instance counts the same minute; in-process otherwise), in fixed
 * one-minute windows:
 * - events: inbound messages the bot handles (BOT_EVENTS_PER_MINUTE). Past it a message is not
 *   lost: it waits in this instance (its inbox lease renewed) until the window turns, then runs,
 *   still in order per conversation (lib/bot/runtime.ts).
 * - emits: custom events the bot raises (BOT_EMITS_PER_MINUTE). Past it `emit` answers false, as
 *   for any refused event, and never throws.
 * When the counters cannot answer (Redis down), both fail open, like the API's rate limits.
 */
import type { Deps } from '../deps.js';

export const RATE_WINDOW_MS = 60_000;

export interface RateAnswer {
  allowed: boolean;
  /** The count after this one (Infinity when not counted). */
  count: number;
  /** When the window ends. */
  resetAt: Date;
}

async function take(deps: Pick<Deps, 'counters' | 'clock'>, key: string, limit: number): Promise<RateAnswer> {
  const now = deps.clock.now();
  try {
    const { count, resetAt } = await deps.counters.hit(key, RATE_WINDOW_MS, now);
    return { allowed: count <= limit, count, resetAt };
  } catch {
    return { allowed: true, count: Number.POSITIVE_INFINITY, resetAt: now };
  }
}

/** One inbound message for the project's bot. */
export function takeBotEvent(deps: Pick<Deps, 'counters' | 'clock' | 'config'>, projectId: string): Promise<RateAnswer> {
  return take(deps, `bot:events:${projectId}`, deps.config.botEventsPerMinute);
}

/** One custom event emitted by the project's bot. */
export function takeBotEmit(deps: Pick<Deps, 'counters' | 'clock' | 'config'>, projectId: string): Promise<RateAnswer> {
  return take(deps, `bot:emits:${projectId}`, deps.config.botEmitsPerMinute);
}
