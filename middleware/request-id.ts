/**
 * Every response carries X-Request-Id. A caller's id is adopted when it is sane (1 to 128
 * characters of letters, digits, `.`, `_`, `-`, `:`), so it can be logged and echoed safely;
 * anything else is replaced by a fresh id. Traced (docs/traces.md), the rest of the request runs
 * with that id in its context, so every log line written meanwhile names it, and the id is on the
 * trace's server span.
 */
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { inRequest } from '../lib/platform/log-context.js';
import { tagRequest } from '../lib/platform/tracing/spans.js';

const SANE = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

export function newRequestId(): string {
  // randomUUID draws from a cached entropy pool: much cheaper per request than randomBytes.
  return 'req_' + randomUUID().replaceAll('-', '');
}

export function requestId(req: Request, res: Response, next: NextFunction): void {
  const offered = req.headers['x-request-id'];
  req.requestId = typeof offered === 'string' && SANE.test(offered) ? offered : newRequestId();
  res.setHeader('X-Request-Id', req.requestId);
  tagRequest(req, req.requestId);
  inRequest(req.requestId, next);
}
