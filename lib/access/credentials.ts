/**
 * Turns a bearer secret into a credential: a project API key (`pk_live_…`, `pk_test_…`) or an
 * agent access token (`mcp_at_…`). Lookups go by the secret's SHA-256 digest; the stored digest
 * is then compared in constant time. Resolved credentials are cached (lib/access/credential-cache.ts)
 * and every operator write invalidates the cache on every instance, so a rotation, revocation or
 * scope edit takes effect on the next request.
 */
import { ApiError } from '../platform/errors.js';
import { hashSecret, safeEqual } from '../platform/secrets.js';
import type { Database } from '../platform/db/database.js';
import { queryRowsNamed } from '../platform/db/tx.js';
import type { CredentialCache } from './credential-cache.js';
import type { Credential, Grant, ProjectRef } from './types.js';

export type { Credential, Grant, ProjectRef } from './types.js';

export const KEY_PREFIXES = { live: 'pk_live_', test: 'pk_test_' } as const;
export const TOKEN_PREFIX = 'mcp_at_';

const BEARER = /^Bearer[ \t]+([A-Za-z0-9_\-.~+/]{1,512}=*)[ \t]*$/i;

interface KeyRow {
  id: string;
  scopes: string[];
  revoked_at: Date | null;
  secret_hash: string;
  project_id: string;
  project_name: string;
  project_status: string;
}

interface TokenRow {
  id: string;
  connection_id: string;
  revoked_at: Date | null;
  expires_at: Date;
  secret_hash: string;
  resource: string | null;
  client_id: string | null;
  project_id: string | null;
  project_name: string | null;
  project_status: string | null;
  scopes: string[] | null;
  is_default: boolean | null;
}

const KEY_SQL = `
  SELECT k.id, k.scopes, k.revoked_at, k.secret_hash, p.id AS project_id, p.name AS project_name, p.status::text AS project_status
  FROM api_keys k JOIN projects p ON p.id = k.project_id
  WHERE k.secret_hash = $1`;

// A token narrowed by an OAuth refresh (t.scopes not empty) holds on each project only those of the
// project's scopes it names, in the project's order.
const TOKEN_SQL = `
  SELECT t.id, t.connection_id, t.revoked_at, t.expires_at, t.secret_hash, t.resource, t.client_id,
         p.id AS project_id, p.name AS project_name, p.status::text AS project_status,
         CASE WHEN cardinality(coalesce(t.scopes, '{}')) = 0 THEN cp.scopes
              ELSE ARRAY(SELECT s FROM unnest(cp.scopes) WITH ORDINALITY AS u(s, n) WHERE s = ANY (t.scopes) ORDER BY n) END AS scopes,
         cp.is_default
  FROM access_tokens t
  LEFT JOIN connection_projects cp ON cp.connection_id = t.connection_id
  LEFT JOIN projects p ON p.id = cp.project_id
  WHERE t.secret_hash = $1
  ORDER BY cp.created_at`;

function toRef(r: Pick<KeyRow, 'project_id' | 'project_name' | 'project_status'>): ProjectRef {
  return { id: r.project_id, name: r.project_name, status: r.project_status as ProjectRef['status'] };
}

export interface ResolveOptions {
  /**
   * Runs when the credential is in neither memory (not cached as valid, not known bad), right before the
   * database would be asked: the failed-authentication throttle refuses there (middleware/authenticate.ts).
   */
  beforeLookup?: (digest: string) => Promise<void>;
}

const REFUSALS: Record<string, string> = {
  invalid_api_key: 'The API key is unknown, revoked or rotated.',
  invalid_token: 'The access token is unknown, revoked or expired.',
};

function refused(code: 'invalid_api_key' | 'invalid_token'): ApiError {
  return new ApiError(code, REFUSALS[code]);
}

export async function resolveCredential(
  db: Database,
  authorization: string | undefined,
  now: Date,
  cache?: CredentialCache,
  opts: ResolveOptions = {},
): Promise<Credential> {
  const match = authorization === undefined ? null : BEARER.exec(authorization);
  if (!match) {
    throw new ApiError('api_key_required', 'Send Authorization: Bearer <API_KEY> or Bearer <ACCESS_TOKEN>.');
  }
  const secret = match[1];
  const digest = hashSecret(secret);
  const cached = cache?.get(digest, now.getTime());
  if (cached) return cached;
  const isKey = secret.startsWith(KEY_PREFIXES.live) || secret.startsWith(KEY_PREFIXES.test);
  if (!isKey && !secret.startsWith(TOKEN_PREFIX)) {
    throw new ApiError('api_key_required', 'The bearer is not an API key (pk_live_…, pk_test_…) or an access token (mcp_at_…).');
  }
  // Known bad here: answered from memory, never a query again (lib/access/credential-cache.ts).
  const bad = cache?.knownBad(digest);
  if (bad) throw refused(bad as 'invalid_api_key' | 'invalid_token');
  await opts.beforeLookup?.(digest);
  // Requests with the same credential that miss the cache together (its entries expire after their
  // TTL while many requests are in flight) share one lookup; each refusal is its own error.
  const found = cache ? await cache.shared(digest, () => lookupCredential(db, digest, isKey, now, cache)) : await lookupCredential(db, digest, isKey, now);
  if (typeof found === 'string') throw refused(found);
  return found;
}

/** The database's answer for a digest (cached when usable, remembered when refused): the credential, or the refusal's code. */
async function lookupCredential(
  db: Database, digest: string, isKey: boolean, now: Date, cache?: CredentialCache,
): Promise<Credential | 'invalid_api_key' | 'invalid_token'> {
  // One prepared statement per credential kind: this runs on every request.
  if (isKey) {
    const rows = await queryRowsNamed<KeyRow>(db.sql, 'credential-key', KEY_SQL, digest);
    const key = rows[0];
    if (!key || key.revoked_at || !safeEqual(key.secret_hash, digest)) {
      cache?.markBad(digest, 'invalid_api_key');
      return 'invalid_api_key';
    }
    const credential: Credential = {
      kind: 'api_key',
      id: key.id,
      rateKey: `key:${key.id}`,
      grants: [{ project: toRef(key), scopes: key.scopes, isDefault: true }],
    };
    cache?.set(digest, credential, now.getTime());
    return credential;
  }

  {
    const rows = await queryRowsNamed<TokenRow>(db.sql, 'credential-token', TOKEN_SQL, digest);
    const token = rows[0];
    if (!token || token.revoked_at || token.expires_at <= now || !safeEqual(token.secret_hash, digest)) {
      cache?.markBad(digest, 'invalid_token');
      return 'invalid_token';
    }
    const credential: Credential = {
      kind: 'access_token',
      id: token.id,
      connectionId: token.connection_id,
      rateKey: `conn:${token.connection_id}`,
      grants: rows.filter((r) => r.project_id !== null).map((r) => ({ project: toRef(r as KeyRow), scopes: r.scopes!, isDefault: r.is_default! })),
      resource: token.resource,
      clientId: token.client_id,
      expiresAt: token.expires_at,
    };
    cache?.set(digest, credential, now.getTime(), token.expires_at);
    return credential;
  }
}
