/**
 * The template kinds of late 2026 as Meta checks them at creation (Meta's "Media card carousel
 * templates", "Limited-time offer templates", Calling API, "Business-scoped user ids",
 * "Authentication templates"): a carousel (MARKETING; a BODY and 2 to 10 cards of an IMAGE/VIDEO
 * header, an optional body of up to 160 characters, 1 or 2 QUICK_REPLY/URL/PHONE_NUMBER buttons,
 * all alike), a limited-time offer (MARKETING; text up to 16, body up to 600, no footer, one URL
 * button and a COPY_CODE first when it expires), one VOICE_CALL button, one REQUEST_CONTACT_INFO
 * button (not in AUTHENTICATION), one CALL_PERMISSION_REQUEST component, and supported_apps (1 to
 * 5 Android apps) on ONE_TAP/ZERO_TAP OTP buttons. Refusals are Graph's user errors (code 100).
 * Answers the card headers, whose samples the caller checks like a header's.
 */
import { userError } from './errors.js';
import { isObj, type Obj } from './validate.js';

const up = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : '');
const objs = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);
const bad = (title: string, msg: string) => userError(title, msg);

export const NEW_COMPONENT_TYPES = ['CAROUSEL', 'LIMITED_TIME_OFFER', 'CALL_PERMISSION_REQUEST'];

