/**
 * The operation's `x-required-scopes` from the contract, checked by the one scope check
 * (lib/access/scopes.ts) against the scopes the credential holds on the selected project only; and
 * the step-up challenge of every refusal for scope (RFC 6750 §3.1, MCP 2025-11-25 "Scope Challenge
 * Handling"): `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`, naming the scopes held
 * on the project and those the request needs, so a client re-authorizes for them without losing
 * what it had.
 */
import type { NextFunction, Request, Response } from 'express';
import { requireScopes } from '../lib/access/scopes.js';
import type { AppDeps } from '../http/app-deps.js';
import { onlyFor, operationOf } from '../http/dispatch.js';
import { ApiError } from '../lib/platform/errors.js';
import { bearerChallenge } from '../lib/oauth/challenge.js';
import { protectedResourceMetadataUrl } from '../lib/mcp/resource.js';

export function operationScopes(deps: AppDeps) {
  return onlyFor((op) => op.requiredScopes.length > 0, (req: Request, _res: Response, next: NextFunction): void => {
    if (!req.auth) return next();
    requireScopes(req.auth, operationOf(req, deps.contract).requiredScopes, 'This operation');
    next();
  });
}

/** The scopes a step-up asks for: those held on the project, then those the refused request needs. */
export function stepUpScopes(held: readonly string[], required: readonly string[]): string[] {
  return [...new Set([...held, ...required])];
}

/** An error middleware before the envelope's: a 403 `insufficient_scope` gets its challenge. */
export function scopeChallenge(deps: AppDeps) {
  const resourceMetadataUrl = protectedResourceMetadataUrl(deps.config.publicBaseUrl);
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (err instanceof ApiError && err.code === 'insufficient_scope' && !res.headersSent) {
      const required = Array.isArray(err.details?.required) ? (err.details.required as string[]) : [];
      res.setHeader(
        'WWW-Authenticate',
        bearerChallenge({ resourceMetadataUrl, error: 'insufficient_scope', scope: stepUpScopes(req.auth?.scopes ?? [], required), description: err.message }),
      );
    }
    next(err);
  };
}
