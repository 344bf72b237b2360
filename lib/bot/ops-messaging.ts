/**
 * The messaging helpers of the host API (lib/bot/host-api.ts): send, setState, emit, log, showTyping.
 *
 * Policy and why:
 * - `send` takes the path of POST /v1/messages (contract validation, media, quota, 24-hour window);
 *   it never throws into the bot: the answer is `{ ok, id }` or `{ ok: false, error }`. A database
 *   blink before the channel was called (nothing went out) is retried for about 5 s, so a
 *   connection cut does not cost the customer the bot's reply; after the call, never. A send to the
 *   customer whose message the bot is handling carries a reference made of that message's inbox id
 *   and the send's rank in the event, so the event's replay after a crash (lib/bot/inbox.ts) does
 *   not send it twice.
 * - `setState` sets any state of 1 to 64 characters on one of the project's conversations: the
 *   spec lets a project's bot introduce its own states, which PATCH accepts afterwards.
 * - `emit` follows the runtime emit's rules (lib/custom-events.ts): true or false, never throws;
 *   false too past the project's BOT_EMITS_PER_MINUTE (lib/bot/rates.ts; a preview is not counted).
 * - `showTyping` marks the customer's message read with a typing indicator (lib/bot/typing.ts).
 * - `log` lines go to the project's bot log (2,000 characters each; at most 100 per event, counted
 *   across a project's events that run together), with the project's secrets redacted.
 * - In a preview, nothing leaves: sends, state changes, events and logs are captured.
 */
import { ApiError } from '../platform/errors.js';
import { isDatabaseUnavailable } from '../platform/db/errors.js';
import { queryRows } from '../platform/db/tx.js';
import { normalizePhone } from '../conversations/phone.js';
import { isBsuid } from '../conversations/identity.js';
import { sendMessage } from '../messaging/send-message.js';
import { setConversationState } from '../conversations/conversations.js';
import { emitCustomEvent } from '../webhooks/custom-events.js';
import { validateCustomEventName } from '../webhooks/event-names.js';
import type { ProjectRef } from '../access/credentials.js';
import { sendBodyProblem } from './send-schema.js';
import { showTyping } from './typing.js';
import { takeBotEmit } from './rates.js';
import { MAX_LOG_LINE } from './bot-log.js';
import { redactedBotLog } from './secrets.js';
import { fail, ok, type Answer, type BotDeps, type Invocation } from './host-types.js';

export const MAX_LOG_LINES_PER_EVENT = 100;
/** Tries at a send that met a database blink before the channel was called (about 5 s of backoff). */
export const SEND_ATTEMPTS = 6;
export const MAX_EVENT_PAYLOAD = 64 * 1024;

/** The wait before try `attempt + 1` after a database blink: doubling from 200 ms, at most 2 s. */
export const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

/** An ApiError as the bot sees it; anything else as a server error. */
export function asAnswer(e: unknown): Answer {
  if (e instanceof ApiError) return fail(e.code, e.message);
  return fail('server_error', 'The helper failed unexpectedly.');
}

async function projectOf(deps: BotDeps, inv: Invocation): Promise<ProjectRef> {
  if (!inv.project) {
    const rows = await queryRows<{ id: string; name: string; status: ProjectRef['status'] }>(deps.db.sql, 'SELECT id, name, status FROM projects WHERE id = $1', inv.projectId);
    if (!rows[0]) throw new ApiError('PROJECT_NOT_FOUND', 'The project no longer exists.');
    inv.project = rows[0];
  }
  return inv.project;
}

