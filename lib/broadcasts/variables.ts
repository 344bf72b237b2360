/**
 * Template variables of a broadcast: literal text with references to the recipient's contact,
 * `{{contact.name}}`, `{{contact.phone}}`, `{{contact.attributes.<key>}}`, each with an optional
 * fallback after `|`. They are resolved per recipient in SQL when the audience is frozen, so a
 * million recipients never pass through the process one by one. A reference with no fallback
 * whose value is empty excludes the recipient (pre-flight reason `missing_variable`): a message
 * is never sent with a hole in it.
 */
import { ApiError } from '../platform/errors.js';
import type { Params } from './filter.js';

export interface BroadcastVariables {
  body?: string[];
  header?: string[];
  /** A carousel's cards: each card's header link (the campaign's) and body variables (resolved per recipient). */
  cards?: Array<{ header?: { link: string }; body?: string[] }>;
  /** A limited-time offer's expiry and the COPY_CODE button's code: the campaign's, the same for everyone. */
  limited_time_offer?: { expiration_time_ms: number };
  coupon_code?: string;
}

type Part = { text: string } | { ref: 'name' | 'phone' | 'attribute'; key?: string; fallback?: string };

const REF = /\{\{\s*contact\.([A-Za-z0-9_.-]+)\s*(?:\|([^}]*))?\}\}/g;

export function parseVariable(value: string, field: string): Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const m of value.matchAll(REF)) {
    if (m.index! > last) parts.push({ text: value.slice(last, m.index) });
    const path = m[1];
    const fallback = m[2]?.trim() || undefined;
    if (path === 'name' || path === 'phone') parts.push({ ref: path, fallback });
    else if (path.startsWith('attributes.') && path.length > 11) parts.push({ ref: 'attribute', key: path.slice(11), fallback });
    else {
      const message = `unknown reference {{contact.${path}}}: use contact.name, contact.phone or contact.attributes.<key>`;
      throw new ApiError('invalid_request', `${field}: ${message}`, { fields: [{ field, message }] });
    }
    last = m.index! + m[0].length;
  }
  if (last < value.length) parts.push({ text: value.slice(last) });
  return parts;
}

function refSql(part: Exclude<Part, { text: string }>, p: Params): string {
  if (part.ref === 'name') return `NULLIF(c.name, '')`;
  if (part.ref === 'phone') return `('+' || c.phone)`;
  return `NULLIF(c.attributes ->> ${p.add(part.key)}, '')`;
}

/** The SQL of one resolved variable (text). */
function variableSql(parts: Part[], p: Params): string {
  if (parts.length === 0) return `''`;
  return `concat(${parts
    .map((part) => ('text' in part ? `${p.add(part.text)}::text` : part.fallback !== undefined ? `COALESCE(${refSql(part, p)}, ${p.add(part.fallback)}::text)` : refSql(part, p)))
    .join(', ')})`;
}

/** SQL building the recipient's resolved `{ body, header }` jsonb. */
export function resolvedVariablesSql(vars: BroadcastVariables, p: Params): string {
  const list = (values: string[] | undefined, name: string) =>
    values && values.length ? `jsonb_build_array(${values.map((v, i) => variableSql(parseVariable(v, `template_variables.${name}[${i}]`), p)).join(', ')})` : `'[]'::jsonb`;
  const cards = vars.cards?.length
    ? `, 'cards', jsonb_build_array(${vars.cards.map((c, i) => `jsonb_build_object('body', ${list(c.body, `cards[${i}].body`)})`).join(', ')})`
    : '';
  return `jsonb_build_object('body', ${list(vars.body, 'body')}, 'header', ${list(vars.header, 'header')}${cards})`;
}

/** SQL that is true when every reference without a fallback has a value for the contact. */
export function variablesPresentSql(vars: BroadcastVariables, p: Params): string {
  const checks: string[] = [];
  for (const [name, values] of [['body', vars.body], ['header', vars.header], ...(vars.cards ?? []).map((c, i) => [`cards[${i}].body`, c.body] as const)] as const) {
    (values ?? []).forEach((v, i) => {
      for (const part of parseVariable(v, `template_variables.${name}[${i}]`)) {
        // A contact known only by its BSUID has no phone: {{contact.phone}} without a fallback excludes it.
        if (!('text' in part) && part.fallback === undefined) checks.push(`${refSql(part, p)} IS NOT NULL`);
      }
    });
  }
  return checks.length ? `(${checks.join(' AND ')})` : 'TRUE';
}
