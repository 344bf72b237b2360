/** Operator API: project API keys. The secret is returned once, by create and rotate. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../types.js';
import type { AppDeps } from '../../lib/deps.js';
import { ApiError } from '../../lib/errors.js';
import { hashSecret, newId, newSecret, secretHint } from '../../lib/secrets.js';
import { KEY_PREFIXES } from '../../lib/credentials.js';
import { findProject } from './projects.js';
import { keyView } from './serialize.js';

type Ops = operations;

async function findKey(deps: AppDeps, id: string) {
  const key = await deps.db.prisma.apiKey.findUnique({ where: { id } });
  if (!key) throw new ApiError('not_found', `No API key "${id}".`);
  return key;
}

function mint(mode: 'live' | 'test') {
  const secret = newSecret(KEY_PREFIXES[mode]);
  return { secret, secretHash: hashSecret(secret), hint: secretHint(secret) };
}

export const adminListKeys: Handler<Ops['adminListKeys']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const keys = await deps.db.prisma.apiKey.findMany({ where: { projectId: project.id }, orderBy: { createdAt: 'asc' } });
  return { data: { keys: keys.map(keyView) } };
};

export const adminCreateKey: Handler<Ops['adminCreateKey']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  if (project.status === 'deleted') throw new ApiError('conflict', `Project "${project.id}" is deleted.`);
  const mode = req.body.mode ?? 'live';
  const { secret, secretHash, hint } = mint(mode);
  const key = await deps.db.prisma.apiKey.create({
    data: { id: newId('key', 12), projectId: project.id, name: req.body.name, mode, scopes: req.body.scopes, secretHash, hint },
  });
  return { status: 201, data: { key: keyView(key), secret } };
};

export const adminGetKey: Handler<Ops['adminGetKey']> = async (req, deps) => ({
  data: { key: keyView(await findKey(deps, req.params.keyId)) },
});

export const adminUpdateKey: Handler<Ops['adminUpdateKey']> = async (req, deps) => {
  const current = await findKey(deps, req.params.keyId);
  if (current.revokedAt) throw new ApiError('conflict', `API key "${current.id}" is revoked.`);
  const key = await deps.db.prisma.apiKey.update({
    where: { id: current.id },
    data: { name: req.body.name, scopes: req.body.scopes },
  });
  return { data: { key: keyView(key) } };
};

export const adminRotateKey: Handler<Ops['adminRotateKey']> = async (req, deps) => {
  const current = await findKey(deps, req.params.keyId);
  if (current.revokedAt) throw new ApiError('conflict', `API key "${current.id}" is revoked.`);
  const { secret, secretHash, hint } = mint(current.mode);
  const key = await deps.db.prisma.apiKey.update({
    where: { id: current.id },
    data: { secretHash, hint, rotatedAt: deps.clock.now() },
  });
  return { data: { key: keyView(key), secret } };
};

export const adminRevokeKey: Handler<Ops['adminRevokeKey']> = async (req, deps) => {
  const current = await findKey(deps, req.params.keyId);
  const key = current.revokedAt
    ? current
    : await deps.db.prisma.apiKey.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  return { data: { key: keyView(key) } };
};
