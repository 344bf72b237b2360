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
import type { Prisma } from '../../generated/prisma/client.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';
import { execute } from '../platform/db/tx.js';

type DbDeps = Pick<Deps, 'db'>;
/** A Prisma transaction's client: the OAuth grant writes a connection, its projects and tokens in one transaction with its own rows. */
export type Tx = Prisma.TransactionClient;
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
  await inPrismaTransaction(deps.db.prisma, (tx) => attachProjectOn(tx, connection.id, project.id, input));
  await credentialsChanged(deps);
  return findConnection(deps, connection.id);
}

/**
 * The same inside a transaction of the caller's (the OAuth consent attaches several projects with its
 * own rows); the caller announces `credentialsChanged` after its commit.
 */
export async function attachProjectOn(tx: Tx, connectionId: string, projectId: string, input: { scopes: string[]; isDefault?: boolean }): Promise<void> {
  const { scopes, isDefault } = input;
  const attached = await tx.connectionProject.findMany({ where: { connectionId }, orderBy: { createdAt: 'asc' } });
  const others = attached.filter((p) => p.projectId !== projectId);
  const existing = attached.find((p) => p.projectId === projectId);
  // The first project attached is the default; is_default moves the default here.
  const makeDefault = isDefault === true || others.length === 0 || (existing?.isDefault === true && isDefault !== false);
  if (makeDefault) {
    await tx.connectionProject.updateMany({ where: { connectionId, NOT: { projectId } }, data: { isDefault: false } });
  }
  await tx.connectionProject.upsert({
    where: { connectionId_projectId: { connectionId, projectId } },
    create: { connectionId, projectId, scopes, isDefault: makeDefault },
    update: { scopes, isDefault: makeDefault },
  });
  if (!makeDefault && !others.some((p) => p.isDefault)) {
    // Unsetting the only default hands it to the earliest other project.
    await tx.connectionProject.update({
      where: { connectionId_projectId: { connectionId, projectId: others[0].projectId } },
      data: { isDefault: true },
    });
  }
}

/**
 * The connection of an OAuth client for the person who consented: one per client and person, made by
 * the first consent and extended by later ones (attachProjectOn). Inside the consent's transaction.
 */
export async function connectionForClientOn(tx: Tx, input: { clientId: string; accountId: string; name: string; now: Date }): Promise<{ id: string }> {
  return tx.agentConnection.upsert({
    where: { clientId_accountId: { clientId: input.clientId, accountId: input.accountId } },
    create: { id: newId('con', 12), name: input.name.slice(0, 200), clientId: input.clientId, accountId: input.accountId, createdAt: input.now },
    update: {},
    select: { id: true },
  });
}

/** What the connection of an OAuth client and a person reaches now (per project, its scopes); empty when there is none. */
export async function grantsOfClient(deps: DbDeps, clientId: string, accountId: string): Promise<Map<string, string[]>> {
  const connection = await deps.db.prisma.agentConnection.findUnique({
    where: { clientId_accountId: { clientId, accountId } },
    include: withProjects,
  });
  return new Map((connection?.projects ?? []).map((p) => [p.projectId, p.scopes]));
}

/**
 * Detaches a project inside the caller's transaction (a consent that drops a project granted
 * earlier), handing the default to the earliest other project when it was the default; the caller
 * announces `credentialsChanged` after its commit. False when it was not attached.
 */
export async function detachProjectOn(tx: Tx, connectionId: string, projectId: string): Promise<boolean> {
  const attached = await tx.connectionProject.findMany({ where: { connectionId }, orderBy: { createdAt: 'asc' } });
  const it = attached.find((p) => p.projectId === projectId);
  if (!it) return false;
  await tx.connectionProject.delete({ where: { connectionId_projectId: { connectionId, projectId } } });
  const next = attached.find((p) => p.projectId !== projectId);
  if (it.isDefault && next) {
    await tx.connectionProject.update({ where: { connectionId_projectId: { connectionId, projectId: next.projectId } }, data: { isDefault: true } });
  }
  return true;
}

/** Every scope the connection holds on any of its projects, each once, in the order of the projects and their scopes. */
export async function scopesOfConnection(tx: Pick<Tx, 'connectionProject'>, connectionId: string): Promise<string[]> {
  const rows = await tx.connectionProject.findMany({ where: { connectionId }, orderBy: { createdAt: 'asc' }, select: { scopes: true } });
  return [...new Set(rows.flatMap((r) => r.scopes))];
}

