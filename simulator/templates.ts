/** Message templates: POST/GET/DELETE /:version/:wabaId/message_templates, GET /:version/:templateId. */
import type { Request, Response } from 'express';
import { checkTemplateCreateBody } from './meta-check.js';
import { requireAnyToken, requireToken, type SimContext } from './context.js';
import { paramError, unsupportedRequest, userError } from './errors.js';
import { numericId } from './ids.js';
import { placeholders } from './messages.js';
import type { PhoneNumber, SimState, Template } from './state.js';
import { isObj, type Obj } from './validate.js';
import { checkTemplateKinds, NEW_COMPONENT_TYPES } from './template-kinds.js';

const CATEGORIES = ['MARKETING', 'UTILITY', 'AUTHENTICATION'];
const HANDLE_MIME: Record<string, string[]> = {
  IMAGE: ['image/jpeg', 'image/jpg', 'image/png'],
  VIDEO: ['video/mp4'],
  DOCUMENT: ['application/pdf'],
};

function wabaOf(state: SimState, req: Request): PhoneNumber {
  const node = String(req.params.node);
  const pn = state.byWaba.get(node);
  if (!pn) {
    requireAnyToken(state, req);
    throw unsupportedRequest(req.method, node);
  }
  requireToken(req, pn);
  return pn;
}

const bad = (title: string, msg: string) => userError(title, msg);

