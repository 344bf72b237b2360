/** Operator API views of stored records. Secrets and their digests never leave through here. */
import type { components } from '../../generated/admin-api.js';

type S = components['schemas'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function projectView(p: { id: string; name: string; status: string; dailySendQuota: number; conversationReserve: number; createdAt: Date; updatedAt: Date }): S['AdminProject'] {
  return {
    id: p.id,
    name: p.name,
    status: p.status as S['AdminProject']['status'],
    daily_send_quota: p.dailySendQuota,
    conversation_reserve: p.conversationReserve,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
  };
}

export function keyView(k: {
  id: string; projectId: string; name: string; mode: string; hint: string; scopes: string[];
  createdAt: Date; rotatedAt: Date | null; revokedAt: Date | null;
}): S['ApiKey'] {
  return {
    id: k.id,
    project_id: k.projectId,
    name: k.name,
    mode: k.mode as S['ApiKey']['mode'],
    hint: k.hint,
    scopes: k.scopes,
    created_at: k.createdAt.toISOString(),
    rotated_at: iso(k.rotatedAt),
    revoked_at: iso(k.revokedAt),
  };
}

export function connectionView(c: {
  id: string; name: string; createdAt: Date;
  projects: { projectId: string; scopes: string[]; isDefault: boolean }[];
}): S['Connection'] {
  return {
    id: c.id,
    name: c.name,
    created_at: c.createdAt.toISOString(),
    projects: c.projects.map((p) => ({ project_id: p.projectId, scopes: p.scopes, is_default: p.isDefault })),
  };
}

export function tokenView(t: { id: string; connectionId: string; hint: string; expiresAt: Date; revokedAt: Date | null; createdAt: Date }): S['AccessToken'] {
  return {
    id: t.id,
    connection_id: t.connectionId,
    hint: t.hint,
    expires_at: t.expiresAt.toISOString(),
    revoked_at: iso(t.revokedAt),
    created_at: t.createdAt.toISOString(),
  };
}
