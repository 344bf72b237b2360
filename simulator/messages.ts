/** POST /:version/:phoneNumberId/messages */
import type { Request, Response } from 'express';
import { postedNode, type SimContext } from './context.js';
import { paramError, waError } from './errors.js';
import { wamid as newWamid } from './ids.js';
import type { MessageMeta, SimState, Template } from './state.js';
import { validateFlowSend } from './flows.js';
import { checkSendBody } from './meta-check.js';
import { isBsuidLike, shownPhone } from './user-model.js';
import { isObj, MEDIA_TYPES, validateInteractive, validateMediaMessage, validateMediaRef, validateOther, validateText, type Obj } from './validate.js';
import type { StatusError } from './webhooks.js';
import { messagingLimitError, pricingTypeAt, recordReadMark } from './pricing.js';
import { groupSendTarget } from './groups.js';

const TYPES = ['audio', 'contacts', 'document', 'image', 'interactive', 'location', 'reaction', 'sticker', 'template', 'text', 'video'];
const WINDOW_MS = 24 * 3600 * 1000;

/** `{{1}}`-style (positional) or `{{name}}` (named) placeholders, counted once each. */
export function placeholders(text: unknown): number {
  if (typeof text !== 'string') return 0;
  return new Set(Array.from(text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g), (m) => m[1])).size;
}

function componentParams(components: unknown, type: string): unknown[] | null {
  if (!Array.isArray(components)) return null;
  const c = components.find((x) => isObj(x) && typeof x.type === 'string' && x.type.toLowerCase() === type);
  if (!c) return null;
  return Array.isArray((c as Obj).parameters) ? ((c as Obj).parameters as unknown[]) : [];
}

function findTemplate(state: SimState, wabaId: string, name: string, lang: string): Template | undefined {
  for (const t of state.templates.values()) if (t.waba_id === wabaId && t.name === name && t.language === lang) return t;
  return undefined;
}

/** Template sends: the template must exist, be approved, and get the parameters it declares. */
function validateTemplateSend(state: SimState, wabaId: string, o: Obj): Template {
  if (typeof o.name !== 'string' || !o.name) throw waError(131008, "The parameter template['name'] is required.");
  if (!isObj(o.language) || typeof o.language.code !== 'string') throw waError(131008, "The parameter template['language']['code'] is required.");
  const code = o.language.code;
  const t = findTemplate(state, wabaId, o.name, code);
  if (!t || t.status === 'PENDING' || t.status === 'REJECTED') {
    throw waError(132001, `template name (${o.name}) does not exist in ${code}`);
  }
  if (t.status === 'PAUSED') throw waError(132015);
  if (t.status === 'DISABLED') throw waError(132016);
  const body = t.components.find((c) => String(c.type).toUpperCase() === 'BODY');
  const expectedBody = placeholders(body?.text);
  const givenBody = componentParams(o.components, 'body')?.length ?? 0;
  if (expectedBody !== givenBody) {
    throw waError(132000, `body: number of localizable_params (${givenBody}) does not match the expected number of params (${expectedBody})`);
  }
  const header = t.components.find((c) => String(c.type).toUpperCase() === 'HEADER');
  if (header) {
    const format = String(header.format ?? 'TEXT').toUpperCase();
    const given = componentParams(o.components, 'header');
    if (format === 'TEXT') {
      const expected = placeholders(header.text);
      if (expected !== (given?.length ?? 0)) {
        throw waError(132000, `header: number of localizable_params (${given?.length ?? 0}) does not match the expected number of params (${expected})`);
      }
    } else if (format === 'IMAGE' || format === 'VIDEO' || format === 'DOCUMENT') {
      const p = given?.[0];
      const kind = format.toLowerCase();
      if (!isObj(p) || p.type !== kind || !isObj(p[kind])) {
        const got = isObj(p) && typeof p.type === 'string' ? p.type.toUpperCase() : 'NONE';
        throw waError(132012, `header: Format mismatch, expected ${format}, received ${got}`);
      }
      validateMediaRef(state, p[kind] as Obj, `template['components'][header]['parameters'][0]['${kind}']`);
    }
  }
  validateCarouselSend(state, t, o);
  // A limited-time offer that shows its expiry needs it per send (Meta, "Limited-time offer templates").
  const lto = t.components.find((c) => String(c.type).toUpperCase() === 'LIMITED_TIME_OFFER');
  if (lto && isObj(lto.limited_time_offer) && lto.limited_time_offer.has_expiration === true) {
    const p = componentParams(o.components, 'limited_time_offer')?.[0];
    if (!isObj(p) || !isObj(p.limited_time_offer) || typeof p.limited_time_offer.expiration_time_ms !== 'number') {
      throw waError(131008, "The parameter template['components'][limited_time_offer]['parameters'][0]['limited_time_offer']['expiration_time_ms'] is required.");
    }
  }
  return t;
}