export async function runSend(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  // A customer whose number WhatsApp withholds is `from` = its BSUID: the scaffold's
  // sendText(message.from, …) puts it in `phone`, so it goes as `user_id`.
  if (args && typeof args === 'object' && isBsuid(args.phone) && args.user_id === undefined) {
    const { phone, ...rest } = args;
    args = { ...rest, user_id: phone };
  }
  const problem = sendBodyProblem(deps.contract, args);
  if (problem) return refusedSend(deps, inv, args, { code: 'invalid_request', message: problem });
  if (inv.capture) {
    inv.capture.sends.push(args);
    return ok({ ok: true, id: `preview.${inv.capture.sends.length}` });
  }
  let called = false;
  // Fixed before any try: a retry, or the event's replay after a crash, repeats this send's
  // reference. Keyed by the recipient as the event's `from` names it: a phone's digits, or the
  // BSUID of a customer without one (so a username customer's reply is not sent twice either).
  // A reply in a WhatsApp group (docs/groups.md) is keyed by the group.
  const recipient = typeof args?.phone === 'string' ? normalizePhone(args.phone) : typeof args?.user_id === 'string' ? args.user_id
    : typeof args?.group_id === 'number' ? `group:${args.group_id}` : undefined;
  const ref = recipient ? inv.sendRef?.(recipient) : undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const sent = await sendMessage(deps, await projectOf(deps, inv), args, { onChannelCall: () => (called = true), ref });
      return ok({ ok: true, id: sent.id });
    } catch (e) {
      if (!called && attempt < SEND_ATTEMPTS && isDatabaseUnavailable(e)) {
        await backoff(attempt);
        continue;
      }
      const a = asAnswer(e);
      return a.ok ? ok(a.value) : refusedSend(deps, inv, args, a.error);
    }
  }
}

/**
 * A send the service refused (quota, window, consent, limits, a bad body): answered to the bot as
 * a value, and written to the bot log with its code, so a bot that ignores the result still leaves
 * a trace a person sees. Counted in the event's log lines (a storm of refusals is bounded).
 */
async function refusedSend(deps: BotDeps, inv: Invocation, args: any, error: { code: string; message: string }): Promise<Answer> {
  if (!inv.capture && ++inv.logLines <= MAX_LOG_LINES_PER_EVENT) {
    const to = typeof args?.phone === 'string' ? args.phone : typeof args?.user_id === 'string' ? args.user_id
      : typeof args?.group_id === 'number' ? `group ${args.group_id}` : 'an unnamed recipient';
    await redactedBotLog(deps, inv.projectId, { level: 'warn', kind: 'error', message: `A send to ${String(to).slice(0, 64)} was refused (${error.code}): ${error.message}`.slice(0, MAX_LOG_LINE), deploymentId: inv.deploymentId }).catch(() => undefined);
  }
  return ok({ ok: false, error });
}

export async function runSetState(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  const id = args?.conversationId;
  const state = args?.state;
  if (!Number.isSafeInteger(id) || id < 1) return fail('invalid_request', 'conversationId must be a positive integer.');
  if (typeof state !== 'string' || state.length < 1 || state.length > 64) return fail('invalid_request', 'state must be a string of 1 to 64 characters.');
  if (inv.capture) {
    inv.capture.state = state;
    return ok(true);
  }
  const changed = await setConversationState(deps.db.sql, inv.projectId, BigInt(id), state, deps.clock.now());
  return changed ? ok(true) : fail('not_found', `No conversation ${id} in this project.`);
}

export async function runEmit(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  try {
    if (JSON.stringify(args?.payload ?? null).length > MAX_EVENT_PAYLOAD) return ok(false);
    if (inv.capture) {
      inv.capture.events.push({ name: validateCustomEventName(args?.name), payload: args?.payload ?? null });
      return ok(true);
    }
    const name = validateCustomEventName(args?.name);
    // Past the project's rate: false, and one bot log entry per minute says why.
    const rate = await takeBotEmit(deps, inv.projectId);
    if (!rate.allowed) {
      if (rate.count === deps.config.botEmitsPerMinute + 1) {
        await redactedBotLog(deps, inv.projectId, { level: 'warn', kind: 'error', message: `emit("${name}") answered false: the bot may emit ${deps.config.botEmitsPerMinute} custom events a minute (BOT_EMITS_PER_MINUTE); more are refused until ${rate.resetAt.toISOString()}.`, deploymentId: inv.deploymentId });
      }
      return ok(false);
    }
    await emitCustomEvent(deps, inv.projectId, { name, payload: args?.payload ?? null });
    return ok(true);
  } catch {
    return ok(false);
  }
}

export async function runLog(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  const level = LEVELS.has(args?.level) ? args.level : 'info';
  const message = String(args?.message ?? '').slice(0, MAX_LOG_LINE);
  if (++inv.logLines > MAX_LOG_LINES_PER_EVENT) return ok(false);
  if (inv.capture) inv.capture.logs.push({ level, message });
  else await redactedBotLog(deps, inv.projectId, { level, kind: 'log', message, deploymentId: inv.deploymentId });
  return ok(true);
}

export function runShowTyping(deps: BotDeps, inv: Invocation, args: unknown): Promise<Answer> {
  return showTyping(deps, inv.projectId, args, inv.mode === 'preview');
}
