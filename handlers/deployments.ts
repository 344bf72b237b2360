/** Deploying the bot's development tree to production, and previews (lib/deploy/, lib/bot/). Thin. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { deploy, listDeployments as list } from '../lib/deploy/deployments.js';
import { previewBot as preview } from '../lib/bot/preview.js';
import { sampleTrial } from '../lib/bot/deploy-trial.js';

export const listDeployments: Handler<operations['listDeployments']> = async (req, deps) => ({
  data: { deployments: await list(deps.db.sql, req.auth!.project.id) },
});

export const deployCode: Handler<operations['deployCode']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const { deployment, noOp } = await deploy(deps, projectId, {
    message: req.body?.message,
    createdBy: req.auth!.credential.id,
    trial: sampleTrial(deps, projectId, req.body?.sample),
    force: req.body?.force,
  });
  if (!noOp) deps.bot?.releaseChanged(req.auth!.project.id);
  return { status: noOp ? 200 : 201, data: { deployment, no_op: noOp } };
};

export const previewBot: Handler<operations['previewBot']> = async (req, deps) => ({
  data: await preview(deps, req.auth!.project.id, req.body),
});
