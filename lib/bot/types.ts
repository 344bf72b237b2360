/** What the service hands the bot runtime, and what the rest of the service sees of it. */
import type { SandboxLimits } from '../sandbox/sandbox.js';
import type { Tx } from '../platform/db/tx.js';
import type { CallEventContext, InboundCall, InboundMessage, ScheduleContext } from './event-types.js';

/**
 * The event the bot's `onMessage` receives, and what `onSchedule(name, ctx)` receives about a run
 * of one of its schedules (lib/bot/schedules.ts): the bot's own types (lib/bot/event-types.ts, the
 * scaffold's generated copy). A message rebuilt from the inbox has no `consent`: the runtime judges it again.
 */
export type BotInboundMessage = InboundMessage;
export type BotScheduleRun = ScheduleContext;
/** A change of a voice call, as `onCall(call, ctx)` receives it (lib/calls/calls.ts makes it). */
export type BotCall = InboundCall;

/** An event of the bot's inbox (lib/bot/inbox.ts), by kind. */
export type BotEvent =
  | { kind: 'message'; message: BotInboundMessage }
  | { kind: 'schedule'; schedule: BotScheduleRun }
  | { kind: 'call'; call: BotCall; context: CallEventContext };

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
  enqueue(tx: Tx, projectId: string, messageId: bigint, now: Date): Promise<void>;
  /**
   * enqueue as SQL, for a statement that stores messages itself (lib/messaging/inbound-statement.ts):
   * the insert putting each row of `rows` (message_id, project_id, lease_until, created_at) into the inbox.
   */
  enqueueSql(rows: string): string;
  /**
   * Puts a change of a call (`call:<calls.id>:<status>`) into the bot's inbox, in the transaction
   * that stores the change, when the project has a deployed bot; the inbox key when it was put
   * there (then hand it over with onEvent once committed), else undefined. Calls call this; they
   * never import the bot.
   */
  enqueueCall?(tx: Tx, projectId: string, callRowId: bigint, call: BotCall, now: Date): Promise<string | undefined>;
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
  /** Where the project's bots stand now: CPU this minute, sandbox placement, events here (the operator's view). */
  capacity?(projectId: string): Promise<BotCapacity>;
}

export interface BotCapacity {
  cpu: { spent_ms: number; burst_ms: number; budget_ms: number; state: 'within' | 'past_burst' | 'exhausted'; resets_at: string | null };
  sandbox: { process: 'shared' | 'own'; reason: 'cpu' | 'memory' | 'crash' | 'suspect' | null; until: string | null; pid: number | null; rss_mb: number | null };
  events: { running: number; queued: number };
}

/** The contract document whose SendMessageRequest checks a bot's sends (the served openapi.yaml). */
export interface SendContract {
  document: Record<string, any>;
}