export function checkTemplateKinds(category: string, components: Obj[]): Obj[] {
  const cardHeaders: Obj[] = [];
  const carousel = components.find((c) => up(c.type) === 'CAROUSEL');
  const lto = components.find((c) => up(c.type) === 'LIMITED_TIME_OFFER');
  if (carousel && lto) throw bad('Invalid template', 'A template cannot be both a carousel and a limited-time offer.');
  if (carousel) {
    if (category !== 'MARKETING') throw bad('Invalid category', 'Carousel templates must be in the MARKETING category.');
    if (components.some((c) => ['HEADER', 'FOOTER', 'BUTTONS'].includes(up(c.type)))) throw bad('Invalid carousel', 'A carousel template has a BODY and a CAROUSEL component only.');
    const cards = Array.isArray(carousel.cards) ? carousel.cards : [];
    if (cards.length < 2 || cards.length > 10) throw bad('Invalid number of cards', `A carousel has 2 to 10 cards; got ${cards.length}.`);
    let shape: string | null = null;
    for (const card of cards) {
      const cc = isObj(card) ? objs(card.components) : [];
      const header = cc.find((x) => up(x.type) === 'HEADER');
      const body = cc.find((x) => up(x.type) === 'BODY');
      const bs = objs(cc.find((x) => up(x.type) === 'BUTTONS')?.buttons);
      if (cc.some((x) => !['HEADER', 'BODY', 'BUTTONS'].includes(up(x.type)))) throw bad('Invalid card', 'A card has a HEADER, an optional BODY and BUTTONS.');
      if (!header || !['IMAGE', 'VIDEO'].includes(up(header.format))) throw bad('Invalid card header', 'Each card needs an IMAGE or VIDEO header.');
      if (body && (typeof body.text !== 'string' || !body.text || body.text.length > 160)) throw bad('Invalid card body', 'A card body has 1 to 160 characters.');
      if (bs.length < 1 || bs.length > 2) throw bad('Invalid card buttons', 'Each card has 1 or 2 buttons.');
      if (bs.some((b) => !['QUICK_REPLY', 'URL', 'PHONE_NUMBER'].includes(up(b.type)))) throw bad('Invalid card buttons', 'Card buttons are QUICK_REPLY, URL or PHONE_NUMBER.');
      const mine = `${up(header.format)}|${body ? 1 : 0}|${bs.map((b) => up(b.type)).join(',')}`;
      if (shape !== null && shape !== mine) throw bad('Cards do not match', 'All cards must have the same components.');
      shape = mine;
      cardHeaders.push(header);
    }
  }
  if (lto) {
    if (category !== 'MARKETING') throw bad('Invalid category', 'Limited-time offer templates must be in the MARKETING category.');
    const o = isObj(lto.limited_time_offer) ? lto.limited_time_offer : {};
    if (typeof o.text !== 'string' || !o.text || o.text.length > 16) throw bad('Invalid limited-time offer', 'limited_time_offer.text has 1 to 16 characters.');
    if (components.some((c) => up(c.type) === 'FOOTER')) throw bad('Invalid limited-time offer', 'A limited-time offer template has no footer.');
    const h = components.find((c) => up(c.type) === 'HEADER');
    if (h && !['IMAGE', 'VIDEO'].includes(up(h.format))) throw bad('Invalid limited-time offer', 'A limited-time offer header is an image or a video.');
    const body = components.find((c) => up(c.type) === 'BODY');
    if (typeof body?.text === 'string' && body.text.length > 600) throw bad('Invalid limited-time offer', 'A limited-time offer body has at most 600 characters.');
    const bs = objs(components.find((c) => up(c.type) === 'BUTTONS')?.buttons).map((b) => up(b.type));
    if (bs.filter((t) => t === 'URL').length !== 1 || bs.some((t) => t !== 'URL' && t !== 'COPY_CODE') || bs.length > 2) {
      throw bad('Invalid limited-time offer', 'A limited-time offer has one URL button and at most one COPY_CODE button.');
    }
    if (o.has_expiration === true && bs[0] !== 'COPY_CODE') throw bad('Invalid limited-time offer', 'With has_expiration, a COPY_CODE button must come first.');
  }
  if (components.filter((c) => up(c.type) === 'CALL_PERMISSION_REQUEST').length > 1) throw bad('Invalid template', 'At most one CALL_PERMISSION_REQUEST component.');
  const buttons = [...components, ...(carousel ? (carousel.cards as unknown[]).flatMap((card) => (isObj(card) ? objs(card.components) : [])) : [])]
    .flatMap((c) => objs(c.buttons));
  if (buttons.filter((b) => up(b.type) === 'VOICE_CALL').length > 1) throw bad('Invalid buttons', 'At most one VOICE_CALL button.');
  if (buttons.some((b) => up(b.type) === 'VOICE_CALL' && (typeof b.text !== 'string' || !b.text || b.text.length > 25))) throw bad('Invalid buttons', 'A VOICE_CALL button has a text of 1 to 25 characters.');
  const contact = buttons.filter((b) => up(b.type) === 'REQUEST_CONTACT_INFO');
  if (contact.length > 1) throw bad('Invalid buttons', 'At most one REQUEST_CONTACT_INFO button.');
  if (contact.length && category === 'AUTHENTICATION') throw bad('Invalid buttons', 'REQUEST_CONTACT_INFO is not available in authentication templates.');
  for (const b of buttons) {
    if (b.supported_apps === undefined) continue;
    if (up(b.type) !== 'OTP' || !['ONE_TAP', 'ZERO_TAP'].includes(up(b.otp_type))) throw bad('Invalid supported_apps', 'supported_apps is for OTP buttons of otp_type ONE_TAP or ZERO_TAP.');
    const apps = Array.isArray(b.supported_apps) ? b.supported_apps : [];
    if (apps.length < 1 || apps.length > 5) throw bad('Invalid supported_apps', 'supported_apps lists 1 to 5 apps.');
    for (const a of apps) {
      if (!isObj(a) || typeof a.package_name !== 'string' || a.package_name.length > 224 || !/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/.test(a.package_name)) {
        throw bad('Invalid supported_apps', 'package_name must be an Android package name.');
      }
      if (typeof a.signature_hash !== 'string' || !/^[A-Za-z0-9+/=]{11}$/.test(a.signature_hash)) throw bad('Invalid supported_apps', 'signature_hash must be 11 characters.');
    }
  }
  return cardHeaders;
}
