/**
 * Webhook registrations of a project. The signing secret (`whsec_…`) is made at creation, sealed
 * at rest with the secret box, returned once by `createWebhook` and never again; nothing rotates
 * it. Subscribing to a platform event needs that event's scope, checked on create and on every
 * change (a new URL or re-enabling redirects those events too). Re-enabling an inactive
 * registration resets `failure_count` to 0; disabling it drops its pending deliveries. Every change
 * is announced (WEBHOOK_CHANGES_CHANNEL), so deliveries already queued re-read the registration.
 */
import type { Deps } from '../deps.js';
import type { AuthContext } from '../access/types.js';
import { requireScopes } from '../access/scopes.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { newId, newSecret } from '../platform/secrets.js';
import { scopesForEvents, validateSubscription } from './event-names.js';
import { webhookSecretPlace } from './secret-place.js';
import { validateWebhookUrl } from './target.js';

export type WebhookView = components['schemas']['Webhook'];
export const SECRET_PREFIX = 'whsec_';
/** Raised (with the registration id) when a registration changes or goes, so queued deliveries re-read it. */
export const WEBHOOK_CHANGES_CHANNEL = 'webhook_changes';

type RegistrationDeps = Pick<Deps, 'db' | 'clock' | 'config' | 'secretBox'>;

interface WebhookRow {
  id: string;
  projectId: string;
  url: string;
  events: string[];
  isActive: boolean;
  failureCount: number;
  lastTriggeredAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export function webhookView(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    project_id: row.projectId,
    url: row.url,
    events: row.events,
    is_active: row.isActive,
    last_triggered_at: row.lastTriggeredAt ? row.lastTriggeredAt.toISOString() : null,
    failure_count: row.failureCount,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function requireEventScopes(auth: AuthContext, events: string[]): void {
  const required = scopesForEvents(events);
  requireScopes(auth, required, 'Subscribing to these events', ['webhooks:manage', ...required]);
}

async function findWebhook(deps: RegistrationDeps, projectId: string, id: string) {
  const row = await deps.db.prisma.webhookEndpoint.findFirst({ where: { id, projectId } });
  if (!row) throw new ApiError('not_found', `No webhook "${id}" in this project.`);
  return row;
}

/** Registrations per project, active or not (our bound: fan-out cost grows with it). */
export const MAX_WEBHOOKS_PER_PROJECT = 100;

export async function createWebhook(deps: RegistrationDeps, auth: AuthContext, input: { url: string; events: string[]; is_active?: boolean }) {
  const events = validateSubscription(input.events);
  requireEventScopes(auth, events);
  const url = await validateWebhookUrl(input.url, deps.config.devAllowPrivateTargets);
  const secret = newSecret(SECRET_PREFIX);
  const now = deps.clock.now();
  const row = await deps.db.prisma.$transaction(async (tx) => {
    // The project row is locked so that concurrent creations cannot both take the last place.
    await tx.$queryRaw`SELECT 1 FROM projects WHERE id = ${auth.project.id} FOR NO KEY UPDATE`;
    const count = await tx.webhookEndpoint.count({ where: { projectId: auth.project.id } });
    if (count >= MAX_WEBHOOKS_PER_PROJECT) {
      throw new ApiError('webhook_limit_reached', `A project has at most ${MAX_WEBHOOKS_PER_PROJECT} webhook registrations; delete one to make room.`, { limit: MAX_WEBHOOKS_PER_PROJECT });
    }
    const id = newId('whk', 16);
    return tx.webhookEndpoint.create({
      data: {
        id,
        projectId: auth.project.id,
        url,
        events,
        isActive: input.is_active ?? true,
        secretEnc: deps.secretBox.seal(secret, webhookSecretPlace(id)),
        createdAt: now,
        updatedAt: now,
      },
    });
  });
  return { webhook: webhookView(row), secret };
}

export async function listWebhooks(deps: RegistrationDeps, projectId: string): Promise<WebhookView[]> {
  const rows = await deps.db.prisma.webhookEndpoint.findMany({ where: { projectId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return rows.map(webhookView);
}

export async function getWebhook(deps: RegistrationDeps, projectId: string, id: string): Promise<WebhookView> {
  return webhookView(await findWebhook(deps, projectId, id));
}

export async function updateWebhook(deps: RegistrationDeps, auth: AuthContext, id: string, patch: { url?: string; events?: string[]; is_active?: boolean }) {
  const current = await findWebhook(deps, auth.project.id, id);
  const events = patch.events !== undefined ? validateSubscription(patch.events) : current.events;
  requireEventScopes(auth, events);
  const url = patch.url !== undefined ? await validateWebhookUrl(patch.url, deps.config.devAllowPrivateTargets) : current.url;
  const now = deps.clock.now();
  const reenabling = patch.is_active === true && !current.isActive;
  const disabling = patch.is_active === false && current.isActive;
  const row = await deps.db.prisma.$transaction(async (tx) => {
    const updated = await tx.webhookEndpoint.update({
      where: { id: current.id },
      data: {
        url,
        events,
        isActive: patch.is_active ?? current.isActive,
        ...(reenabling ? { failureCount: 0 } : {}),
        updatedAt: now,
      },
    });
    if (disabling) {
      await tx.webhookDelivery.updateMany({
        where: { webhookId: current.id, status: 'pending' },
        data: { status: 'canceled', completedAt: now, nextAttemptAt: null },
      });
    }
    await tx.$executeRaw`SELECT pg_notify(${WEBHOOK_CHANGES_CHANNEL}, ${current.id})`;
    return updated;
  });
  return webhookView(row);
}

export async function deleteWebhook(deps: RegistrationDeps, projectId: string, id: string): Promise<WebhookView> {
  const current = await findWebhook(deps, projectId, id);
  // Deliveries and their attempts go with it (foreign keys cascade); pending timers find nothing.
  await deps.db.prisma.$transaction([
    deps.db.prisma.webhookEndpoint.delete({ where: { id: current.id } }),
    deps.db.prisma.$executeRaw`SELECT pg_notify(${WEBHOOK_CHANGES_CHANNEL}, ${current.id})`,
  ]);
  return webhookView(current);
}
