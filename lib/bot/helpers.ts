/**
 * The helpers behind the bot's `__host` calls, performed with the project's own rights.
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
 * - `tables.*` work on the project's own tables as the project's role: `public` in production,
 *   `preview` in a preview run.
 * - `showTyping` marks the customer's message read with a typing indicator (lib/bot/typing.ts).
 * - `log` lines go to the project's bot log (2,000 characters each; at most 100 per event, counted
 *   across a project's events that run together). Every bot log entry, and any bot-chosen text the
 *   service log gets (an unparsable call's helper name), is truncated and has its control
 *   characters escaped (lib/bot/log-text.ts): no bot can write a newline, so no forged line.
 * - In a preview, nothing leaves: sends, state changes, events and logs are captured.
 * - Arguments are JSON of at most 256 KiB (checked inside the isolate before the copy, and here
 *   again); an unknown op or bad argument is an error answer.
 */
import type { Deps } from '../deps.js';
import type { SendContract } from './types.js';

/** The service as the bot runtime sees it: the domain's dependencies and the contract its sends are checked by. */
export type BotDeps = Deps & { contract: SendContract };
import { ApiError } from '../platform/errors.js';
import { isDatabaseUnavailable } from '../platform/db/errors.js';
import { normalizePhone } from '../conversations/phone.js';
import { isBsuid } from '../conversations/identity.js';
import { sendMessage } from '../messaging/send-message.js';
import { setConversationState } from '../conversations/conversations.js';
import { emitCustomEvent } from '../webhooks/custom-events.js';
import { validateCustomEventName } from '../webhooks/event-names.js';
import { readRows } from '../tables/rows.js';
import { deleteRows, updateRows, writeFiltersFromBody } from '../tables/writes.js';
import { cursorSecretOf } from '../platform/cursor.js';
import { sendBodyProblem } from './send-schema.js';
import { insertRow } from './table-insert.js';
import { showTyping } from './typing.js';
import { quotaDefaultsOf } from '../tables/quota.js';
import type { ProjectRef } from '../access/credentials.js';
import { MAX_HELPER_ARGS, MAX_OP_NAME } from '../sandbox/limits.js';
import { oneLine } from './log-text.js';
import { takeBotEmit } from './rates.js';
import { explainPreviewTable } from './preview-tables.js';

export { MAX_HELPER_ARGS };
export const MAX_LOG_LINES_PER_EVENT = 100;
export const MAX_LOG_LINE = 2000;
/** Tries at a send that met a database blink before the channel was called (about 5 s of backoff). */
export const SEND_ATTEMPTS = 6;

/** The wait before try `attempt + 1` after a database blink: doubling from 200 ms, at most 2 s. */
export const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(2000, 100 * 2 ** attempt)));
const MAX_EVENT_PAYLOAD = 64 * 1024;

export interface Capture {
  sends: unknown[];
  state: string | null;
  events: Array<{ name: string; payload: unknown }>;
  logs: Array<{ level: string; message: string }>;
}

export interface Invocation {
  projectId: string;
  /** The reference of the next send to `recipient` (phone digits or BSUID) in the event now handling that conversation, if any (lib/bot/runtime.ts). */
  sendRef?: (recipient: string) => string | undefined;
  mode: 'production' | 'preview';
  deploymentId?: string;
  capture?: Capture;
  logLines: number;
  project?: ProjectRef;
}

type Answer = { ok: true; value: unknown } | { ok: false; error: { code: string; message: string } };

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

export async function writeBotLog(deps: Pick<Deps, 'db' | 'clock'>, projectId: string, entry: { level: string; kind: string; message: string; deploymentId?: string | null }): Promise<void> {
  await deps.db.pool.query(
    // The project's 1,000 newest entries are kept (the new one is not visible to the DELETE yet).
    `WITH ins AS (INSERT INTO bot_logs (project_id, level, kind, message, deployment_id, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id)
     DELETE FROM bot_logs WHERE project_id = $1
       AND id < (SELECT id FROM bot_logs WHERE project_id = $1 ORDER BY id DESC OFFSET 998 LIMIT 1)`,
    [projectId, entry.level, entry.kind, oneLine(entry.message, MAX_LOG_LINE), entry.deploymentId ?? null, deps.clock.now()],
  );
}

export interface BotLogRow {
  id: string;
  level: string;
  kind: string;
  message: string;
  deployment_id: string | null;
  created_at: Date;
}

