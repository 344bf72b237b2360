/**
 * The runtime API (runtime-openapi.yaml), outside /v1: `POST /runtime/events` lets a project's bot
 * code raise a custom event. It is authenticated by a runtime token (`Authorization: Bearer rt_…`,
 * minted through the operator API), not by a /v1 key; the body is read only once the token is
 * known and within its rate (RUNTIME_EVENTS_PER_MINUTE per token, 429 `rate_limited` beyond).
 */
import type { NextFunction, Request, Response } from 'express';
import type { operations } from '../generated/runtime-api.js';
import type { Handler, Handlers } from '../http/handler-types.js';
import type { AppDeps } from '../http/app-deps.js';
import { operationOf } from '../http/dispatch.js';
import { resolveRuntimeToken } from '../lib/access/runtime-tokens.js';
import { emitCustomEvent as emit } from '../lib/webhooks/custom-events.js';
import { publishedDocument } from './service-info.js';

declare module 'express-serve-static-core' {
  interface Request {
    runtimeProjectId?: string;
    runtimeTokenId?: string;
  }
}

/** The runtime token of operations the runtime contract secures. */
export function runtimeAuth(deps: AppDeps) {
  return async (req: Request, _res: Response, next: NextFunction): Promise<void> => {
    if (!operationOf(req, deps.runtimeContract).secured) return next();
    const token = await resolveRuntimeToken(deps.db, req.headers.authorization, deps.credentialCache, deps.clock.now());
    req.runtimeProjectId = token.projectId;
    req.runtimeTokenId = token.tokenId;
    next();
  };
}

const emitCustomEvent: Handler<operations['emitCustomEvent']> = async (req, deps) => ({
  status: 202,
  data: { event: await emit(deps, req.http.runtimeProjectId!, req.body) },
});

const runtimeGetOpenApiDocument: Handler<operations['runtimeGetOpenApiDocument']> = async (_req, deps) => ({
  raw: publishedDocument(deps.runtimeContract, deps.config.publicBaseUrl),
});

export const runtimeHandlers: Handlers<operations> = { emitCustomEvent, runtimeGetOpenApiDocument };
