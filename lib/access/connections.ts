/**
 * The operator's rules for OAuth agent connections: a connection reaches several projects, each
 * with its own scopes, exactly one of them the default (the first attached; `is_default` moves
 * it; detaching or unsetting the default hands it to the earliest other project). Its access
 * tokens are stored hashed, expire, and can be revoked.
 */
import type { Deps } from '../deps.js';
import { credentialsChanged } from './credential-cache.js';
import { ApiError } from '../platform/errors.js';
import { hashSecret, newId, newSecret, secretHint } from '../platform/secrets.js';
import { TOKEN_PREFIX } from './credentials.js';
import { findProject } from './projects.js';

type DbDeps = Pick<Deps, 'db'>;
/** A write to credentials: the caches hear of it after its commit (credential-cache.ts). */
type WriteDeps = DbDeps & Partial<Pick<Deps, 'credentialCache' | 'logger'>>;
const withProjects = { projects: { orderBy: { createdAt: 'asc' as const } } };

/** Default token lifetime: 30 days. */
export const DEFAULT_TOKEN_LIFETIME_S = 2_592_000;

export async function findConnection(deps: DbDeps, id: string) {
  const connection = await deps.db.prisma.agentConnection.findUnique({ where: { id }, include: withProjects });
  if (!connection) throw new ApiError('not_found', `No connection "${id}".`);
  return connection;
}

export function listConnections(deps: DbDeps) {
  return deps.db.prisma.agentConnection.findMany({ include: withProjects, orderBy: { createdAt: 'asc' } });
}

export function createConnection(deps: DbDeps, name: string) {
  return deps.db.prisma.agentConnection.create({ data: { id: newId('con', 12), name }, include: withProjects });
}

export async function deleteConnection(deps: WriteDeps, id: string) {
  const connection = await findConnection(deps, id);
  await deps.db.prisma.agentConnection.delete({ where: { id: connection.id } });
  await credentialsChanged(deps);
  return connection;
}

/** Attaches (or re-scopes) a project, keeping exactly one default. */
export async function attachProject(deps: WriteDeps, connectionId: string, projectId: string, input: { scopes: string[]; isDefault?: boolean }) {
  const connection = await findConnection(deps, connectionId);
  const project = await findProject(deps, projectId);
  const { scopes, isDefault } = input;
  await deps.db.prisma.$transaction(async (tx) => {
    const others = connection.projects.filter((p) => p.projectId !== project.id);
    const existing = connection.projects.find((p) => p.projectId === project.id);
    // The first project attached is the default; is_default moves the default here.
    const makeDefault = isDefault === true || others.length === 0 || (existing?.isDefault === true && isDefault !== false);
    if (makeDefault) {
      await tx.connectionProject.updateMany({ where: { connectionId: connection.id, NOT: { projectId: project.id } }, data: { isDefault: false } });
    }
    await tx.connectionProject.upsert({
      where: { connectionId_projectId: { connectionId: connection.id, projectId: project.id } },
      create: { connectionId: connection.id, projectId: project.id, scopes, isDefault: makeDefault },
      update: { scopes, isDefault: makeDefault },
    });
    if (!makeDefault && !others.some((p) => p.isDefault)) {
      // Unsetting the only default hands it to the earliest other project.
      await tx.connectionProject.update({
        where: { connectionId_projectId: { connectionId: connection.id, projectId: others[0].projectId } },
        data: { isDefault: true },
      });
    }
  });
  await credentialsChanged(deps);
  return findConnection(deps, connection.id);
}

export async function detachProject(deps: WriteDeps, connectionId: string, rawProjectId: string) {
  const connection = await findConnection(deps, connectionId);
  const projectId = rawProjectId.toLowerCase();
  const attached = connection.projects.find((p) => p.projectId === projectId);
  if (!attached) throw new ApiError('not_found', `Project "${projectId}" is not attached to connection "${connection.id}".`);
  await deps.db.prisma.$transaction(async (tx) => {
    await tx.connectionProject.delete({ where: { connectionId_projectId: { connectionId: connection.id, projectId } } });
    const next = connection.projects.find((p) => p.projectId !== projectId);
    if (attached.isDefault && next) {
      await tx.connectionProject.update({
        where: { connectionId_projectId: { connectionId: connection.id, projectId: next.projectId } },
        data: { isDefault: true },
      });
    }
  });
  await credentialsChanged(deps);
  return findConnection(deps, connection.id);
}

export async function listTokens(deps: DbDeps, connectionId: string) {
  const connection = await findConnection(deps, connectionId);
  return deps.db.prisma.accessToken.findMany({ where: { connectionId: connection.id }, orderBy: { createdAt: 'asc' } });
}

export async function issueToken(deps: WriteDeps & Pick<Deps, 'clock'>, connectionId: string, expiresInSeconds = DEFAULT_TOKEN_LIFETIME_S) {
  const connection = await findConnection(deps, connectionId);
  const secret = newSecret(TOKEN_PREFIX);
  const now = deps.clock.now();
  const token = await deps.db.prisma.accessToken.create({
    data: {
      id: newId('tok', 12),
      connectionId: connection.id,
      secretHash: hashSecret(secret),
      hint: secretHint(secret),
      createdAt: now,
      expiresAt: new Date(now.getTime() + expiresInSeconds * 1000),
    },
  });
  // A new credential is announced too: every instance's set of valid digests (the failure throttle's) learns it.
  await credentialsChanged(deps);
  return { token, secret };
}

export async function revokeToken(deps: WriteDeps & Pick<Deps, 'clock'>, id: string) {
  const current = await deps.db.prisma.accessToken.findUnique({ where: { id } });
  if (!current) throw new ApiError('not_found', `No access token "${id}".`);
  if (current.revokedAt) return current;
  const token = await deps.db.prisma.accessToken.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  await credentialsChanged(deps);
  return token;
}
