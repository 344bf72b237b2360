/** The operator's diagnosis read: a registration and its newest deliveries, each with every attempt. */
import type { Deps } from '../deps.js';

export async function webhookDeliveryLog(deps: Pick<Deps, 'db'>, webhookId: string, status: string | undefined, limit: number) {
  const webhook = await deps.db.prisma.webhookEndpoint.findUnique({ where: { id: webhookId } });
  if (!webhook) return undefined;
  const deliveries = await deps.db.prisma.webhookDelivery.findMany({
    where: { webhookId: webhook.id, ...(status ? { status } : {}) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: limit,
    include: { attemptLog: { orderBy: { id: 'asc' } } },
  });
  return { webhook, deliveries };
}
