/**
 * Turns a POST /v1/messages body into the channel's message payload, applying the spec's send
 * validation codes in a fixed order: recipient, type, then the type's own rules. Nothing here
 * touches storage or the network, so every rule is cheap to test.
 */
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { parseRecipient } from '../conversations/recipient.js';
import { composeFlowMessage, type FlowSendRef } from '../flows/send.js';

type SendRequest = components['schemas']['SendMessageRequest'];
type MediaSend = components['schemas']['MediaSend'];

export const SESSION_TYPES = ['text', 'image', 'video', 'document', 'audio', 'interactive'] as const;
export const MESSAGE_TYPES = [...SESSION_TYPES, 'template'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];
const MEDIA_TYPES = new Set(['image', 'video', 'document', 'audio']);
export const MAX_REPLY_BUTTONS = 3;

export interface ComposedMessage {
  /** Digits; null for a send by business-scoped user id to a contact without a known phone. */
  phone: string | null;
  /** The recipient's business-scoped user id, when the send names one (lib/conversations/recipient.ts). */
  userId?: string | null;
  type: MessageType;
  /** Needs the 24-hour window (everything but templates). */
  session: boolean;
  /** The channel's payload without `to` and `messaging_product`. */
  payload: Record<string, unknown>;
  /** What we store as the message's content. */
  content: Record<string, unknown>;
  template?: { name: string; language: string; variables: string[] };
  /** The message's media, for send-message.ts to resolve a slug and check a media id. */
  media?: MediaRef;
  /** A carousel send's card headers (resolved like `media`, typed by the template's card header format). */
  cardMedia?: MediaRef[];
  /** A flow message's flow, for send-message.ts to resolve to the published channel flow. */
  flow?: FlowSendRef;
}

export interface MediaRef {
  /** The channel's media object in the payload (gets `id` when sent by slug). */
  object: Record<string, unknown>;
  /** Our media asset's slug, to resolve to the channel's media id. */
  slug?: string;
  /** A channel media id given by the caller (never a header-sample handle). */
  mediaId?: string;
  /**
   * A template header parameter still to be typed (`image`, `video` or `document`), which
   * depends on the template's header format or the asset's kind.
   */
  headerParam?: Record<string, unknown>;
}

function invalid(message: string, field: string): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

function mediaObject(media: MediaSend | undefined, field: string, type: string): MediaRef {
  const sources = [media?.slug, media?.media_id, media?.link].filter((v) => v !== undefined);
  if (!media || sources.length !== 1) throw invalid(`${type} needs exactly one of media.slug, media.media_id or media.link.`, field);
  const object: Record<string, unknown> = {};
  if (media.media_id) object.id = media.media_id;
  if (media.link) {
    if (!/^https:\/\//i.test(media.link)) throw invalid('media.link must be an https URL.', `${field}.link`);
    object.link = media.link;
  }
  if (media.caption !== undefined && type !== 'audio') object.caption = media.caption;
  if (media.filename !== undefined && type === 'document') object.filename = media.filename;
  return { object, slug: media.slug, mediaId: media.media_id };
}

function composeTemplate(body: SendRequest): Pick<ComposedMessage, 'payload' | 'template' | 'media' | 'cardMedia'> {
  const t = body.template;
  if (!t?.name || t.name.trim() === '') throw new ApiError('missing_template_name', 'A template send needs template.name.');
  if (!t.language || t.language.trim() === '') throw new ApiError('missing_language', 'A template send needs template.language (e.g. en_US).');
  const variables = t.variables ?? [];
  const components: Record<string, unknown>[] = [];
  let media: MediaRef | undefined;
  if (t.header?.media) {
    media = mediaObject(t.header.media, 'template.header.media', 'document');
    delete media.object.caption; // header media take no caption
    // Typed (image, video or document) once the template or the asset is known: see send-message.ts.
    media.headerParam = { type: 'image', image: media.object };
    components.push({ type: 'header', parameters: [media.headerParam] });
  } else if (t.header?.variables?.length) {
    components.push({ type: 'header', parameters: t.header.variables.map((text) => ({ type: 'text', text })) });
  }
  if (variables.length) components.push({ type: 'body', parameters: variables.map((text) => ({ type: 'text', text })) });
  const buttonComponents = (buttons: Array<{ index: number; sub_type?: string; payload?: string }>) => buttons.map((b) => {
    const subType = b.sub_type ?? 'quick_reply';
    const parameter =
      subType === 'quick_reply' ? { type: 'payload', payload: b.payload ?? '' }
      : subType === 'copy_code' ? { type: 'coupon_code', coupon_code: b.payload ?? '' }
      : { type: 'text', text: b.payload ?? '' };
    return { type: 'button', sub_type: subType, index: String(b.index), parameters: [parameter] };
  });
  if (t.limited_time_offer) {
    components.push({ type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: t.limited_time_offer.expiration_time_ms } }] });
  }
  components.push(...buttonComponents(t.buttons ?? []));
  let cardMedia: MediaRef[] | undefined;
  if (t.cards) {
    // Each card: its header media (typed by the template's card header format in send-message.ts), body and buttons.
    cardMedia = [];
    const cards = t.cards.map((card, i) => {
      const ref = mediaObject(card.header.media, `template.cards[${i}].header.media`, 'document');
      delete ref.object.caption;
      delete ref.object.filename;
      ref.headerParam = { type: 'image', image: ref.object };
      cardMedia!.push(ref);
      return {
        card_index: i,
        components: [
          { type: 'header', parameters: [ref.headerParam] },
          ...(card.variables?.length ? [{ type: 'body', parameters: card.variables.map((text) => ({ type: 'text', text })) }] : []),
          ...buttonComponents(card.buttons ?? []),
        ],
      };
    });
    components.push({ type: 'carousel', cards });
  }
  return {
    payload: { type: 'template', template: { name: t.name, language: { policy: 'deterministic', code: t.language }, ...(components.length ? { components } : {}) } },
    template: { name: t.name, language: t.language, variables },
    media,
    ...(cardMedia ? { cardMedia } : {}),
  };
}

