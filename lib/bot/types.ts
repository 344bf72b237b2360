/** What the service hands the bot runtime, and what the rest of the service sees of it. */
import type { SandboxLimits } from '../sandbox/sandbox.js';
import type { Prisma } from '../../generated/prisma/client.js';

/** The event the bot's `onMessage` receives (see scaffold/src/platform/runtime/types.ts). */
export interface BotInboundMessage {
  id: string;
  from: string;
  type: string;
  text: string | null;
  raw: Record<string, unknown>;
  conversation: { id: number; state: string };
  /** `phone` is null for a customer whose number WhatsApp withholds; `user_id` is the BSUID. */
  contact: { phone: string | null; user_id?: string | null; username?: string | null; name: string | null };
  received_at: string;
  /**
   * Set when the message is one of the project's consent keywords (STOP, START, …): the change
   * it made to the customer's marketing consent and the keyword, so a bot need not answer it.
   * Null otherwise; absent on a message rebuilt from the inbox, which the runtime judges again.
   */
  consent?: { change: 'opted_out' | 'opted_in'; keyword: string } | null;
}

/** What `onSchedule(name, ctx)` receives about a run of one of the bot's schedules (lib/bot/schedules.ts). */
export interface BotScheduleRun {
  name: string;
  run_id: string;
  due_at: string;
  trigger: 'cron' | 'catch_up' | 'manual';
  cron: string;
  time_zone: string;
}

/** An event of the bot's inbox (lib/bot/inbox.ts), by kind. */
export type BotEvent =
  | { kind: 'message'; message: BotInboundMessage }
  | { kind: 'schedule'; schedule: BotScheduleRun };

/** The hook the inbound path calls once a message is stored (with its bot inbox row) and `message.received` raised. */
export { inboundText } from '../messaging/inbound-text.js';

export interface BotHook {
  /** `inboxId` is the stored message's id, its event in the bot's inbox (lib/bot/inbox.ts). */
  onInboundMessage(projectId: string, inboxId: bigint, message: BotInboundMessage): void;
  /** Hands an event already in the bot's inbox (leased to this instance) to the bot; `key` names it there. */
  onEvent(projectId: string, key: string, event: BotEvent): void;
  /**
   * Puts a stored inbound message into the bot's inbox, in the transaction that stores it (a
   * restart before the bot ran cannot drop it). Messaging calls this; it never imports the bot.
   */
  enqueue(tx: Prisma.TransactionClient, projectId: string, messageId: bigint, now: Date): Promise<void>;
  /**
   * enqueue as SQL, for a statement that stores messages itself (lib/messaging/inbound-statement.ts):
   * the insert putting each row of `rows` (message_id, project_id, lease_until, created_at) into the inbox.
   */
  enqueueSql(rows: string): string;
  /** A deploy, rollback or project change: the next message loads the project's release again. */
  releaseChanged(projectId: string): void;
  /** Makes the project's sandbox ready before an event is due (a schedule's run, a moment before its time). */
  warm?(projectId: string): Promise<void>;
  /** Told of every releaseChanged (the scheduler follows the release's schedules at once). */
  onReleaseChanged?(listener: (projectId: string) => void): void;
  /** Hands the inbox's events whose lease ran out to the bot again; resolves with how many were taken. */
  reclaim(): Promise<number>;
  readonly limits: SandboxLimits;
  /** Undefined while the project's bots are within their CPU budget, else when the minute ends (lib/bot/cpu-budget.ts). */
  cpuExhausted?(projectId: string): Promise<Date | undefined>;
}

/** The contract document whose SendMessageRequest checks a bot's sends (the served openapi.yaml). */
export interface SendContract {
  document: Record<string, any>;
}

