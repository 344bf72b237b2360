/** Types of the bot's world (managed by the platform). */

export interface InboundMessage {
  /** The channel's message id (wamid). */
  id: string;
  /** The customer's phone number, digits only; its business-scoped user id (e.g. `US.1349…`) when WhatsApp withholds the number. Send to it as given. */
  from: string;
  /** text, image, interactive, … */
  type: string;
  /** The text of a text message, or the title of a tapped button or list row; null otherwise. */
  text: string | null;
  /** The message as the channel sent it. */
  raw: Record<string, unknown>;
  conversation: { id: number; state: string };
  contact: { phone: string | null; user_id?: string | null; username?: string | null; name: string | null };
  received_at: string;
  /**
   * Set when the message is one of the project's consent keywords (STOP, START, …): the service
   * has already changed the customer's marketing consent (and sent the project's confirmation, if
   * it has one), so most bots should not answer it. Null for any other message.
   */
  consent?: { change: 'opted_out' | 'opted_in'; keyword: string } | null;
}

/** One schedule: a 5-field cron expression (minute hour day-of-month month day-of-week) in an IANA time zone. */
export interface Schedule {
  /** e.g. '0 9 * * *' (every day at 9:00); at most once a minute. */
  cron: string;
  /** e.g. 'Europe/Lisbon', 'UTC'. */
  timeZone: string;
}

/** What `onSchedule(name, ctx)` is told about the run. */
export interface ScheduleContext {
  /** The schedule's name (a key of `schedules`). */
  name: string;
  /** The run's id (as the operator's list of runs shows it). */
  run_id: string;
  /** The due time this run is for (ISO 8601, UTC); a manual run's is when it was asked for. */
  due_at: string;
  /** cron: on time; catch_up: missed while the service was down, run at its start; manual: an operator's "run now". */
  trigger: 'cron' | 'catch_up' | 'manual';
  /** The schedule's cron expression and time zone. */
  cron: string;
  time_zone: string;
}

export type InboundEvent =
  | { type: 'message'; message: InboundMessage }
  | { type: 'schedule'; schedule: ScheduleContext };

export interface BotModule {
  onMessage?: (message: InboundMessage) => unknown | Promise<unknown>;
  /** Named schedules, read at deploy: `export const schedules = { morningReminder: { cron: '0 9 * * *', timeZone: 'Europe/Lisbon' } }`. */
  schedules?: Record<string, Schedule>;
  /** Runs at each due time of a schedule (one run at a time per schedule). */
  onSchedule?: (name: string, ctx: ScheduleContext) => unknown | Promise<unknown>;
}

/**
 * The recipient of a send: a phone, or the business-scoped user id of a customer whose number
 * WhatsApp withholds (`message.from` is either: pass it as `phone` and the service sends it the
 * right way, or name it `user_id`). Exactly one.
 */
export type SendRecipient = { phone: string; user_id?: never } | { user_id: string; phone?: never };

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
