/**
 * Resolves the bearer credential of operations the contract secures (see lib/access/credentials.ts),
 * with the failed-authentication throttle (./auth-throttle.ts) between memory and the database.
 */
import type { NextFunction, Request, Response } from 'express';
import { resolveCredential, type Credential } from '../lib/access/credentials.js';
import type { AppDeps } from '../http/app-deps.js';
import { operationOf } from '../http/dispatch.js';
import { ApiError } from '../lib/platform/errors.js';
import { createAuthThrottle } from './auth-throttle.js';
import { keyUsageRecorder, tokenUsageRecorder } from '../lib/access/key-usage.js';

declare module 'express-serve-static-core' {
  interface Request {
    credential?: Credential;
  }
}

/**
 * The bearer of a request as a credential, with the failed-authentication throttle: shared by the
 * contract pipeline and the MCP endpoint (http/mcp.ts), so both refuse and throttle alike.
 */
export function bearerResolver(deps: AppDeps) {
  const throttle = createAuthThrottle({
    store: deps.counters,
    clock: deps.clock,
    perAddress: deps.config.authFailuresPerMinute,
    global: deps.config.authFailuresGlobalPerMinute,
    logger: deps.logger,
  });
  const usage = keyUsageRecorder(deps);
  const tokenUsage = tokenUsageRecorder(deps);
  return async (req: Request): Promise<Credential> => {
    const now = deps.clock.now();
    let credential: Credential;
    try {
      credential = await resolveCredential(deps.db, req.headers.authorization, now, deps.credentialCache, {
        // Reached only by a credential memory cannot place: a throttled address gets its lookup only
        // for a digest in the valid set, so a valid key behind a busy NAT is never refused.
        beforeLookup: async (digest) => {
          const refusal = await throttle.refusal(req);
          if (refusal && (await deps.credentialCache?.isValidDigest(digest, now)) !== true) throw refusal;
        },
      });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) await throttle.failed(req);
      throw e;
    }
    // Not awaited: "last used" never delays a request (lib/access/key-usage.ts).
    if (credential.kind === 'api_key') void usage.touch(credential.id);
    else void tokenUsage.touch(credential.id);
    return credential;
  };
}

export function authenticate(deps: AppDeps) {
  const resolve = bearerResolver(deps);
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    const op = operationOf(req, deps.contract);
    if (!op.secured) return next();
    req.credential = await resolve(req);
    next();
  };
}
