/**
 * The template kinds businesses send in late 2026, checked before the channel as Meta checks them
 * (issue 56, item 3), so a refusal names the rule and never costs a Graph call:
 *
 * - Media card carousel (`CAROUSEL`): MARKETING; a BODY (the message bubble, up to 1,024
 *   characters) and one CAROUSEL of 2 to 10 cards, no top-level HEADER, FOOTER or BUTTONS. Each
 *   card: an IMAGE or VIDEO HEADER with its sample (`example.header_handle`), an optional BODY (up
 *   to 160 characters; on every card or on none), and BUTTONS with 1 or 2 of QUICK_REPLY, URL,
 *   PHONE_NUMBER. All cards have the same components: the same header format and the same button
 *   kinds in the same order. (Meta, "Media card carousel templates".)
 * - Limited-time offer (`LIMITED_TIME_OFFER`): MARKETING; `limited_time_offer.text` up to 16
 *   characters and `has_expiration`; an optional IMAGE or VIDEO header; a BODY up to 600
 *   characters; no FOOTER; BUTTONS: one URL button, and a COPY_CODE button (first) when
 *   `has_expiration` is true; at most these two. (Meta, "Limited-time offer templates".)
 * - The call button (`VOICE_CALL`: the user calls the business on WhatsApp) and the call
 *   permission request component (`CALL_PERMISSION_REQUEST`): at most one each; the button has a
 *   text of up to 25 characters. (Meta, Calling API.)
 * - `REQUEST_CONTACT_INFO` (asks a username customer to share their phone number): at most one,
 *   not in an AUTHENTICATION template (those still need a phone number). (Meta, "Business-scoped
 *   user ids".)
 * - Authentication templates' `supported_apps` on an OTP button of `otp_type` ONE_TAP or
 *   ZERO_TAP: 1 to 5 apps, each `package_name` (an Android package name, up to 224 characters) and
 *   `signature_hash` (11 characters of the app's signing key hash); not on COPY_CODE OTP buttons.
 *   (Meta, "Authentication templates".)
 *
 * A refusal is 400 `invalid_template` (as the channel's refusal of the same payload would be) with
 * `details.fields` naming the place and `details.rule`.
 */
import { ApiError } from '../platform/errors.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const upper = (v: unknown) => (typeof v === 'string' ? v.toUpperCase() : '');

export const CAROUSEL_CARDS = { min: 2, max: 10 };
export const CARD_BODY_MAX = 160;
export const CARD_BUTTON_KINDS = ['QUICK_REPLY', 'URL', 'PHONE_NUMBER'];
export const LTO_TEXT_MAX = 16;
export const LTO_BODY_MAX = 600;
export const SUPPORTED_APPS_MAX = 5;
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;
const SIGNATURE_HASH = /^[A-Za-z0-9+/=]{11}$/;

function refuse(field: string, rule: string, message: string): never {
  throw new ApiError('invalid_template', message, { fields: [{ field, message }], rule });
}

const componentsOf = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);
const buttonsOf = (c: Obj | undefined): Obj[] => (c && Array.isArray(c.buttons) ? c.buttons.filter(isObj) : []);

/** The header handles of every card (for the sample checks: one header-sample each, the card header's format). */
export function cardHeaders(components: unknown): Array<{ field: string; format: string; handle: unknown }> {
  const out: Array<{ field: string; format: string; handle: unknown }> = [];
  componentsOf(components).forEach((c, i) => {
    if (upper(c.type) !== 'CAROUSEL') return;
    componentsOf(c.cards).forEach((card, j) => {
      componentsOf(card.components).forEach((cc, k) => {
        if (upper(cc.type) !== 'HEADER') return;
        const example = isObj(cc.example) ? cc.example : {};
        const hh = example.header_handle;
        out.push({ field: `components[${i}].cards[${j}].components[${k}].example.header_handle`, format: upper(cc.format), handle: Array.isArray(hh) && hh.length === 1 ? hh[0] : undefined });
      });
    });
  });
  return out;
}

