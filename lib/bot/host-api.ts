/**
 * The bot's host API: every operation a bot's code can ask of the service, one typed entry each
 * (name, argument and result JSON schemas, limits, what a preview does, how it runs).
 *
 * Everything else follows from this table, never kept beside it by hand:
 * - the dispatcher (`runHelper`, lib/bot/helpers.ts) finds the entry, checks the arguments against
 *   its schema where the entry says so, and runs it;
 * - the sandbox's bridge (lib/sandbox/sandbox.ts) gets the names and the argument bounds
 *   (`hostOpBounds`): a call to another name, or with larger arguments, is refused inside the
 *   isolate before anything is copied out;
 * - the scaffold's types (scaffold/src/platform/generated/host-api.ts) and the `x-bot-helpers`
 *   section of runtime-openapi.yaml are generated from it (`npm run generate`, scripts/generate-host-api.ts);
 *   `npm run generate:check` fails when either is stale.
 *
 * `validate: 'schema'`: the dispatcher refuses arguments its schema does not accept
 * (`invalid_request`, naming the field). `validate: 'runner'`: the runner checks them itself, as
 * the helpers did before this table (their answers to bad arguments are part of their contract:
 * `send` answers an error value, `emit` false, `tables.*` the tables API's codes).
 */
import { MAX_HELPER_ARGS, MAX_HELPER_RESULT } from '../sandbox/limits.js';
import type { HostOpBounds } from '../sandbox/sandbox.js';
import type { Answer, BotDeps, CallContext, Invocation } from './host-types.js';
import { MAX_EVENT_PAYLOAD, MAX_LOG_LINES_PER_EVENT, runEmit, runLog, runSend, runSetState, runShowTyping } from './ops-messaging.js';
import { runDelete, runInsert, runSelect, runUpdate } from './ops-tables.js';
import { runSecretsGet } from './secrets.js';
import { FETCH_METHODS, MAX_FETCH_TIMEOUT_MS, MAX_REDIRECTS, runHttpFetch, type FetchArgs } from './http-fetch.js';
import { MAX_LOG_LINE } from './bot-log.js';
import { runFilesGet, runFilesMedia } from './ops-files.js';
import { runCallAction } from './ops-calls.js';

/** The subset of JSON Schema the table uses (scripts/generate-host-api.ts turns it into TypeScript). */
export interface JsonSchema {
  type?: 'string' | 'number' | 'integer' | 'boolean' | 'null' | 'object' | 'array' | Array<'string' | 'number' | 'integer' | 'boolean' | 'null' | 'object' | 'array'>;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  enum?: Array<string | number | boolean | null>;
  const?: string | number | boolean | null;
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  /** A type of the scaffold (scaffold/src/platform/runtime/types.ts) the generated TypeScript names instead. */
  'x-ts-type'?: string;
}

/** What a preview run (POST /v1/bot/preview) does with the operation. */
export type PreviewBehaviour =
  /** Not performed: recorded in the preview's answer. */
  | 'captured'
  /** Checked and answered, with no effect (no customer is reached). */
  | 'answered'
  /** Performed on the `preview` schema instead of `public`. */
  | 'preview_schema'
  /** Performed as in production (counted in the same limits). */
  | 'performed';

export interface HostOperation<A = any> {
  summary: string;
  args: JsonSchema;
  result: JsonSchema;
  /** Largest JSON arguments, in characters: checked in the isolate before the copy, and here. */
  maxArgs: number;
  /** Largest JSON answer, in characters, copied into the isolate (the sandbox refuses a larger one with `result_too_large`). */
  maxResult: number;
  /** Limits the operation keeps besides the sizes, as the reference states them. */
  limits: string;
  preview: PreviewBehaviour;
  /** What a preview does, in words (the reference and the scaffold's comments). */
  previewNote: string;
  /** Whether the dispatcher checks the arguments against `args`, or the runner does. */
  validate: 'schema' | 'runner';
  /**
   * It takes effect (or reads what a replay must see the same): its answers are recorded per event
   * and a rerun of the event is answered from the record instead of running it again (lib/bot/journal.ts).
   */
  journaled: boolean;
  run(deps: BotDeps, inv: Invocation, args: A, call: CallContext): Promise<Answer>;
}

