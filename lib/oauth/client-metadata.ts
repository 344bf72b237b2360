/**
 * Client ID metadata documents (MCP 2025-11-25 authorization; draft-ietf-oauth-client-id-metadata-document):
 * a client whose `client_id` is an https URL publishes its metadata there, and needs no registration.
 * The rules:
 * - the URL: https, a path other than `/`, no query, fragment, credentials or dot segments, at most
 *   200 characters;
 * - the fetch: through the outbound guard of user-given URLs (lib/platform/net/safe-download.ts:
 *   public addresses only, checked at connect time; DEV_ALLOW_PRIVATE_TARGETS lifts that for local
 *   development), https only, no redirect followed (the document lives at its own id), at most
 *   5 KiB, within 5 seconds;
 * - the document: a JSON object whose `client_id` is exactly the URL; `redirect_uris` as
 *   registration allows for a public client (https, loopback http, or an app's private-use scheme);
 *   `token_endpoint_auth_method` absent or `none` (no secret can be published, and no
 *   `client_secret` may be in it); `grant_types` and `response_types` as registration allows;
 *   `client_name` at most 200 characters;
 * - the cache: per instance, for what the answer's Cache-Control `max-age` (or Expires) says,
 *   kept between 5 minutes and 24 hours (1 hour when it says nothing; `no-store` and `no-cache`
 *   count as the minimum); a failure is remembered for 1 minute, so a bad client_id cannot make us
 *   fetch on every request;
 * - the row: the client is stored in oauth_clients under its URL (requests, codes and tokens refer
 *   to it), refreshed with each fetch.
 */
import type { Deps } from '../deps.js';
import { safeDownload, DownloadError } from '../platform/net/safe-download.js';
import * as store from './store.js';
import { LIMITS, redirectUriProblem } from './rules.js';

export const DOCUMENT_MAX_BYTES = 5 * 1024;
export const DOCUMENT_TIMEOUT_MS = 5000;
const MIN_CACHE_S = 300;
const MAX_CACHE_S = 86_400;
const DEFAULT_CACHE_S = 3600;
const FAILURE_CACHE_MS = 60_000;
const CACHE_ENTRIES = 1000;
const MAX_URL = 200;

type MetadataDeps = Pick<Deps, 'db' | 'clock' | 'config' | 'logger'>;

export class ClientMetadataError extends Error {}

/** Whether a client_id is a URL (a metadata document) rather than an id this server issued. */
export function isMetadataClientId(clientId: string): boolean {
  return clientId.startsWith('https://') || clientId.startsWith('http://');
}

/** Why a client_id URL cannot name a metadata document, or undefined when it can. */
export function clientIdUrlProblem(raw: string): string | undefined {
  if (raw.length > MAX_URL) return `a client_id URL is at most ${MAX_URL} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'the client_id is not a URL';
  }
  if (url.protocol !== 'https:') return 'a client_id URL must be https';
  if (url.username || url.password) return 'a client_id URL must not carry credentials';
  if (url.search || raw.includes('?')) return 'a client_id URL must not have a query';
  if (url.hash || raw.includes('#')) return 'a client_id URL must not have a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'a client_id URL needs a path (the document), not the bare host';
  // The URL parser resolves `.` and `..` segments, lower-cases the host and drops a default port:
  // a client_id that is not already in that form is not the document's one name.
  if (url.href !== raw) return 'a client_id URL must be in its normal form (no . or .. segments, lower-case host, no default port)';
  return undefined;
}

export interface MetadataClient {
  client_id: string;
  client_name?: string;
  redirect_uris: string[];
  token_endpoint_auth_method: 'none';
  grant_types: string[];
  response_types: string[];
  /** Where the document lives: shown on the consent page. */
  host: string;
}

/** What the document says, checked; else the first problem. */
export function validateDocument(url: string, doc: unknown): MetadataClient {
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new ClientMetadataError('the document is not a JSON object');
  const d = doc as Record<string, unknown>;
  if (d.client_id !== url) throw new ClientMetadataError(`its client_id must be the document's own URL (${url}), not ${JSON.stringify(d.client_id)?.slice(0, 120)}`);
  if ('client_secret' in d || 'client_secret_expires_at' in d) throw new ClientMetadataError('a metadata document must not hold a client_secret');
  const method = d.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') throw new ClientMetadataError(`token_endpoint_auth_method: only none (a public client with PKCE), not ${String(method).slice(0, 50)}`);
  const uris = d.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.some((u) => typeof u !== 'string')) throw new ClientMetadataError('redirect_uris: a list of at least one URI');
  if (uris.length > LIMITS.redirectUris) throw new ClientMetadataError(`redirect_uris: at most ${LIMITS.redirectUris}`);
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri, { publicClient: true });
    if (problem) throw new ClientMetadataError(`redirect_uris: ${problem}`);
  }
  const name = d.client_name === undefined ? undefined : typeof d.client_name === 'string' ? d.client_name.trim() : null;
  if (name === null || (name !== undefined && name.length > LIMITS.clientName)) throw new ClientMetadataError(`client_name: a string of at most ${LIMITS.clientName} characters`);
  const grants = d.grant_types ?? ['authorization_code', 'refresh_token'];
  if (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) throw new ClientMetadataError('grant_types: only authorization_code and refresh_token');
  const responses = d.response_types ?? ['code'];
  if (!Array.isArray(responses) || responses.some((r) => r !== 'code')) throw new ClientMetadataError('response_types: only code');
  return {
    client_id: url,
    ...(name ? { client_name: name } : {}),
    redirect_uris: uris as string[],
    token_endpoint_auth_method: 'none',
    grant_types: grants as string[],
    response_types: responses as string[],
    host: new URL(url).host,
  };
}

