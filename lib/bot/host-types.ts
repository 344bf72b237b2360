/** What a host operation of the bot (lib/bot/host-api.ts) is given and answers. */
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import type { SendContract } from './types.js';
import type { EventJournal } from './journal.js';

/** The service as the bot runtime sees it: the domain's dependencies and the contract its sends are checked by. */
export type BotDeps = Deps & { contract: SendContract };

/** What a preview run captures instead of doing it (nothing leaves a preview). */
export interface Capture {
  sends: unknown[];
  state: string | null;
  events: Array<{ name: string; payload: unknown }>;
  logs: Array<{ level: string; message: string }>;
}

/** The rights a bot's helper calls run with: one per event (production) or per preview. */
export interface Invocation {
  projectId: string;
  /** The reference of the next send to `recipient` (phone digits or BSUID) in the event now handling that conversation, if any (lib/bot/runtime.ts). */
  sendRef?: (recipient: string) => string | undefined;
  mode: 'production' | 'preview';
  /** The conversation of the event now running (a message's or a call's), when there is one: a failed fetch is noted on it. */
  conversationId?: number;
  deploymentId?: string;
  capture?: Capture;
  logLines: number;
  project?: ProjectRef;
  /** The event's journal (production): its effects are answered from it when the event runs again (lib/bot/journal.ts). */
  journal?: EventJournal;
}

/** About one call, from the sandbox that made it (lib/sandbox/supervisor.ts). */
export interface CallContext {
  /** Milliseconds left before the deadline of the earliest event in flight in the calling sandbox. */
  remainingMs?: number;
}

/** A helper's answer: the bot's helper returns `value`, or throws a HelperError with the code (unless the helper answers errors as values, as `send` does). */
export type Answer = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };

export const ok = (value: unknown): Answer => ({ ok: true, value });

export function fail(code: string, message: string): Answer {
  return { ok: false, error: { code, message } };
}
