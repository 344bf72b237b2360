/**
 * What the domain sends through the port: a message's content (text, template, media,
 * interactive) to one recipient (a customer or a group), with the service's reference of the
 * send, and what the channel answers. The content shapes are the ones the service's API takes
 * and stores (the spec's, after WhatsApp's message objects); the request a channel makes of them
 * (Meta's `messaging_product`, `recipient_type`, `to`, `biz_opaque_callback_data`) is the
 * adapter's (channel/messages.ts). An adapter to another channel translates the content it
 * declares it carries (`capabilities.messages`).
 */

/** A media object: an uploaded media id or a public link, never both. */
export type MediaRef = { id: string; link?: never } | { link: string; id?: never };
export type CaptionedMedia = MediaRef & { caption?: string };
export type DocumentMedia = MediaRef & { caption?: string; filename?: string };

/** Parameters of template `header` and `body` components. */
export type TemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'currency'; currency: { fallback_value: string; code: string; amount_1000: number }; parameter_name?: string }
  | { type: 'date_time'; date_time: { fallback_value: string }; parameter_name?: string }
  | { type: 'image'; image: MediaRef }
  | { type: 'video'; video: MediaRef }
  | { type: 'document'; document: MediaRef & { filename?: string } }
  | { type: 'location'; location: { latitude: number | string; longitude: number | string; name?: string; address?: string } };

/** Parameters of template `button` components. */
export type TemplateButtonParameter =
  | { type: 'payload'; payload: string }
  | { type: 'text'; text: string }
  | { type: 'coupon_code'; coupon_code: string }
  | { type: 'action'; action: { flow_token?: string; flow_action_data?: Record<string, unknown> } };

export type TemplateComponent =
  | { type: 'header'; parameters: TemplateParameter[] }
  | { type: 'body'; parameters: TemplateParameter[] }
  | {
      type: 'button';
      sub_type: 'quick_reply' | 'url' | 'copy_code' | 'flow' | 'catalog' | 'otp';
      /** Position of the button in the template, 0-based ("0".."9"). */
      index: number | string;
      parameters: TemplateButtonParameter[];
    };

export interface TemplateMessage {
  name: string;
  language: { code: string; policy: 'deterministic' };
  components?: TemplateComponent[];
}

export type InteractiveHeader =
  | { type: 'text'; text: string }
  | { type: 'image'; image: MediaRef }
  | { type: 'video'; video: MediaRef }
  | { type: 'document'; document: MediaRef & { filename?: string } };

interface InteractiveCommon {
  header?: InteractiveHeader;
  body: { text: string };
  footer?: { text: string };
}

export type Interactive =
  | (InteractiveCommon & {
      type: 'button';
      /** 1 to 3 reply buttons; titles up to 20 characters. */
      action: { buttons: { type: 'reply'; reply: { id: string; title: string } }[] };
    })
  | (InteractiveCommon & {
      type: 'list';
      /** `button` is the menu's label; up to 10 sections and 10 rows overall. */
      action: { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] };
    })
  | (InteractiveCommon & {
      /** Asks the customer for permission to call them (docs/calls.md). */
      type: 'call_permission_request';
      action: { name: 'call_permission_request' };
    })
  | (InteractiveCommon & {
      type: 'cta_url';
      action: { name: 'cta_url'; parameters: { display_text: string; url: string } };
    });

/** Who a message goes to: a customer (by phone, or by the channel's user id when no phone is known), or a group. */
export type MessageRecipient =
  | { kind: 'customer'; phone: string | null; userId?: string | null }
  | { kind: 'group'; groupId: string };

/** A message's content, one type. */
export type MessageContent =
  | { type: 'text'; text: { body: string; preview_url?: boolean } }
  | { type: 'template'; template: TemplateMessage }
  | { type: 'image'; image: CaptionedMedia }
  | { type: 'video'; video: CaptionedMedia }
  | { type: 'document'; document: DocumentMedia }
  | { type: 'audio'; audio: MediaRef }
  | { type: 'sticker'; sticker: MediaRef }
  | { type: 'interactive'; interactive: Interactive };

export type ContentType = MessageContent['type'];

/** One message to send: the port's channel-neutral form. */
export interface OutboundMessage {
  recipient: MessageRecipient;
  content: MessageContent;
  /** The service's reference of the send; a channel that can echoes it in the message's statuses. */
  reference?: string;
}

export interface SendResult {
  /** The channel's id of the message (statuses name it). */
  channelMessageId: string;
  /** The recipient's WhatsApp id as Graph normalised it. */
  waId?: string;
  /** Template sends: 'accepted', 'held_for_quality_assessment', 'paused'. */
  messageStatus?: string;
}

/**
 * Where a send goes. `cloud_api`: the channel's ordinary messages. `marketing_messages`: Meta's
 * Marketing Messages API for WhatsApp, POST /{phone-number-id}/marketing_messages, which takes the
 * same template payload (MARKETING templates only) and answers like /messages; `ttlSeconds` rides
 * as `message_send_ttl_seconds`, the name Meta gives the time-to-live of marketing messages (its
 * range 43,200 to 2,592,000 s). Meta's pages set that property on the template
 * (POST /message_templates) and its published send schema lists no TTL, so the field is only
 * sent when a campaign asks for a TTL.
 */
export type SendRoute = { kind: 'cloud_api' } | { kind: 'marketing_messages'; ttlSeconds?: number | null };
