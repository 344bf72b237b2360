/** Operator API: a registration's recent deliveries and every attempt, to diagnose a failing endpoint. */
import type { operations, components } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { webhookDeliveryLog } from '../../lib/webhooks/delivery-log.js';

type Ops = operations;
type S = components['schemas'];
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const adminListWebhookDeliveries: Handler<Ops['adminListWebhookDeliveries']> = async (req, deps) => {
  const log = await webhookDeliveryLog(deps, req.params.webhookId, req.query.status, req.query.limit ?? 20);
  if (!log) throw new ApiError('not_found', `No webhook "${req.params.webhookId}".`);
  const { webhook, deliveries } = log;
  return {
    data: {
      webhook: {
        id: webhook.id,
        project_id: webhook.projectId,
        url: webhook.url,
        events: webhook.events,
        is_active: webhook.isActive,
        failure_count: webhook.failureCount,
        last_triggered_at: iso(webhook.lastTriggeredAt),
        created_at: webhook.createdAt.toISOString(),
        updated_at: webhook.updatedAt.toISOString(),
      },
      deliveries: deliveries.map((d): S['WebhookDeliveryLog'] => ({
        id: d.id,
        event_id: d.eventId,
        event: d.event,
        status: d.status as S['WebhookDeliveryLog']['status'],
        attempts: d.attempts,
        next_attempt_at: iso(d.nextAttemptAt),
        created_at: d.createdAt.toISOString(),
        completed_at: iso(d.completedAt),
        attempt_log: d.attemptLog.map((a) => ({
          attempt: a.attempt,
          status_code: a.statusCode,
          error: a.error,
          duration_ms: a.durationMs,
          at: a.at.toISOString(),
        })),
      })),
    },
  };
};
