/**
 * The agents' OAuth 2.1 authorization server at the app's root (docs/agents-oauth.md): the MCP SDK's
 * router (`mcpAuthRouter`) over our provider (lib/oauth/provider.ts, PostgreSQL only), with what the
 * SDK leaves to us in front of it:
 * - a per-address limit on /register, /authorize and /revoke in the shared counters (the SDK's own
 *   limiter keeps its counts in process memory, so it is off): 429 `too_many_requests`, fail-open;
 * - /token limited by client and, for a refresh, by grant, when the request carries a code or refresh
 *   token of its client (hosted connectors refresh for all their users from a few addresses); by
 *   address otherwise;
 * - registration's own budget per address: OAUTH_REGISTRATIONS_PER_HOUR registrations an hour and
 *   OAUTH_REGISTRATION_BYTES_PER_DAY bytes a day (429 `too_many_requests` with `Retry-After`);
 * - the registration's JSON body at most 16 KiB, nested at most 64 levels;
 * - client authentication at /token and /revoke: a confidential client's secret is compared with its
 *   stored SHA-256 here (the SDK would compare a plain-text secret), as `client_secret_post` or HTTP
 *   Basic; unknown client or missing/wrong secret: 401 `invalid_client`.
 * - the Origin rule of /mcp (lib/mcp/origin.ts) on /register, /token and /revoke: 403 `access_denied`;
 * Metadata: /.well-known/oauth-authorization-server (RFC 8414) and
 * /.well-known/oauth-protected-resource/mcp (RFC 9728). The issuer is PUBLIC_BASE_URL; the SDK
 * refuses a plain-http issuer other than localhost or 127.0.0.1, and then nothing is served here (a
 * warning at start): production needs https.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { createOAuthMetadata, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AppDeps } from './app-deps.js';
import { rateLimit } from '../middleware/rate-limit.js';
import { ApiError } from '../lib/platform/errors.js';
import { MCP_PATH, mcpResourceUrl, reachedBaseUrl } from '../lib/mcp/resource.js';
import { originRule } from '../lib/mcp/origin.js';
import { checkClientSecret, createOAuthProvider, tokenRequestSubject, TOKEN_AUTH_METHODS } from '../lib/oauth/provider.js';
import { LIMITS, redirectUriProblem, SCOPES_SUPPORTED } from '../lib/oauth/rules.js';
import { CONSENT_PATH } from './dashboard/oauth-pages.js';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../lib/platform/json-depth.js';
import { throttleAddress } from '../lib/accounts/login-throttle.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';

const ENDPOINTS = ['/register', '/authorize', '/token', '/revoke'] as const;

function oauthError(res: Response, status: number, error: string, description: string): void {
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).json({ error, error_description: description });
}

/** A per-minute limit answered as OAuth errors are; `keyOf` undefined skips it; `describe` names what is limited. */
function oauthLimit(deps: AppDeps, limit: () => number, keyOf: (req: Request) => string | undefined, describe: (req: Request) => string) {
  const limited = rateLimit({ store: deps.counters, limit, clock: deps.clock, keyOf, logger: deps.logger, onReject: () => deps.metrics?.rateLimited('oauth') });
  return (req: Request, res: Response, next: NextFunction) =>
    limited(req, res, (err?: unknown) => {
      if (err instanceof ApiError && err.code === 'rate_limited') {
        if (err.headers) res.set(err.headers);
        return oauthError(res, 429, 'too_many_requests', `${describe(req)}: at most ${limit()} a minute; retry in ${res.getHeader('Retry-After') ?? 60} seconds.`);
      }
      next(err);
    });
}

/** The per-address limit of one endpoint. */
function limiter(deps: AppDeps, endpoint: string) {
  return oauthLimit(deps, () => deps.config.oauthRequestsPerMinute, (req) => `oauth${endpoint}:${req.ip ?? 'unknown'}`, () => `Too many requests to ${endpoint} from this address`);
}

type TokenRequest = Request & { tokenSubject?: { clientId: string; grantId?: string } };

/**
 * /token's limits. Hosted connectors (claude.ai, ChatGPT) exchange and refresh for all their users
 * from a few addresses, so a request carrying a code or refresh token of its client counts against
 * its client (OAUTH_CLIENT_TOKEN_REQUESTS_PER_MINUTE) and, a refresh, its grant
 * (OAUTH_GRANT_REFRESHES_PER_MINUTE: one person's connection in a loop). Keyed on a valid credential,
 * so nobody spends a client's budget with its client_id alone; any other request (unknown client,
 * wrong or made-up token) counts against its address (OAUTH_REQUESTS_PER_MINUTE). Runs after the
 * body is read and before client authentication.
 */
