/**
 * A template's text as a person reads it: header, body, footer and buttons of its components,
 * with the positional placeholders (`{{1}}`, `{{2}}` …) filled from the values a send carries (the
 * same `header`/`body` lists the broadcast engine and POST /v1/messages put into the channel's
 * `components[].parameters`, in order). A placeholder without a value stays as it is, so the
 * templates page shows a template's text unfilled and an approval shows the message that will go out.
 */
export interface RenderedTemplate {
  /** A text header's text, or the media kind of a media header (`IMAGE`, `VIDEO`, `DOCUMENT`). */
  header: { text: string } | { media: string } | null;
  body: string;
  footer: string | null;
  buttons: Array<{ type: string; text: string; detail?: string }>;
  /** A carousel's cards (empty otherwise): each card's media header kind, body and buttons. */
  cards: Array<{ header: { media: string } | null; body: string | null; buttons: Array<{ type: string; text: string; detail?: string }> }>;
  /** A limited-time offer's headline and whether the message shows its expiry; null otherwise. */
  offer: { text: string; expires: boolean } | null;
  /** The template asks the customer for permission to call (CALL_PERMISSION_REQUEST). */
  callPermissionRequest: boolean;
}

export interface TemplateValues {
  header?: readonly string[];
  body?: readonly string[];
}

type Component = { type?: unknown; format?: unknown; text?: unknown; buttons?: unknown; cards?: unknown; components?: unknown; limited_time_offer?: unknown };

const PLACEHOLDER = /\{\{\s*(\d+)\s*\}\}/g;

/** `{{n}}` replaced by the n-th value (1-based) when there is one. */
export function fillPlaceholders(text: string, values: readonly string[] = []): string {
  return text.replace(PLACEHOLDER, (whole, n: string) => values[Number(n) - 1] ?? whole);
}

function component(components: unknown, type: string): Component | undefined {
  if (!Array.isArray(components)) return undefined;
  return components.find((c): c is Component => typeof c === 'object' && c !== null && String((c as Component).type).toUpperCase() === type);
}

export function renderTemplate(components: unknown, values: TemplateValues = {}): RenderedTemplate {
  const header = component(components, 'HEADER');
  const format = String(header?.format ?? 'TEXT').toUpperCase();
  const footer = component(components, 'FOOTER');
  const buttons = component(components, 'BUTTONS');
  const carousel = component(components, 'CAROUSEL');
  const offer = component(components, 'LIMITED_TIME_OFFER')?.limited_time_offer as { text?: unknown; has_expiration?: unknown } | undefined;
  return {
    header: !header ? null : format === 'TEXT' ? { text: fillPlaceholders(String(header.text ?? ''), values.header) } : { media: format },
    body: fillPlaceholders(String(component(components, 'BODY')?.text ?? ''), values.body),
    footer: footer && typeof footer.text === 'string' ? footer.text : null,
    buttons: buttonsOf(buttons),
    cards: (Array.isArray(carousel?.cards) ? (carousel.cards as Array<{ components?: unknown }>) : []).map((card) => {
      const h = component(card?.components, 'HEADER');
      const b = component(card?.components, 'BODY');
      return { header: h ? { media: String(h.format ?? 'IMAGE').toUpperCase() } : null, body: typeof b?.text === 'string' ? b.text : null, buttons: buttonsOf(component(card?.components, 'BUTTONS')) };
    }),
    offer: offer && typeof offer.text === 'string' ? { text: offer.text, expires: offer.has_expiration === true } : null,
    callPermissionRequest: component(components, 'CALL_PERMISSION_REQUEST') !== undefined,
  };
}

/** What a button does beyond its text, for the kinds whose text does not say it. */
const BUTTON_DETAIL: Record<string, string> = {
  VOICE_CALL: 'calls the business on WhatsApp',
  REQUEST_CONTACT_INFO: 'asks for the phone number',
  COPY_CODE: 'copies the code',
};

function buttonsOf(c: Component | undefined): RenderedTemplate['buttons'] {
  return (Array.isArray(c?.buttons) ? (c.buttons as Array<Record<string, unknown>>) : []).map((b) => {
    const type = String(b.type ?? 'QUICK_REPLY');
    const detail = typeof b.url === 'string' ? b.url : typeof b.phone_number === 'string' ? b.phone_number : BUTTON_DETAIL[type.toUpperCase()];
    return { type, text: String(b.text ?? (type.toUpperCase() === 'COPY_CODE' ? 'Copy code' : '')), ...(detail ? { detail } : {}) };
  });
}
