/**
 * Connected agents, as the dashboard lists them: the connections a person granted, and those that
 * reach a project where the person is an owner or admin (operator-made ones too). Disconnecting is
 * for the person who granted it or an owner or admin of a project it reaches (a member: 403): the
 * connection goes with every access and refresh token of it, an audit row is written per project it
 * reached, and every instance refuses its tokens from the next request (401 invalid_token).
 */
import type { Deps } from '../deps.js';
import { credentialsChanged } from '../access/credential-cache.js';
import { removeConnectionOn } from '../access/connections.js';
import { recordAudit, type Actor } from '../accounts/audit.js';
import { canManage, projectsOf } from '../accounts/roles.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

type AgentDeps = Pick<Deps, 'db' | 'clock' | 'logger'> & Partial<Pick<Deps, 'credentialCache'>>;

export interface ConnectedAgent {
  id: string;
  /** The OAuth client's registered name (not verified); an operator-made connection's own name. */
  name: string;
  clientId: string | null;
  /** Who consented (their email), or null for an operator-made connection. */
  grantedBy: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  projects: Array<{ id: string; name: string; scopes: string[]; isDefault: boolean }>;
}

export async function connectedAgents(deps: Pick<Deps, 'db'>, accountId: string): Promise<ConnectedAgent[]> {
  const managed = (await projectsOf(deps, accountId)).filter((m) => canManage(m.role)).map((m) => m.project.id);
  const rows = await deps.db.prisma.agentConnection.findMany({
    where: { OR: [{ accountId }, { projects: { some: { projectId: { in: managed } } } }] },
    include: {
      projects: { orderBy: { createdAt: 'asc' }, include: { project: { select: { name: true } } } },
      client: { select: { name: true } },
      account: { select: { email: true } },
    },
    orderBy: { createdAt: 'desc' },
    take: 500,
  });
  const used = rows.length
    ? await deps.db.prisma.accessToken.groupBy({ by: ['connectionId'], where: { connectionId: { in: rows.map((r) => r.id) } }, _max: { lastUsedAt: true } })
    : [];
  const lastUsed = new Map(used.map((u) => [u.connectionId, u._max.lastUsedAt]));
  return rows.map((r) => ({
    id: r.id,
    name: r.client?.name || r.name,
    clientId: r.clientId,
    grantedBy: r.account?.email ?? null,
    createdAt: r.createdAt,
    lastUsedAt: lastUsed.get(r.id) ?? null,
    projects: r.projects.map((p) => ({ id: p.projectId, name: p.project.name, scopes: p.scopes, isDefault: p.isDefault })),
  }));
}

export async function disconnectAgent(deps: AgentDeps, actor: Actor & { accountId: string }, connectionId: string): Promise<void> {
  const id = String(connectionId).slice(0, 100);
  const connection = await deps.db.prisma.agentConnection.findUnique({
    where: { id },
    include: { projects: { orderBy: { createdAt: 'asc' } }, client: { select: { name: true } } },
  });
  const roles = new Map((await projectsOf(deps, actor.accountId)).map(({ role, project }) => [project.id, role]));
  const grantor = connection?.accountId === actor.accountId;
  const reached = connection?.projects.filter((p) => roles.has(p.projectId)) ?? [];
  if (!connection || (!grantor && reached.length === 0)) throw new DashboardRefusal(404, 'No such connected agent, or none you can see.');
  if (!grantor && !reached.some((p) => canManage(roles.get(p.projectId)!))) {
    throw new DashboardRefusal(403, 'Only the person who connected this agent, or an owner or admin of a project it reaches, can disconnect it. Nothing was changed.');
  }
  const now = deps.clock.now();
  const name = connection.client?.name || connection.name;
  await inPrismaTransaction(deps.db.prisma, async (tx) => {
    if (!(await removeConnectionOn(tx, connection.id))) throw new DashboardRefusal(409, 'This agent was disconnected already.');
    for (const p of connection.projects) {
      await recordAudit(tx, now, actor, {
        projectId: p.projectId,
        action: 'agent.disconnect',
        subject: connection.id,
        before: { client_id: connection.clientId, client_name: name, scopes: p.scopes, is_default: p.isDefault },
      });
    }
  });
  await credentialsChanged(deps);
  deps.logger.info('oauth: agent disconnected', { connection_id: connection.id, client_id: connection.clientId, account_id: actor.accountId });
}
