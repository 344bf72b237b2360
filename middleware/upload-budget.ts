/**
 * The upload budget, enforced from the contract: an operation marked `x-upload-metered: true`
 * counts against its credential's per-minute upload budget (lib/media/budget.ts). Policy: the
 * request is counted on arrival, before its body is read, and refused with 429 `rate_limited`
 * (Retry-After) when the request meter is over or no byte budget is left; otherwise the budget is
 * attached to the request, so the body reader and the handler can stop at what remains and charge
 * what they received. Fail-open when the counter store fails. Mount after authentication.
 */
import type { NextFunction, Request, Response } from 'express';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor } from '../http/dispatch.js';
import { UploadBudget } from '../lib/media/budget.js';

declare module 'express-serve-static-core' {
  interface Request {
    uploadBudget?: UploadBudget;
  }
}

export function uploadBudget(deps: AppDeps) {
  const count = async (req: Request, key: string, next: NextFunction): Promise<void> => {
    const budget = new UploadBudget(deps, key);
    await budget.countRequest();
    if ((await budget.remaining()) <= 0) throw budget.exceeded('bytes');
    req.uploadBudget = budget;
    next();
  };
  // Only operations that take a file are metered (the pipeline leaves it out of the others).
  return onlyFor((op) => op.uploadMetered, (req: Request, _res: Response, next: NextFunction): void | Promise<void> => {
    const key = req.credential?.rateKey;
    if (key === undefined) return next();
    return count(req, key, next);
  });
}
