/** Resolves the bearer credential of operations the contract secures (see lib/access/credentials.ts). */
import type { NextFunction, Request, Response } from 'express';
import { resolveCredential, type Credential } from '../lib/access/credentials.js';
import type { AppDeps } from '../http/app-deps.js';
import { operationOf } from '../http/dispatch.js';
import { ApiError } from '../lib/platform/errors.js';
import { createAuthThrottle } from './auth-throttle.js';
import { keyUsageRecorder } from '../lib/access/key-usage.js';

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
  const usage = keyUsageRecorder(deps);
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
    // Not awaited: "last used" never delays a request (lib/access/key-usage.ts).
    if (req.credential.kind === 'api_key') void usage.touch(req.credential.id);
    next();
  };
}
