/**
 * The one escaping helper of the dashboard. Pages are written with the `html` tag: every
 * interpolated value is escaped (text and attribute contexts alike: & < > " ' `) unless it is
 * already `Html` made by this tag; arrays are joined. So a broadcast name or a webhook URL holding
 * markup is shown as text on every page, and there is no other way to put a string into a page.
 */
import { utcMinute } from '../../lib/broadcasts/quota-hold.js';

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

type Part = Html | string | number | boolean | null | undefined | Date | readonly Part[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c]);
}

function render(part: Part): string {
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof Date) return escapeHtml(when(part));
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/**
 * A date for people, in UTC (the page has no idea of the reader's zone without scripts): the one
 * format of every page (`2026-11-25 09:30 UTC`), the same as the held reasons' and the CLI's
 * (utcMinute). A Date put into a page by the `html` tag is shown this way too.
 */
export function when(d: Date | string | null | undefined): string {
  if (!d) return '—';
  const date = typeof d === 'string' ? new Date(d) : d;
  return Number.isNaN(date.getTime()) ? '—' : utcMinute(date);
}

/** A count with its noun: `1 user`, `3 users` (irregular plurals given). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** An amount in its currency's minor units (`73.00 USD`, `120 JPY`); the code alone when it is not ISO 4217. */
export function money(amount: number, currency: string | null | undefined): string {
  if (!currency) return amount.toLocaleString('en-US', { maximumFractionDigits: 4 });
  try {
    const digits = new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    return `${amount.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })} ${currency}`;
  } catch {
    return `${amount.toLocaleString('en-US', { maximumFractionDigits: 4 })} ${currency}`;
  }
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}