function tokenLimits(deps: AppDeps) {
  const subject = (req: Request, _res: Response, next: NextFunction): void => {
    if (req.method !== 'POST') return next();
    const body = (req.body ?? {}) as Record<string, unknown>;
    const clientId = basicCredentials(req.headers.authorization)?.id ?? body.client_id;
    if (typeof clientId !== 'string' || clientId.length === 0 || clientId.length > 200) return next();
    tokenRequestSubject(deps, clientId, body).then((found) => {
      if (found) (req as TokenRequest).tokenSubject = found;
      next();
    }, next);
  };
  const subjectOf = (req: Request) => (req as TokenRequest).tokenSubject;
  const byAddress = oauthLimit(
    deps,
    () => deps.config.oauthRequestsPerMinute,
    (req) => (req.method === 'POST' && !subjectOf(req) ? `oauth/token:${req.ip ?? 'unknown'}` : undefined),
    () => 'Too many requests to /token from this address without a valid code or refresh token',
  );
  const byClient = oauthLimit(
    deps,
    () => deps.config.oauthClientTokenRequestsPerMinute,
    (req) => (subjectOf(req) ? `oauth/token-client:${subjectOf(req)!.clientId}` : undefined),
    () => 'Too many token requests from this client',
  );
  const byGrant = oauthLimit(
    deps,
    () => deps.config.oauthGrantRefreshesPerMinute,
    (req) => (subjectOf(req)?.grantId ? `oauth/token-grant:${subjectOf(req)!.grantId}` : undefined),
    () => 'Too many refreshes of this grant',
  );
  return [subject, byAddress, byClient, byGrant];
}

const HOUR_MS = 3600_000;
const DAY_MS = 24 * HOUR_MS;

/** A refusal of the shared counters, as OAuth errors are (RFC 6585's 429, `Retry-After`). */
function tooMany(res: Response, retryAfterSeconds: number, description: string): void {
  res.setHeader('Retry-After', String(retryAfterSeconds));
  oauthError(res, 429, 'too_many_requests', description);
}

/**
 * Registration's own budget per client address (IPv6 by /64: one host holds the prefix), in the
 * shared counters, fail-open like every limit here: at most OAUTH_REGISTRATIONS_PER_HOUR requests
 * an hour, counted before the body is read (a refused registration counts too), and at most
 * OAUTH_REGISTRATION_BYTES_PER_DAY bytes of registration bodies a UTC day, charged once the body is
 * read. With each registration's stored metadata at most 4 KiB (lib/oauth/rules.ts), that bounds what
 * one address can make us store a day.
 */
function registrationLimits(deps: AppDeps) {
  const addressOf = (req: Request) => throttleAddress(req.ip ?? 'unknown');
  const hourly = rateLimit({
    store: deps.counters,
    limit: () => deps.config.oauthRegistrationsPerHour,
    windowMs: HOUR_MS,
    clock: deps.clock,
    keyOf: (req) => (req.method === 'POST' ? `oauth/register-hour:${addressOf(req)}` : undefined),
    logger: deps.logger,
    onReject: () => deps.metrics?.rateLimited('oauth'),
  });
  const perHour = (req: Request, res: Response, next: NextFunction) =>
    hourly(req, res, (err?: unknown) => {
      if (err instanceof ApiError && err.code === 'rate_limited') {
        const retry = Number(err.headers?.['Retry-After'] ?? 3600);
        return tooMany(res, retry, `Too many client registrations from this address: at most ${deps.config.oauthRegistrationsPerHour} an hour; retry in ${retry} seconds.`);
      }
      next(err);
    });
  const perDay = (req: Request, res: Response, next: NextFunction): void => {
    const bytes = (req as Request & { registrationBytes?: number }).registrationBytes;
    if (req.method !== 'POST' || bytes === undefined) return next();
    const now = deps.clock.now();
    let pending;
    try {
      pending = deps.counters.hit(`rl:oauth/register-bytes:${addressOf(req)}`, DAY_MS, now, bytes);
    } catch {
      return next();
    }
    pending.then(({ count, resetAt }) => {
      const cap = deps.config.oauthRegistrationBytesPerDay;
      if (count <= cap) return next();
      deps.metrics?.rateLimited('oauth');
      const retry = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
      tooMany(res, retry, `Too many bytes of client registrations from this address today: at most ${cap} a day; retry in ${retry} seconds.`);
    }, () => next());
  };
  return { perHour, perDay };
}

