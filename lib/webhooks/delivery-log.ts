/**
 * The operator's diagnosis read: a registration and its newest deliveries, each with every attempt.
 * Pages run newest first by (created_at, id); `before` is the last delivery of the previous page.
 */
import type { Deps } from '../deps.js';

export interface DeliveryPosition {
  createdAt: Date;
  id: string;
}

export async function webhookDeliveryLog(deps: Pick<Deps, 'db'>, webhookId: string, status: string | undefined, limit: number, before?: DeliveryPosition) {
  const webhook = await deps.db.prisma.webhookEndpoint.findUnique({ where: { id: webhookId } });
  if (!webhook) return undefined;
  const deliveries = await deps.db.prisma.webhookDelivery.findMany({
    where: {
      webhookId: webhook.id,
      ...(status ? { status } : {}),
      ...(before ? { OR: [{ createdAt: { lt: before.createdAt } }, { createdAt: before.createdAt, id: { lt: before.id } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit,
    include: { attemptLog: { orderBy: { id: 'asc' } } },
  });
  return { webhook, deliveries };
}