/** A carousel send: a card for every card of the template (Meta: the same number), each with its header media and body parameters. */
function validateCarouselSend(state: SimState, t: Template, o: Obj): void {
  const carousel = t.components.find((c) => String(c.type).toUpperCase() === 'CAROUSEL');
  if (!carousel) return;
  const expected = Array.isArray(carousel.cards) ? (carousel.cards as Obj[]) : [];
  const sent = (Array.isArray(o.components) ? o.components : []).find((c: unknown) => isObj(c) && String(c.type).toLowerCase() === 'carousel') as Obj | undefined;
  const cards = sent && Array.isArray(sent.cards) ? (sent.cards as Obj[]) : [];
  if (cards.length !== expected.length) throw waError(132000, `carousel: number of cards (${cards.length}) does not match the template's (${expected.length})`);
  expected.forEach((tc, i) => {
    const card = cards.find((c) => isObj(c) && c.card_index === i);
    if (!card) throw waError(131008, `The parameter template['components'][carousel]['cards'] has no card_index ${i}.`);
    const tComponents = Array.isArray(tc.components) ? (tc.components as Obj[]) : [];
    const header = tComponents.find((c) => String(c.type).toUpperCase() === 'HEADER');
    const format = String(header?.format ?? 'IMAGE').toUpperCase();
    const kind = format.toLowerCase();
    const p = componentParams(card.components, 'header')?.[0];
    if (!isObj(p) || p.type !== kind || !isObj(p[kind])) {
      throw waError(132012, `carousel card ${i} header: Format mismatch, expected ${format}, received ${isObj(p) && typeof p.type === 'string' ? p.type.toUpperCase() : 'NONE'}`);
    }
    validateMediaRef(state, p[kind] as Obj, `template['components'][carousel]['cards'][${i}][header]['parameters'][0]['${kind}']`);
    const body = tComponents.find((c) => String(c.type).toUpperCase() === 'BODY');
    const want = placeholders(body?.text);
    const got = componentParams(card.components, 'body')?.length ?? 0;
    if (want !== got) throw waError(132000, `carousel card ${i} body: number of localizable_params (${got}) does not match the expected number of params (${want})`);
  });
}

/** Meta's time-to-live of marketing messages (seconds): 12 hours to 30 days. */
export const MARKETING_TTL_FIELD = 'message_send_ttl_seconds';
const MARKETING_TTL_RANGE = [43_200, 2_592_000] as const;

/**
 * POST /:phoneNumberId/messages, and POST /:phoneNumberId/marketing_messages (Meta's Marketing
 * Messages API for WhatsApp): the same template payload, checked against Meta's schema of that
 * call, MARKETING templates only (another template: code 100, "Not allowed to send messages using
 * MM API"), refused with 131055 while the business has not accepted the API's terms (the
 * `marketing_messages_terms_accepted` switch of the control API). A time-to-live
 * (`message_send_ttl_seconds`, Meta's name for it; its published send schema lists none) is
 * accepted in Meta's range and kept with the message; statuses follow as for /messages.
 */