/** A project's newest log entries first, optionally of one level. */
export async function listBotLogs(deps: Pick<Deps, 'db'>, projectId: string, level: string | undefined, limit: number): Promise<BotLogRow[]> {
  const res = await deps.db.pool.query<BotLogRow>(
    `SELECT id::text, level, kind, message, deployment_id, created_at FROM bot_logs
     WHERE project_id = $1 AND ($2::text IS NULL OR level = $2) ORDER BY bot_logs.id DESC LIMIT $3`,
    [projectId, level ?? null, limit],
  );
  return res.rows;
}

function fail(code: string, message: string): Answer {
  return { ok: false, error: { code, message } };
}

function asApi(e: unknown): Answer {
  if (e instanceof ApiError) return fail(e.code, e.message);
  return fail('server_error', 'The helper failed unexpectedly.');
}

async function projectOf(deps: BotDeps, inv: Invocation): Promise<ProjectRef> {
  if (!inv.project) {
    const res = await deps.db.pool.query<{ id: string; name: string; status: ProjectRef['status'] }>('SELECT id, name, status FROM projects WHERE id = $1', [inv.projectId]);
    if (!res.rows[0]) throw new ApiError('PROJECT_NOT_FOUND', 'The project no longer exists.');
    inv.project = res.rows[0];
  }
  return inv.project;
}

function tableSettings(deps: BotDeps) {
  // The page cap holds for the bot's tables.select as for the API (lib/tables/rows.ts).
  return { statementTimeoutMs: deps.config.tablesStatementTimeoutMs, cursorSecret: cursorSecretOf(deps), quota: quotaDefaultsOf(deps.config), pageMaxBytes: deps.config.tablesPageMaxBytes };
}

