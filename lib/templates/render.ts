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
}

export interface TemplateValues {
  header?: readonly string[];
  body?: readonly string[];
}

type Component = { type?: unknown; format?: unknown; text?: unknown; buttons?: unknown };

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
  return {
    header: !header ? null : format === 'TEXT' ? { text: fillPlaceholders(String(header.text ?? ''), values.header) } : { media: format },
    body: fillPlaceholders(String(component(components, 'BODY')?.text ?? ''), values.body),
    footer: footer && typeof footer.text === 'string' ? footer.text : null,
    buttons: (Array.isArray(buttons?.buttons) ? (buttons.buttons as Array<Record<string, unknown>>) : []).map((b) => ({
      type: String(b.type ?? 'QUICK_REPLY'),
      text: String(b.text ?? ''),
      ...(typeof b.url === 'string' ? { detail: b.url } : typeof b.phone_number === 'string' ? { detail: b.phone_number } : {}),
    })),
  };
}
