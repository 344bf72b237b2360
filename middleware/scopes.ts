/**
 * The one scope check: the operation's `x-required-scopes` from the contract, against the
 * scopes the credential holds on the selected project only (scopes never pool across projects).
 */
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../lib/errors.js';
import type { AppDeps } from '../lib/deps.js';
import { operationOf } from '../lib/dispatch.js';

export function requireScopes(deps: AppDeps) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const { requiredScopes } = operationOf(req, deps.contract);
    if (requiredScopes.length === 0 || !req.auth) return next();
    const missing = requiredScopes.filter((s) => !req.auth!.scopes.includes(s));
    if (missing.length > 0) {
      throw new ApiError('insufficient_scope', `This operation needs the scope ${missing.join(', ')} on project "${req.auth.project.id}".`, {
        required: requiredScopes,
        missing,
      });
    }
    next();
  };
}