/** Validates components; returns the resumable-upload handles the media header uses (not yet consumed). */
function validateComponents(state: SimState, pn: PhoneNumber, category: string, components: unknown): string[] {
  if (!Array.isArray(components) || components.length === 0) throw paramError('The parameter components is required.');
  const seen = new Set<string>();
  const handles: string[] = [];
  if (components.some((c) => !isObj(c) || typeof c.type !== 'string')) throw bad('Invalid component', 'Every component needs a type (HEADER, BODY, FOOTER or BUTTONS).');
  // The newer kinds (template-kinds.ts); each card's header is checked below like a header.
  const cardHeaders = checkTemplateKinds(category, components as Obj[]);
  for (const c of [...components, ...cardHeaders]) {
    if (!isObj(c) || typeof c.type !== 'string') throw bad('Invalid component', 'Every component needs a type (HEADER, BODY, FOOTER or BUTTONS).');
    const type = c.type.toUpperCase();
    if (NEW_COMPONENT_TYPES.includes(type)) continue;
    if (!['HEADER', 'BODY', 'FOOTER', 'BUTTONS'].includes(type)) throw bad('Invalid component', `Unknown component type ${c.type}.`);
    if (cardHeaders.includes(c)) seen.delete('HEADER');
    if (seen.has(type)) throw bad('Invalid component', `Only one ${type} component is allowed.`);
    seen.add(type);
    const example = isObj(c.example) ? c.example : {};
    if (type === 'BODY') {
      // An authentication template's body is Meta's own text ("<code> is your verification code."),
      // with an optional security recommendation: the caller may give no text (Meta's examples give none).
      if (category === 'AUTHENTICATION' && c.add_security_recommendation !== undefined && typeof c.add_security_recommendation !== 'boolean') {
        throw bad('Invalid body', 'add_security_recommendation must be true or false.');
      }
      if (category === 'AUTHENTICATION' && c.text === undefined) continue;
      if (typeof c.text !== 'string' || !c.text) throw bad('Body text is required', 'The BODY component needs a non-empty text.');
      if (c.text.length > 1024) throw bad('Body text too long', 'The BODY text can have at most 1024 characters.');
      const n = placeholders(c.text);
      const ex = example.body_text;
      if (n > 0 && !(Array.isArray(ex) && Array.isArray(ex[0]) && ex[0].length === n) && !Array.isArray(example.body_text_named_params)) {
        throw bad('Missing sample values', `The BODY has ${n} variable(s): give example.body_text as [[${Array.from({ length: n }, (_, i) => `"sample ${i + 1}"`).join(', ')}]].`);
      }
    } else if (type === 'HEADER') {
      const format = typeof c.format === 'string' ? c.format.toUpperCase() : 'TEXT';
      if (format === 'TEXT') {
        if (typeof c.text !== 'string' || !c.text || c.text.length > 60) throw bad('Invalid header', 'A TEXT header needs a text of 1 to 60 characters.');
        if (placeholders(c.text) > 1) throw bad('Invalid header', 'A TEXT header can have at most one variable.');
      } else if (HANDLE_MIME[format]) {
        const hh = example.header_handle;
        const h = Array.isArray(hh) ? hh[0] : undefined;
        if (typeof h !== 'string' || !h) {
          throw bad('Missing sample media', `A ${format} header needs example.header_handle: a file handle from the Resumable Upload API.`);
        }
        const issued = state.handles.get(h);
        if (!issued || issued.used || issued.expiresMs <= state.nowMs() || issued.pnid !== pn.phone_number_id) {
          throw userError(
            'Uploaded media handle is invalid',
            'The uploaded media handle is invalid (unknown, already used, expired, or a media id). Upload the file again with the Resumable Upload API (POST /<APP_ID>/uploads) and use the new handle.',
            { subcode: 2494102 },
          );
        }
        if (!HANDLE_MIME[format].includes(issued.mime)) {
          throw bad('Invalid sample media', `A ${format} header needs a sample of type ${HANDLE_MIME[format].join(', ')}; the handle is ${issued.mime}.`);
        }
        handles.push(h);
      } else if (format !== 'LOCATION') {
        throw bad('Invalid header', `Header format must be TEXT, IMAGE, VIDEO, DOCUMENT or LOCATION, got ${String(c.format)}.`);
      }
    } else if (type === 'FOOTER') {
      if (category === 'AUTHENTICATION' && c.code_expiration_minutes !== undefined) {
        // Meta writes the footer of an authentication template from the code's expiry (1 to 90 minutes).
        const m = c.code_expiration_minutes;
        if (typeof m !== 'number' || !Number.isInteger(m) || m < 1 || m > 90) throw bad('Invalid footer', 'code_expiration_minutes must be an integer from 1 to 90.');
        if (c.text === undefined) continue;
      }
      if (typeof c.text !== 'string' || !c.text || c.text.length > 60) throw bad('Invalid footer', 'The FOOTER needs a text of 1 to 60 characters.');
    } else if (type === 'BUTTONS') {
      const bs = c.buttons;
      if (!Array.isArray(bs) || bs.length < 1 || bs.length > 10) throw bad('Invalid buttons', 'BUTTONS needs between 1 and 10 buttons.');
      for (const b of bs) {
        if (!isObj(b) || typeof b.type !== 'string') throw bad('Invalid buttons', 'Every button needs a type.');
        if (b.text !== undefined && (typeof b.text !== 'string' || b.text.length > 25)) throw bad('Invalid buttons', 'Button text can have at most 25 characters.');
        checkOtpButton(category, b);
      }
      if (category === 'AUTHENTICATION' && (bs.length !== 1 || !isObj(bs[0]) || String(bs[0].type).toUpperCase() !== 'OTP')) {
        throw bad('Invalid buttons', 'An authentication template has one OTP button.');
      }
    }
  }
  if (!seen.has('BODY') && category !== 'AUTHENTICATION') throw bad('Body is required', 'A template needs a BODY component.');
  return handles;
}

const OTP_TYPES = ['COPY_CODE', 'ONE_TAP', 'ZERO_TAP'];
const ANDROID_PACKAGE = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/**
 * An OTP button as Meta's "Authentication templates" guide documents it: in AUTHENTICATION only;
 * `otp_type` COPY_CODE, ONE_TAP or ZERO_TAP; a one-tap or zero-tap button names the Android app
 * (`package_name` and `signature_hash`, or `supported_apps`, checked in template-kinds.ts); a
 * zero-tap one needs `zero_tap_terms_accepted: true`; `autofill_text` up to 25 characters.
 */