function composeInteractive(body: SendRequest): Record<string, unknown> {
  const i = body.interactive;
  if (!i) throw invalid('An interactive send needs interactive.', 'interactive');
  const common = {
    body: { text: i.body },
    ...(i.header ? { header: { type: 'text', text: i.header } } : {}),
    ...(i.footer ? { footer: { text: i.footer } } : {}),
  };
  if (i.buttons && i.list) throw invalid('interactive takes buttons or list, not both.', 'interactive');
  if (i.call_permission_request) {
    if (i.buttons || i.list || i.header || i.footer) throw invalid('A call permission request takes only body.', 'interactive');
    return { type: 'interactive', interactive: { type: 'call_permission_request', body: { text: i.body }, action: { name: 'call_permission_request' } } };
  }
  if (i.buttons) {
    if (i.buttons.length > MAX_REPLY_BUTTONS) {
      throw new ApiError('too_many_buttons', `Reply buttons are limited to ${MAX_REPLY_BUTTONS}; got ${i.buttons.length}.`, { max: MAX_REPLY_BUTTONS, count: i.buttons.length });
    }
    return {
      type: 'interactive',
      interactive: { type: 'button', ...common, action: { buttons: i.buttons.map((b) => ({ type: 'reply', reply: { id: b.id, title: b.title } })) } },
    };
  }
  if (i.list) {
    return { type: 'interactive', interactive: { type: 'list', ...common, action: { button: i.list.button, sections: i.list.sections } } };
  }
  throw invalid('interactive needs buttons (1 to 3), a list or a flow.', 'interactive');
}

/** `toGroup`: a send to a WhatsApp group (group-messages.ts): no customer recipient to parse. */
export function composeMessage(body: SendRequest, opts: { toGroup?: boolean } = {}): ComposedMessage {
  const { phone, userId } = opts.toGroup ? { phone: null, userId: null } : parseRecipient(body);
  const type = body.type as MessageType;
  if (!(MESSAGE_TYPES as readonly string[]).includes(type)) {
    throw new ApiError('unsupported_message_type', `Message type "${String(body.type).slice(0, 32)}" is not supported; use one of ${MESSAGE_TYPES.join(', ')}.`);
  }
  const content: Record<string, unknown> = { type };
  if (type === 'text') {
    if (body.content === undefined) throw invalid('A text send needs content.', 'content');
    content.content = body.content;
    return { phone, userId, type, session: true, content, payload: { type: 'text', text: { body: body.content, preview_url: body.preview_url ?? false } } };
  }
  if (type === 'template') {
    const t = composeTemplate(body);
    content.template = body.template;
    return { phone, userId, type, session: false, content, ...t };
  }
  if (MEDIA_TYPES.has(type)) {
    const media = mediaObject(body.media, 'media', type);
    content.media = body.media;
    return { phone, userId, type, session: true, content, payload: { type, [type]: media.object }, media };
  }
  content.interactive = body.interactive;
  if (body.interactive?.flow) {
    const i = body.interactive;
    if (i.buttons || i.list) throw invalid('interactive takes one of buttons, list or flow.', 'interactive');
    const common = { body: { text: i.body }, ...(i.header ? { header: { type: 'text', text: i.header } } : {}), ...(i.footer ? { footer: { text: i.footer } } : {}) };
    const f = composeFlowMessage(i.flow!, common);
    content.interactive = { ...i, flow: { ...i.flow, token: f.token } };
    return { phone, userId, type, session: true, content, payload: f.payload, flow: f.ref };
  }
  return { phone, userId, type, session: true, content, payload: composeInteractive(body) };
}

/** The number of body placeholders `{{n}}` of a template's components. */
export function bodyPlaceholderCount(components: unknown): number {
  if (!Array.isArray(components)) return 0;
  const body = components.find((c) => typeof c === 'object' && c && String((c as { type?: string }).type).toUpperCase() === 'BODY') as { text?: string } | undefined;
  const found = new Set((body?.text ?? '').match(/\{\{\s*\d+\s*\}\}/g) ?? []);
  return found.size;
}
