/**
 * Typed configuration, read once at start. Every setting is listed in .env.example with its default.
 * A bad value fails fast with a message naming the variable.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Config {
  /** HTTP port of the API. */
  port: number;
  host: string;
  nodeEnv: string;
  /** PostgreSQL URL; unset means the embedded PostgreSQL in `dataDir`. */
  databaseUrl?: string;
  /** Connections in this instance's PostgreSQL pool. */
  databasePoolMax: number;
  /** At start, how long to wait for PostgreSQL to answer before giving up (seconds; docs/deploy.md). */
  databaseWaitSeconds: number;
  /** Where media and project-file bytes live: `local` (DATA_DIR/media, one instance) or `postgres` (shared). */
  blobStore: 'local' | 'postgres';
  databaseAcquireTimeoutMs: number;
  /** Compresses the bundled simulator's callback retry schedule (tests, demos); 1 = Meta's hours. */
  simulatorCallbackRetryScale: number;
  authFailuresPerMinute: number;
  authFailuresGlobalPerMinute: number;
  /** Express `trust proxy`: false, true, a hop count or a list of addresses. */
  trustProxy: boolean | number | string;
  httpRequestTimeoutMs: number;
  httpHeadersTimeoutMs: number;
  httpKeepAliveTimeoutMs: number;
  databaseStatementTimeoutMs: number;
  /** Longest wait of a commit for a synchronous standby; past it the commit is cancelled and the request answers 503. */
  databaseCommitTimeoutMs: number;
  /** Folder of the embedded defaults (database files, admin token). */
  dataDir: string;
  /** Port of the embedded PostgreSQL (never 5432). */
  embeddedPgPort: number;
  /** Redis URL for shared counters; unset means an in-process store (single instance). */
  redisUrl?: string;
  /** Sentinel mode (high availability): the sentinels' addresses; with `redisSentinelMaster`, used instead of `redisUrl`. */
  redisSentinels?: Array<{ host: string; port: number }>;
  /** etcd members' client URLs (HA_ETCD_ENDPOINTS): /readyz's `ha` names a member that does not answer. */
  haEtcdEndpoints?: string[];
  /** The master's name the sentinels monitor. */
  redisSentinelMaster?: string;
  /** Sentinel mode: the master's and replicas' password (in URL mode it is part of REDIS_URL). */
  redisPassword?: string;
  /** Sentinel mode: the sentinels' own password. */
  redisSentinelPassword?: string;
  /** Bound on every Redis command before the request fails open. */
  redisTimeoutMs: number;
  /** Master key (32 bytes, hex or base64); unset in the embedded default means generated into `dataDir`. */
  encryptionKey?: string;
  /** Operator API bearer; unset in the embedded default means generated once into `dataDir`. */
  adminToken?: string;
  rateLimitPerMinute: number;
  /** Custom events per minute per runtime token (POST /runtime/events). */
  runtimeEventsPerMinute: number;
  /** Longest a resolved credential is reused without a database read (0: never cached). */
  credentialCacheTtlMs: number;
  /** Statement (and lock) timeout of every query on a project's own tables. */
  tablesStatementTimeoutMs: number;
  /** Tenant (project-table) connections of this instance, all projects together; apart from the platform pool. */
  tablesPoolMax: number;
  /** Table operations of one project at once on this instance (tables API, bot helpers, operator DDL). */
  tablesProjectConcurrency: number;
  /** Longest wait for a tenant connection slot before 503 service_unavailable. */
  tablesAcquireTimeoutMs: number;
  /** Default storage quotas of a project's tables, per schema (operators override per project). */
  tablesQuotaPublicRows: number;
  tablesQuotaPublicBytes: number;
  tablesQuotaPreviewRows: number;
  tablesQuotaPreviewBytes: number;
  /** Byte cap of one page of table rows (tables API, the bot's `tables.select`); lib/tables/rows.ts. */
  tablesPageMaxBytes: number;
  logLevel: string;
  /** OTLP/HTTP collector that traces go to (docs/traces.md); unset: tracing off, the SDK not loaded. */
  otelEndpoint?: string;
  /** Graph API base URL; unset in the embedded default means the bundled simulator. */
  graphBaseUrl?: string;
  graphApiVersion: string;
  graphTimeoutMs: number;
  /** On SIGTERM/SIGINT, how long requests in flight may take before their connections are cut. */
  shutdownGraceMs: number;
  /** How long an inbound message taken by one instance's bot is its own before another may take it (lib/bot/inbox.ts). */
  botInboxLeaseMs: number;
  /** Inbound messages a project's bot handles per minute (shared counters); more wait for the next minute. */
  botEventsPerMinute: number;
  /** Runs of one event that end abnormally (a crash, a time or memory limit) before it is set aside (lib/bot/inbox.ts). */
  botMaxAbnormalRuns: number;
  /** A schedule's run missed while the service was down runs once at start when at most this late (seconds); later, it is skipped and logged (lib/bot/schedules.ts). */
  scheduleGraceSeconds: number;
  /** A bot schedule runs this many seconds at most after the time its expression names, at a fixed second per project and schedule (0: on the time itself). */
  botScheduleSpreadSeconds: number;
  /** The shortest period a bot's schedule may have, in seconds (at least 60: a cron expression has 5 fields); a deploy declaring a shorter one is refused. */
  scheduleMinPeriodSeconds: number;
  /** Processes of their own alive at once, for projects moved out of the shared sandbox processes (lib/sandbox/supervisor.ts). */
  botSandboxProcesses: number;
  /** Sandbox processes that host many projects' isolates (0: every project in a process of its own). */
  botSandboxSharedProcesses: number;
  /** The nice value every sandbox process runs at, at least (below the service's 0). */
  botSandboxNice: number;
  /** A shared sandbox process whose resident set passes this (MB) is stopped (while it runs events) or replaced. */
  botSandboxSharedMaxRssMb: number;
  /** Bot events and start-ups in flight at once on the instance, shared between projects in turn (lib/sandbox/fair-slots.ts). */
  botSandboxInFlight: number;
  /** A sandbox process with nothing to run for this long is stopped. */
  botSandboxIdleMs: number;
  /** CPU a project's bots (events, schedules, previews) may use per minute; past it their events wait (lib/bot/cpu-budget.ts). */
  botCpuMsPerMinute: number;
  /** CPU per minute past which a project's sandbox process runs at a lower priority than the others'. */
  botCpuBurstMs: number;
  /** A sandbox process whose resident set passes this (MB) is replaced once its events end. */
  botSandboxMaxRssMb: number;
  /** Custom events a project's bot may emit per minute (shared counters); past it `emit` answers false. */
  botEmitsPerMinute: number;
  /** Secrets a project's bot may have (lib/bot/secrets.ts). */
  botSecretsMax: number;
  /** Largest value of one bot secret, in bytes (UTF-8). */
  botSecretMaxBytes: number;
  /** The bot's http.fetch: timeout when the bot names none (at most BOT_HTTP_MAX_TIMEOUT_MS, and never past the event's deadline). */
  botHttpTimeoutMs: number;
  /** The bot's http.fetch: request and response body caps, in bytes (a larger answer is `response_too_large`). */
  botHttpMaxBodyBytes: number;
  /** The bot's http.fetch: calls a project's bot may start per minute (shared counters). */
  botHttpPerMinute: number;
  /** The bot's http.fetch: calls of one project in progress at once, across instances (shared counters). */
  botHttpConcurrency: number;
  /** Files a project may store (lib/project-files/store.ts). */
  projectFilesMax: number;
  /** Bytes a project's files may hold in all. */
  projectFilesMaxBytes: number;
  /** Largest file the bot's `files.get` reads (a larger one is `file_too_large`). */
  botFileReadMaxBytes: number;
  /** How old the portfolio messaging limit read from the channel may be before a pre-flight reads it again (lib/pricing/messaging-limit.ts). */
  messagingLimitRefreshMs: number;
  /** How often each number's throughput level is read from the channel (CHANNEL_THROUGHPUT_REFRESH_MS). */
  channelThroughputRefreshMs: number;
  /** On shutdown, how long /readyz answers 503 before the server stops accepting (load balancers notice). */
  shutdownReadyDelayMs: number;
  /** Development and tests only: let outbound requests reach private and loopback addresses. */
  devAllowPrivateTargets: boolean;
  /** Port of the bundled Cloud API simulator (embedded default). */
  simulatorPort: number;
  /** A standalone simulator (`npm run simulator`) to use instead of the bundled one; new projects get a number there. */
  simulatorUrl?: string;
  /** Where the standalone simulator calls back (its webhooks) for new projects; unset: this instance's own address. Behind a load balancer: the balancer. */
  simulatorCallbackBaseUrl?: string;
  /** The bundled simulator approves a new template after this many ms (null: never; decide with `ops templates approve|reject`). Same default as the standalone one. */
  simulatorTemplateAutoApproveMs: number | null;
  /** Base URL written into the served OpenAPI documents' `servers`; also the OAuth issuer (https in production). */
  publicBaseUrl: string;
  /** Browser origins besides PUBLIC_BASE_URL's that may call /mcp and the OAuth endpoints (MCP_ALLOWED_ORIGINS, comma-separated). */
  mcpAllowedOrigins: string[];
  /** A PEM certificate to trust for client metadata documents besides the system's (OAUTH_CLIENT_METADATA_CA_FILE; development). */
  oauthClientMetadataCa?: string;
  /** Lifetime of an access token (`mcp_at_`) issued by the OAuth token endpoint. */
  oauthAccessTokenSeconds: number;
  /** Lifetime of an OAuth refresh token (`mcp_rt_`); each use replaces it with a new one. */
  oauthRefreshTokenSeconds: number;
  /**
   * Requests per minute per client address to each of /register, /authorize and /revoke, and to /token
   * for requests that carry no valid code or refresh token of their client (shared counters).
   */
  oauthRequestsPerMinute: number;
  /** /token requests per minute per client_id that carry a valid code or refresh token of that client (shared counters). */
  oauthClientTokenRequestsPerMinute: number;
  /** Refreshes per minute per grant (one person's connection of one client; shared counters). */
  oauthGrantRefreshesPerMinute: number;
  /** Client registrations (POST /register) per client address (IPv6 by /64) and hour (shared counters). */
  oauthRegistrationsPerHour: number;
  /** Bytes of registration bodies per client address (IPv6 by /64) and UTC day (shared counters). */
  oauthRegistrationBytesPerDay: number;
  /** Upload budget per credential and minute (header samples and media): bytes received. */
  uploadBytesPerMinute: number;
  /** Upload budget per credential and minute: upload requests. */
  uploadRequestsPerMinute: number;
  /** Total time limit of one URL download (media and header samples), all redirects included. */
  downloadTimeoutMs: number;
  /** Where uploads and downloads are kept while checked (disk-backed; not a RAM tmpfs). */
  uploadTmpDir: string;
  /** Fraction (0..1) of responses checked against the contract after they are sent; a violation is logged, never changes the answer. */
  responseCheckSample: number;
  /** OpenAI-compatible endpoint of the flow model generator (lib/flows/model-generator.ts); unset: deterministic only. */
  flowModelUrl?: string;
  flowModelName?: string;
  flowModelApiKey?: string;
  flowModelTimeoutMs?: number;
  /**
   * A send whose outcome was lost becomes final `unknown` when no status named it this long after
   * the send (default 7 days and an hour: Meta retries a status callback for up to 7 days).
   */
  sendUnknownAfterMs: number;
  /** How often the settle job looks for such sends. */
  sendSettleEveryMs: number;
  /** Broadcast throughput of a channel number without an operator setting (messages per second). */
  broadcastDefaultMps: number;
  /** Part (0 < share <= 1) of a number's throughput that broadcasts may use; the rest stays for replies. */
  broadcastRateShare: number;
}