export function sendMessage(ctx: SimContext, route: 'messages' | 'marketing_messages' = 'messages') {
  const marketing = route === 'marketing_messages';
  return (req: Request, res: Response): void => {
    const { state } = ctx;
    const pn = postedNode(state, req);
    const b: unknown = req.body;
    if (!isObj(b) || b.messaging_product === undefined) throw paramError('The parameter messaging_product is required.');
    if (b.messaging_product !== 'whatsapp') throw paramError(`Param messaging_product must be one of {WHATSAPP} - got "${String(b.messaging_product)}".`);

    // Mark an inbound message as read (optionally with a typing indicator).
    if (!marketing && b.status !== undefined) {
      if (b.status !== 'read') throw paramError(`Param status must be one of {READ} - got "${String(b.status)}".`);
      if (typeof b.message_id !== 'string' || !b.message_id) throw paramError('The parameter message_id is required.');
      // Typing indicator (Meta, "Typing indicators"): `{ type: "text" }` is the one type documented.
      if (b.typing_indicator !== undefined) {
        const ti = b.typing_indicator;
        if (!isObj(ti) || ti.type !== 'text') throw paramError(`Param typing_indicator.type must be one of {TEXT} - got "${String(isObj(ti) ? ti.type : ti)}".`);
      }
      recordReadMark(state, pn.phone_number_id, b.message_id, b.typing_indicator !== undefined);
      res.json({ success: true });
      return;
    }
    // Meta's published schema first (simulator/meta/): what it refuses is refused, with Meta's codes.
    // `recipient` (a BSUID, 2026) is newer than the published v23 schema: checked here, the rest by the schema.
    // On /marketing_messages, Meta's v23 schema (closed) also lacks fields the route shares with
    // /messages (Meta: "the same payload"): the echoed `biz_opaque_callback_data`, and the TTL.
    const { recipient, [MARKETING_TTL_FIELD]: ttl, biz_opaque_callback_data: opaque, ...rest } = b;
    const schemaBody = marketing ? rest : { ...rest, ...(ttl !== undefined ? { [MARKETING_TTL_FIELD]: ttl } : {}), ...(opaque !== undefined ? { biz_opaque_callback_data: opaque } : {}) };
    const refused = checkSendBody(recipient !== undefined && schemaBody.to === undefined ? { ...schemaBody, to: '0' } : schemaBody, route);
    if (refused) throw refused;
    if (marketing) {
      if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < MARKETING_TTL_RANGE[0] || ttl > MARKETING_TTL_RANGE[1])) {
        throw paramError('Invalid parameter', `Param ${MARKETING_TTL_FIELD} must be an integer from ${MARKETING_TTL_RANGE[0]} to ${MARKETING_TTL_RANGE[1]} - got ${JSON.stringify(ttl)}.`);
      }
      if (pn.marketing_messages_terms_accepted === false) throw waError(131055);
    }
    // The number's throughput (Cloud API: 80 messages per second by default, up to 1,000): a send
    // beyond it is refused with 130429, as Meta does. Wall-clock token bucket, one second of burst.
    if (pn.throughput_mps) {
      const now = Date.now();
      const bucket = (pn.bucket ??= { tokens: pn.throughput_mps, at: now });
      bucket.tokens = Math.min(pn.throughput_mps, bucket.tokens + ((now - bucket.at) / 1000) * pn.throughput_mps);
      bucket.at = now;
      if (bucket.tokens < 1) {
        state.stats.throttled = (state.stats.throttled ?? 0) + 1;
        throw waError(130429);
      }
      bucket.tokens -= 1;
    }
    if (b.recipient_type !== undefined && b.recipient_type !== 'individual' && !(b.recipient_type === 'group' && !marketing)) {
      throw paramError(`Param recipient_type must be one of {INDIVIDUAL, GROUP} - got "${String(b.recipient_type)}".`);
    }
    if (b.recipient_type === 'group') {
      sendToGroup(ctx, pn, b, res);
      return;
    }
    // `to` (a phone) or `recipient` (a BSUID or parent BSUID); with both, `to` wins (Meta, 2026).
    const byPhone = !(b.to === undefined || b.to === null || b.to === '');
    if (!byPhone && (recipient === undefined || recipient === null || recipient === '')) throw paramError('The parameter to is required.');
    if (byPhone && (typeof b.to !== 'string' || !/^\+?[0-9][0-9 ()-]{4,24}$/.test(b.to.trim()))) {
      throw paramError('Invalid parameter', `Param to must be a phone number in international format - got "${String(b.to)}".`);
    }
    if (!byPhone && !isBsuidLike(recipient)) {
      throw paramError('Invalid parameter', `Param recipient must be a business-scoped user ID - got "${String(recipient).slice(0, 140)}".`);
    }
    // Every WhatsApp user has a BSUID since 2026: a phone never seen before gets one here.
    const user = byPhone ? state.users.ofPhone(pn.phone_number_id, (b.to as string).replace(/\D/g, '')) : state.users.get(pn.phone_number_id, recipient as string);
    if (!byPhone && !user) throw waError(131026, 'No WhatsApp user with this business-scoped user ID.');
    const waId = byPhone ? (b.to as string).replace(/\D/g, '') : (user?.phone ?? '');
    const type = b.type === undefined ? 'text' : b.type;
    if (typeof type !== 'string' || !TYPES.includes(type)) {
      throw paramError(`Param type must be one of {${TYPES.map((t) => t.toUpperCase()).join(', ')}} - got "${String(type)}".`);
    }
    const obj = b[type];
    if (type === 'contacts') {
      if (!Array.isArray(obj) || obj.length === 0) throw waError(131008, 'The parameter contacts is required.');
    } else if (!isObj(obj)) {
      throw waError(131008, `The parameter ${type} is required.`);
    }
    // `context` (and its optional message_id, a string) is checked by Meta's schema above.

    // Meta returns biz_opaque_callback_data (at most 512 characters) in the message's statuses.
    if (b.biz_opaque_callback_data !== undefined && (typeof b.biz_opaque_callback_data !== 'string' || b.biz_opaque_callback_data.length > 512)) {
      throw paramError('Invalid parameter', 'Param biz_opaque_callback_data must be a string of at most 512 characters.');
    }

    let category = 'service';
    if (type === 'text') validateText(obj as Obj);
    else if (MEDIA_TYPES.has(type)) validateMediaMessage(state, type, obj as Obj);
    else if (type === 'interactive') {
      validateInteractive(state, obj as Obj);
      if ((obj as Obj).type === 'flow') validateFlowSend(state, pn.phone_number_id, obj as Obj);
    }
    else if (type === 'template') {
      const t = validateTemplateSend(state, pn.waba_id, obj as Obj);
      category = t.category.toLowerCase();
      if (marketing && category !== 'marketing') {
        throw paramError(
          'Invalid parameter',
          `Not allowed to send messages using MM API: only MARKETING templates can be sent through the Marketing Messages API; template ${t.name} is ${t.category}.`,
        );
      }
      // 131062: authentication templates with one-tap, zero-tap or copy-code buttons still need a phone.
      if (!byPhone && category === 'authentication') {
        throw waError(131062, 'This message type cannot be sent to a business-scoped user ID; send it to the phone number.');
      }
    }
    else validateOther(type, obj as Obj);

    let asyncError = (res.locals as { asyncError?: StatusError }).asyncError ?? null;
    if (!asyncError && category === 'marketing' && user?.marketing_stopped) {
      // The user stopped marketing messages from this business: failed, never to be retried.
      asyncError = { code: 131050, title: 'Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.', message: 'Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.' };
    } else if (!asyncError && type !== 'template' && pn.enforce_customer_window) {
      const last = state.lastInbound.get(`${pn.phone_number_id}:${byPhone ? waId : user!.user_id}`);
      if (last === undefined || state.nowMs() - last > WINDOW_MS) {
        asyncError = { code: 131047, title: 'Re-engagement message', message: 'Re-engagement message', error_data: { details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.' } };
      }
    } else if (asyncError) {
      const a = asyncError as { code: number; title?: string; message?: string; details?: string };
      asyncError = { code: a.code, title: a.title ?? a.message, message: a.message ?? a.title, error_data: a.details ? { details: a.details } : undefined };
    }

    // The portfolio's unique-user limit in a moving 24 hours (pricing.ts): business-initiated templates only.
    if (!asyncError && type === 'template') asyncError = messagingLimitError(state, pn, waId || (user?.user_id ?? ''));

    const id = newWamid(waId || (user?.user_id ?? '').replace(/\D/g, '').slice(0, 15));
    const meta: MessageMeta = { pnid: pn.phone_number_id, to: byPhone ? waId : '', category, status: 'accepted', convId: null, stop: false };
    if (user) meta.userId = user.user_id;
    if (typeof b.biz_opaque_callback_data === 'string') meta.opaque = b.biz_opaque_callback_data;
    meta.pricingType = pricingTypeAt(state, pn, waId, category);
    state.index.set(id, meta);
    state.messages.push({ wamid: id, phone_number_id: pn.phone_number_id, to: waId, type, at: state.clock.now().toISOString(), payload: b, meta, ...(marketing ? { route } : {}), ...(user ? { user_id: user.user_id } : {}) });
    state.stats.messages_sent++;
    ctx.statuses.start(id, asyncError);
    if ((res.locals as { loseAnswer?: boolean }).loseAnswer) return; // held: the answer never comes
    res.json({
      messaging_product: 'whatsapp',
      // Since 2026 the answer names the BSUID, and the phone where available.
      contacts: [{ input: byPhone ? b.to : recipient, ...(waId && (byPhone || (user && shownPhone(user))) ? { wa_id: waId } : {}), ...(user ? { user_id: user.user_id } : {}) }],
      messages: [type === 'template' ? { id, message_status: 'accepted' } : { id }],
    });
  };
}

