/**
 * Dashboard sessions. The cookie carries a random token; PostgreSQL keeps only its SHA-256, the
 * account, the expiry and the session's CSRF token, so any instance resolves any session and a
 * stolen database row does not give a cookie. A session ends at its expiry (absolute, from
 * sign-in) or at logout; an expired row is deleted when it is presented.
 */
import type { Deps } from '../deps.js';
import { hashSecret, newId, randomToken } from '../platform/secrets.js';

export const SESSION_TTL_MS = 12 * 3600_000;

type SessionDeps = Pick<Deps, 'db' | 'clock'>;

export interface ActiveSession {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  account: { id: string; email: string };
}

export async function startSession(deps: SessionDeps, accountId: string, ttlMs = SESSION_TTL_MS) {
  const token = randomToken(48);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + ttlMs);
  // The person's sessions that expired unseen go now, so rows do not pile up.
  await deps.db.prisma.dashboardSession.deleteMany({ where: { accountId, expiresAt: { lte: now } } });
  await deps.db.prisma.dashboardSession.create({
    data: { id: newId('dss', 16), tokenHash: hashSecret(token), accountId, csrfToken: randomToken(40), expiresAt, createdAt: now },
  });
  return { token, expiresAt };
}

/** The live session of a cookie token, or undefined (unknown, expired or ended). */
export async function resolveSession(deps: SessionDeps, token: string | undefined): Promise<ActiveSession | undefined> {
  if (!token || token.length > 200) return undefined;
  const row = await deps.db.prisma.dashboardSession.findUnique({
    where: { tokenHash: hashSecret(token) },
    include: { account: { select: { id: true, email: true } } },
  });
  if (!row) return undefined;
  if (row.expiresAt.getTime() <= deps.clock.now().getTime()) {
    await deps.db.prisma.dashboardSession.deleteMany({ where: { id: row.id } });
    return undefined;
  }
  return { id: row.id, csrfToken: row.csrfToken, expiresAt: row.expiresAt, account: row.account };
}

export async function endSession(deps: SessionDeps, sessionId: string): Promise<void> {
  await deps.db.prisma.dashboardSession.deleteMany({ where: { id: sessionId } });
}

/** Every session of an account ends now (its password was reset). */
export async function endAccountSessions(deps: Pick<Deps, 'db'>, accountId: string): Promise<void> {
  await deps.db.prisma.dashboardSession.deleteMany({ where: { accountId } });
}
