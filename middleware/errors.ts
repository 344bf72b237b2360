/**
 * The one place that writes the failure envelope `{ success: false, error, request_id }`.
 * It maps our ApiError, body-parser errors and validator errors to the spec's codes; anything
 * else is a 500 `server_error` whose detail goes to the log, never to the client.
 */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import { sendJson } from '../http/json-response.js';
import type { Logger } from '../lib/platform/logger.js';
import { isDatabaseUnavailable } from '../lib/platform/db/errors.js';
import { createLogThrottle } from '../lib/platform/counters.js';

interface FieldError {
  field: string;
  message: string;
}

export function sendError(req: Request, res: Response, err: ApiError): void {
  if (err.headers) res.set(err.headers);
  // The code, for the per-project error counts (middleware/access-log.ts); never the message.
  res.locals.errorCode = err.code;
  const error: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details !== undefined) error.details = err.details;
  sendJson(req, res, err.status, { success: false, error, request_id: req.requestId });
}

/** Validator errors name fields as paths like `/body/state` or `.query.limit`. */
function fieldName(path: unknown): string {
  return String(path ?? '')
    .replace(/^[./]?(body|query|params|path|headers)[./]?/, (_, where) => (where === 'body' ? '' : `${where}.`))
    .replace(/\//g, '.')
    .replace(/^\./, '') || 'body';
}

const A_TYPE: Record<string, string> = { string: 'a string', number: 'a number', integer: 'an integer', boolean: 'a boolean', null: 'null', object: 'an object', array: 'an array' };

/**
 * A value that matches no branch of a oneOf/anyOf gets one error per branch from the validator
 * ("must be number", "must be boolean", ...). They become one message saying what the field may
 * be: "must be a string of at most 1000 characters, a number, a boolean or null".
 */
function mergeAlternatives(fields: FieldError[]): FieldError[] {
  const byField = new Map<string, FieldError[]>();
  for (const f of fields) byField.set(f.field, [...(byField.get(f.field) ?? []), f]);
  const out: FieldError[] = [];
  for (const [field, group] of byField) {
    if (!group.some((f) => /must match (exactly one|a) schema in (oneOf|anyOf)/.test(f.message))) {
      out.push(...group);
      continue;
    }
    const options: string[] = [];
    for (const { message } of group) {
      const type = /^must be (\w+)$/.exec(message)?.[1];
      const max = /^must NOT have more than (\d+) characters$/.exec(message)?.[1];
      const min = /^must NOT have fewer than (\d+) characters$/.exec(message)?.[1];
      if (max) options.push(`a string of at most ${Number(max).toLocaleString("en-US")} characters`);
      else if (min) options.push(`a string of at least ${Number(min).toLocaleString("en-US")} characters`);
      else if (type && A_TYPE[type]) options.push(A_TYPE[type]);
    }
    // A string bound replaces the plain "a string".
    const kinds = options.some((o) => o.startsWith('a string of')) ? options.filter((o) => o !== 'a string') : options;
    const unique = [...new Set(kinds)];
    if (unique.length === 0) {
      out.push(...group);
      continue;
    }
    const list = unique.length === 1 ? unique[0] : `${unique.slice(0, -1).join(', ')} or ${unique[unique.length - 1]}`;
    out.push({ field, message: `must be ${list}` });
  }
  return out;
}

function fromValidator(err: any): ApiError | undefined {
  const status = err?.status;
  if (typeof status !== 'number' || !Array.isArray(err.errors)) return undefined;
  const fields: FieldError[] = mergeAlternatives(err.errors.map((e: any) => ({ field: fieldName(e.path), message: String(e.message) })));
  const summary = fields.map((f) => `${f.field} ${f.message}`).join('; ');
  switch (status) {
    case 400: {
      // A malformed path id names no resource: that is the answer, whatever else is wrong.
      const inPath = err.errors.some((e: any) => /^[./]?(params|path)\b/.test(String(e.path ?? '')));
      return new ApiError(inPath ? 'invalid_id' : 'invalid_request', `Invalid request: ${summary}`, { fields });
    }
    case 404:
      return new ApiError('not_found', 'No such endpoint.');
    case 405: {
      const allow = err.headers?.Allow ?? err.headers?.allow;
      return new ApiError('method_not_allowed', 'Method not allowed on this endpoint.', undefined, allow ? { Allow: allow } : undefined);
    }
    case 413:
      return new ApiError('payload_too_large', 'Request body too large.');
    case 415:
      return new ApiError('unsupported_media_type', `Unsupported media type: ${summary}`);
    default:
      return undefined;
  }
}

function fromBodyParser(err: any): ApiError | undefined {
  switch (err?.type) {
    case 'entity.parse.failed':
      return new ApiError('invalid_json', 'Request body is not valid JSON.');
    case 'entity.too.large':
      return new ApiError('payload_too_large', `Request body exceeds ${err.limit} bytes.`, { limit: err.limit });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('unsupported_media_type', String(err.message));
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new ApiError('bad_request', 'Request body could not be read.');
    default:
      return undefined;
  }
}

export function apiErrorOf(err: unknown): ApiError | undefined {
  if (err instanceof ApiError) return err;
  return fromBodyParser(err) ?? fromValidator(err);
}

/** Seconds a client should wait before retrying while the database is out of reach. */
const DATABASE_RETRY_AFTER_S = 2;

export function errorHandler(logger: Logger) {
  // In an outage every request fails the same way: one line per interval with a count, not a
  // stack per request (thousands of lines in a 15 s blink).
  const throttles = new Map<string, ReturnType<typeof createLogThrottle>>();
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    let apiError = apiErrorOf(err);
    if (!apiError && isDatabaseUnavailable(err)) {
      const cause = err instanceof Error ? err.message : String(err);
      const key = String((err as { code?: unknown }).code ?? cause.slice(0, 80));
      let throttle = throttles.get(key);
      if (!throttle) throttles.set(key, (throttle = createLogThrottle(10_000)));
      throttle((suppressed) =>
        logger.warn('database unavailable; answering 503 service_unavailable', { cause, request_id: req.requestId, suppressedSinceLast: suppressed }),
      );
      apiError = new ApiError(
        'service_unavailable',
        'The database is unavailable for now. Retry after the Retry-After delay; nothing was changed.',
        undefined,
        { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
      );
    }
    if (!apiError) {
      logger.error('unhandled error', {
        request_id: req.requestId,
        error: err instanceof Error ? err.stack ?? err.message : String(err),
      });
      apiError = new ApiError('server_error', 'Internal error. Retry with backoff; quote the request id if it persists.');
    }
    sendError(req, res, apiError);
  };
}

export function notFound(req: Request, _res: Response, next: NextFunction): void {
  next(new ApiError('not_found', `No such endpoint: ${req.method} ${req.path}`));
}