/**
 * Ends a connection: its row goes, and with it (the foreign keys cascade) its projects, every access
 * token, and the OAuth codes and refresh tokens of its grants. Inside the caller's transaction (the
 * dashboard's disconnect writes its audit rows beside it); the caller announces `credentialsChanged`.
 */
export async function removeConnectionOn(tx: Tx, connectionId: string): Promise<boolean> {
  const { count } = await tx.agentConnection.deleteMany({ where: { id: connectionId } });
  return count > 0;
}

export async function detachProject(deps: WriteDeps, connectionId: string, rawProjectId: string) {
  const connection = await findConnection(deps, connectionId);
  const projectId = rawProjectId.toLowerCase();
  const attached = connection.projects.find((p) => p.projectId === projectId);
  if (!attached) throw new ApiError('not_found', `Project "${projectId}" is not attached to connection "${connection.id}".`);
  await inPrismaTransaction(deps.db.prisma, async (tx) => {
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
  const issued = await issueTokenOn(deps.db.prisma, { connectionId: connection.id, now: deps.clock.now(), expiresInSeconds });
  // A new credential is announced too: every instance's set of valid digests (the failure throttle's) learns it.
  await credentialsChanged(deps);
  return issued;
}

/** What an OAuth grant adds to an access token: its client, its grant, the resource it is bound to, and a narrowed set of scopes. */
export interface TokenBinding {
  clientId: string;
  grantId: string;
  resource: string;
  /** Only these scopes on each project (a refresh that asked for fewer); empty or absent: the connection's. */
  scopes?: string[];
}

/**
 * Mints an access token on a Prisma client or inside a transaction (the OAuth token endpoint issues it
 * with the refresh token and the code's use in one). The caller announces `credentialsChanged`.
 */
export async function issueTokenOn(
  tx: Pick<Tx, 'accessToken'>,
  input: { connectionId: string; now: Date; expiresInSeconds: number; binding?: TokenBinding },
) {
  const secret = newSecret(TOKEN_PREFIX);
  const { now, binding } = input;
  const token = await tx.accessToken.create({
    data: {
      id: newId('tok', 12),
      connectionId: input.connectionId,
      secretHash: hashSecret(secret),
      hint: secretHint(secret),
      createdAt: now,
      expiresAt: new Date(now.getTime() + input.expiresInSeconds * 1000),
      ...(binding ? { clientId: binding.clientId, grantId: binding.grantId, resource: binding.resource, scopes: binding.scopes ?? [] } : {}),
    },
  });
  return { token, secret };
}

/** Revokes every live access token of an OAuth grant (a code or refresh token used twice, a revoked refresh token); returns how many. */
export async function revokeGrantTokensOn(tx: Pick<Tx, 'accessToken'>, grantId: string, now: Date): Promise<number> {
  const { count } = await tx.accessToken.updateMany({ where: { grantId, revokedAt: null }, data: { revokedAt: now } });
  return count;
}

/** Revokes one access token of an OAuth client (RFC 7009), found by its secret; false when it is not that client's or unknown. */
export async function revokeClientTokenOn(tx: Pick<Tx, 'accessToken'>, clientId: string, secret: string, now: Date): Promise<boolean> {
  const { count } = await tx.accessToken.updateMany({ where: { secretHash: hashSecret(secret), clientId, revokedAt: null }, data: { revokedAt: now } });
  return count > 0;
}

/** An access token authenticated a request at `now`: its last-used time moves forward only (lib/access/key-usage.ts says how often). */
export async function recordTokenUse(db: Pick<Deps['db'], 'sql'>, tokenId: string, now: Date): Promise<void> {
  await execute(db.sql, 'UPDATE access_tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)', tokenId, now);
}

export async function revokeToken(deps: WriteDeps & Pick<Deps, 'clock'>, id: string) {
  const current = await deps.db.prisma.accessToken.findUnique({ where: { id } });
  if (!current) throw new ApiError('not_found', `No access token "${id}".`);
  if (current.revokedAt) return current;
  const token = await deps.db.prisma.accessToken.update({ where: { id: current.id }, data: { revokedAt: deps.clock.now() } });
  await credentialsChanged(deps);
  return token;
}
