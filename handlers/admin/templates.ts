/** Operator API: deciding a template on the simulator (lib/templates/simulator-decision.ts). */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { findProject } from '../../lib/access/projects.js';
import { decideOnSimulator } from '../../lib/templates/simulator-decision.js';

export const adminDecideTemplate: Handler<operations['adminDecideTemplate']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { template: await decideOnSimulator(deps, deps.simulatorUrl, project.id, req.params.name, req.body) } };
};
