/** The operator API's bearer: ADMIN_TOKEN, compared by digest in constant time. */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/platform/errors.js';
import { hashSecret, safeEqual } from '../lib/platform/secrets.js';
import type { Contract } from '../http/contract.js';
import { operationOf } from '../http/dispatch.js';

export function adminAuth(adminToken: string, contract: Contract) {
  const expected = hashSecret(adminToken);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (!operationOf(req, contract).secured) return next();
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '');
    if (!match) throw new ApiError('api_key_required', 'Send Authorization: Bearer <ADMIN_TOKEN>.');
    if (!safeEqual(hashSecret(match[1]), expected)) throw new ApiError('invalid_token', 'The operator token is wrong.');
    next();
  };
}
