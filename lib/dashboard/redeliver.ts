/**
 * A person sends a webhook delivery again (the console's Logs page): the delivery is reset by
 * lib/webhooks/store.ts (redeliver) and the audit row written in the same transaction, so either
 * both happen or neither. Owners and admins only; the delivery must be the project's.
 */
import type { Deps } from '../deps.js';
import { inTransaction } from '../platform/db/transaction.js';
import { redeliver } from '../webhooks/store.js';
import { recordAuditOn, type Actor } from '../accounts/audit.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { requireRole } from '../accounts/roles.js';

export async function redeliverAs(deps: Pick<Deps, 'db' | 'clock'>, actor: Actor, projectId: string, deliveryId: string): Promise<{ id: string; webhookId: string }> {
  await requireRole(deps, actor.accountId, projectId, ['owner', 'admin'], 'redeliver webhooks');
  const now = deps.clock.now();
  return inTransaction(deps.db.pool, async (client) => {
    const done = await redeliver(client, projectId, deliveryId.slice(0, 100), now);
    if (!done) {
      throw new DashboardRefusal(409, 'This delivery cannot be sent again: it is still in progress, its registration is inactive or gone, or its event is older than the days events are kept. Nothing was changed.');
    }
    await recordAuditOn(client, now, actor, { projectId, action: 'webhook.redeliver', subject: done.id, before: { status: done.status }, after: { status: 'pending', webhook_id: done.webhookId } });
    return done;
  });
}
