/**
 * Operator API: OAuth agent connections. A connection reaches several projects, each with its
 * own scopes, exactly one of them the default; its access tokens expire and can be revoked.
 */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../types.js';
import type { AppDeps } from '../../lib/deps.js';
import { ApiError } from '../../lib/errors.js';
import { hashSecret, newId, newSecret, secretHint } from '../../lib/secrets.js';
import { TOKEN_PREFIX } from '../../lib/credentials.js';
import { findProject } from './projects.js';
import { connectionView, tokenView } from './serialize.js';

type Ops = operations;
const withProjects = { projects: { orderBy: { createdAt: 'asc' as const } } };

async function findConnection(deps: AppDeps, id: string) {
  const connection = await deps.db.prisma.agentConnection.findUnique({ where: { id }, include: withProjects });
  if (!connection) throw new ApiError('not_found', `No connection "${id}".`);
  return connection;
}

export const adminListConnections: Handler<Ops['adminListConnections']> = async (_req, deps) => {
  const connections = await deps.db.prisma.agentConnection.findMany({ include: withProjects, orderBy: { createdAt: 'asc' } });
  return { data: { connections: connections.map(connectionView) } };
};

export const adminCreateConnection: Handler<Ops['adminCreateConnection']> = async (req, deps) => {
  const connection = await deps.db.prisma.agentConnection.create({
    data: { id: newId('con', 12), name: req.body.name },
    include: withProjects,
  });
  return { status: 201, data: { connection: connectionView(connection) } };
};

export const adminGetConnection: Handler<Ops['adminGetConnection']> = async (req, deps) => ({
  data: { connection: connectionView(await findConnection(deps, req.params.connectionId)) },
});

export const adminDeleteConnection: Handler<Ops['adminDeleteConnection']> = async (req, deps) => {
  const connection = await findConnection(deps, req.params.connectionId);
  await deps.db.prisma.agentConnection.delete({ where: { id: connection.id } });
  return { data: { connection: connectionView(connection) } };
};

export const adminAttachProject: Handler<Ops['adminAttachProject']> = async (req, deps) => {
  const connection = await findConnection(deps, req.params.connectionId);
  const project = await findProject(deps, req.params.projectId);
  const { scopes, is_default } = req.body;
  await deps.db.prisma.$transaction(async (tx) => {
    const others = connection.projects.filter((p) => p.projectId !== project.id);
    const existing = connection.projects.find((p) => p.projectId === project.id);
    // The first project attached is the default; is_default moves the default here.
    const makeDefault = is_default === true || others.length === 0 || (existing?.isDefault === true && is_default !== false);
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
  return { data: { connection: connectionView(await findConnection(deps, connection.id)) } };
};

export const adminDetachProject: Handler<Ops['adminDetachProject']> = async (req, deps) => {
  const connection = await findConnection(deps, req.params.connectionId);
  const projectId = req.params.projectId.toLowerCase();
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
  return { data: { connection: connectionView(await findConnection(deps, connection.id)) } };
};

export const adminListTokens: Handler<Ops['adminListTokens']> = async (req, deps) => {
  const connection = await findConnection(deps, req.params.connectionId);
  const tokens = await deps.db.prisma.accessToken.findMany({ where: { connectionId: connection.id }, orderBy: { createdAt: 'asc' } });
  return { data: { tokens: tokens.map(tokenView) } };
};

export const adminIssueToken: Handler<Ops['adminIssueToken']> = async (req, deps) => {
  const connection = await findConnection(deps, req.params.connectionId);
  const secret = newSecret(TOKEN_PREFIX);
  const lifetimeMs = (req.body?.expires_in_seconds ?? 2_592_000) * 1000;
  const token = await deps.db.prisma.accessToken.create({
    data: {
      id: newId('tok', 12),
      connectionId: connection.id,
      secretHash: hashSecret(secret),
      hint: secretHint(secret),
      createdAt: deps.clock.now(),
      expiresAt: new Date(deps.clock.now().getTime() + lifetimeMs),
    },
  });
  return { status: 201, data: { token: tokenView(token), secret } };
};

export const adminRevokeToken: Handler<Ops['adminRevokeToken']> = async (req, deps) => {
  const current = await deps.db.prisma.accessToken.findUnique({ where: { id: req.params.tokenId } });
  if (!current) throw new ApiError('not_found', `No access token "${req.params.tokenId}".`);
  const token = current.revokedAt
    ? current
    : await deps.db.prisma.accessToken.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  return { data: { token: tokenView(token) } };
};
