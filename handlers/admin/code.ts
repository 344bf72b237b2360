/** Operator view of a project's bot: deployments, rollback, the bot's log. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { listDeployments, rollback } from '../../lib/deploy/deployments.js';

async function projectId(deps: Parameters<Handler<any>>[1], raw: string): Promise<string> {
  const id = raw.toLowerCase();
  const res = await deps.db.pool.query('SELECT 1 FROM projects WHERE id = $1', [id]);
  if (res.rowCount === 0) throw new ApiError('not_found', `No project "${raw}".`);
  return id;
}

export const adminListDeployments: Handler<operations['adminListDeployments']> = async (req, deps) => ({
  data: { deployments: await listDeployments(deps.db.pool, await projectId(deps, req.params.projectId)) },
});

export const adminRollbackDeployment: Handler<operations['adminRollbackDeployment']> = async (req, deps) => {
  const id = await projectId(deps, req.params.projectId);
  const { deployment, noOp } = await rollback(deps, id, req.params.deploymentId, { message: req.body?.message, createdBy: 'operator' });
  if (!noOp) deps.bot?.releaseChanged(id);
  return { status: noOp ? 200 : 201, data: { deployment, no_op: noOp } };
};

export const adminListBotLogs: Handler<operations['adminListBotLogs']> = async (req, deps) => {
  const id = await projectId(deps, req.params.projectId);
  const limit = req.query.limit ?? 50;
  const res = await deps.db.pool.query<{ id: string; level: string; kind: string; message: string; deployment_id: string | null; created_at: Date }>(
    `SELECT id::text, level, kind, message, deployment_id, created_at FROM bot_logs
     WHERE project_id = $1 AND ($2::text IS NULL OR level = $2) ORDER BY bot_logs.id DESC LIMIT $3`,
    [id, req.query.level ?? null, limit],
  );
  return {
    data: {
      logs: res.rows.map((r) => ({ id: Number(r.id), level: r.level as 'info', kind: r.kind as 'log', message: r.message, deployment_id: r.deployment_id, created_at: r.created_at.toISOString() })),
    },
  };
};
