/**
 * Sending a message, as POST /v1/messages promises: validate, check the 24-hour window for session
 * messages, reserve a unit of the daily quota, call the channel, then record the message on its
 * conversation keyed by the wamid. Nothing is stored unless the channel accepted the message, and
 * a failed call gives its quota back. Sending never changes the conversation's state.
 */
import type { components } from '../../generated/api.js';
import type { AppDeps } from '../deps.js';
import type { ProjectRef } from '../credentials.js';
import { ApiError } from '../errors.js';
import { requireChannel } from '../channel-settings.js';
import { bodyPlaceholderCount, composeMessage } from './compose.js';
import { releaseSend, reserveSend } from './quota.js';
import { upsertConversation, windowOpen } from './conversation-store.js';
import { isChannelError, isOutsideWindowError, toApiError } from '../../channel/errors.js';
import type { GraphMessagePayload } from '../../channel/cloud-api.js';

type SendRequest = components['schemas']['SendMessageRequest'];

function outsideWindow(): ApiError {
  return new ApiError(
    'outside_24h_window',
    'The customer has not written in the last 24 hours, so only an approved template can be sent.',
  );
}

export async function sendMessage(deps: AppDeps, project: ProjectRef, body: SendRequest): Promise<{ id: string; status: 'sent' }> {
  const message = composeMessage(body);
  const { prisma, pool } = deps.db;
  const now = deps.clock.now();

  if (message.template) {
    const known = await prisma.template.findUnique({
      where: { projectId_name_language: { projectId: project.id, name: message.template.name, language: message.template.language } },
    });
    const expected = known ? bodyPlaceholderCount(known.components) : undefined;
    if (expected !== undefined && expected !== message.template.variables.length) {
      throw new ApiError(
        'template_variable_mismatch',
        `Template ${message.template.name} (${message.template.language}) has ${expected} body variables; ${message.template.variables.length} were given.`,
        { expected, given: message.template.variables.length },
      );
    }
  }
  if (message.mediaSlug !== undefined) {
    // Media assets arrive with the media API; until then a slug names nothing.
    throw new ApiError('not_found', `No media asset "${message.mediaSlug}".`);
  }

  const channel = await requireChannel(deps, project.id);
  if (message.session) {
    const conversation = await prisma.conversation.findFirst({
      where: { projectId: project.id, contact: { phone: message.phone } },
      select: { lastInboundAt: true },
    });
    if (!windowOpen(conversation?.lastInboundAt, now)) throw outsideWindow();
  }

  const quota = await prisma.project.findUniqueOrThrow({ where: { id: project.id }, select: { dailySendQuota: true } });
  await reserveSend(pool, project.id, quota.dailySendQuota, now);

  let wamid: string;
  try {
    const payload = { messaging_product: 'whatsapp', recipient_type: 'individual', to: message.phone, ...message.payload } as GraphMessagePayload;
    ({ wamid } = await deps.channel.sendMessage(channel, payload));
  } catch (e) {
    await releaseSend(pool, project.id, now).catch((err) => deps.logger.error('quota release failed', { error: String(err) }));
    if (isOutsideWindowError(e)) throw outsideWindow();
    if (isChannelError(e)) throw toApiError(e);
    throw e;
  }

  await prisma.$transaction(async (tx) => {
    const conversation = await upsertConversation(tx, project.id, message.phone, now, { inbound: false });
    await tx.message.create({
      data: {
        projectId: project.id,
        conversationId: conversation.id,
        wamid,
        direction: 'outbound',
        type: message.type,
        content: message.content as object,
        status: 'sent',
        sentAt: now,
        statusAt: now,
      },
    });
  });
  return { id: wamid, status: 'sent' };
}
