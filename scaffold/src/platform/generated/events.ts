// Generated from lib/bot/event-types.ts by scripts/generate-bot-events.ts (`npm run generate`): do not edit (the platform replaces it).
/**
 * The events a deployed bot receives: the one source of these types. The service builds them
 * (lib/bot/types.ts names them for the runtime) and `npm run generate` copies this file into the
 * scaffold as src/platform/generated/events.ts (scripts/generate-bot-events.ts), which the bot's
 * own code imports through src/platform/runtime/types.ts; `generate:check` fails when that copy
 * differs. Self-contained (no imports): it is copied as it is.
 */

/** The message the bot's `onMessage` receives. */
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
  /**
   * `kind` `group`: the message was written in a WhatsApp group of the business (docs/groups.md):
   * `from` and `contact` are the participant who wrote; answer in the group with
   * `group_id` (the group's id) instead of a phone. Absent or `individual`: a one-to-one conversation.
   */
  conversation: { id: number; state: string; kind?: 'individual' | 'group'; group_id?: number };
  /** `phone` is null for a customer whose number WhatsApp withholds; `user_id` is the business-scoped user id. */
  contact: { phone: string | null; user_id?: string | null; username?: string | null; name: string | null };
  received_at: string;
  /**
   * Set when the message is one of the project's consent keywords (STOP, START, …): the service
   * has already changed the customer's marketing consent (and sent the project's confirmation, if
   * it has one), so most bots should not answer it. Null for any other message.
   */
  consent?: { change: 'opted_out' | 'opted_in'; keyword: string } | null;
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

/**
 * What `onCall(call, ctx)` receives: one change of a WhatsApp voice call (docs/calls.md), as it was
 * when it happened. Each change is one event (a notification delivered twice is one event).
 */
export interface InboundCall {
  /** The channel's call id (`wacid.…`): what `calls.reject(call.id)` takes. */
  id: string;
  /** What happened: the call rings, was answered, ended (see `result`), or ended unanswered (`missed`). */
  status: 'ringing' | 'answered' | 'ended' | 'missed';
  /** user_initiated: the customer calls the business; business_initiated: a call the business placed (POST /v1/calls). */
  direction: 'user_initiated' | 'business_initiated';
  /** The customer (the caller of their call, the one called in a business call): phone digits, or their business-scoped user id when WhatsApp withholds the number. Send to it as given. */
  from: string;
  conversation: { id: number; state: string };
  /** `phone` is null for a customer whose number WhatsApp withholds; `user_id` is the business-scoped user id. */
  contact: { phone: string | null; user_id?: string | null; name: string | null };
  /** How an ended call ended: completed (it was answered), rejected, missed or failed; null while the call is live. */
  result: 'completed' | 'rejected' | 'missed' | 'failed' | null;
  /** ISO 8601 (UTC): when the call started ringing, was answered, ended. */
  started_at: string;
  answered_at: string | null;
  ended_at: string | null;
  /** The call's length in seconds, once it ended (null for a call never answered). */
  duration_seconds: number | null;
}

/** What `onCall(call, ctx)` is told besides the call. */
export interface CallEventContext {
  /** The event's time as the service received it (ISO 8601, UTC): a bot's "now" for opening hours. */
  received_at: string;
}

/** What the service hands the bot's event endpoint (src/platform/webhook.ts), as JSON. */
export type InboundEvent =
  | { type: 'message'; message: InboundMessage }
  | { type: 'schedule'; schedule: ScheduleContext }
  | { type: 'call'; call: InboundCall; context: CallEventContext };
