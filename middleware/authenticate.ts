/** Resolves the bearer credential of operations the contract secures (see lib/credentials.ts). */
import type { NextFunction, Request, Response } from 'express';
import { resolveCredential, type Credential } from '../lib/credentials.js';
import type { AppDeps } from '../lib/deps.js';
import { operationOf } from '../lib/dispatch.js';

declare module 'express-serve-static-core' {
  interface Request {
    credential?: Credential;
  }
}

export function authenticate(deps: AppDeps) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const op = operationOf(req, deps.contract);
    if (!op.secured) return next();
    req.credential = await resolveCredential(deps.db, req.headers.authorization, deps.clock.now(), deps.credentialCache);
    next();
  };
}
