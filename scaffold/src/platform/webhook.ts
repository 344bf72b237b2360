/**
 * The channel webhook endpoint inside the bot (managed by the platform). The service stores each
 * inbound message, raises `message.received`, then hands the message here; this calls the
 * project's `onMessage`. One message at a time per project, in arrival order.
 */
import type { BotModule, InboundEvent } from './runtime/types.js';

export function registerBot(bot: BotModule): void {
  (globalThis as Record<string, unknown>).__platformDispatch = async (eventJson: string): Promise<string> => {
    const event = JSON.parse(eventJson) as InboundEvent;
    if (event.type === 'message' && typeof bot.onMessage === 'function') {
      await bot.onMessage(event.message);
    }
    return 'ok';
  };
}