/** Seconds to keep a document, from its answer's headers, within the bounds. */
export function cacheSeconds(cacheControl: string | undefined, expires: string | undefined, now: Date): number {
  const cc = (cacheControl ?? '').toLowerCase();
  let seconds: number | undefined;
  if (/(^|,)\s*(no-store|no-cache)\s*(,|$)/.test(cc)) seconds = 0;
  const maxAge = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?/.exec(cc);
  if (seconds === undefined && maxAge) seconds = Number(maxAge[1]);
  if (seconds === undefined && expires) {
    const at = Date.parse(expires);
    if (Number.isFinite(at)) seconds = Math.floor((at - now.getTime()) / 1000);
  }
  return Math.min(MAX_CACHE_S, Math.max(MIN_CACHE_S, seconds ?? DEFAULT_CACHE_S));
}

type Entry = { client: MetadataClient; until: number } | { problem: string; until: number };

/** The documents of this instance: fetched when missing or stale, failures remembered briefly. */
export function clientMetadataDocuments(deps: MetadataDeps) {
  const cache = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<MetadataClient>>();

  const remember = (url: string, entry: Entry) => {
    cache.delete(url);
    cache.set(url, entry);
    if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
  };

  async function fetchDocument(url: string): Promise<MetadataClient> {
    const chunks: Buffer[] = [];
    let size = 0;
    const result = await safeDownload(url, {
      allowPrivate: deps.config.devAllowPrivateTargets,
      httpsOnly: true,
      maxRedirects: 0,
      timeoutMs: DOCUMENT_TIMEOUT_MS,
      accept: 'application/json',
      userAgent: 'messaging-service/1.0 (OAuth client metadata)',
      ...(deps.config.oauthClientMetadataCa ? { ca: deps.config.oauthClientMetadataCa } : {}),
      sink: {
        precheck(declared) {
          if (declared > DOCUMENT_MAX_BYTES) throw new ClientMetadataError(`the document is larger than ${DOCUMENT_MAX_BYTES} bytes`);
        },
        async write(chunk) {
          size += chunk.length;
          if (size > DOCUMENT_MAX_BYTES) throw new ClientMetadataError(`the document is larger than ${DOCUMENT_MAX_BYTES} bytes`);
          chunks.push(chunk);
        },
      },
    });
    let doc: unknown;
    try {
      doc = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new ClientMetadataError('the document is not JSON');
    }
    const client = validateDocument(url, doc);
    const now = deps.clock.now();
    remember(url, { client, until: now.getTime() + cacheSeconds(result.cacheControl, result.expires, now) * 1000 });
    await store.upsertMetadataClient(deps.db, {
      id: url,
      name: client.client_name ?? '',
      redirectUris: client.redirect_uris,
      metadata: { client_name: client.client_name, token_endpoint_auth_method: 'none', grant_types: client.grant_types, response_types: client.response_types, client_id_metadata_document: true },
      now,
    });
    deps.logger.info('oauth: client metadata document fetched', { client_id: url, bytes: size });
    return client;
  }

  /** The client the document at `url` describes; throws ClientMetadataError with the reason it cannot be used. */
  async function resolve(url: string): Promise<MetadataClient> {
    const urlProblem = clientIdUrlProblem(url);
    if (urlProblem) throw new ClientMetadataError(urlProblem);
    const now = deps.clock.now().getTime();
    const hit = cache.get(url);
    if (hit && hit.until > now) {
      if ('problem' in hit) throw new ClientMetadataError(hit.problem);
      return hit.client;
    }
    let pending = inFlight.get(url);
    if (!pending) {
      pending = fetchDocument(url)
        .catch((e: unknown) => {
          const problem = e instanceof ClientMetadataError ? e.message : e instanceof DownloadError ? `the document could not be fetched: ${e.message}` : undefined;
          if (problem === undefined) throw e;
          remember(url, { problem, until: deps.clock.now().getTime() + FAILURE_CACHE_MS });
          deps.logger.warn('oauth: client metadata document refused', { client_id: url, problem });
          throw new ClientMetadataError(problem);
        })
        .finally(() => inFlight.delete(url));
      inFlight.set(url, pending);
    }
    return pending;
  }

  return { resolve };
}
