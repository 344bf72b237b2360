/** Resolves the bearer credential of operations the contract secures (see lib/credentials.ts). */
import type { NextFunction, Request, Response } from 'express';
import { resolveCredential, type Credential } from '../lib/credentials.js';
import type { AppDeps } from '../lib/deps.js';
import { operationOf } from '../lib/dispatch.js';
import { ApiError } from '../lib/errors.js';
import { createAuthThrottle } from './auth-throttle.js';

declare module 'express-serve-static-core' {
  interface Request {
    credential?: Credential;
  }
}

export function authenticate(deps: AppDeps) {
  const throttle = createAuthThrottle({
    store: deps.counters,
    clock: deps.clock,
    perAddress: deps.config.authFailuresPerMinute,
    global: deps.config.authFailuresGlobalPerMinute,
    logger: deps.logger,
  });
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const op = operationOf(req, deps.contract);
    if (!op.secured) return next();
    await throttle.check(req);
    try {
      req.credential = await resolveCredential(deps.db, req.headers.authorization, deps.clock.now(), deps.credentialCache);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) await throttle.failed(req);
      throw e;
    }
    next();
  };
}
