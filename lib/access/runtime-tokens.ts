/**
 * Runtime tokens (`rt_…`): the credential of a project's bot code on the runtime API (custom
 * events), never accepted on /v1 and never carrying scopes. Minted by operators, one project
 * each; only the SHA-256 digest is stored, the secret is shown once; revocation is immediate.
 */
import { credentialsChanged, type CredentialCache } from './credential-cache.js';
import type { Deps } from '../deps.js';
import type { Database } from '../platform/db/database.js';
import { queryRowsNamed } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { hashSecret, newId, newSecret, safeEqual, secretHint } from '../platform/secrets.js';

export const RUNTIME_TOKEN_PREFIX = 'rt_';

export interface RuntimeTokenRow {
  id: string;
  projectId: string;
  hint: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export async function mintRuntimeToken(db: Database, projectId: string, now: Date): Promise<{ token: RuntimeTokenRow; secret: string }> {
  const secret = newSecret(RUNTIME_TOKEN_PREFIX);
  const token = await db.prisma.runtimeToken.create({
    data: { id: newId('rtk', 12), projectId, hint: secretHint(secret), secretHash: hashSecret(secret), createdAt: now },
  });
  return { token, secret };
}

/** A project's runtime tokens, oldest first (revoked ones included). */
export function listRuntimeTokens(db: Database, projectId: string): Promise<RuntimeTokenRow[]> {
  return db.prisma.runtimeToken.findMany({ where: { projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
}

const BEARER = /^Bearer[ \t]+(rt_[A-Za-z0-9]{1,200})[ \t]*$/i;

interface TokenRow {
  id: string;
  project_id: string;
  secret_hash: string;
  revoked_at: Date | null;
  status: string;
}

/** Revokes a runtime token (again: no change); the caches hear of it after the commit. */
export async function revokeRuntimeToken(
  deps: Pick<Deps, 'db' | 'clock'> & Partial<Pick<Deps, 'credentialCache' | 'logger'>>,
  id: string,
): Promise<RuntimeTokenRow | null> {
  const current = await deps.db.prisma.runtimeToken.findUnique({ where: { id } });
  if (!current || current.revokedAt) return current;
  const token = await deps.db.prisma.runtimeToken.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  await credentialsChanged(deps);
  return token;
}

/**
 * The project of a runtime bearer; 401 when absent or unknown, 403 when the project is not
 * active. Found tokens are cached with the credentials (revoking one, or pausing its project,
 * is an operator write, which clears the cache everywhere).
 */
export async function resolveRuntimeToken(
  db: Database,
  authorization: string | undefined,
  cache?: CredentialCache,
  at: Date = new Date(),
): Promise<{ projectId: string; tokenId: string }> {
  if (!authorization) throw new ApiError('api_key_required', 'Send Authorization: Bearer <runtime token> (rt_…).');
  const match = BEARER.exec(authorization);
  if (!match) throw new ApiError('invalid_token', 'The runtime token is malformed, unknown or revoked.');
  const digest = hashSecret(match[1]);
  const now = at.getTime();
  let row = cache?.lookup(`rt:${digest}`, now) as TokenRow | undefined;
  if (!row) {
    const rows = await queryRowsNamed<TokenRow>(
      db.sql,
      'runtime-token',
      `SELECT t.id, t.project_id, t.secret_hash, t.revoked_at, p.status::text AS status
               FROM runtime_tokens t JOIN projects p ON p.id = t.project_id WHERE t.secret_hash = $1`,
      digest,
    );
    row = rows[0];
    if (row) cache?.store(`rt:${digest}`, row, now);
  }
  if (!row || row.revoked_at || !safeEqual(row.secret_hash, digest)) {
    throw new ApiError('invalid_token', 'The runtime token is malformed, unknown or revoked.');
  }
  if (row.status !== 'active') throw new ApiError('project_inactive', `Project "${row.project_id}" is ${row.status}.`);
  return { projectId: row.project_id, tokenId: row.id };
}
