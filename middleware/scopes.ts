/**
 * The operation's `x-required-scopes` from the contract, checked by the one scope check
 * (lib/access/scopes.ts) against the scopes the credential holds on the selected project only.
 */
import type { NextFunction, Request, Response } from 'express';
import { requireScopes } from '../lib/access/scopes.js';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor, operationOf } from '../http/dispatch.js';

export function operationScopes(deps: AppDeps) {
  return onlyFor((op) => op.requiredScopes.length > 0, (req: Request, _res: Response, next: NextFunction): void => {
    if (!req.auth) return next();
    requireScopes(req.auth, operationOf(req, deps.contract).requiredScopes, 'This operation');
    next();
  });
}
