/**
 * The event outbox. Platform events (`message.received`, `message.status`, `template.approved`,
 * `template.rejected`) and custom events are rows written in the same transaction as the change
 * that caused them, so a crash never loses one; the webhook dispatcher delivers from this table.
 */
import type { Prisma } from '../generated/prisma/client.js';
import { newId } from './secrets.js';

export const PLATFORM_EVENTS = ['message.received', 'message.status', 'template.approved', 'template.rejected'] as const;
export type PlatformEvent = (typeof PLATFORM_EVENTS)[number];

/** A Prisma client or transaction client. */
type Tx = Pick<Prisma.TransactionClient, 'event'>;

export async function recordEvent(tx: Tx, projectId: string, name: string, data: unknown, at: Date): Promise<string> {
  const id = newId('evt', 20);
  await tx.event.create({ data: { id, projectId, name, data: (data ?? null) as Prisma.InputJsonValue, createdAt: at } });
  return id;
}
