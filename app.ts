/**
 * Builds the HTTP app from its dependencies. Data flows one way: request id and logging, then
 * the contract pipelines (/v1 and /admin), then the final 404 and the one error handler.
 */
import express, { type Express } from 'express';
import type { AppDeps } from './lib/deps.js';
import { contractPipeline } from './lib/dispatch.js';
import { requestId } from './middleware/request-id.js';
import { securityHeaders, singleAuthorization } from './middleware/http-hardening.js';
import { accessLog } from './middleware/access-log.js';
import { errorHandler, notFound } from './middleware/errors.js';
import { authenticate } from './middleware/authenticate.js';
import { rateLimit } from './middleware/rate-limit.js';
import { selectProject } from './middleware/project.js';
import { requireScopes } from './middleware/scopes.js';
import { uploadBudget } from './middleware/upload-budget.js';
import { uploadBody } from './middleware/upload-body.js';
import { adminAuth } from './middleware/admin-auth.js';
import { idempotency } from './middleware/idempotency.js';
import { invalidateCredentialsOnWrite } from './middleware/credential-writes.js';
import { handlers } from './handlers/index.js';
import { channelWebhookRouter } from './channel/webhook.js';
import { runtimeEventsRouter } from './handlers/runtime-events.js';
import { adminHandlers } from './handlers/admin/index.js';

export interface AppOptions {
  adminToken: string;
  /** Handlers of `deps.contract`; tests pass their own with a contract of their own. */
  handlers?: Record<string, unknown>;
}

export function createApp(deps: AppDeps & AppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', deps.config.trustProxy);

  app.use(requestId);
  app.use(securityHeaders);
  app.use(accessLog(deps.logger));
  app.use(singleAuthorization);
  // The bot's runtime API (custom events) is outside both contracts: routed first, so its hot
  // path skips their validators.
  app.use(runtimeEventsRouter(deps));

  app.use(
    contractPipeline({
      name: 'openapi.yaml',
      contract: deps.contract,
      handlers: (deps.handlers ?? handlers) as any,
      deps,
      pathPrefix: '/v1/',
      policy: [
        authenticate(deps),
        rateLimit({
          store: deps.counters,
          limit: () => deps.config.rateLimitPerMinute,
          clock: deps.clock,
          keyOf: (req) => req.credential?.rateKey,
          logger: deps.logger,
        }),
        selectProject(deps),
        requireScopes(deps),
        uploadBudget(deps),
        uploadBody(deps),
      ],
      beforeHandler: [idempotency(deps)],
    }),
  );

  app.use(
    contractPipeline({
      name: 'admin-openapi.yaml',
      contract: deps.adminContract,
      handlers: adminHandlers as any,
      deps,
      pathPrefix: '/admin/',
      policy: [adminAuth(deps.adminToken, deps.adminContract)],
      beforeHandler: [invalidateCredentialsOnWrite(deps)],
    }),
  );

  app.use(channelWebhookRouter(deps));

  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
