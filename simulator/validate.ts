/** Meta-like validation of message payload sub-objects (the essentials, not every Cloud API rule). */
import { paramError, waError } from './errors.js';
import type { SimState } from './state.js';

export type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === 'string';

function invalid(details: string): never {
  throw waError(131009, details);
}
function missing(param: string): never {
  throw waError(131008, `The parameter ${param} is required.`);
}

function str(o: Obj, key: string, path: string, min: number, max: number, required = true): string | undefined {
  const v = o[key];
  if (v === undefined || v === null) {
    if (required) missing(`${path}['${key}']`);
    return undefined;
  }
  if (!isStr(v)) invalid(`Param ${path}['${key}'] must be a string.`);
  if (v.length < min || v.length > max) invalid(`Param ${path}['${key}'] must be between ${min} and ${max} characters long.`);
  return v;
}

function httpUrl(v: string, param: string): void {
  try {
    const u = new URL(v);
    if (u.protocol === 'http:' || u.protocol === 'https:') return;
  } catch {
    /* fall through */
  }
  throw paramError('Invalid parameter', `Param ${param} must be a valid URL`);
}

/** A file handle from the Resumable Upload API (`4::…`/`2:…`) is not a media id. */
export const looksLikeHandle = (id: string) => /^\d+:/.test(id);

/** `{ id }` must be a live media id of this simulator; `{ link }` an http(s) URL. Exactly one. */
export function validateMediaRef(state: SimState, o: Obj, path: string): void {
  const hasId = o.id !== undefined;
  const hasLink = o.link !== undefined;
  if (!hasId && !hasLink) throw waError(131008, `Param ${path} must have either 'id' or 'link'.`);
  if (hasId && hasLink) invalid(`Param ${path} must have only one of 'id' or 'link'.`);
  if (hasLink) {
    if (!isStr(o.link)) invalid(`Param ${path}['link'] must be a string.`);
    httpUrl(o.link, `${path}['link']`);
    return;
  }
  if (!isStr(o.id) || !o.id) invalid(`Param ${path}['id'] must be a non-empty string.`);
  if (looksLikeHandle(o.id)) {
    throw paramError('Invalid parameter', `Param ${path}['id'] is not a valid media id. Upload-session file handles are only accepted as template examples.`);
  }
  if (!state.liveMedia(o.id)) {
    throw waError(131053, `Media id ${o.id} is not valid, was deleted, or has expired (media is kept 30 days after upload). Upload the file again.`);
  }
}

const MEDIA_TYPES = new Set(['image', 'video', 'audio', 'document', 'sticker']);

export function validateMediaMessage(state: SimState, type: string, o: Obj): void {
  validateMediaRef(state, o, type);
  if (o.caption !== undefined) {
    if (type === 'audio' || type === 'sticker') invalid(`Param ${type}['caption'] is not supported for ${type} messages.`);
    str(o, 'caption', type, 0, 1024);
  }
  if (type === 'document') str(o, 'filename', type, 1, 240, false);
}

export function validateText(o: Obj): void {
  const body = o.body;
  if (body === undefined || body === null) missing("text['body']");
  if (!isStr(body)) invalid("Param text['body'] must be a string.");
  if (body.length === 0) invalid("Param text['body'] must not be empty.");
  if (body.length > 4096) throw paramError("Param text['body'] must be at most 4096 characters long.");
}

const INTERACTIVE_TYPES = ['button', 'list', 'cta_url', 'flow', 'product', 'product_list', 'catalog_message', 'location_request_message', 'address_message', 'call_permission_request'];