const str = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
const object = (properties: Record<string, JsonSchema>, required: string[], description?: string): JsonSchema => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties,
  required,
  additionalProperties: false,
});
const errorValue: JsonSchema = object({ code: str('A machine-readable code.'), message: str('What went wrong, for people.') }, ['code', 'message']);
const tableFilter: JsonSchema = { type: 'object', description: 'A filter on one column.', 'x-ts-type': 'TableFilter' };
const tableRow: JsonSchema = { type: 'object', description: 'A row: column name to value.', additionalProperties: true, 'x-ts-type': 'TableRow' };
const filters: JsonSchema = { type: 'array', description: 'Rows matching every filter.', items: tableFilter };
const tableName = str("A table of the project's (public in production, preview in a preview run).");
/** What the three row writes (insert, update, delete) share: sizes, preview and journaling. */
const TABLE_WRITE = {
  maxArgs: MAX_HELPER_ARGS,
  maxResult: MAX_HELPER_RESULT,
  preview: 'preview_schema',
  previewNote: 'Writes the `preview` schema.',
  validate: 'runner',
  journaled: true,
} as const;
/** What update and delete share besides: each changes the rows matching every filter and answers how many. */
const FILTERED_TABLE_WRITE = {
  ...TABLE_WRITE,
  result: { type: 'integer', minimum: 0 },
  limits: "The tables API's write rules (at least one filter).",
} as const;

