/**
 * The runtime API, outside /v1: `POST /runtime/events` lets a project's bot code raise a custom
 * event. It is authenticated by a runtime token (`Authorization: Bearer rt_…`, minted through the
 * operator API), not by a /v1 key; the body is read only once the token is known and within its
 * rate (RUNTIME_EVENTS_PER_MINUTE per token, 429 `rate_limited` beyond). Answers 202 with the
 * event id; the same error envelope and codes as /v1.
 */
import express, { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../lib/deps.js';
import { ApiError } from '../lib/errors.js';
import { resolveRuntimeToken } from '../lib/runtime-tokens.js';
import { CUSTOM_EVENT_BODY_LIMIT, emitCustomEvent } from '../lib/custom-events.js';
import { rateLimit } from '../middleware/rate-limit.js';

declare module 'express-serve-static-core' {
  interface Request {
    runtimeProjectId?: string;
    runtimeTokenId?: string;
  }
}

export function runtimeEventsRouter(deps: AppDeps): Router {
  const router = Router();
  router.post(
    '/runtime/events',
    async (req: Request, _res: Response, next) => {
      const token = await resolveRuntimeToken(deps.db, req.headers.authorization, deps.credentialCache);
      req.runtimeProjectId = token.projectId;
      req.runtimeTokenId = token.tokenId;
      next();
    },
    // Per token, in the same shared counters (and fail-open) as the /v1 limit.
    rateLimit({
      store: deps.counters,
      limit: () => deps.config.runtimeEventsPerMinute,
      clock: deps.clock,
      keyOf: (req) => `rt:${req.runtimeTokenId}`,
      logger: deps.logger,
    }),
    express.json({ limit: CUSTOM_EVENT_BODY_LIMIT }),
    async (req: Request, res: Response) => {
      if (!req.is('application/json')) throw new ApiError('unsupported_media_type', 'Send the event as application/json.');
      const event = await emitCustomEvent(deps, req.runtimeProjectId!, req.body);
      res.status(202).json({ success: true, data: { event } });
    },
  );
  return router;
}
