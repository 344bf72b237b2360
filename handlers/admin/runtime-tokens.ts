/** Operator API: runtime tokens of a project's bot code. The secret is returned once, by create. */
import type { operations, components } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { listRuntimeTokens, mintRuntimeToken, revokeRuntimeToken, type RuntimeTokenRow } from '../../lib/access/runtime-tokens.js';
import { findProject } from './projects.js';

type Ops = operations;

function runtimeTokenView(t: RuntimeTokenRow): components['schemas']['RuntimeToken'] {
  return {
    id: t.id,
    project_id: t.projectId,
    hint: t.hint,
    created_at: t.createdAt.toISOString(),
    revoked_at: t.revokedAt ? t.revokedAt.toISOString() : null,
  };
}

export const adminListRuntimeTokens: Handler<Ops['adminListRuntimeTokens']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const tokens = await listRuntimeTokens(deps.db, project.id);
  return { data: { tokens: tokens.map(runtimeTokenView) } };
};

export const adminCreateRuntimeToken: Handler<Ops['adminCreateRuntimeToken']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  if (project.status === 'deleted') throw new ApiError('conflict', `Project "${project.id}" is deleted.`);
  const { token, secret } = await mintRuntimeToken(deps.db, project.id, deps.clock.now());
  return { status: 201, data: { token: runtimeTokenView(token), secret } };
};

export const adminRevokeRuntimeToken: Handler<Ops['adminRevokeRuntimeToken']> = async (req, deps) => {
  const token = await revokeRuntimeToken(deps, req.params.tokenId);
  if (!token) throw new ApiError('not_found', `No runtime token "${req.params.tokenId}".`);
  return { data: { token: runtimeTokenView(token) } };
};
