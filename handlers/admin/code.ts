/** Operator view of a project's bot: deployments, rollback, the bot's log. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { listDeployments, rollback } from '../../lib/deploy/deployments.js';
import { projectExists } from '../../lib/access/projects.js';
import { listBotLogs } from '../../lib/bot/helpers.js';
import { listSetAside } from '../../lib/bot/inbox.js';

async function projectId(deps: Parameters<Handler<any>>[1], raw: string): Promise<string> {
  if (!(await projectExists(deps, raw))) throw new ApiError('not_found', `No project "${raw}".`);
  return raw.toLowerCase();
}

export const adminListDeployments: Handler<operations['adminListDeployments']> = async (req, deps) => ({
  data: { deployments: await listDeployments(deps.db.sql, await projectId(deps, req.params.projectId)) },
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
  const rows = await listBotLogs(deps.db.sql, id, req.query.level, limit);
  return {
    data: {
      logs: rows.map((r) => ({ id: Number(r.id), level: r.level as 'info', kind: r.kind as 'log', message: r.message, deployment_id: r.deployment_id, created_at: r.created_at.toISOString() })),
    },
  };
};

export const adminListSetAsideEvents: Handler<operations['adminListSetAsideEvents']> = async (req, deps) => {
  const id = await projectId(deps, req.params.projectId);
  const rows = await listSetAside(deps.db.sql, id, req.query.limit ?? 50);
  return {
    data: {
      events: rows.map((r) => ({ message_id: r.message_id, abnormal_runs: r.abnormal_runs, reason: r.reason, set_aside_at: r.set_aside_at.toISOString(), received_at: r.received_at.toISOString() })),
    },
  };
};

export const adminGetBotCapacity: Handler<operations['adminGetBotCapacity']> = async (req, deps) => {
  const id = await projectId(deps, req.params.projectId);
  if (!deps.bot?.capacity) throw new ApiError('not_found', 'This instance runs no bots.');
  return { data: await deps.bot.capacity(id) };
};
