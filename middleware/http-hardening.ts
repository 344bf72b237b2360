/**
 * HTTP hardening for every route (/v1, /admin, the channel webhook, the runtime API):
 * - security headers for a JSON API: `nosniff` (a JSON body is never sniffed into HTML or script),
 *   `Cache-Control: no-store` (responses carry secrets, such as a new key or signing secret, and
 *   per-project data: no shared or browser cache may keep them), no framing, no referrer;
 * - exactly one Authorization header: Node keeps the first of several and drops the rest, so a
 *   proxy and the service could each act on a different credential; such a request is refused.
 */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';

export function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  next();
}

export function singleAuthorization(req: Request, _res: Response, next: NextFunction): void {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'authorization') count++;
  if (count > 1) return next(new ApiError('bad_request', 'Send exactly one Authorization header.'));
  next();
}
