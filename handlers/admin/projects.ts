/** Operator API: projects (the rules: lib/access/projects.ts). Deleting marks a project deleted; its keys then get 403 project_inactive. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import * as projects from '../../lib/access/projects.js';
import { projectView } from './serialize.js';
import { wakeQuotaHeld } from '../../lib/broadcasts/campaigns.js';

export { findProject } from '../../lib/access/projects.js';

type Ops = operations;

export const adminListProjects: Handler<Ops['adminListProjects']> = async (_req, deps) => ({
  data: { projects: (await projects.listProjects(deps)).map(projectView) },
});

export const adminCreateProject: Handler<Ops['adminCreateProject']> = async (req, deps) => {
  const { id, name, daily_send_quota, conversation_reserve } = req.body;
  return { status: 201, data: { project: projectView(await projects.createProject(deps, { id, name, dailySendQuota: daily_send_quota, conversationReserve: conversation_reserve })) } };
};

export const adminGetProject: Handler<Ops['adminGetProject']> = async (req, deps) => ({
  data: { project: projectView(await projects.findProject(deps, req.params.projectId)) },
});

export const adminUpdateProject: Handler<Ops['adminUpdateProject']> = async (req, deps) => {
  const { name, status, daily_send_quota, conversation_reserve } = req.body;
  const project = await projects.updateProject(deps, req.params.projectId, { name, status, dailySendQuota: daily_send_quota, conversationReserve: conversation_reserve });
  deps.bot?.releaseChanged(project.id); // a paused project's bot stops at once
  // Campaigns parked on the used quota resume at the engine's next tick, not at midnight.
  if (daily_send_quota !== undefined || conversation_reserve !== undefined) await wakeQuotaHeld(deps.db.sql, project.id);
  return { data: { project: projectView(project) } };
};

export const adminDeleteProject: Handler<Ops['adminDeleteProject']> = async (req, deps) => ({
  data: { project: projectView(await projects.deleteProject(deps, req.params.projectId)) },
});
