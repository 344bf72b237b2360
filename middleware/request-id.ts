/**
 * Every response carries X-Request-Id. A caller's id is adopted when it is sane (1 to 128
 * characters of letters, digits, `.`, `_`, `-`, `:`), so it can be logged and echoed safely;
 * anything else is replaced by a fresh id.
 */
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';

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
  next();
}
