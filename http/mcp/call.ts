/**
 * Runs a tool call as the HTTP call of its operation, through the same app: the request is
 * injected in process (./inject.ts), so it meets exactly what an HTTP caller meets (the
 * credential, the per-credential rate limit, the project selection, the scopes of
 * `x-required-scopes`, request validation, the Idempotency-Key rule, the handler, the error
 * envelope, the access log and the metrics), without a second path to the data.
 */
import type { RequestListener } from 'node:http';
import { BODY_ARG, CURSOR_ARG, PROJECT_ARG, type ToolDef } from './tools.js';
import { offsetOf, withNextCursor } from './paging.js';
import { inject } from './inject.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../../lib/platform/json-depth.js';

export interface CallContext {
  /** The caller's Authorization header, passed on as is. */
  authorization: string;
  /** The caller's X-Service-Project header, when the `project` argument does not name one. */
  projectHeader?: string;
  /** The caller's address, so per-address rules and logs see the agent, not the loopback. */
  remoteAddress?: string;
  /** The proxy headers of the MCP request, so `trust proxy` judges the tool call as it judged that request. */
  forwarded?: Record<string, string>;
}

export interface ToolError {
  code: string;
  message: string;
  request_id?: string;
  details?: unknown;
}

export type ToolOutcome = { ok: true; data: unknown; requestId?: string } | { ok: false; error: ToolError };

type Primitive = string | number | boolean;
const isPrimitive = (v: unknown): v is Primitive => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';

function refused(message: string, details?: unknown): ToolOutcome {
  return { ok: false, error: { code: 'invalid_request', message, ...(details === undefined ? {} : { details }) } };
}

export async function callTool(app: RequestListener, tool: ToolDef, rawArgs: unknown, ctx: CallContext): Promise<ToolOutcome> {
  const args = (rawArgs ?? {}) as Record<string, unknown>;
  if (typeof args !== 'object' || Array.isArray(args)) return refused('Tool arguments must be an object.');
  // Before anything walks them (JSON.stringify below, the pipeline's validator): each argument's
  // value nests at most as deep as a JSON body over HTTP may.
  if (nestsDeeperThan(args, MAX_JSON_DEPTH + 1)) {
    return refused(`Tool arguments nest too deeply: an argument's value may nest at most ${MAX_JSON_DEPTH} levels of arrays and objects.`, { max_depth: MAX_JSON_DEPTH });
  }
  // The shape a URL and headers can carry is checked here; every value rule is the pipeline's.
  const known = new Set([PROJECT_ARG, ...tool.params.filter((p) => !p.internal).map((p) => p.arg), ...(tool.body ? [BODY_ARG] : []), ...(tool.offsetPaged ? [CURSOR_ARG] : [])]);
  const unknown = Object.keys(args).filter((k) => !known.has(k));
  if (unknown.length) return refused(`Unknown argument${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 5).join(', ')}.`, { unknown: unknown.slice(0, 20) });
  // An offset-paged operation's tool takes a cursor (./paging.ts): the offset it stands for, or the first page.
  let offset: number | undefined;
  if (tool.offsetPaged && args[CURSOR_ARG] !== undefined && args[CURSOR_ARG] !== null) {
    offset = offsetOf(args[CURSOR_ARG]);
    if (offset === undefined) return { ok: false, error: { code: 'invalid_cursor', message: 'The cursor was not issued by this service: pass the `nextCursor` of the previous page, unchanged.', details: { field: CURSOR_ARG } } };
  }

  const headers: Record<string, string> = { ...ctx.forwarded, authorization: ctx.authorization, accept: 'application/json' };
  const project = args[PROJECT_ARG];
  if (project !== undefined) {
    if (typeof project !== 'string') return refused('`project` must be a string (a project id).');
    headers['x-service-project'] = project;
  } else if (ctx.projectHeader !== undefined) {
    headers['x-service-project'] = ctx.projectHeader;
  }

  let path = tool.operation.path;
  const query = new URLSearchParams();
  for (const p of tool.params) {
    const value = p.internal ? offset : args[p.arg];
    if (value === undefined || value === null) continue;
    if (p.in === 'query' && Array.isArray(value) && value.every(isPrimitive)) {
      for (const v of value) query.append(p.name, String(v));
      continue;
    }
    if (!isPrimitive(value)) return refused(`\`${p.arg}\` must be a string, number or boolean.`, { field: p.arg });
    if (p.in === 'path') path = path.replace(`{${p.name}}`, String(value).split('/').map(encodeURIComponent).join('/'));
    else if (p.in === 'query') query.append(p.name, String(value));
    else headers[p.name.toLowerCase()] = String(value);
  }
  // A required path parameter left out reaches the pipeline empty, which answers for it as over HTTP.
  path = path.replace(/\{[^}]+\}/g, '');
  const search = query.toString();

  let payload: string | undefined;
  if (tool.body && args[BODY_ARG] !== undefined) {
    const body = args[BODY_ARG];
    if (tool.body.contentType.startsWith('text/')) {
      if (typeof body !== 'string') return refused('`body` must be a string of ' + tool.body.contentType + ' text.', { field: BODY_ARG });
      payload = body;
    } else {
      payload = JSON.stringify(body);
    }
    headers['content-type'] = tool.body.contentType;
  }

  const res = await inject(app, {
    method: tool.operation.method.toUpperCase(),
    url: search ? `${path}?${search}` : path,
    headers,
    payload,
    remoteAddress: ctx.remoteAddress,
  });
  const outcome = outcomeOf(res.statusCode, res.headers['content-type'], res.payload, res.headers['x-request-id']);
  return outcome.ok && tool.offsetPaged ? { ...outcome, data: withNextCursor(outcome.data) } : outcome;
}

function outcomeOf(status: number, contentType: unknown, payload: string, requestId: unknown): ToolOutcome {
  const id = typeof requestId === 'string' ? requestId : undefined;
  let body: any;
  try {
    body = String(contentType ?? '').includes('json') ? JSON.parse(payload) : undefined;
  } catch {
    body = undefined;
  }
  if (status < 300 && body?.success === true) return { ok: true, data: body.data, requestId: id };
  if (body?.success === false && body.error && typeof body.error.code === 'string') {
    return { ok: false, error: { code: body.error.code, message: String(body.error.message ?? ''), request_id: body.request_id ?? id, ...(body.error.details !== undefined ? { details: body.error.details } : {}) } };
  }
  // Not the envelope (a 2xx of another shape, or a failure before the pipeline): said as it is.
  return { ok: false, error: { code: status >= 500 ? 'internal_error' : 'invalid_request', message: `The operation answered HTTP ${status} without the API's envelope.`, request_id: id } };
}