function checkCarousel(category: string, components: Obj[], at: number): void {
  const field = `components[${at}]`;
  if (category !== 'MARKETING') refuse('category', 'carousel_marketing_only', 'A carousel template must be in the MARKETING category.');
  components.forEach((c, i) => {
    const t = upper(c.type);
    if (t === 'HEADER' || t === 'FOOTER' || t === 'BUTTONS') refuse(`components[${i}]`, 'carousel_components', `A carousel template has a BODY and a CAROUSEL only: move the ${t} into the cards.`);
  });
  if (!components.some((c) => upper(c.type) === 'BODY')) refuse('components', 'carousel_body', 'A carousel template needs a BODY: the message bubble shown above the cards.');
  const cards = Array.isArray(components[at].cards) ? (components[at].cards as unknown[]) : [];
  if (cards.length < CAROUSEL_CARDS.min || cards.length > CAROUSEL_CARDS.max) {
    refuse(`${field}.cards`, 'carousel_card_count', `A carousel has ${CAROUSEL_CARDS.min} to ${CAROUSEL_CARDS.max} cards; this one has ${cards.length}.`);
  }
  let shape: string | null = null;
  cards.forEach((card, j) => {
    const cf = `${field}.cards[${j}]`;
    if (!isObj(card)) refuse(cf, 'carousel_card', 'Each card is an object with components.');
    const cc = componentsOf(card.components);
    const header = cc.find((x) => upper(x.type) === 'HEADER');
    const body = cc.find((x) => upper(x.type) === 'BODY');
    const buttons = cc.find((x) => upper(x.type) === 'BUTTONS');
    cc.forEach((x, k) => {
      if (!['HEADER', 'BODY', 'BUTTONS'].includes(upper(x.type))) refuse(`${cf}.components[${k}]`, 'carousel_card_components', `A card has a HEADER, an optional BODY and BUTTONS; not ${String(x.type)}.`);
    });
    if (!header || !['IMAGE', 'VIDEO'].includes(upper(header.format))) refuse(`${cf}.components`, 'carousel_card_header', 'Each card needs an IMAGE or VIDEO header.');
    if (body !== undefined) {
      if (typeof body.text !== 'string' || body.text.length === 0 || body.text.length > CARD_BODY_MAX) {
        refuse(`${cf}.components`, 'carousel_card_body', `A card's BODY text has 1 to ${CARD_BODY_MAX} characters.`);
      }
    }
    const bs = buttonsOf(buttons);
    if (bs.length < 1 || bs.length > 2) refuse(`${cf}.components`, 'carousel_card_buttons', `Each card has 1 or 2 buttons; card ${j + 1} has ${bs.length}.`);
    bs.forEach((b, k) => {
      if (!CARD_BUTTON_KINDS.includes(upper(b.type))) refuse(`${cf}.components`, 'carousel_card_button_kind', `A card's buttons are ${CARD_BUTTON_KINDS.join(', ')}; button ${k + 1} of card ${j + 1} is ${String(b.type)}.`);
    });
    const mine = `${upper(header!.format)}|${body ? 'body' : 'no body'}|${bs.map((b) => upper(b.type)).join(',')}`;
    if (shape === null) shape = mine;
    else if (shape !== mine) {
      refuse(cf, 'carousel_cards_alike', `All cards have the same components (header format, body or not, button kinds in order): card 1 is ${shape.replace(/\|/g, ', ')}; card ${j + 1} is ${mine.replace(/\|/g, ', ')}.`);
    }
  });
}

function checkLimitedTimeOffer(category: string, components: Obj[], at: number): void {
  const field = `components[${at}]`;
  if (category !== 'MARKETING') refuse('category', 'lto_marketing_only', 'A limited-time offer template must be in the MARKETING category.');
  const lto = isObj(components[at].limited_time_offer) ? (components[at].limited_time_offer as Obj) : undefined;
  if (!lto || typeof lto.text !== 'string' || lto.text.length === 0 || lto.text.length > LTO_TEXT_MAX) {
    refuse(`${field}.limited_time_offer.text`, 'lto_text', `limited_time_offer.text has 1 to ${LTO_TEXT_MAX} characters.`);
  }
  if (lto.has_expiration !== undefined && typeof lto.has_expiration !== 'boolean') refuse(`${field}.limited_time_offer.has_expiration`, 'lto_has_expiration', 'has_expiration is true or false.');
  components.forEach((c, i) => {
    const t = upper(c.type);
    if (t === 'FOOTER') refuse(`components[${i}]`, 'lto_no_footer', 'A limited-time offer template has no FOOTER.');
    if (t === 'HEADER' && !['IMAGE', 'VIDEO'].includes(upper(c.format))) refuse(`components[${i}].format`, 'lto_header', 'A limited-time offer header is an IMAGE or a VIDEO.');
    if (t === 'BODY' && (typeof c.text !== 'string' || c.text.length > LTO_BODY_MAX)) refuse(`components[${i}].text`, 'lto_body', `A limited-time offer's BODY has at most ${LTO_BODY_MAX} characters.`);
  });
  if (!components.some((c) => upper(c.type) === 'BODY')) refuse('components', 'lto_body', 'A limited-time offer template needs a BODY.');
  const bi = components.findIndex((c) => upper(c.type) === 'BUTTONS');
  const bs = buttonsOf(components[bi]).map((b) => upper(b.type));
  const bf = bi >= 0 ? `components[${bi}].buttons` : 'components';
  if (bs.filter((t) => t === 'URL').length !== 1) refuse(bf, 'lto_url_button', 'A limited-time offer has one URL button.');
  if (bs.some((t) => t !== 'URL' && t !== 'COPY_CODE') || bs.length > 2) refuse(bf, 'lto_buttons', 'A limited-time offer\'s buttons are a COPY_CODE button and a URL button.');
  if (lto.has_expiration === true && bs[0] !== 'COPY_CODE') refuse(bf, 'lto_copy_code', 'With has_expiration, the COPY_CODE button comes first (the code the countdown is for).');
}