/** Meta retries a webhook callback for up to 7 days; an hour more lets its last retry land. */
export const SEND_UNKNOWN_AFTER_DEFAULT_S = 7 * 86400 + 3600;

/** TRUST_PROXY: unset/false, true, a hop count, or addresses/subnets (comma-separated) as Express reads them. */
function trustProxyOf(v: string | undefined): boolean | number | string {
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
  return v;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`Configuration: ${name} must be a positive number, got "${raw}"`);
  return n;
}

function boundedNumber(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number): number {
  const n = positiveNumber(env, name, fallback);
  if (n > max) throw new Error(`Configuration: ${name} must be a positive number up to ${max}, got "${str(env, name)}"`);
  return n;
}

/** A part of a whole: more than 0, at most 1. */
function share(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const n = fraction(env, name, fallback);
  if (n === 0) throw new Error(`Configuration: ${name} must be more than 0 and at most 1, got "${str(env, name)}"`);
  return n;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`Configuration: ${name} must be an integer between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

function fraction(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error(`Configuration: ${name} must be a number from 0 to 1, got "${raw}"`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`Configuration: ${name} must be true or false, got "${env[name]}"`);
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!allowed.includes(raw as T)) throw new Error(`Configuration: ${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** A PEM file's text, read once at start; a missing or non-PEM file stops start-up. */
function pemFile(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const file = str(env, name);
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`Configuration: ${name}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  if (!text.includes('-----BEGIN CERTIFICATE-----')) throw new Error(`Configuration: ${name}: ${file} holds no PEM certificate`);
  return text;
}

/** A comma-separated list of browser origins (`https://app.example.com`); anything else stops start-up. */
function origins(env: NodeJS.ProcessEnv, name: string): string[] {
  const raw = str(env, name);
  if (!raw) return [];
  return raw.split(',').map((v) => v.trim()).filter((v) => v !== '').map((v) => {
    let url: URL | undefined;
    try {
      url = new URL(v);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== v.replace(/\/$/, '')) {
      throw new Error(`Configuration: ${name}: "${v.slice(0, 100)}" is not an origin (scheme://host[:port], no path), e.g. https://app.example.com`);
    }
    return url.origin;
  });
}

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** Read before the config too, by the tracing bootstrap (lib/platform/tracing/preload.ts), which skips a value refused here. */
function otlpEndpoint(env: NodeJS.ProcessEnv): string | undefined {
  const v = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (v !== undefined && !/^https?:\/\/\S+$/i.test(v)) {
    throw new Error(`Configuration: OTEL_EXPORTER_OTLP_ENDPOINT must be the http(s) URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318), got "${v}"`);
  }
  return v;
}

/** REDIS_SENTINELS=host:port,… with REDIS_SENTINEL_MASTER (both or neither; not with REDIS_URL). */
function redisSentinelSettings(env: NodeJS.ProcessEnv): Pick<Config, 'redisSentinels' | 'redisSentinelMaster' | 'redisPassword' | 'redisSentinelPassword'> {
  const raw = str(env, 'REDIS_SENTINELS');
  const master = str(env, 'REDIS_SENTINEL_MASTER');
  if (!raw && !master) return {};
  if (!raw || !master) throw new Error('Configuration: REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together (the sentinels\' host:port list and the master\'s name they monitor)');
  if (str(env, 'REDIS_URL')) throw new Error('Configuration: set REDIS_URL or REDIS_SENTINELS, not both');
  const sentinels = raw.split(',').map((v) => v.trim()).filter((v) => v !== '').map((v) => {
    const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(v);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new Error(`Configuration: REDIS_SENTINELS: "${v.slice(0, 100)}" is not host:port`);
    return { host: m[1], port };
  });
  return { redisSentinels: sentinels, redisSentinelMaster: master, redisPassword: str(env, 'REDIS_PASSWORD'), redisSentinelPassword: str(env, 'REDIS_SENTINEL_PASSWORD') };
}

/** HA_ETCD_ENDPOINTS=http://host:port,… (the etcd members Patroni uses), informational only. */
function etcdEndpoints(env: NodeJS.ProcessEnv): string[] | undefined {
  const raw = str(env, 'HA_ETCD_ENDPOINTS');
  if (!raw) return undefined;
  return raw.split(',').map((v) => v.trim()).filter((v) => v !== '').map((v) => {
    if (!/^https?:\/\/[^/\s]+\/?$/i.test(v)) throw new Error(`Configuration: HA_ETCD_ENDPOINTS: "${v.slice(0, 100)}" is not an http(s)://host:port URL`);
    return v.replace(/\/$/, '');
  });
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const embeddedPgPort = int(env, 'EMBEDDED_PG_PORT', 54329, 1024, 65535);
  if (embeddedPgPort === 5432) throw new Error('Configuration: EMBEDDED_PG_PORT must not be 5432 (a system PostgreSQL may hold it)');
  const port = int(env, 'PORT', 3000, 0, 65535);
  return {
    port,
    host: str(env, 'HOST') ?? '0.0.0.0',
    nodeEnv: str(env, 'NODE_ENV') ?? 'development',
    databaseUrl: str(env, 'DATABASE_URL'),
    databasePoolMax: int(env, 'DATABASE_POOL_MAX', 20, 1, 1000),
    databaseWaitSeconds: int(env, 'DATABASE_WAIT_SECONDS', 60, 0, 3600),
    blobStore: oneOf(env, 'BLOB_STORE', ['local', 'postgres'] as const, 'local'),
    httpRequestTimeoutMs: int(env, 'HTTP_REQUEST_TIMEOUT_MS', 180000, 1000, 3600000),
    httpHeadersTimeoutMs: int(env, 'HTTP_HEADERS_TIMEOUT_MS', 20000, 1000, 600000),
    httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEPALIVE_TIMEOUT_MS', 5000, 100, 600000),
    authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE', 20, 1),
    authFailuresGlobalPerMinute: int(env, 'AUTH_FAILURES_GLOBAL_PER_MINUTE', 1000, 1),
    trustProxy: trustProxyOf(str(env, 'TRUST_PROXY')),
    simulatorCallbackRetryScale: positiveNumber(env, 'SIMULATOR_CALLBACK_RETRY_SCALE', 1),
    databaseAcquireTimeoutMs: int(env, 'DATABASE_ACQUIRE_TIMEOUT_MS', 5000, 100, 600000),
    databaseStatementTimeoutMs: int(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 30000, 0, 3600000),
    databaseCommitTimeoutMs: int(env, 'DATABASE_COMMIT_TIMEOUT_MS', 2000, 0, 600000),
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? '.data'),
    embeddedPgPort,
    redisUrl: str(env, 'REDIS_URL'),
    ...redisSentinelSettings(env),
    haEtcdEndpoints: etcdEndpoints(env),
    redisTimeoutMs: int(env, 'REDIS_TIMEOUT_MS', 200, 1, 60000),
    adminToken: str(env, 'ADMIN_TOKEN'),
    encryptionKey: str(env, 'ENCRYPTION_KEY'),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 60, 1),
    runtimeEventsPerMinute: int(env, 'RUNTIME_EVENTS_PER_MINUTE', 6000, 1),
    credentialCacheTtlMs: int(env, 'CREDENTIAL_CACHE_TTL_MS', 10000, 0, 3600000),
    tablesStatementTimeoutMs: int(env, 'TABLES_STATEMENT_TIMEOUT_MS', 5000, 1, 600000),
    tablesPoolMax: int(env, 'TABLES_POOL_MAX', 10, 1, 1000),
    tablesProjectConcurrency: int(env, 'TABLES_PROJECT_CONCURRENCY', 4, 1, 1000),
    tablesAcquireTimeoutMs: int(env, 'TABLES_ACQUIRE_TIMEOUT_MS', 5000, 1, 600000),
    tablesQuotaPublicRows: int(env, 'TABLES_QUOTA_PUBLIC_ROWS', 1_000_000, 0),
    tablesQuotaPublicBytes: int(env, 'TABLES_QUOTA_PUBLIC_BYTES', 1024 ** 3, 0),
    tablesQuotaPreviewRows: int(env, 'TABLES_QUOTA_PREVIEW_ROWS', 100_000, 0),
    tablesQuotaPreviewBytes: int(env, 'TABLES_QUOTA_PREVIEW_BYTES', 100 * 1024 ** 2, 0),
    tablesPageMaxBytes: int(env, 'TABLES_PAGE_MAX_BYTES', 4 * 1024 ** 2, 1024, 256 * 1024 ** 2),
    logLevel: str(env, 'LOG_LEVEL') ?? 'info',
    otelEndpoint: otlpEndpoint(env),
    graphBaseUrl: str(env, 'GRAPH_BASE_URL')?.replace(/\/+$/, ''),
    // The latest Graph version (channel/graph-versions.ts's DEFAULT_GRAPH_VERSION; a test keeps them equal).
    graphApiVersion: str(env, 'GRAPH_API_VERSION') ?? 'v26.0',
    graphTimeoutMs: int(env, 'GRAPH_TIMEOUT_MS', 10000, 100, 120000),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 5000, 0, 600000),
    botInboxLeaseMs: int(env, 'BOT_INBOX_LEASE_MS', 60000, 1000, 3600000),
    botEventsPerMinute: int(env, 'BOT_EVENTS_PER_MINUTE', 3000, 1),
    botMaxAbnormalRuns: int(env, 'BOT_MAX_ABNORMAL_RUNS', 3, 1, 20),
    scheduleGraceSeconds: int(env, 'SCHEDULE_GRACE_SECONDS', 600, 0, 7 * 86_400),
    scheduleMinPeriodSeconds: int(env, 'SCHEDULE_MIN_PERIOD_SECONDS', 60, 60, 86_400),
    botScheduleSpreadSeconds: int(env, 'BOT_SCHEDULE_SPREAD_SECONDS', 30, 0, 59),
    botSandboxProcesses: int(env, 'BOT_SANDBOX_PROCESSES', 16, 1, 256),
    botSandboxSharedProcesses: int(env, 'BOT_SANDBOX_SHARED_PROCESSES', 2, 0, 64),
    botSandboxNice: int(env, 'BOT_SANDBOX_NICE', 0, 0, 19),
    botSandboxSharedMaxRssMb: int(env, 'BOT_SANDBOX_SHARED_MAX_RSS_MB', 2048, 128, 65536),
    botSandboxInFlight: int(env, 'BOT_SANDBOX_IN_FLIGHT', 512, 1, 100_000),
    botSandboxIdleMs: int(env, 'BOT_SANDBOX_IDLE_MS', 60_000, 1000, 3_600_000),
    botCpuMsPerMinute: int(env, 'BOT_CPU_MS_PER_MINUTE', 30_000, 100, 3_600_000),
    botCpuBurstMs: int(env, 'BOT_CPU_BURST_MS', 2000, 0, 3_600_000),
    botSandboxMaxRssMb: int(env, 'BOT_SANDBOX_MAX_RSS_MB', 512, 64, 65536),
    botEmitsPerMinute: int(env, 'BOT_EMITS_PER_MINUTE', 1200, 1),
    botSecretsMax: int(env, 'BOT_SECRETS_MAX', 50, 1, 1000),
    botSecretMaxBytes: int(env, 'BOT_SECRET_MAX_BYTES', 4096, 1, 65536),
    botHttpTimeoutMs: int(env, 'BOT_HTTP_TIMEOUT_MS', 3000, 100, 15000),
    botHttpMaxBodyBytes: int(env, 'BOT_HTTP_MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024),
    botHttpPerMinute: int(env, 'BOT_HTTP_PER_MINUTE', 600, 1),
    botHttpConcurrency: int(env, 'BOT_HTTP_CONCURRENCY', 8, 1, 256),
    projectFilesMax: int(env, 'PROJECT_FILES_MAX', 200, 1, 100_000),
    projectFilesMaxBytes: int(env, 'PROJECT_FILES_MAX_BYTES', 100 * 1024 * 1024, 1, 100 * 1024 * 1024 * 1024),
    botFileReadMaxBytes: int(env, 'BOT_FILE_READ_MAX_BYTES', 1024 * 1024, 1, 1024 * 1024),
    messagingLimitRefreshMs: int(env, 'MESSAGING_LIMIT_REFRESH_MS', 900000, 0, 86400000),
    channelThroughputRefreshMs: int(env, 'CHANNEL_THROUGHPUT_REFRESH_MS', 3600000, 60000, 86400000),
    shutdownReadyDelayMs: int(env, 'SHUTDOWN_READY_DELAY_MS', 0, 0, 600000),
    simulatorPort: int(env, 'SIMULATOR_PORT', 4010, 0, 65535),
    simulatorTemplateAutoApproveMs: env.SIMULATOR_TEMPLATE_AUTO_APPROVE_MS?.trim() === 'off' ? null : int(env, 'SIMULATOR_TEMPLATE_AUTO_APPROVE_MS', 3000, 0, 86_400_000),
    simulatorUrl: str(env, 'SIMULATOR_URL')?.replace(/\/+$/, ''),
    simulatorCallbackBaseUrl: str(env, 'SIMULATOR_CALLBACK_BASE_URL')?.replace(/\/+$/, ''),
    devAllowPrivateTargets: bool(env, 'DEV_ALLOW_PRIVATE_TARGETS', false),
    publicBaseUrl: (str(env, 'PUBLIC_BASE_URL') ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    mcpAllowedOrigins: origins(env, 'MCP_ALLOWED_ORIGINS'),
    oauthClientMetadataCa: pemFile(env, 'OAUTH_CLIENT_METADATA_CA_FILE'),
    oauthAccessTokenSeconds: int(env, 'OAUTH_ACCESS_TOKEN_SECONDS', 3600, 60, 86_400),
    oauthRefreshTokenSeconds: int(env, 'OAUTH_REFRESH_TOKEN_SECONDS', 2_592_000, 3600, 365 * 86_400),
    oauthRequestsPerMinute: int(env, 'OAUTH_REQUESTS_PER_MINUTE', 60, 1),
    oauthClientTokenRequestsPerMinute: int(env, 'OAUTH_CLIENT_TOKEN_REQUESTS_PER_MINUTE', 3000, 1),
    oauthGrantRefreshesPerMinute: int(env, 'OAUTH_GRANT_REFRESHES_PER_MINUTE', 10, 1),
    oauthRegistrationsPerHour: int(env, 'OAUTH_REGISTRATIONS_PER_HOUR', 1000, 1),
    oauthRegistrationBytesPerDay: int(env, 'OAUTH_REGISTRATION_BYTES_PER_DAY', 8 * 1024 * 1024, 16 * 1024),
    // At least the 100 MB document ceiling, or a maximal document could never be uploaded.
    uploadBytesPerMinute: int(env, 'UPLOAD_BYTES_PER_MINUTE', 200 * 1024 * 1024, 1),
    uploadRequestsPerMinute: int(env, 'UPLOAD_REQUESTS_PER_MINUTE', 30, 1),
    downloadTimeoutMs: int(env, 'DOWNLOAD_TIMEOUT_MS', 60000, 100, 600000),
    uploadTmpDir: path.resolve(str(env, 'UPLOAD_TMP_DIR') ?? os.tmpdir()),
    responseCheckSample: fraction(env, 'RESPONSE_CHECK_SAMPLE', 0),
    flowModelUrl: str(env, 'FLOW_MODEL_URL')?.replace(/\/+$/, ''),
    flowModelName: str(env, 'FLOW_MODEL_NAME'),
    flowModelApiKey: str(env, 'FLOW_MODEL_API_KEY'),
    flowModelTimeoutMs: int(env, 'FLOW_MODEL_TIMEOUT_MS', 30000, 100, 600000),
    sendUnknownAfterMs: int(env, 'SEND_UNKNOWN_AFTER_SECONDS', SEND_UNKNOWN_AFTER_DEFAULT_S, 60, 90 * 86400) * 1000,
    sendSettleEveryMs: int(env, 'SEND_SETTLE_EVERY_SECONDS', 60, 1, 86400) * 1000,
    // The operator API caps a number at 1,000/s; this default may go higher for load tests.
    broadcastDefaultMps: boundedNumber(env, 'BROADCAST_DEFAULT_MPS', 80, 100_000),
    broadcastRateShare: share(env, 'BROADCAST_RATE_SHARE', 0.9),
  };
}