export function validateInteractive(state: SimState, o: Obj): void {
  const t = o.type;
  if (t === undefined) missing("interactive['type']");
  if (!isStr(t) || !INTERACTIVE_TYPES.includes(t)) invalid(`Param interactive['type'] must be one of {${INTERACTIVE_TYPES.join(', ').toUpperCase()}} - got "${String(t)}".`);
  const action = o.action;
  if (!isObj(action)) missing("interactive['action']");
  const needsBody = t === 'button' || t === 'list' || t === 'cta_url' || t === 'flow' || t === 'product_list' || t === 'location_request_message';
  if (needsBody || o.body !== undefined) {
    if (!isObj(o.body)) missing("interactive['body']");
    str(o.body, 'text', "interactive['body']", 1, t === 'button' || t === 'list' ? 1024 : 4096);
  }
  if (o.footer !== undefined) {
    if (!isObj(o.footer)) invalid("Param interactive['footer'] must be an object.");
    str(o.footer, 'text', "interactive['footer']", 1, 60);
  }
  if (o.header !== undefined) {
    const h = o.header;
    if (!isObj(h) || !isStr(h.type)) invalid("Param interactive['header']['type'] is required.");
    if (h.type === 'text') str(h, 'text', "interactive['header']", 1, 60);
    else if (MEDIA_TYPES.has(h.type) && h.type !== 'audio' && h.type !== 'sticker') {
      if (!isObj(h[h.type])) missing(`interactive['header']['${h.type}']`);
      validateMediaRef(state, h[h.type] as Obj, `interactive['header']['${h.type}']`);
    } else invalid(`Param interactive['header']['type'] must be one of {TEXT, IMAGE, VIDEO, DOCUMENT}.`);
  }
  if (t === 'button') {
    const buttons = action.buttons;
    if (!Array.isArray(buttons) || buttons.length < 1 || buttons.length > 3) invalid("Param interactive['action']['buttons'] must have between 1 and 3 items.");
    const ids = new Set<string>();
    buttons.forEach((b, i) => {
      const p = `interactive['action']['buttons'][${i}]`;
      if (!isObj(b) || b.type !== 'reply' || !isObj(b.reply)) invalid(`Param ${p} must be {type: "reply", reply: {id, title}}.`);
      const id = str(b.reply, 'id', `${p}['reply']`, 1, 256) as string;
      str(b.reply, 'title', `${p}['reply']`, 1, 20);
      if (ids.has(id)) invalid(`Duplicate button id "${id}".`);
      ids.add(id);
    });
  } else if (t === 'list') {
    str(action, 'button', "interactive['action']", 1, 20);
    const sections = action.sections;
    if (!Array.isArray(sections) || sections.length < 1 || sections.length > 10) invalid("Param interactive['action']['sections'] must have between 1 and 10 items.");
    let rows = 0;
    const ids = new Set<string>();
    sections.forEach((s, i) => {
      const p = `interactive['action']['sections'][${i}]`;
      if (!isObj(s) || !Array.isArray(s.rows) || s.rows.length === 0) invalid(`Param ${p}['rows'] must be a non-empty array.`);
      str(s, 'title', p, 1, 24, sections.length > 1);
      for (const [j, r] of (s.rows as unknown[]).entries()) {
        if (!isObj(r)) invalid(`Param ${p}['rows'][${j}] must be an object.`);
        const id = str(r, 'id', `${p}['rows'][${j}]`, 1, 200) as string;
        str(r, 'title', `${p}['rows'][${j}]`, 1, 24);
        str(r, 'description', `${p}['rows'][${j}]`, 0, 72, false);
        if (ids.has(id)) invalid(`Duplicate row id "${id}".`);
        ids.add(id);
        rows++;
      }
    });
    if (rows > 10) invalid('Total row count exceed max allowed count: 10');
  } else if (t === 'cta_url') {
    if (action.name !== 'cta_url' || !isObj(action.parameters)) invalid("Param interactive['action'] must be {name: \"cta_url\", parameters: {display_text, url}}.");
    str(action.parameters, 'display_text', "interactive['action']['parameters']", 1, 20);
    httpUrl(str(action.parameters, 'url', "interactive['action']['parameters']", 1, 2000) as string, "interactive['action']['parameters']['url']");
  }
}

export function validateOther(type: string, o: Obj): void {
  if (type === 'reaction') {
    str(o, 'message_id', 'reaction', 1, 256);
    if (!isStr(o.emoji)) missing("reaction['emoji']");
  } else if (type === 'location') {
    if (typeof o.latitude !== 'number' && !isStr(o.latitude)) missing("location['latitude']");
    if (typeof o.longitude !== 'number' && !isStr(o.longitude)) missing("location['longitude']");
  }
}

export { MEDIA_TYPES };
