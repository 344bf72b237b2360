/**
 * Webhook registrations of a project. The signing secret (`whsec_…`) is made at creation, sealed
 * at rest with the secret box, returned once by `createWebhook` and never again; nothing rotates
 * it. Subscribing to a platform event needs that event's scope, checked on create and on every
 * change (a new URL or re-enabling redirects those events too). Re-enabling an inactive
 * registration resets `failure_count` to 0; disabling it drops its pending deliveries. Every change
 * is announced (WEBHOOK_CHANGES_CHANNEL), so deliveries already queued re-read the registration.
 * This module is the only writer of `webhook_endpoints`, including the delivery engine's counts
 * (`failure_count` = consecutive failed events: +1 per dropped event, back to 0 on a success;
 * disabled at the threshold) and the start-up re-seal.
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
import { inPrismaTransaction } from '../platform/db/transaction.js';
import { type Tx, execute, queryRows } from '../platform/db/tx.js';
import type { RecordedOutcome } from './store.js';
import { cancelPendingOfRegistration } from './store.js';

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
  const row = await inPrismaTransaction(deps.db.prisma, async (tx) => {
    // The project row is locked so that concurrent creations cannot both take the last place.
    await queryRows(tx, `SELECT 1 FROM projects WHERE id = $1 FOR NO KEY UPDATE`, auth.project.id);
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
  const row = await inPrismaTransaction(deps.db.prisma, async (tx) => {
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
      await cancelPendingOfRegistration(tx, current.id, now);
    }
    await execute(tx, `SELECT pg_notify($1, $2)`, WEBHOOK_CHANGES_CHANNEL, current.id);
    return updated;
  });
  return webhookView(row);
}

export async function deleteWebhook(deps: RegistrationDeps, projectId: string, id: string): Promise<WebhookView> {
  const current = await findWebhook(deps, projectId, id);
  // Deliveries and their attempts go with it (foreign keys cascade); pending timers find nothing.
  await inPrismaTransaction(deps.db.prisma, async (tx) => {
    await tx.webhookEndpoint.delete({ where: { id: current.id } });
    await execute(tx, `SELECT pg_notify($1, $2)`, WEBHOOK_CHANGES_CHANNEL, current.id);
  });
  return webhookView(current);
}

// The delivery engine's writes to registrations (hot path, plain SQL on the outcome writer's transaction handle).

export interface EndpointChange {
  webhookId: string;
  /** A success happened in the batch: the count restarts from it. */
  reset: boolean;
  /** Dropped events after the last success (or in total when no success). */
  failedEvents: number;
  lastAt: Date;
}

/** Locks the registrations of a batch, in id order: every writer takes them before delivery rows, so writers never deadlock. */
export async function lockEndpoints(tx: Tx, webhookIds: string[]): Promise<void> {
  await execute(tx, `SELECT id FROM webhook_endpoints WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE`, [...new Set(webhookIds)]);
}

/** Sums a batch of outcomes (in completion order) per registration. */
export function endpointChanges(recorded: RecordedOutcome[]): EndpointChange[] {
  const byWebhook = new Map<string, EndpointChange>();
  for (const o of recorded) {
    let c = byWebhook.get(o.webhookId);
    if (!c) byWebhook.set(o.webhookId, (c = { webhookId: o.webhookId, reset: false, failedEvents: 0, lastAt: o.at }));
    if (o.at > c.lastAt) c.lastAt = o.at;
    if (o.kind === 'success') {
      c.reset = true;
      c.failedEvents = 0;
    } else if (o.kind === 'dropped') {
      c.failedEvents++;
    }
  }
  return [...byWebhook.values()];
}

/** Applies the changes; returns the registrations this batch disabled. */
export async function applyEndpointChanges(tx: Tx, changes: EndpointChange[], disableAfter: number): Promise<string[]> {
  if (changes.length === 0) return [];
  const rows = await queryRows<{ id: string; failure_count: number; is_active: boolean; reset: boolean; failed: number }>(
    tx,
    `WITH u AS (
       SELECT * FROM unnest($1::text[], $2::bool[], $3::int[], $4::timestamptz[]) AS u(id, reset, failed, at)
     )
     UPDATE webhook_endpoints e SET
       last_triggered_at = GREATEST(COALESCE(e.last_triggered_at, u.at), u.at),
       failure_count = CASE WHEN u.reset THEN u.failed ELSE e.failure_count + u.failed END,
       is_active = CASE WHEN u.failed > 0 AND (CASE WHEN u.reset THEN u.failed ELSE e.failure_count + u.failed END) >= $5
                        THEN false ELSE e.is_active END,
       updated_at = CASE WHEN u.failed > 0 AND (CASE WHEN u.reset THEN u.failed ELSE e.failure_count + u.failed END) >= $5 AND e.is_active
                         THEN u.at ELSE e.updated_at END
      FROM u WHERE e.id = u.id
      RETURNING e.id, e.failure_count, e.is_active, u.reset, u.failed`,
    changes.map((c) => c.webhookId), changes.map((c) => c.reset), changes.map((c) => c.failedEvents), changes.map((c) => c.lastAt), disableAfter,
  );
  // Disabled by this batch: the count crossed the threshold within it.
  return rows
    .filter((r) => r.failed > 0 && !r.is_active && r.failure_count >= disableAfter && (r.reset || r.failure_count - r.failed < disableAfter))
    .map((r) => r.id);
}

/** Replaces a registration's sealed signing secret, only if it is still `from` (the start-up re-seal, lib/upkeep/secret-reseal.ts). */
export async function replaceSealedWebhookSecret(db: Tx, id: string, from: string, to: string): Promise<number> {
  return execute(db, `UPDATE webhook_endpoints SET secret_enc = $1 WHERE id = $2 AND secret_enc = $3`, to, id, from);
}
