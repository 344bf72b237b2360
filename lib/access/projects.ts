/** The operator's rules for projects: ids are lower case, deleting marks a project deleted (its keys then get 403 project_inactive), a deleted project does not change. */
import type { Deps } from '../deps.js';
import { credentialsChanged } from './credential-cache.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { isUniqueViolation } from '../platform/db/errors.js';
import { execute, type Tx } from '../platform/db/tx.js';

type ProjectDeps = Pick<Deps, 'db' | 'logger' | 'provisionChannel'>;

export async function findProject(deps: Pick<Deps, 'db'>, id: string) {
  const project = await deps.db.prisma.project.findUnique({ where: { id: id.toLowerCase() } });
  if (!project) throw new ApiError('PROJECT_NOT_FOUND', `No project "${id}".`);
  return project;
}

export async function projectExists(deps: Pick<Deps, 'db'>, id: string): Promise<boolean> {
  return (await deps.db.prisma.project.count({ where: { id: id.toLowerCase() } })) > 0;
}

export function listProjects(deps: Pick<Deps, 'db'>) {
  return deps.db.prisma.project.findMany({ orderBy: { createdAt: 'asc' } });
}

/** A new project, connected to a channel when the deployment provisions one (the simulator's default). */
export async function createProject(deps: ProjectDeps, input: { id?: string; name: string; dailySendQuota?: number; conversationReserve?: number }) {
  try {
    const project = await deps.db.prisma.project.create({
      data: { id: input.id?.toLowerCase() ?? newId('prj', 12), name: input.name, dailySendQuota: input.dailySendQuota, conversationReserve: input.conversationReserve },
    });
    if (deps.provisionChannel) {
      await deps.provisionChannel(project.id).catch((e) =>
        deps.logger.warn('could not connect the new project to a channel', { project_id: project.id, error: String(e) }),
      );
    }
    return project;
  } catch (e) {
    if (isUniqueViolation(e)) throw new ApiError('conflict', `A project with id "${input.id}" already exists.`);
    throw e;
  }
}

type WriteDeps = Pick<Deps, 'db'> & Partial<Pick<Deps, 'credentialCache' | 'logger'>>;

export async function updateProject(
  deps: WriteDeps,
  id: string,
  change: { name?: string; status?: 'active' | 'paused' | 'deleted'; dailySendQuota?: number; conversationReserve?: number },
) {
  const current = await findProject(deps, id);
  if (current.status === 'deleted') throw new ApiError('conflict', `Project "${current.id}" is deleted and cannot be changed.`);
  const project = await deps.db.prisma.project.update({ where: { id: current.id }, data: change });
  await credentialsChanged(deps);
  return project;
}

export async function deleteProject(deps: WriteDeps, id: string) {
  const current = await findProject(deps, id);
  const project = await deps.db.prisma.project.update({ where: { id: current.id }, data: { status: 'deleted' } });
  await credentialsChanged(deps);
  return project;
}

/** A project's consent keywords (lib/consent/keywords.ts validates and reads them). */
export async function storeConsentKeywords(tx: Tx, projectId: string, keywords: unknown): Promise<void> {
  await execute(tx, 'UPDATE projects SET consent_keywords = $2::jsonb WHERE id = $1', projectId, JSON.stringify(keywords));
}