async function perform(deps: BotDeps, inv: Invocation, op: string, args: any): Promise<Answer> {
  const schema = inv.mode === 'preview' ? 'preview' : 'public';
  switch (op) {
    case 'send': {
      // A customer whose number WhatsApp withholds is `from` = its BSUID: the scaffold's
      // sendText(message.from, …) puts it in `phone`, so it goes as `user_id`.
      if (args && typeof args === 'object' && isBsuid(args.phone) && args.user_id === undefined) {
        const { phone, ...rest } = args;
        args = { ...rest, user_id: phone };
      }
      const problem = sendBodyProblem(deps.contract, args);
      if (problem) return { ok: true, value: { ok: false, error: { code: 'invalid_request', message: problem } } };
      if (inv.capture) {
        inv.capture.sends.push(args);
        return { ok: true, value: { ok: true, id: `preview.${inv.capture.sends.length}` } };
      }
      let called = false;
      // Fixed before any try: a retry, or the event's replay after a crash, repeats this send's
      // reference. Keyed by the recipient as the event's `from` names it: a phone's digits, or the
      // BSUID of a customer without one (so a username customer's reply is not sent twice either).
      const recipient = typeof args?.phone === 'string' ? normalizePhone(args.phone) : typeof args?.user_id === 'string' ? args.user_id : undefined;
      const ref = recipient ? inv.sendRef?.(recipient) : undefined;
      for (let attempt = 1; ; attempt++) {
        try {
          const sent = await sendMessage(deps, await projectOf(deps, inv), args, { onChannelCall: () => (called = true), ref });
          return { ok: true, value: { ok: true, id: sent.id } };
        } catch (e) {
          if (!called && attempt < SEND_ATTEMPTS && isDatabaseUnavailable(e)) {
            await backoff(attempt);
            continue;
          }
          const a = asApi(e);
          return { ok: true, value: a.ok ? a.value : { ok: false, error: a.error } };
        }
      }
    }
    case 'setState': {
      const id = args?.conversationId;
      const state = args?.state;
      if (!Number.isSafeInteger(id) || id < 1) return fail('invalid_request', 'conversationId must be a positive integer.');
      if (typeof state !== 'string' || state.length < 1 || state.length > 64) return fail('invalid_request', 'state must be a string of 1 to 64 characters.');
      if (inv.capture) {
        inv.capture.state = state;
        return { ok: true, value: true };
      }
      const changed = await setConversationState(deps.db.pool, inv.projectId, BigInt(id), state, deps.clock.now());
      return changed ? { ok: true, value: true } : fail('not_found', `No conversation ${id} in this project.`);
    }
    case 'emit': {
      try {
        if (JSON.stringify(args?.payload ?? null).length > MAX_EVENT_PAYLOAD) return { ok: true, value: false };
        if (inv.capture) {
          inv.capture.events.push({ name: validateCustomEventName(args?.name), payload: args?.payload ?? null });
          return { ok: true, value: true };
        }
        const name = validateCustomEventName(args?.name);
        // Past the project's rate: false, and one bot log entry per minute says why.
        const rate = await takeBotEmit(deps, inv.projectId);
        if (!rate.allowed) {
          if (rate.count === deps.config.botEmitsPerMinute + 1) {
            await writeBotLog(deps, inv.projectId, { level: 'warn', kind: 'error', message: `emit("${name}") answered false: the bot may emit ${deps.config.botEmitsPerMinute} custom events a minute (BOT_EMITS_PER_MINUTE); more are refused until ${rate.resetAt.toISOString()}.`, deploymentId: inv.deploymentId });
          }
          return { ok: true, value: false };
        }
        await emitCustomEvent(deps, inv.projectId, { name, payload: args?.payload ?? null });
        return { ok: true, value: true };
      } catch {
        return { ok: true, value: false };
      }
    }
    case 'log': {
      const level = LEVELS.has(args?.level) ? args.level : 'info';
      const message = String(args?.message ?? '').slice(0, MAX_LOG_LINE);
      if (++inv.logLines > MAX_LOG_LINES_PER_EVENT) return { ok: true, value: false };
      if (inv.capture) inv.capture.logs.push({ level, message });
      else await writeBotLog(deps, inv.projectId, { level, kind: 'log', message, deploymentId: inv.deploymentId });
      return { ok: true, value: true };
    }
    case 'showTyping':
      return showTyping(deps, inv.projectId, args, inv.mode === 'preview');
    case 'tables.select': {
      const limit = Number.isInteger(args?.limit) ? Math.min(50, Math.max(1, args.limit)) : 20;
      const page = await readRows(deps.db.pool, tableSettings(deps), {
        projectId: inv.projectId,
        table: String(args?.table ?? ''),
        schema,
        columns: Array.isArray(args?.columns) ? args.columns.join(',') : undefined,
        filters: Array.isArray(args?.filters) ? JSON.stringify(args.filters) : undefined,
        orderBy: typeof args?.orderBy === 'string' ? args.orderBy : undefined,
        direction: args?.direction === 'desc' ? 'desc' : 'asc',
        limit,
        cursor: undefined,
      });
      return { ok: true, value: page.rows };
    }
    case 'tables.insert':
      return { ok: true, value: await insertRow(deps.db.pool, deps.config.tablesStatementTimeoutMs, inv.projectId, schema, args?.table, args?.row, quotaDefaultsOf(deps.config)) };
    case 'tables.update': {
      const r = await updateRows(deps.db.pool, tableSettings(deps), {
        projectId: inv.projectId, table: String(args?.table ?? ''), schema, filters: writeFiltersFromBody(args?.filters), set: args?.set ?? {}, dryRun: false, maxAffected: undefined,
      });
      return { ok: true, value: r.affected };
    }
    case 'tables.delete': {
      const r = await deleteRows(deps.db.pool, tableSettings(deps), {
        projectId: inv.projectId, table: String(args?.table ?? ''), schema, filters: writeFiltersFromBody(args?.filters), dryRun: false, maxAffected: undefined,
      });
      return { ok: true, value: r.affected };
    }
    default:
      return fail('invalid_request', `Unknown helper "${op}".`);
  }
}

/** One helper call: never throws; the answer is JSON text for the sandbox. */
export async function runHelper(deps: BotDeps, inv: Invocation | undefined, op: unknown, argsJson: unknown): Promise<string> {
  let answer: Answer;
  try {
    if (!inv) answer = fail('no_event', 'Helpers work only while the bot handles an event.');
    else if (typeof op !== 'string' || typeof argsJson !== 'string') answer = fail('invalid_request', 'Bad helper call.');
    else if (op.length > MAX_OP_NAME) answer = fail('invalid_request', `Helper names are limited to ${MAX_OP_NAME} characters.`);
    else if (argsJson.length > MAX_HELPER_ARGS) answer = fail('payload_too_large', `Helper arguments are limited to ${MAX_HELPER_ARGS} bytes.`);
    else answer = await perform(deps, inv, op, JSON.parse(argsJson));
  } catch (caught) {
    const e = inv?.mode === 'preview' ? await explainPreviewTable(deps.db.pool, inv.projectId, caught) : caught;
    answer = asApi(e);
    // Both texts are the bot's to choose (the name, and a JSON error quoting its arguments).
    if (!(e instanceof ApiError)) deps.logger.warn(`bot helper ${oneLine(String(op), MAX_OP_NAME)} failed: ${oneLine(e instanceof Error ? e.message : String(e), 200)}`);
  }
  return JSON.stringify(answer);
}
