/**
 * The bot's entry point (managed by the platform). It registers the handlers exported by
 * src/bot.ts with the channel webhook; put your code in src/bot.ts and files it imports.
 */
import * as bot from './bot.js';
import { registerBot } from './platform/webhook.js';

registerBot(bot);
