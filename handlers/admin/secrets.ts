/** Operator API: the bot's secrets and the hosts its http.fetch may reach. The rules are in lib/bot/secrets.ts and lib/bot/http-allowlist.ts. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { findProject } from './projects.js';
import { deleteSecret, listSecrets, setSecret } from '../../lib/bot/secrets.js';
import { getAllowlist, setAllowlist } from '../../lib/bot/http-allowlist.js';
import { OPERATOR_ACTOR } from '../../lib/accounts/audit.js';

type Ops = operations;

export const adminListSecrets: Handler<Ops['adminListSecrets']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { secrets: await listSecrets(deps, project.id), limits: { max_secrets: deps.config.botSecretsMax, max_value_bytes: deps.config.botSecretMaxBytes } } };
};

export const adminSetSecret: Handler<Ops['adminSetSecret']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const { secret, created } = await setSecret(deps, OPERATOR_ACTOR, project.id, req.params.name, { value: req.body.value, productionOnly: req.body.production_only });
  return { status: created ? 201 : 200, data: { secret } };
};

export const adminDeleteSecret: Handler<Ops['adminDeleteSecret']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { secret: await deleteSecret(deps, OPERATOR_ACTOR, project.id, req.params.name) } };
};

export const adminGetHttpAllowlist: Handler<Ops['adminGetHttpAllowlist']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { hosts: await getAllowlist(deps, project.id) } };
};

export const adminSetHttpAllowlist: Handler<Ops['adminSetHttpAllowlist']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { hosts: await setAllowlist(deps, OPERATOR_ACTOR, project.id, req.body.hosts ?? null) } };
};
