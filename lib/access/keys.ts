/** The operator's rules for project API keys: minted with a prefix per mode, stored hashed, the secret shown once (create, rotate); a revoked key does not change. */
import type { Deps } from '../deps.js';
import { credentialsChanged } from './credential-cache.js';
import { ApiError } from '../platform/errors.js';
import { hashSecret, newId, newSecret, secretHint } from '../platform/secrets.js';
import { KEY_PREFIXES } from './credentials.js';
import { findProject } from './projects.js';
import { execute } from '../platform/db/tx.js';

type KeyDeps = Pick<Deps, 'db' | 'clock'> & Partial<Pick<Deps, 'credentialCache' | 'logger'>>;

async function findKey(deps: Pick<Deps, 'db'>, id: string) {
  const key = await deps.db.prisma.apiKey.findUnique({ where: { id } });
  if (!key) throw new ApiError('not_found', `No API key "${id}".`);
  return key;
}

function mint(mode: 'live' | 'test') {
  const secret = newSecret(KEY_PREFIXES[mode]);
  return { secret, secretHash: hashSecret(secret), hint: secretHint(secret) };
}

async function liveKey(deps: Pick<Deps, 'db'>, id: string) {
  const current = await findKey(deps, id);
  if (current.revokedAt) throw new ApiError('conflict', `API key "${current.id}" is revoked.`);
  return current;
}

export { findKey };

export async function listKeys(deps: Pick<Deps, 'db'>, projectId: string) {
  const project = await findProject(deps, projectId);
  return deps.db.prisma.apiKey.findMany({ where: { projectId: project.id }, orderBy: { createdAt: 'asc' } });
}

export async function createKey(deps: KeyDeps, projectId: string, input: { name: string; scopes: string[]; mode?: 'live' | 'test' }) {
  const project = await findProject(deps, projectId);
  if (project.status === 'deleted') throw new ApiError('conflict', `Project "${project.id}" is deleted.`);
  const mode = input.mode ?? 'live';
  const { secret, secretHash, hint } = mint(mode);
  const key = await deps.db.prisma.apiKey.create({
    data: { id: newId('key', 12), projectId: project.id, name: input.name, mode, scopes: input.scopes, secretHash, hint },
  });
  // A new credential is announced too: every instance's set of valid digests (the failure throttle's) learns it.
  await credentialsChanged(deps);
  return { key, secret };
}

export async function updateKey(deps: KeyDeps, id: string, change: { name?: string; scopes?: string[] }) {
  const current = await liveKey(deps, id);
  const key = await deps.db.prisma.apiKey.update({ where: { id: current.id }, data: { name: change.name, scopes: change.scopes } });
  await credentialsChanged(deps);
  return key;
}

export async function rotateKey(deps: KeyDeps, id: string) {
  const current = await liveKey(deps, id);
  const { secret, secretHash, hint } = mint(current.mode);
  const key = await deps.db.prisma.apiKey.update({ where: { id: current.id }, data: { secretHash, hint, rotatedAt: deps.clock.now() } });
  await credentialsChanged(deps);
  return { key, secret };
}

export async function revokeKey(deps: KeyDeps, id: string) {
  const current = await findKey(deps, id);
  if (current.revokedAt) return current;
  const key = await deps.db.prisma.apiKey.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  await credentialsChanged(deps);
  return key;
}

/** A key authenticated a request at `now`: its last-used time moves forward only (lib/access/key-usage.ts says how often). */
export async function recordKeyUse(db: Pick<Deps['db'], 'sql'>, keyId: string, now: Date): Promise<void> {
  await execute(db.sql, 'UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)', keyId, now);
}
