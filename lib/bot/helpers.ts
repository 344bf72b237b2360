/**
 * The helpers behind the bot's `__host` calls, performed with the project's own rights: one call
 * is dispatched to its entry of the host API (lib/bot/host-api.ts), which says how it is checked,
 * what a preview does and how it runs.
 *
 * Policy and why:
 * - Never throws: the answer is JSON text for the sandbox, `{ ok, value }` or `{ ok: false, error }`.
 * - Arguments are JSON of at most the entry's `maxArgs` characters (checked inside the isolate
 *   before the copy, and here again); an unknown op or bad argument is an error answer.
 * - In a preview, nothing leaves: sends, state changes, events and logs are captured; tables are
 *   the `preview` schema; secrets and http.fetch are read and performed as in production (each
 *   entry's `preview`).
 * - Every bot log entry, and any bot-chosen text the service log gets (an unparsable call's helper
 *   name), is truncated and has its control characters escaped (lib/bot/log-text.ts): no bot can
 *   write a newline, so no forged line; the project's secret values are redacted from both
 *   (lib/bot/secrets.ts).
 */
import AjvModule, { type ValidateFunction } from 'ajv';
import { ApiError } from '../platform/errors.js';
import { MAX_HELPER_ARGS, MAX_OP_NAME } from '../sandbox/limits.js';
import { oneLine } from './log-text.js';
import { withSpan } from '../platform/tracing/spans.js';
import { explainPreviewTable } from './preview-tables.js';
import { hostOperation, type HostOperation } from './host-api.js';
import { asAnswer } from './ops-messaging.js';
import { redactorFor } from './secrets.js';
import { fail, type Answer, type BotDeps, type CallContext, type Invocation } from './host-types.js';

export type { BotDeps, Capture, Invocation } from './host-types.js';
export { writeBotLog, listBotLogs, MAX_LOG_LINE, type BotLogRow } from './bot-log.js';
export { backoff, MAX_LOG_LINES_PER_EVENT, SEND_ATTEMPTS } from './ops-messaging.js';
export { MAX_HELPER_ARGS } from '../sandbox/limits.js';

const Ajv = (AjvModule as unknown as { default?: typeof AjvModule }).default ?? AjvModule;
const ajv = new (Ajv as any)({ strict: false, allErrors: false });
const validators = new WeakMap<HostOperation, ValidateFunction>();

/** Undefined when the arguments fit the entry's schema, else one line naming the field. */
function argsProblem(op: HostOperation, args: unknown): string | undefined {
  let v = validators.get(op);
  if (!v) validators.set(op, (v = ajv.compile(op.args) as ValidateFunction));
  if (v(args)) return undefined;
  const e = v.errors?.[0];
  return e ? `${e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : 'arguments'} ${e.message ?? 'is invalid'}` : 'invalid arguments';
}

async function perform(deps: BotDeps, inv: Invocation, name: string, argsJson: string, call: CallContext): Promise<Answer> {
  const op = hostOperation(name);
  const maxArgs = op?.maxArgs ?? MAX_HELPER_ARGS;
  if (argsJson.length > maxArgs) return fail('payload_too_large', `Helper arguments are limited to ${maxArgs} bytes.`);
  // Parsed before the name is looked up: unparsable arguments are reported (and logged) as such.
  const args = JSON.parse(argsJson);
  if (!op) return fail('invalid_request', `Unknown helper "${name}".`);
  if (op.validate === 'schema') {
    const problem = argsProblem(op, args);
    if (problem) return fail('invalid_request', `${name}: ${problem}.`);
  }
  return op.run(deps, inv, args, call);
}

/** One helper call: never throws; the answer is JSON text for the sandbox. */
export async function runHelper(deps: BotDeps, inv: Invocation | undefined, op: unknown, argsJson: unknown, call: CallContext = {}): Promise<string> {
  let answer: Answer;
  try {
    if (!inv) answer = fail('no_event', 'Helpers work only while the bot handles an event.');
    else if (typeof op !== 'string' || typeof argsJson !== 'string') answer = fail('invalid_request', 'Bad helper call.');
    else if (op.length > MAX_OP_NAME) answer = fail('invalid_request', `Helper names are limited to ${MAX_OP_NAME} characters.`);
    else {
      // Named by the helper when it is one (the name is the bot's to choose, so an unknown one is not copied).
      const helper = hostOperation(op) ? op : 'unknown';
      const run = () => withSpan(`bot.helper ${helper}`, { 'bot.helper': helper, 'project.id': inv.projectId }, () => perform(deps, inv, op, argsJson, call));
      // An effect runs once per event: a rerun is answered from the event's journal.
      if (inv.journal && hostOperation(op)?.journaled) return await inv.journal.call(op, argsJson, async () => JSON.stringify(await run()));
      answer = await run();
    }
  } catch (caught) {
    const e = inv?.mode === 'preview' ? await explainPreviewTable(deps.db, inv.projectId, caught) : caught;
    answer = asAnswer(e);
    // Both texts are the bot's to choose (the name, and a JSON error quoting its arguments).
    if (!(e instanceof ApiError)) {
      const redact = inv ? await redactorFor(deps, inv.projectId).catch(() => (t: string) => t) : (t: string) => t;
      deps.logger.warn(`bot helper ${oneLine(redact(String(op)), MAX_OP_NAME)} failed: ${oneLine(redact(e instanceof Error ? e.message : String(e)), 200)}`);
    }
  }
  return JSON.stringify(answer);
}
