/** Messages (POST /{phone-number-id}/messages): the payloads as Meta documents them, and the send. */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';
import type { ThreadControlInput } from '../lib/channel-port/port.js';
// The port's content shapes are Meta's message objects; this module adds Meta's request around them.
import type {
  MediaRef,
  CaptionedMedia,
  DocumentMedia,
  TemplateParameter,
  TemplateButtonParameter,
  TemplateComponent,
  TemplateMessage,
  InteractiveHeader,
  Interactive,
  MessageContent,
  MessageRecipient,
  OutboundMessage,
  SendResult,
  SendRoute,
} from '../lib/channel-port/messages.js';

export type { OutboundMessage, SendResult, SendRoute };
// The Graph names of the port's message shapes (this adapter sends them as they are).
export type GraphMediaRef = MediaRef;
export type GraphCaptionedMedia = CaptionedMedia;
export type GraphDocumentMedia = DocumentMedia;
export type GraphTemplateParameter = TemplateParameter;
export type GraphTemplateButtonParameter = TemplateButtonParameter;
export type GraphTemplateComponent = TemplateComponent;
export type GraphTemplateMessage = TemplateMessage;
export type GraphInteractiveHeader = InteractiveHeader;
export type GraphInteractive = Interactive;

/** Meta's request of a send: the content with the addressing and the reference Meta echoes in statuses. */
export type GraphMessagePayload = {
  messaging_product: 'whatsapp';
  /** `group`: `to` is the group's id (no interactive messages there). */
  recipient_type: 'individual' | 'group';
  /** Phone number (international format); or `recipient`, a business-scoped user id, for a customer without a known phone. */
  to?: string;
  recipient?: string;
  context?: { message_id: string };
  biz_opaque_callback_data?: string;
} & MessageContent;

/** Meta's addressing of a recipient: `to` for a phone or a group's id, else `recipient` (a BSUID). */
function graphAddress(r: MessageRecipient): Pick<GraphMessagePayload, 'recipient_type' | 'to' | 'recipient'> {
  if (r.kind === 'group') return { recipient_type: 'group', to: r.groupId };
  return r.phone ? { recipient_type: 'individual', to: r.phone } : { recipient_type: 'individual', recipient: r.userId ?? undefined };
}

/** The port's message as Meta's request. */
export function graphPayload(message: OutboundMessage): GraphMessagePayload {
  return {
    messaging_product: 'whatsapp',
    ...graphAddress(message.recipient),
    ...message.content,
    ...(message.reference !== undefined ? { biz_opaque_callback_data: message.reference } : {}),
  };
}

export const MARKETING_TTL_FIELD = 'message_send_ttl_seconds';

/** POST /{version}/{phoneNumberId}/messages (or /marketing_messages, see SendRoute) of the port's message. */
export async function sendMessage(
  this: GraphTransport, creds: ChannelCredentials, message: OutboundMessage, route: SendRoute = { kind: 'cloud_api' },
): Promise<SendResult> {
  const payload = graphPayload(message);
  const marketing = route.kind === 'marketing_messages';
  const data = marketing && route.ttlSeconds != null ? { ...payload, [MARKETING_TTL_FIELD]: route.ttlSeconds } : payload;
  const body = await this.call(creds, {
    op: 'sendMessage',
    method: 'POST',
    segments: [creds.phoneNumberId, marketing ? 'marketing_messages' : 'messages'],
    data,
    messageType: typeof payload?.type === 'string' ? payload.type : undefined,
  });
  const b = body as { messages?: { id?: unknown; message_status?: unknown }[]; contacts?: { wa_id?: unknown }[] };
  const m = Array.isArray(b?.messages) ? b.messages[0] : undefined;
  if (!m || typeof m.id !== 'string' || !m.id) throw this.unexpected('sendMessage', 'no message id in the answer', payload?.type);
  const waId = Array.isArray(b.contacts) && typeof b.contacts[0]?.wa_id === 'string' ? b.contacts[0].wa_id : undefined;
  const out: SendResult = { channelMessageId: m.id };
  if (waId) out.waId = waId;
  if (typeof m.message_status === 'string') out.messageStatus = m.message_status;
  return out;
}

/**
 * POST /{version}/{phoneNumberId}/messages marking a received message read, optionally with a
 * typing indicator (`typing_indicator: { type: "text" }`), as Meta documents it ("Typing
 * indicators"): the customer sees the message read and the business typing until the reply is
 * sent or 25 seconds pass. Answer: `{ success: true }`.
 */
export async function markRead(this: GraphTransport, creds: ChannelCredentials, messageId: string, opts: { typing?: boolean } = {}): Promise<void> {
  const data: Record<string, unknown> = { messaging_product: 'whatsapp', status: 'read', message_id: messageId };
  if (opts.typing) data.typing_indicator = { type: 'text' };
  const body = await this.call(creds, { op: 'markRead', method: 'POST', segments: [creds.phoneNumberId, 'messages'], data });
  if ((body as { success?: unknown } | null)?.success !== true) throw this.unexpected('markRead', 'no success in the answer');
}

/**
 * Meta's thread control (POST /{phone-number-id}/thread_control): passes the customer's thread to
 * another app, takes it, or releases it; Meta answers `{ success: true }`.
 */
export async function threadControl(this: GraphTransport, creds: ChannelCredentials, input: ThreadControlInput): Promise<void> {
  const data: Record<string, unknown> = { messaging_product: 'whatsapp', action: input.action };
  if ('phone' in input.to) data.to = input.to.phone;
  else data.recipient = input.to.userId;
  if (input.targetAppId !== undefined) data.target_app_id = input.targetAppId;
  if (input.metadata !== undefined) data.metadata = input.metadata;
  const body = await this.call(creds, { op: 'threadControl', method: 'POST', segments: [creds.phoneNumberId, 'thread_control'], data });
  if ((body as { success?: unknown } | null)?.success !== true) throw this.unexpected('threadControl', 'no success in the answer');
}
