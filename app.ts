/**
 * Builds the HTTP app from its dependencies. Data flows one way: request id and logging, then
 * the contract pipelines (/v1 and /admin), then the final 404 and the one error handler.
 */
import type { HandlerMap } from './http/handler-types.js';
import express, { type Express } from 'express';
import type { AppDeps } from './http/app-deps.js';
import { compose, contractPipeline } from './http/dispatch.js';
import { operationalRoutes, type Readiness } from './http/operational.js';
import { apiReferenceRoutes } from './http/api-reference.js';
import { faviconRoutes } from './http/favicon.js';
import { requestId } from './middleware/request-id.js';
import { securityHeaders, singleAuthorization } from './middleware/http-hardening.js';
import { accessLog } from './middleware/access-log.js';
import { apiErrorLogOf } from './lib/access/api-errors.js';
import { errorHandler, notFound } from './middleware/errors.js';
import { authenticate } from './middleware/authenticate.js';
import { rateLimit } from './middleware/rate-limit.js';
import { selectProject } from './middleware/project.js';
import { operationScopes, scopeChallenge } from './middleware/scopes.js';
import { uploadBudget } from './middleware/upload-budget.js';
import { uploadBody } from './middleware/upload-body.js';
import { streamedBody } from './middleware/streamed-body.js';
import { adminAuth } from './middleware/admin-auth.js';
import { idempotency } from './middleware/idempotency.js';
import { handlers } from './handlers/index.js';
import { channelWebhookRouter } from './handlers/channel-webhook.js';
import { runtimeAuth, runtimeHandlers } from './handlers/runtime.js';
import { adminHandlers } from './handlers/admin/index.js';
import { filesPathSegments } from './handlers/files.js';
import { markEmptyPathParams, refuseEmptyPathParams } from './http/empty-path-params.js';
import { dashboardRouter } from './http/dashboard/router.js';
import { mcpRoutes } from './http/mcp/endpoint.js';
import { oauthRoutes } from './http/oauth.js';

export interface AppOptions {
  adminToken: string;
  /** What /readyz reports (services.ts); default: ready. */
  readiness?: () => Promise<Readiness>;
  /** Handlers of `deps.contract`; tests pass their own with a contract of their own. */
  handlers?: HandlerMap;
  /** The Cloud API simulator, linked from the dashboard outside production. */
  simulatorUrl?: string;
}

export function createApp(deps: AppDeps & AppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.set('trust proxy', deps.config.trustProxy);

  // The common pipeline as one middleware: Express's router costs more per layer than most of
  // these steps (http/dispatch.ts, compose). Order is the data flow: request id and headers,
  // probes, the access log, the reference page, then the contract pipelines (/runtime, /v1, /admin).
  app.use(
    compose([
      requestId,
      securityHeaders,
      // Probes and scrapes first: never logged per request, never rate limited.
      operationalRoutes({
        readiness: deps.readiness ?? (async () => ({ ready: true, checks: {} })),
        metrics: deps.metrics,
        adminToken: deps.adminToken,
      }),
      accessLog(deps.logger, deps.metrics, (projectId, operation, status, code) => apiErrorLogOf(deps).record(projectId, operation, status, code)),
      // The API reference page (Redoc over /v1/openapi.json): public, outside the contracts.
      apiReferenceRoutes(),
      faviconRoutes(),
      singleAuthorization,
      // The bot's runtime API (custom events), by its own contract: first, so its hot path skips
      // the other pipelines.
      contractPipeline({
        name: 'runtime-openapi.yaml',
        contract: deps.runtimeContract,
        handlers: runtimeHandlers,
        deps,
        pathPrefix: '/runtime/',
        policy: [
          runtimeAuth(deps),
          // Per token, in the same shared counters (and fail-open) as the /v1 limit.
          rateLimit({
            store: deps.counters,
            limit: () => deps.config.runtimeEventsPerMinute,
            clock: deps.clock,
            keyOf: (req) => (req.runtimeTokenId ? `rt:${req.runtimeTokenId}` : undefined),
            logger: deps.logger,
            onReject: () => deps.metrics?.rateLimited('runtime'),
          }),
        ],
      }),
      // /v1/files/{path}: a path of several segments reaches the one operation (handlers/files.ts).
      filesPathSegments,
      // An empty path id reaches its own operation and is refused there after authentication.
      markEmptyPathParams([{ contract: deps.contract, prefix: '/v1/' }, { contract: deps.adminContract, prefix: '/admin/' }]),
      contractPipeline({
        name: 'openapi.yaml',
        contract: deps.contract,
        handlers: deps.handlers ?? handlers,
        deps,
        pathPrefix: '/v1/',
        policy: [
          authenticate(deps),
          refuseEmptyPathParams,
          rateLimit({
            store: deps.counters,
            limit: () => deps.config.rateLimitPerMinute,
            clock: deps.clock,
            keyOf: (req) => req.credential?.rateKey,
            logger: deps.logger,
            onReject: () => deps.metrics?.rateLimited('v1'),
          }),
          selectProject(deps),
          operationScopes(deps),
          uploadBudget(deps),
          uploadBody(deps),
          streamedBody(deps.contract),
        ],
        beforeHandler: [idempotency(deps)],
      }),
      contractPipeline({
        name: 'admin-openapi.yaml',
        contract: deps.adminContract,
        handlers: adminHandlers,
        deps,
        pathPrefix: '/admin/',
        policy: [adminAuth(deps.adminToken, deps.adminContract), refuseEmptyPathParams, streamedBody(deps.adminContract)],
      }),
    ]),
  );

  // AI agents: the MCP server, its tools from the contract and run through the pipeline above (http/mcp.ts).
  app.use(mcpRoutes(deps, () => app));
  // AI agents' OAuth 2.1 authorization server and its metadata documents (http/oauth.ts).
  app.use(oauthRoutes(deps));
  app.use(channelWebhookRouter(deps));
  // People's pages and HTML forms, outside the contracts (http/dashboard/router.ts).
  app.use('/dashboard', dashboardRouter(deps, { simulatorUrl: deps.simulatorUrl }));

  app.use(notFound);
  app.use(scopeChallenge(deps));
  app.use(errorHandler(deps.logger));
  return app;
}
