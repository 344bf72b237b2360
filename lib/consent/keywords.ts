/**
 * The customer keywords that change marketing consent, per project (projects.consent_keywords;
 * null means the defaults). A message matches only when it is the whole keyword: case and
 * surrounding spaces are ignored, inner spaces collapsed, a trailing full stop or exclamation mark
 * tolerated; "please stop sending me offers" is not an opt-out. A quick-reply button matches by
 * its payload or its text (Meta's "Stop promotions" button arrives as a button reply).
 */
import { storeConsentKeywords } from '../access/projects.js';
import { queryRows, type Tx } from '../platform/db/tx.js';


export interface ConsentKeywords {
  opt_out: string[];
  opt_in: string[];
  opt_out_confirmation: string | null;
  opt_in_confirmation: string | null;
}

export const DEFAULT_CONSENT_KEYWORDS: ConsentKeywords = {
  opt_out: ['STOP', 'UNSUBSCRIBE', 'Stop promotions'],
  opt_in: ['START'],
  opt_out_confirmation: null,
  opt_in_confirmation: null,
};

function normalize(text: string): string {
  return text.trim().replace(/\s+/g, ' ').replace(/[.!]+$/, '').trim().toUpperCase();
}

function stringList(v: unknown): string[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
}

/** The stored value as the API shows it (anything unreadable falls back to the default). */
export function keywordsOf(stored: unknown): ConsentKeywords {
  const s = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : null);
  return {
    opt_out: stringList(s.opt_out) ?? DEFAULT_CONSENT_KEYWORDS.opt_out,
    opt_in: stringList(s.opt_in) ?? DEFAULT_CONSENT_KEYWORDS.opt_in,
    opt_out_confirmation: text(s.opt_out_confirmation),
    opt_in_confirmation: text(s.opt_in_confirmation),
  };
}

export async function readKeywords(tx: Tx, projectId: string): Promise<ConsentKeywords> {
  const rows = await queryRows<{ k: unknown }>(tx, 'SELECT consent_keywords AS k FROM projects WHERE id = $1', projectId);
  return keywordsOf(rows[0]?.k ?? null);
}

export async function writeKeywords(tx: Tx, projectId: string, keywords: ConsentKeywords): Promise<ConsentKeywords> {
  const value = keywordsOf(keywords);
  await storeConsentKeywords(tx, projectId, value);
  return value;
}

/** The texts of an inbound message that may be a keyword: a text body, or a button's payload and text. */
export function keywordCandidates(type: string, content: Record<string, unknown>): string[] {
  const out: string[] = [];
  const text = content.text as { body?: unknown } | undefined;
  if (type === 'text' && typeof text?.body === 'string') out.push(text.body);
  const button = content.button as { payload?: unknown; text?: unknown } | undefined;
  if (type === 'button') {
    if (typeof button?.payload === 'string') out.push(button.payload);
    if (typeof button?.text === 'string') out.push(button.text);
  }
  const reply = (content.interactive as { button_reply?: { id?: unknown; title?: unknown } } | undefined)?.button_reply;
  if (type === 'interactive' && reply) {
    if (typeof reply.id === 'string') out.push(reply.id);
    if (typeof reply.title === 'string') out.push(reply.title);
  }
  return out;
}

/** A consent change a message asks for, and the project's keyword it matched (as the project spells it). */
export interface ConsentMark {
  change: 'opted_out' | 'opted_in';
  keyword: string;
}

/** What a message says about consent, if it is exactly a keyword (an opt-out keyword wins over an opt-in one). */
export function keywordMatch(keywords: ConsentKeywords, candidates: string[]): ConsentMark | undefined {
  const said = new Set(candidates.map(normalize).filter((c) => c.length > 0 && c.length <= 200));
  if (said.size === 0) return undefined;
  const out = keywords.opt_out.find((k) => said.has(normalize(k)));
  if (out !== undefined) return { change: 'opted_out', keyword: out };
  const inn = keywords.opt_in.find((k) => said.has(normalize(k)));
  if (inn !== undefined) return { change: 'opted_in', keyword: inn };
  return undefined;
}

/** What a message says about consent, if it is exactly a keyword. */
export function keywordIntent(keywords: ConsentKeywords, candidates: string[]): 'opted_out' | 'opted_in' | undefined {
  return keywordMatch(keywords, candidates)?.change;
}

/**
 * The consent mark of a stored message, judged again from its content and the project's keywords
 * now (for a message handed to the bot again after a restart, whose mark was not kept).
 */
export async function consentMarkOf(tx: Tx, projectId: string, type: string, content: Record<string, unknown>): Promise<ConsentMark | null> {
  const candidates = keywordCandidates(type, content).filter((c) => c.trim().length > 0 && c.length <= 60);
  if (candidates.length === 0) return null;
  return keywordMatch(await readKeywords(tx, projectId), candidates) ?? null;
}