function checkOtpButton(category: string, b: Obj): void {
  if (String(b.type).toUpperCase() !== 'OTP') return;
  if (category !== 'AUTHENTICATION') throw bad('Invalid buttons', 'OTP buttons are for AUTHENTICATION templates.');
  const otp = typeof b.otp_type === 'string' ? b.otp_type.toUpperCase() : '';
  if (!OTP_TYPES.includes(otp)) throw bad('Invalid buttons', `otp_type must be one of ${OTP_TYPES.join(', ')}.`);
  if (b.autofill_text !== undefined && (typeof b.autofill_text !== 'string' || !b.autofill_text || b.autofill_text.length > 25)) {
    throw bad('Invalid buttons', 'autofill_text has 1 to 25 characters.');
  }
  if (otp === 'COPY_CODE') return;
  // The signature hash is taken as given: Meta's own example percent-encodes it (K8a%2FAINcGX7).
  const named = typeof b.package_name === 'string' && ANDROID_PACKAGE.test(b.package_name) && typeof b.signature_hash === 'string' && b.signature_hash.length > 0;
  if (!named && b.supported_apps === undefined) throw bad('Invalid buttons', `A ${otp} button needs package_name and signature_hash, or supported_apps.`);
  if (otp === 'ZERO_TAP' && b.zero_tap_terms_accepted !== true) throw bad('Invalid buttons', 'A ZERO_TAP button needs zero_tap_terms_accepted: true.');
}

export function createTemplate(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const { state } = ctx;
    const pn = wabaOf(state, req);
    const b: Obj = isObj(req.body) ? req.body : {};
    // Meta's published schema of this call first (simulator/meta/): its types, as code 100.
    const refused = checkTemplateCreateBody(b);
    if (refused) throw refused;
    const name = b.name;
    if (name === undefined) throw paramError('The parameter name is required.');
    if (typeof name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(name)) {
      throw bad('Invalid template name', 'Template names can only contain lowercase letters, numbers and underscores (at most 512 characters).');
    }
    const language = b.language;
    if (language === undefined) throw paramError('The parameter language is required.');
    if (typeof language !== 'string' || !/^[a-z]{2,3}(_[A-Z]{2,3})?$/.test(language)) {
      throw bad('Invalid language', `"${String(language)}" is not a supported language code (e.g. en_US, pt_BR, es).`);
    }
    if (b.category === undefined) throw paramError('The parameter category is required.');
    const category = typeof b.category === 'string' ? b.category.toUpperCase() : '';
    if (!CATEGORIES.includes(category)) throw paramError(`Param category must be one of {${CATEGORIES.join(', ')}} - got "${String(b.category)}".`);
    const handles = validateComponents(state, pn, category, b.components);
    for (const t of state.templates.values()) {
      if (t.waba_id === pn.waba_id && t.name === name && t.language === language) {
        throw userError(
          'Message template already exists',
          `There is already ${language} content for this template. You can create a new template and try again.`,
          { subcode: 2388024 },
        );
      }
    }
    for (const h of handles) state.handles.get(h)!.used = true;
    const t: Template = {
      id: numericId(15),
      waba_id: pn.waba_id,
      name,
      language,
      category,
      components: b.components as Record<string, unknown>[],
      status: 'PENDING',
      rejected_reason: 'NONE',
      parameter_format: typeof b.parameter_format === 'string' ? b.parameter_format.toUpperCase() : 'POSITIONAL',
      created_at: state.clock.now().toISOString(),
      timer: null,
    };
    state.templates.set(t.id, t);
    if (ctx.templateAutoDecisionMs !== null) {
      t.timer = setTimeout(() => {
        t.timer = null;
        if (t.status === 'PENDING' && state.templates.get(t.id) === t) void ctx.decideTemplate(t, 'APPROVED');
      }, ctx.templateAutoDecisionMs);
      t.timer.unref?.();
    }
    res.json({ id: t.id, status: t.status, category: t.category });
  };
}