/** A registration nested deeper than any metadata needs, refused before anything walks it. */
function shallowRegistration(req: Request, res: Response, next: NextFunction): void {
  if (!nestsDeeperThan(req.body, MAX_JSON_DEPTH)) return next();
  oauthError(res, 400, 'invalid_client_metadata', `The registration nests more than ${MAX_JSON_DEPTH} levels of arrays and objects.`);
}

/**
 * The redirect URIs judged by our rule (lib/oauth/rules.ts, RFC 8252) before the SDK's own schema
 * sees them, so that a refused one is RFC 7591's `invalid_redirect_uri` whatever the reason (the
 * SDK's schema would answer `javascript:` as `invalid_client_metadata`). The list's shape and size
 * stay the provider's (`invalid_client_metadata`).
 */
function redirectUrisChecked(req: Request, res: Response, next: NextFunction): void {
  const body = req.body as { redirect_uris?: unknown; token_endpoint_auth_method?: unknown } | undefined;
  const uris = body && typeof body === 'object' && Array.isArray(body.redirect_uris) ? body.redirect_uris : [];
  for (const uri of uris) {
    if (typeof uri !== 'string') continue;
    const problem = redirectUriProblem(uri, { publicClient: body?.token_endpoint_auth_method === 'none' });
    if (problem) return oauthError(res, 400, 'invalid_redirect_uri', `redirect_uris: ${problem}.`);
  }
  next();
}

/** `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each part form-urlencoded). */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const m = header ? /^Basic[ \t]+([A-Za-z0-9+/]+=*)[ \t]*$/i.exec(header) : null;
  if (!m) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return undefined;
  try {
    const decode = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));
    return { id: decode(text.slice(0, colon)), secret: decode(text.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

/** Authenticates the client of /token and /revoke before the SDK's handler (which then finds no secret to compare). */
function clientAuthentication(deps: AppDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.method !== 'POST') return next();
    const body = (req.body ?? {}) as Record<string, unknown>;
    const basic = basicCredentials(req.headers.authorization);
    let clientId = typeof body.client_id === 'string' ? body.client_id : undefined;
    let secret = typeof body.client_secret === 'string' ? body.client_secret : undefined;
    if (basic) {
      if (clientId !== undefined && clientId !== basic.id) return oauthError(res, 400, 'invalid_request', 'client_id differs from the Authorization header.');
      clientId = basic.id;
      secret = basic.secret;
      body.client_id = basic.id; // the SDK's handler reads the client from the body
      req.body = body;
    }
    if (clientId === undefined) return next(); // the SDK answers invalid_request
    checkClientSecret(deps, clientId, secret).then((outcome) => {
      if (outcome === 'ok') return next();
      if (basic) res.setHeader('WWW-Authenticate', 'Basic realm="oauth"');
      oauthError(res, 401, 'invalid_client', outcome === 'unknown' ? 'Unknown client_id.' : 'The client secret is missing or wrong.');
    }, next);
  };
}

/**
 * An error the SDK's /authorize redirects to the client carries the request's `state` (RFC 6749
 * §4.1.2.1), also when the request failed its parameter check (the SDK then leaves it out).
 */
function stateOnErrors(req: Request, res: Response, next: NextFunction): void {
  const redirect = res.redirect.bind(res) as (status: number, url: string) => void;
  res.redirect = ((a: number | string, b?: string | number) => {
    const [status, url] = typeof a === 'number' ? [a, String(b)] : [typeof b === 'number' ? b : 302, a];
    const source = (req.method === 'POST' ? req.body : req.query) as Record<string, unknown> | undefined;
    const state = source?.state;
    let location = url;
    if (typeof state === 'string' && state.length <= LIMITS.state) {
      try {
        const target = new URL(url);
        if (target.searchParams.has('error') && !target.searchParams.has('state')) {
          target.searchParams.set('state', state);
          location = target.href;
        }
      } catch {
        // a relative Location (the consent page) is never an error
      }
    }
    redirect(status, location);
  }) as Response['redirect'];
  next();
}

/** A body the parsers refused (too large, malformed), as an OAuth error. */
function bodyRefused(error: string) {
  return (err: unknown, _req: Request, res: Response, next: NextFunction): void => {
    const e = err as { type?: string; status?: number } | undefined;
    if (!e || typeof e.status !== 'number' || e.status >= 500) return next(err);
    oauthError(res, 400, error, e.type === 'entity.too.large' ? `The body is larger than ${LIMITS.registrationBody / 1024} KiB.` : 'The body could not be read.');
  };
}

/**
 * The authorization server's metadata (RFC 8414) as the SDK builds it, with the client authentication
 * methods this server accepts at /token and /revoke (a secret in the body or HTTP Basic, or none for a
 * public client), and client ID metadata documents (MCP 2025-11-25) beside dynamic registration.
 */