/** The table. Its keys are the operation names a bot calls (`__host` op names). */
export const HOST_API = {
  send: {
    summary: 'Sends a message the way of POST /v1/messages (contract validation, media, daily quota, 24-hour window, consent); never throws.',
    args: { type: 'object', description: 'The body of POST /v1/messages (openapi.yaml, SendMessageRequest).', 'x-ts-type': 'SendMessageRequest' },
    result: {
      oneOf: [
        object({ ok: { const: true }, id: str('The message id.') }, ['ok', 'id']),
        object({ ok: { const: false }, error: errorValue }, ['ok', 'error']),
      ],
    },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: "The project's daily send quota and the send path's rules; a send to the customer being answered is not sent twice when its event is replayed.",
    preview: 'captured',
    previewNote: "Recorded in the preview's `sends`, answered with a `preview.N` id; nothing is sent.",
    validate: 'runner',
    journaled: true,
    run: (deps, inv, args) => runSend(deps, inv, args),
  },
  setState: {
    summary: "Sets a conversation's state (any value of 1 to 64 characters: the project's own states).",
    args: object({ conversationId: { type: 'integer', minimum: 1, description: 'The conversation, from the event.' }, state: str('The new state.', { minLength: 1, maxLength: 64 }) }, ['conversationId', 'state']),
    result: { const: true },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: "A conversation of the project (`not_found` otherwise).",
    preview: 'captured',
    previewNote: "Recorded in the preview's `state`; no conversation changes.",
    validate: 'runner',
    journaled: true,
    run: (deps, inv, args) => runSetState(deps, inv, args),
  },
  emit: {
    summary: 'Raises a custom event for the webhooks subscribed to its name; true when accepted, never throws.',
    args: object({ name: str('Letters, digits, `.`, `_`, `-`; at most 100 characters; not a platform event name.'), payload: { description: 'Any JSON value (null when absent), at most 64 KiB.' } }, ['name']),
    result: { type: 'boolean' },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: `Payload at most ${MAX_EVENT_PAYLOAD} characters of JSON; BOT_EMITS_PER_MINUTE per project (false past it).`,
    preview: 'captured',
    previewNote: "Recorded in the preview's `events`; nothing is delivered, nothing counted.",
    validate: 'runner',
    journaled: true,
    run: (deps, inv, args) => runEmit(deps, inv, args),
  },
  log: {
    summary: "Writes a line to the project's bot log; false past the per-event cap.",
    args: object({ level: { type: 'string', enum: ['debug', 'info', 'warn', 'error'] }, message: str('The line (control characters are stored escaped; secret values redacted).') }, ['level', 'message']),
    result: { type: 'boolean' },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: `${MAX_LOG_LINE} characters a line; ${MAX_LOG_LINES_PER_EVENT} lines per event (counted across the events a sandbox runs together).`,
    preview: 'captured',
    previewNote: "Recorded in the preview's `logs`.",
    validate: 'runner',
    journaled: false,
    run: (deps, inv, args) => runLog(deps, inv, args),
  },
  showTyping: {
    summary: "Marks the customer's message read and shows a typing indicator (cleared by the reply or after 25 s).",
    args: object({ messageId: str('The id of the message being answered.', { minLength: 1, maxLength: 256 }) }, ['messageId']),
    result: { const: true },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: 'A message this project received (`not_found` otherwise).',
    preview: 'answered',
    previewNote: 'Checked and answered true; no read mark is sent.',
    validate: 'runner',
    journaled: true,
    run: (deps, inv, args) => runShowTyping(deps, inv, args),
  },
  'tables.select': {
    summary: "Rows of one of the project's tables matching every filter.",
    args: object({
      table: tableName,
      columns: { type: 'array', items: { type: 'string' }, description: 'The columns to return (all by default).' },
      filters,
      orderBy: str('The column to order by.'),
      direction: { type: 'string', enum: ['asc', 'desc'] },
      limit: { type: 'integer', minimum: 1, maximum: 50, description: 'At most this many rows (default 20).' },
    }, ['table']),
    result: { type: 'array', items: tableRow },
    maxArgs: MAX_HELPER_ARGS,
    maxResult: MAX_HELPER_RESULT,
    limits: 'At most 50 rows; the page byte cap (TABLES_PAGE_MAX_BYTES) and statement timeout of the tables API.',
    preview: 'preview_schema',
    previewNote: 'Reads the `preview` schema.',
    validate: 'runner',
    journaled: false,
    run: (deps, inv, args) => runSelect(deps, inv, args),
  },
  'tables.insert': {
    summary: 'Inserts one row; answers it as stored.',
    args: object({ table: tableName, row: tableRow }, ['table', 'row']),
    result: tableRow,
    limits: "The schema's storage quota.",
    ...TABLE_WRITE,
    run: (deps, inv, args) => runInsert(deps, inv, args),
  },
  'tables.update': {
    summary: 'Updates the rows matching every filter; answers how many changed.',
    args: object({ table: tableName, filters, set: tableRow }, ['table', 'filters', 'set']),
    ...FILTERED_TABLE_WRITE,
    run: (deps, inv, args) => runUpdate(deps, inv, args),
  },
  'tables.delete': {
    summary: 'Deletes the rows matching every filter; answers how many went.',
    args: object({ table: tableName, filters }, ['table', 'filters']),
    ...FILTERED_TABLE_WRITE,
    run: (deps, inv, args) => runDelete(deps, inv, args),
  },
  'secrets.get': {
    summary: "The value of one of the project's secrets, or null when there is none by that name. Read at each call: a changed secret is seen from the next event, without a redeploy.",
    args: object({ name: str('Like SHOP_API_TOKEN.', { pattern: '^[A-Z][A-Z0-9_]{0,63}$' }) }, ['name']),
    result: { type: ['string', 'null'] },
    maxArgs: 1024,
    maxResult: MAX_HELPER_RESULT,
    limits: 'BOT_SECRETS_MAX secrets per project, BOT_SECRET_MAX_BYTES bytes each (set by operators). Any value the bot prints into its log is written `[secret NAME]`.',
    preview: 'performed',
    previewNote: 'Reads the same secrets, except those marked production-only (null in a preview).',
    validate: 'schema',
    journaled: false,
    run: (deps, inv, args: { name: string }) => runSecretsGet(deps, inv, args),
  },
  'http.fetch': {
    summary: "Calls an https URL through the service (the isolate has no network); never throws: `{ ok: true, status, headers, body }` once an HTTP answer arrived (whatever its status), or `{ ok: false, error }`.",
    args: object({
      url: str('An absolute https URL (http only to loopback under DEV_ALLOW_PRIVATE_TARGETS).', { minLength: 1, maxLength: 8192 }),
      method: { type: 'string', enum: [...FETCH_METHODS], description: 'Default GET.' },
      headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Request headers (not Host, Content-Length, Connection, User-Agent…).' },
      body: { type: ['string', 'null'], description: 'A UTF-8 text body (not with GET or HEAD).' },
      timeoutMs: { type: 'integer', minimum: 1, maximum: MAX_FETCH_TIMEOUT_MS, description: `Default BOT_HTTP_TIMEOUT_MS (3000); ends 1 s before the event's deadline, so the bot can still answer.` },
    }, ['url']),
    result: {
      oneOf: [
        object({
          ok: { const: true },
          status: { type: 'integer', description: 'The HTTP status.' },
          headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Answer headers, lower-case names (no Set-Cookie).' },
          body: str('The body as UTF-8 text.'),
        }, ['ok', 'status', 'headers', 'body']),
        object({ ok: { const: false }, error: errorValue }, ['ok', 'error']),
      ],
    },
    // A 1 MiB body, JSON-escaped, with the other arguments.
    maxArgs: 2 * 1024 * 1024 + 64 * 1024,
    maxResult: 2 * 1024 * 1024 + 64 * 1024,
    limits: `Public https hosts only (\`forbidden_target\`), the project's allowlist if an operator set one; at most ${MAX_REDIRECTS} redirects; timeout default 5 s, at most ${MAX_FETCH_TIMEOUT_MS / 1000} s and within the event's deadline (\`timeout\`); bodies at most BOT_HTTP_MAX_BODY_BYTES (1 MiB: \`request_too_large\`, \`response_too_large\`); BOT_HTTP_PER_MINUTE calls a minute and BOT_HTTP_CONCURRENCY at once per project (\`rate_limited\`).`,
    preview: 'performed',
    previewNote: 'Performed as in production (a preview reads the business systems too), within the same limits.',
    validate: 'schema',
    journaled: true,
    run: (deps, inv, args: FetchArgs, call) => runHttpFetch(deps, inv, args, call),
  },
  'files.get': {
    summary: "Reads one of the project's stored files (uploaded by operators); never throws: `{ ok: true, name, contentType, size, text }` for plain text (JSON and CSV included), `{ ok: true, name, contentType, size, base64 }` for anything else, or `{ ok: false, error }` (`not_found`, `file_too_large`, `invalid_request`).",
    args: object({ name: str('A file name of the project (letters, digits, `.`, `_`, `-`; never a path).', { minLength: 1, maxLength: 128 }) }, ['name']),
    result: {
      oneOf: [
        object({ ok: { const: true }, name: str('The file name.'), contentType: str('Its type, verified from the bytes.'), size: { type: 'integer', description: 'Bytes.' }, text: str('The content (UTF-8), for text/plain.') }, ['ok', 'name', 'contentType', 'size', 'text']),
        object({ ok: { const: true }, name: str('The file name.'), contentType: str('Its type, verified from the bytes.'), size: { type: 'integer', description: 'Bytes.' }, base64: str('The bytes, base64-encoded, for any other type.') }, ['ok', 'name', 'contentType', 'size', 'base64']),
        object({ ok: { const: false }, error: errorValue }, ['ok', 'error']),
      ],
    },
    maxArgs: 1024,
    // A 1 MiB file, base64-encoded, with its description.
    maxResult: 2 * 1024 * 1024 + 64 * 1024,
    limits: "The project's files only (another project's name is `not_found`); at most BOT_FILE_READ_MAX_BYTES (1 MiB) a file (`file_too_large`, never a part of it).",
    preview: 'performed',
    previewNote: 'Reads the same files.',
    validate: 'schema',
    journaled: true,
    run: (deps, inv, args: { name: string }) => runFilesGet(deps, inv, args),
  },
  'files.media': {
    summary: "Turns one of the project's stored files into a media asset (uploaded to the channel once, reused until it expires there or the file is replaced) and answers its slug and kind for a send; never throws. `files.sendAsMedia` sends it.",
    args: object({ name: str('A file name of the project.', { minLength: 1, maxLength: 128 }) }, ['name']),
    result: {
      oneOf: [
        object({ ok: { const: true }, slug: str('The media asset to send by (`media: { slug }`).'), kind: { type: 'string', enum: ['image', 'video', 'audio', 'document'], description: 'The message type to send it as.' } }, ['ok', 'slug', 'kind']),
        object({ ok: { const: false }, error: errorValue }, ['ok', 'error']),
      ],
    },
    maxArgs: 1024,
    maxResult: 4096,
    limits: "The project's files only (`not_found`); the media kind's ceiling (image 5 MB, video and audio 16 MB, document 100 MB: `file_too_large`); a configured channel.",
    preview: 'performed',
    previewNote: 'Makes (or reuses) the media asset as in production; the send that follows is captured as every preview send.',
    validate: 'schema',
    journaled: true,
    run: (deps, inv, args: { name: string }) => runFilesMedia(deps, inv, args),
  },
  'calls.reject': callOp('reject', "Rejects a customer's call that is ringing (the way of POST /v1/calls/{id}/actions `reject`); never throws: `{ ok: true, call }` or `{ ok: false, error }` (`not_found`, `conflict` when the call is no longer ringing: already rejected, answered or ended)."),
  'calls.terminate': callOp('terminate', 'Hangs up a live call (the way of POST /v1/calls/{id}/actions `terminate`); never throws: `{ ok: true, call }` or `{ ok: false, error }` (`not_found`, `conflict` when the call already ended).'),
} satisfies Record<string, HostOperation>;

