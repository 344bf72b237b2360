/**
 * Operator writes change credentials (keys, projects, connections, tokens, their scopes and
 * states). Before such a response leaves, the credential cache is invalidated here and on every
 * other instance, so the change holds from the caller's next request.
 */
import type { NextFunction, Request, Response } from 'express';
import type { AppDeps } from '../http/app-deps.js';

export function invalidateCredentialsOnWrite(deps: AppDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method === 'GET' || !deps.credentialCache) return next();
    const cache = deps.credentialCache;
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      if (res.statusCode >= 400) return send(body);
      cache
        .invalidate()
        .catch((e) => deps.logger.error('credential cache: invalidation failed', { error: String(e) }))
        .finally(() => send(body));
      return res;
    };
    next();
  };
}
