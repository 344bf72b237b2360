/** Messages (POST /{phone-number-id}/messages): the payloads as Meta documents them, and the send. */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';

// ---------------------------------------------------------------------------------------------
// Message payloads (POST /{phone-number-id}/messages), as Meta documents them

/** A media object: an uploaded media id or a public link, never both. */
export type GraphMediaRef = { id: string; link?: never } | { link: string; id?: never };
export type GraphCaptionedMedia = GraphMediaRef & { caption?: string };
export type GraphDocumentMedia = GraphMediaRef & { caption?: string; filename?: string };

/** Parameters of template `header` and `body` components. */
export type GraphTemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'currency'; currency: { fallback_value: string; code: string; amount_1000: number }; parameter_name?: string }
  | { type: 'date_time'; date_time: { fallback_value: string }; parameter_name?: string }
  | { type: 'image'; image: GraphMediaRef }
  | { type: 'video'; video: GraphMediaRef }
  | { type: 'document'; document: GraphMediaRef & { filename?: string } }
  | { type: 'location'; location: { latitude: number | string; longitude: number | string; name?: string; address?: string } };

/** Parameters of template `button` components. */
export type GraphTemplateButtonParameter =
  | { type: 'payload'; payload: string }
  | { type: 'text'; text: string }
  | { type: 'coupon_code'; coupon_code: string }
  | { type: 'action'; action: { flow_token?: string; flow_action_data?: Record<string, unknown> } };

export type GraphTemplateComponent =
  | { type: 'header'; parameters: GraphTemplateParameter[] }
  | { type: 'body'; parameters: GraphTemplateParameter[] }
  | {
      type: 'button';
      sub_type: 'quick_reply' | 'url' | 'copy_code' | 'flow' | 'catalog' | 'otp';
      /** Position of the button in the template, 0-based ("0".."9"). */
      index: number | string;
      parameters: GraphTemplateButtonParameter[];
    };

export interface GraphTemplateMessage {
  name: string;
  language: { code: string; policy: 'deterministic' };
  components?: GraphTemplateComponent[];
}

export type GraphInteractiveHeader =
  | { type: 'text'; text: string }
  | { type: 'image'; image: GraphMediaRef }
  | { type: 'video'; video: GraphMediaRef }
  | { type: 'document'; document: GraphMediaRef & { filename?: string } };

interface GraphInteractiveCommon {
  header?: GraphInteractiveHeader;
  body: { text: string };
  footer?: { text: string };
}

export type GraphInteractive =
  | (GraphInteractiveCommon & {
      type: 'button';
      /** 1 to 3 reply buttons; titles up to 20 characters. */
      action: { buttons: { type: 'reply'; reply: { id: string; title: string } }[] };
    })
  | (GraphInteractiveCommon & {
      type: 'list';
      /** `button` is the menu's label; up to 10 sections and 10 rows overall. */
      action: { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] };
    })
  | (GraphInteractiveCommon & {
      type: 'cta_url';
      action: { name: 'cta_url'; parameters: { display_text: string; url: string } };
    });

interface GraphMessageBase {
  messaging_product: 'whatsapp';
  recipient_type: 'individual';
  /** Recipient phone number (international format) or WhatsApp id. */
  to: string;
  /** Reply to a message. */
  context?: { message_id: string };
  biz_opaque_callback_data?: string;
}

export type GraphMessagePayload = GraphMessageBase &
  (
    | { type: 'text'; text: { body: string; preview_url?: boolean } }
    | { type: 'template'; template: GraphTemplateMessage }
    | { type: 'image'; image: GraphCaptionedMedia }
    | { type: 'video'; video: GraphCaptionedMedia }
    | { type: 'document'; document: GraphDocumentMedia }
    | { type: 'audio'; audio: GraphMediaRef }
    | { type: 'sticker'; sticker: GraphMediaRef }
    | { type: 'interactive'; interactive: GraphInteractive }
  );

export interface SendResult {
  wamid: string;
  /** The recipient's WhatsApp id as Graph normalised it. */
  waId?: string;
  /** Template sends: 'accepted', 'held_for_quality_assessment', 'paused'. */
  messageStatus?: string;
}

/**
 * Where a send goes. `cloud_api`: POST /{phone-number-id}/messages. `marketing_messages`: Meta's
 * Marketing Messages API for WhatsApp, POST /{phone-number-id}/marketing_messages, which takes the
 * same template payload (MARKETING templates only) and answers like /messages; `ttlSeconds` rides
 * as `message_send_ttl_seconds`, the name Meta gives the time-to-live of marketing messages (its
 * range 43,200 to 2,592,000 s). Meta's pages set that property on the template
 * (POST /message_templates) and its published send schema lists no TTL, so the field is only
 * sent when a campaign asks for a TTL.
 */
export type SendRoute = { kind: 'cloud_api' } | { kind: 'marketing_messages'; ttlSeconds?: number | null };

export const MARKETING_TTL_FIELD = 'message_send_ttl_seconds';

/** POST /{version}/{phoneNumberId}/messages (or /marketing_messages, see SendRoute) with the payload as built by the caller. */
export async function sendMessage(
  this: GraphTransport, creds: ChannelCredentials, payload: GraphMessagePayload, route: SendRoute = { kind: 'cloud_api' },
): Promise<SendResult> {
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
  const out: SendResult = { wamid: m.id };
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
