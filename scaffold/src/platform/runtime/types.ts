/** Types of the bot's world (managed by the platform). */
import type { CallEventContext, InboundCall, InboundMessage, ScheduleContext } from '../generated/events.js';

// The events a bot receives: generated from the service's one source (lib/bot/event-types.ts).
export type { CallEventContext, InboundCall, InboundEvent, InboundMessage, ScheduleContext } from '../generated/events.js';

/** One schedule: a 5-field cron expression (minute hour day-of-month month day-of-week) in an IANA time zone. */
export interface Schedule {
  /** e.g. '0 9 * * *' (every day at 9:00); at most once a minute. */
  cron: string;
  /** e.g. 'Europe/Lisbon', 'UTC'. */
  timeZone: string;
}

export interface BotModule {
  onMessage?: (message: InboundMessage) => unknown | Promise<unknown>;
  /** Named schedules, read at deploy: `export const schedules = { morningReminder: { cron: '0 9 * * *', timeZone: 'Europe/Lisbon' } }`. */
  schedules?: Record<string, Schedule>;
  /** Runs at each due time of a schedule (one run at a time per schedule). */
  onSchedule?: (name: string, ctx: ScheduleContext) => unknown | Promise<unknown>;
  /** Runs at each change of a voice call (ringing, answered, ended, missed); without it calls change nothing in the bot. */
  onCall?: (call: InboundCall, ctx: CallEventContext) => unknown | Promise<unknown>;
}

/**
 * The recipient of a send: a phone, or the business-scoped user id of a customer whose number
 * WhatsApp withholds (`message.from` is either: pass it as `phone` and the service sends it the
 * right way, or name it `user_id`). Exactly one. A WhatsApp group's message (`message.conversation.kind`
 * `group`) is answered in the group with `group_id` (`message.conversation.group_id`; no interactive messages there).
 */
export type SendRecipient =
  | { phone: string; user_id?: never; group_id?: never }
  | { user_id: string; phone?: never; group_id?: never }
  | { group_id: number; phone?: never; user_id?: never };

/** The body of POST /v1/messages. */
export type SendMessageRequest = SendRecipient & (
  | { type: 'text'; content: string }
  | { type: 'image' | 'video' | 'document' | 'audio'; media: { slug?: string; media_id?: string; caption?: string; filename?: string } }
  | { type: 'interactive'; interactive: { body: string; header?: string; footer?: string; buttons?: Array<{ id: string; title: string }>; list?: unknown } }
  | { type: 'template'; template: { name: string; language: string; [k: string]: unknown } }
);

export type SendResult =
  | { ok: true; id: string }
  | { ok: false; error: { code: string; message: string } };

export type TableValue = string | number | boolean | null;
export type TableRow = Record<string, unknown>;
export interface TableFilter {
  column: string;
  op: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike' | 'is';
  value: TableValue;
}