function authorizationServerMetadata(sdkMetadata: Record<string, unknown>): Record<string, unknown> {
  return {
    ...sdkMetadata,
    token_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
    // A client_id may be the https URL of the client's metadata document (lib/oauth/client-metadata.ts).
    client_id_metadata_document_supported: true,
    revocation_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
  };
}

/** The MCP endpoint's protected-resource metadata (RFC 9728). */
function protectedResourceMetadata(resource: string, issuer: string): Record<string, unknown> {
  return {
    resource,
    authorization_servers: [issuer],
    scopes_supported: [...SCOPES_SUPPORTED],
    bearer_methods_supported: ['header'],
    resource_name: 'Messaging service (MCP)',
  };
}

export function oauthRoutes(deps: AppDeps): Router {
  const router = express.Router();
  const base = deps.config.publicBaseUrl;
  const resourceUrl = mcpResourceUrl(base);
  const domain = createOAuthProvider(deps, { resourceUrl });
  // The SDK's provider: the domain, and the one HTTP step it leaves to the edge (the redirect to consent).
  const provider: OAuthServerProvider = {
    ...domain,
    clientsStore: domain.clientsStore,
    async authorize(client, params, res) {
      const id = await domain.beginAuthorization(client, params);
      res.redirect(302, `${CONSENT_PATH}?request=${encodeURIComponent(id)}`);
    },
  };
  let sdk: express.RequestHandler;
  let metadata: Record<string, unknown>;
  try {
    const options = {
      provider,
      issuerUrl: new URL(base),
      resourceServerUrl: new URL(resourceUrl),
      scopesSupported: [...SCOPES_SUPPORTED],
      resourceName: 'Messaging service (MCP)',
      authorizationOptions: { rateLimit: false as const },
      tokenOptions: { rateLimit: false as const },
      revocationOptions: { rateLimit: false as const },
      clientRegistrationOptions: { rateLimit: false as const, clientSecretExpirySeconds: 0 },
    };
    sdk = mcpAuthRouter(options);
    metadata = authorizationServerMetadata(createOAuthMetadata(options));
  } catch (e) {
    deps.logger.warn('OAuth for AI agents is off: PUBLIC_BASE_URL must be https (or http on localhost or 127.0.0.1) to be the issuer', {
      public_base_url: base,
      error: e instanceof Error ? e.message : String(e),
    });
    return router;
  }
  // Ours before the SDK's (which lists only client_secret_post and none): what registration accepts.
  // The protected resource's metadata (RFC 9728), naming /mcp as the client reached it (a loopback
  // alias of PUBLIC_BASE_URL in development: lib/mcp/resource.ts reachedBaseUrl).
  router.get(`/.well-known/oauth-protected-resource${MCP_PATH}`, (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.setHeader('Vary', 'Host');
    res.json(protectedResourceMetadata(mcpResourceUrl(reachedBaseUrl(base, req.headers.host)), String(metadata.issuer)));
  });
  router.get('/.well-known/oauth-authorization-server', (_req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.json(metadata);
  });
  // The Origin rule of /mcp (lib/mcp/origin.ts) on what browsers call with fetch; /authorize is a
  // top-level navigation from the client's own site, and the metadata documents are public.
  const origins = originRule(base, deps.config.mcpAllowedOrigins);
  for (const endpoint of ['/register', '/token', '/revoke']) {
    router.use(endpoint, (req, res, next) => {
      if (origins.allows(req.headers.origin)) return next();
      oauthError(res, 403, 'access_denied', `Requests from the web origin ${String(req.headers.origin).replace(/[^\x20-\x7e]/g, '?').slice(0, 200)} are not allowed (Origin must be this service's own or one of MCP_ALLOWED_ORIGINS).`);
    });
  }
  for (const endpoint of ENDPOINTS) if (endpoint !== '/token') router.use(endpoint, limiter(deps, endpoint));
  router.use('/authorize', stateOnErrors);
  const registration = registrationLimits(deps);
  router.use(
    '/register',
    registration.perHour,
    express.json({ limit: LIMITS.registrationBody, verify: (req, _res, buf) => void ((req as Request & { registrationBytes?: number }).registrationBytes = buf.length) }),
    bodyRefused('invalid_client_metadata'),
    shallowRegistration,
    registration.perDay,
    redirectUrisChecked,
  );
  const form = [express.urlencoded({ extended: false, limit: 16 * 1024, parameterLimit: 50 }), bodyRefused('invalid_request')];
  router.use('/token', ...form, ...tokenLimits(deps), clientAuthentication(deps));
  router.use('/revoke', ...form, clientAuthentication(deps));
  router.use(sdk);
  return router;
}