/**
 * A send to a group (groups.ts): `to` is the group's id; no interactive messages. Statuses name the
 * group (`group_id`) and stop at delivered (no read receipts in groups).
 */
function sendToGroup(ctx: SimContext, pn: Parameters<typeof groupSendTarget>[1], b: Obj, res: Response): void {
  const { state } = ctx;
  const g = groupSendTarget(state, pn, b);
  const type = b.type === undefined ? 'text' : b.type;
  if (typeof type !== 'string' || !TYPES.includes(type)) throw paramError(`Param type must be one of {${TYPES.map((t) => t.toUpperCase()).join(', ')}} - got "${String(type)}".`);
  const obj = b[type];
  if (!isObj(obj)) throw waError(131008, `The parameter ${type} is required.`);
  let category = 'service';
  if (type === 'text') validateText(obj);
  else if (MEDIA_TYPES.has(type)) validateMediaMessage(state, type, obj);
  else if (type === 'template') category = validateTemplateSend(state, pn.waba_id, obj).category.toLowerCase();
  else validateOther(type, obj);
  const id = newWamid(g.id.replace(/\D/g, '').slice(0, 15) || '0');
  const meta: MessageMeta = { pnid: pn.phone_number_id, to: '', category, status: 'accepted', convId: null, stop: false, groupId: g.id };
  if (typeof b.biz_opaque_callback_data === 'string') meta.opaque = b.biz_opaque_callback_data;
  meta.pricingType = 'regular';
  state.index.set(id, meta);
  state.messages.push({ wamid: id, phone_number_id: pn.phone_number_id, to: g.id, type, at: state.clock.now().toISOString(), payload: b, meta });
  state.stats.messages_sent++;
  ctx.statuses.start(id, (res.locals as { asyncError?: StatusError }).asyncError ?? null);
  if ((res.locals as { loseAnswer?: boolean }).loseAnswer) return;
  res.json({ messaging_product: 'whatsapp', contacts: [{ input: g.id }], messages: [type === 'template' ? { id, message_status: 'accepted' } : { id }] });
}
