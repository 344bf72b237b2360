/**
 * The bot's event endpoint inside the sandbox (managed by the platform). The service stores each
 * inbound message, raises `message.received`, then hands the message here; this calls the
 * project's `onMessage`. A run of one of the bot's `schedules` calls its `onSchedule(name, ctx)`; a
 * change of a voice call (ringing, answered, ended, missed) its `onCall(call, ctx)`, if it has one.
 * One customer's messages and calls, and one schedule's runs, are handled one at a time, in order.
 */
import type { BotModule, InboundEvent } from './runtime/types.js';

export function registerBot(bot: BotModule): void {
  const g = globalThis as Record<string, unknown>;
  // What the bot declares, read by the service once the bundle has started (at deploy and in production).
  g.__platformDeclared = JSON.stringify({ schedules: bot.schedules ?? null });
  g.__platformDispatch = async (eventJson: string): Promise<string> => {
    const event = JSON.parse(eventJson) as InboundEvent;
    if (event.type === 'message' && typeof bot.onMessage === 'function') {
      await bot.onMessage(event.message);
    } else if (event.type === 'schedule' && typeof bot.onSchedule === 'function') {
      await bot.onSchedule(event.schedule.name, event.schedule);
    } else if (event.type === 'call' && typeof bot.onCall === 'function') {
      await bot.onCall(event.call, event.context);
    }
    return 'ok';
  };
}
