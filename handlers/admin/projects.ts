/** Operator API: projects. Deleting marks a project deleted; its keys then get 403 project_inactive. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../types.js';
import type { AppDeps } from '../../lib/deps.js';
import { ApiError } from '../../lib/errors.js';
import { newId } from '../../lib/secrets.js';
import { isUniqueViolation } from '../../lib/db/errors.js';
import { projectView } from './serialize.js';

type Ops = operations;

export async function findProject(deps: AppDeps, id: string) {
  const project = await deps.db.prisma.project.findUnique({ where: { id: id.toLowerCase() } });
  if (!project) throw new ApiError('PROJECT_NOT_FOUND', `No project "${id}".`);
  return project;
}

export const adminListProjects: Handler<Ops['adminListProjects']> = async (_req, deps) => {
  const projects = await deps.db.prisma.project.findMany({ orderBy: { createdAt: 'asc' } });
  return { data: { projects: projects.map(projectView) } };
};

export const adminCreateProject: Handler<Ops['adminCreateProject']> = async (req, deps) => {
  const { id, name, daily_send_quota } = req.body;
  try {
    const project = await deps.db.prisma.project.create({
      data: { id: id?.toLowerCase() ?? newId('prj', 12), name, dailySendQuota: daily_send_quota },
    });
    if (deps.provisionChannel) {
      await deps.provisionChannel(project.id).catch((e) =>
        deps.logger.warn('could not connect the new project to a channel', { project_id: project.id, error: String(e) }),
      );
    }
    return { status: 201, data: { project: projectView(project) } };
  } catch (e) {
    if (isUniqueViolation(e)) throw new ApiError('conflict', `A project with id "${id}" already exists.`);
    throw e;
  }
};

export const adminGetProject: Handler<Ops['adminGetProject']> = async (req, deps) => ({
  data: { project: projectView(await findProject(deps, req.params.projectId)) },
});

export const adminUpdateProject: Handler<Ops['adminUpdateProject']> = async (req, deps) => {
  const current = await findProject(deps, req.params.projectId);
  if (current.status === 'deleted') throw new ApiError('conflict', `Project "${current.id}" is deleted and cannot be changed.`);
  const { name, status, daily_send_quota } = req.body;
  const project = await deps.db.prisma.project.update({
    where: { id: current.id },
    data: { name, status, dailySendQuota: daily_send_quota },
  });
  return { data: { project: projectView(project) } };
};

export const adminDeleteProject: Handler<Ops['adminDeleteProject']> = async (req, deps) => {
  const current = await findProject(deps, req.params.projectId);
  const project = await deps.db.prisma.project.update({ where: { id: current.id }, data: { status: 'deleted' } });
  return { data: { project: projectView(project) } };
};