function checkButtons(category: string, components: Obj[]): void {
  let voice = 0;
  let contact = 0;
  const all = [
    ...components.map((c, i) => ({ c, f: `components[${i}]` })),
    ...components.flatMap((c, i) => (upper(c.type) === 'CAROUSEL' ? componentsOf(c.cards).flatMap((card, j) => componentsOf(card.components).map((cc, k) => ({ c: cc, f: `components[${i}].cards[${j}].components[${k}]` }))) : [])),
  ];
  for (const { c, f } of all) {
    buttonsOf(c).forEach((b, k) => {
      const t = upper(b.type);
      const bf = `${f}.buttons[${k}]`;
      if (t === 'VOICE_CALL') {
        voice++;
        if (typeof b.text !== 'string' || b.text.length === 0 || b.text.length > 25) refuse(`${bf}.text`, 'voice_call_text', 'A VOICE_CALL button has a text of 1 to 25 characters.');
      }
      if (t === 'REQUEST_CONTACT_INFO') {
        contact++;
        if (category === 'AUTHENTICATION') refuse(bf, 'request_contact_info_category', 'REQUEST_CONTACT_INFO is not available in AUTHENTICATION templates (they are sent to a phone number).');
      }
      if (b.supported_apps !== undefined) {
        const otp = upper(b.otp_type);
        if (t !== 'OTP' || (otp !== 'ONE_TAP' && otp !== 'ZERO_TAP')) refuse(`${bf}.supported_apps`, 'supported_apps_otp', 'supported_apps belongs on an OTP button of otp_type ONE_TAP or ZERO_TAP.');
        const apps = Array.isArray(b.supported_apps) ? b.supported_apps : [];
        if (apps.length < 1 || apps.length > SUPPORTED_APPS_MAX) refuse(`${bf}.supported_apps`, 'supported_apps_count', `supported_apps lists 1 to ${SUPPORTED_APPS_MAX} apps.`);
        apps.forEach((a: unknown, n: number) => {
          const app = isObj(a) ? a : {};
          if (typeof app.package_name !== 'string' || app.package_name.length > 224 || !PACKAGE_NAME.test(app.package_name)) {
            refuse(`${bf}.supported_apps[${n}].package_name`, 'supported_apps_package', 'package_name is an Android package name (such as com.example.app), up to 224 characters.');
          }
          if (typeof app.signature_hash !== 'string' || !SIGNATURE_HASH.test(app.signature_hash)) {
            refuse(`${bf}.supported_apps[${n}].signature_hash`, 'supported_apps_hash', 'signature_hash is the 11-character hash of the app\'s signing key.');
          }
        });
      }
    });
  }
  if (voice > 1) refuse('components', 'voice_call_once', 'A template has at most one VOICE_CALL button.');
  if (contact > 1) refuse('components', 'request_contact_info_once', 'A template has at most one REQUEST_CONTACT_INFO button.');
  if (components.filter((c) => upper(c.type) === 'CALL_PERMISSION_REQUEST').length > 1) refuse('components', 'call_permission_request_once', 'A template has at most one CALL_PERMISSION_REQUEST component.');
}

/** Refuses (400 invalid_template) a template of the newer kinds that Meta would refuse. */
export function checkTemplateKinds(body: { category: string; components: unknown }): void {
  const components = componentsOf(body.components);
  const category = upper(body.category);
  const carousels = components.map((c, i) => (upper(c.type) === 'CAROUSEL' ? i : -1)).filter((i) => i >= 0);
  const offers = components.map((c, i) => (upper(c.type) === 'LIMITED_TIME_OFFER' ? i : -1)).filter((i) => i >= 0);
  if (carousels.length > 1) refuse(`components[${carousels[1]}]`, 'carousel_once', 'A template has one CAROUSEL.');
  if (offers.length > 1) refuse(`components[${offers[1]}]`, 'lto_once', 'A template has one LIMITED_TIME_OFFER.');
  if (carousels.length && offers.length) refuse(`components[${offers[0]}]`, 'carousel_or_lto', 'A template is a carousel or a limited-time offer, not both.');
  if (carousels.length) checkCarousel(category, components, carousels[0]);
  if (offers.length) checkLimitedTimeOffer(category, components, offers[0]);
  checkButtons(category, components);
}