const DEFAULT_FIELDS = ['name', 'parameter_format', 'components', 'language', 'status', 'category', 'id'];

export function templateView(t: Template, fields?: string[]): Record<string, unknown> {
  const all: Record<string, unknown> = {
    name: t.name,
    parameter_format: t.parameter_format,
    components: t.components,
    language: t.language,
    status: t.status,
    category: t.category,
    id: t.id,
    rejected_reason: t.rejected_reason,
    quality_score: { score: 'UNKNOWN', date: Math.floor(Date.parse(t.created_at) / 1000) },
  };
  const pick = fields && fields.length ? [...new Set([...fields, 'id'])] : DEFAULT_FIELDS;
  return Object.fromEntries(pick.filter((f) => f in all).map((f) => [f, all[f]]));
}

const cursor = (id: string) => Buffer.from(id).toString('base64url');
const fromCursor = (c: unknown) => (typeof c === 'string' ? Buffer.from(c, 'base64url').toString() : null);

export function listTemplates(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const pn = wabaOf(ctx.state, req);
    const q = req.query;
    const name = typeof q.name === 'string' ? q.name.toLowerCase() : null;
    const fields = typeof q.fields === 'string' ? q.fields.split(',').map((f) => f.trim()).filter(Boolean) : undefined;
    const limit = Math.min(Math.max(Number(q.limit) || 25, 1), 1000);
    const all = [...ctx.state.templates.values()].filter(
      (t) =>
        t.waba_id === pn.waba_id &&
        (name === null || t.name.includes(name)) &&
        (typeof q.status !== 'string' || t.status === q.status.toUpperCase()) &&
        (typeof q.category !== 'string' || t.category === q.category.toUpperCase()) &&
        (typeof q.language !== 'string' || t.language === q.language),
    );
    const after = fromCursor(q.after);
    const before = fromCursor(q.before);
    let start = 0;
    if (after) start = all.findIndex((t) => t.id === after) + 1;
    else if (before) start = Math.max(0, all.findIndex((t) => t.id === before) - limit);
    const page = all.slice(start, start + limit);
    const body: Record<string, unknown> = { data: page.map((t) => templateView(t, fields)) };
    if (page.length) {
      const paging: Record<string, unknown> = { cursors: { before: cursor(page[0].id), after: cursor(page[page.length - 1].id) } };
      if (start + limit < all.length) {
        const u = new URL(`http://x${req.originalUrl}`);
        u.searchParams.delete('before');
        u.searchParams.set('after', cursor(page[page.length - 1].id));
        paging.next = `${req.protocol}://${req.get('host')}${u.pathname}${u.search}`;
      }
      body.paging = paging;
    }
    res.json(body);
  };
}

export function deleteTemplates(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const { state } = ctx;
    const pn = wabaOf(state, req);
    const name = req.query.name;
    const hsmId = req.query.hsm_id;
    if (typeof name !== 'string' || !name) throw paramError('The parameter name is required.');
    const victims = [...state.templates.values()].filter(
      (t) => t.waba_id === pn.waba_id && t.name === name && (typeof hsmId !== 'string' || t.id === hsmId),
    );
    if (victims.length === 0) throw userError('Message template not found', `No message template named "${name}"${typeof hsmId === 'string' ? ` with id ${hsmId}` : ''} was found.`);
    for (const t of victims) {
      if (t.timer) clearTimeout(t.timer);
      state.templates.delete(t.id);
    }
    res.json({ success: true });
  };
}

/** GET /:version/:templateId (dispatched from the node router). */
export function getTemplate(req: Request, res: Response, state: SimState, t: Template): void {
  const pn = state.byWaba.get(t.waba_id);
  if (!pn) throw unsupportedRequest('get', t.id);
  requireToken(req, pn);
  const fields = typeof req.query.fields === 'string' ? req.query.fields.split(',').map((f) => f.trim()) : undefined;
  res.json(templateView(t, fields));
}
