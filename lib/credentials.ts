/**
 * Turns a bearer secret into a credential: a project API key (`pk_live_…`, `pk_test_…`) or an
 * agent access token (`mcp_at_…`). Lookups go by the secret's SHA-256 digest; the stored digest
 * is then compared in constant time. Nothing is cached, so a rotation, revocation or scope edit
 * takes effect on the next request.
 */
import { ApiError } from './errors.js';
import { hashSecret, safeEqual } from './secrets.js';
import type { Database } from './db/database.js';

export const KEY_PREFIXES = { live: 'pk_live_', test: 'pk_test_' } as const;
export const TOKEN_PREFIX = 'mcp_at_';

export interface ProjectRef {
  id: string;
  name: string;
  status: 'active' | 'paused' | 'deleted';
}

export interface Grant {
  project: ProjectRef;
  scopes: string[];
  isDefault: boolean;
}

export type Credential =
  | { kind: 'api_key'; id: string; rateKey: string; grants: [Grant] }
  | { kind: 'access_token'; id: string; connectionId: string; rateKey: string; grants: Grant[] };

const BEARER = /^Bearer[ \t]+([A-Za-z0-9_\-.~+/]{1,512}=*)[ \t]*$/i;

function toRef(p: { id: string; name: string; status: string }): ProjectRef {
  return { id: p.id, name: p.name, status: p.status as ProjectRef['status'] };
}

export async function resolveCredential(db: Database, authorization: string | undefined, now: Date): Promise<Credential> {
  const match = authorization === undefined ? null : BEARER.exec(authorization);
  if (!match) {
    throw new ApiError('api_key_required', 'Send Authorization: Bearer <API_KEY> or Bearer <ACCESS_TOKEN>.');
  }
  const secret = match[1];
  const digest = hashSecret(secret);

  if (secret.startsWith(KEY_PREFIXES.live) || secret.startsWith(KEY_PREFIXES.test)) {
    const key = await db.prisma.apiKey.findUnique({ where: { secretHash: digest }, include: { project: true } });
    if (!key || key.revokedAt || !safeEqual(key.secretHash, digest)) {
      throw new ApiError('invalid_api_key', 'The API key is unknown, revoked or rotated.');
    }
    return {
      kind: 'api_key',
      id: key.id,
      rateKey: `key:${key.id}`,
      grants: [{ project: toRef(key.project), scopes: key.scopes, isDefault: true }],
    };
  }

  if (secret.startsWith(TOKEN_PREFIX)) {
    const token = await db.prisma.accessToken.findUnique({
      where: { secretHash: digest },
      include: { connection: { include: { projects: { include: { project: true }, orderBy: { createdAt: 'asc' } } } } },
    });
    if (!token || token.revokedAt || token.expiresAt <= now || !safeEqual(token.secretHash, digest)) {
      throw new ApiError('invalid_token', 'The access token is unknown, revoked or expired.');
    }
    return {
      kind: 'access_token',
      id: token.id,
      connectionId: token.connectionId,
      rateKey: `conn:${token.connectionId}`,
      grants: token.connection.projects.map((cp) => ({ project: toRef(cp.project), scopes: cp.scopes, isDefault: cp.isDefault })),
    };
  }

  throw new ApiError('api_key_required', 'The bearer is not an API key (pk_live_…, pk_test_…) or an access token (mcp_at_…).');
}