/** A call action as an operation: one path with the API's action (lib/bot/ops-calls.ts). */
function callOp(action: 'reject' | 'terminate', summary: string): HostOperation<{ callId: string }> {
  return {
    summary,
    args: object({ callId: str("The call's id (`call.id` of the event, `wacid.…`), or the service's numeric id.", { minLength: 1, maxLength: 256 }) }, ['callId']),
    result: {
      oneOf: [
        object({ ok: { const: true }, call: object({ id: str('The call id.'), status: str(`The call's status now (${action === 'reject' ? 'rejected' : 'as it was: the end comes with the channel\'s notification'}).`) }, ['id', 'status']) }, ['ok', 'call']),
        object({ ok: { const: false }, error: errorValue }, ['ok', 'error']),
      ],
    },
    maxArgs: 1024,
    maxResult: 4096,
    limits: "The project's calls only (`not_found`); the call's status must allow it (`conflict`); the channel's refusals as the API's. Once per event: a rerun of the event does not act twice.",
    preview: 'answered',
    previewNote: 'Checks that the call exists and answers it unchanged; nothing reaches WhatsApp.',
    validate: 'schema',
    journaled: true,
    run: (deps, inv, args) => runCallAction(deps, inv, action, args),
  };
}

export type HostOpName = keyof typeof HOST_API;

export function hostOperation(name: string): HostOperation | undefined {
  return Object.hasOwn(HOST_API, name) ? (HOST_API as Record<string, HostOperation>)[name] : undefined;
}

/** What the sandbox's bridge needs of the table: each name's argument and answer bounds. */
export function hostOpBounds(): HostOpBounds {
  return Object.fromEntries(Object.entries(HOST_API as Record<string, HostOperation>).map(([name, op]) => [name, { maxArgs: op.maxArgs, maxResult: op.maxResult, effect: op.journaled }]));
}
