/**
 * WhatsApp Flows as the Graph API answers them: POST/GET /:wabaId/flows, GET/DELETE /:flowId,
 * POST/GET /:flowId/assets, POST /:flowId/publish, POST /:flowId/deprecate.
 *
 * Like Meta, an asset upload succeeds even when the Flow JSON is invalid: the answer lists its
 * `validation_errors` (and GET /:flowId shows them); publishing a flow with validation errors, or
 * without an asset, is refused; a published flow is immutable (a new asset is refused) and can only
 * be deprecated; only a DRAFT can be deleted.
 *
 * The checks here are the simulator's own, a small subset of Meta's, written apart from the
 * service's validator (the simulator shares only the wire format with the service). Flows are
 * kept in the simulator's snapshot (persistence.ts) like templates.
 */
import busboy from 'busboy';
import { recordForm } from './request-log.js';
import type { Request, Response } from 'express';
import { baseUrl, requireAnyToken, requireToken, type SimContext } from './context.js';
import { GraphError, paramError, unsupportedRequest, waError } from './errors.js';
import { fbtraceId, numericId } from './ids.js';
import type { PhoneNumber, SimState } from './state.js';
import { isObj } from './validate.js';

export interface SimFlowError {
  error: string;
  error_type: string;
  message: string;
  line_start: number;
  line_end: number;
  column_start: number;
  column_end: number;
}

export interface SimFlow {
  id: string;
  waba_id: string;
  pnid: string;
  name: string;
  categories: string[];
  status: 'DRAFT' | 'PUBLISHED' | 'DEPRECATED';
  json: string | null;
  json_version: string | null;
  data_api_version: string | null;
  validation_errors: SimFlowError[];
  updated_at: number;
}

const CATEGORIES = ['SIGN_UP', 'SIGN_IN', 'APPOINTMENT_BOOKING', 'LEAD_GENERATION', 'SHOPPING', 'CONTACT_US', 'CUSTOMER_SUPPORT', 'SURVEY', 'OTHER'];
const VERSIONS = ['5.1', '6.0', '6.1', '6.2', '6.3', '7.0', '7.1', '7.2', '7.3'];
const MAX_JSON_BYTES = 10 * 1024 * 1024;

const forced = new WeakMap<SimState, SimFlowError[]>();

/** Validation errors the channel will report on top of its own at the next asset upload. */
function takeForcedErrors(state: SimState): SimFlowError[] {
  const e = forced.get(state) ?? [];
  forced.delete(state);
  return e;
}

/** Sets the validation errors the next asset upload reports (control API). */
export function forceUploadErrors(state: SimState, errors: SimFlowError[]): void {
  forced.set(state, errors);
}

const registry = new WeakMap<SimState, Map<string, SimFlow>>();
/** The simulator's flows (per simulator state). */
export function simFlows(state: SimState): Map<string, SimFlow> {
  let m = registry.get(state);
  if (!m) registry.set(state, (m = new Map()));
  return m;
}

/** Graph's error for a flow operation the flow's state does not allow. */
function flowError(message: string, userMsg: string, subcode: number): GraphError {
  return new GraphError(400, {
    error: {
      message: `(#139002) ${message}`,
      type: 'OAuthException',
      code: 139002,
      error_subcode: subcode,
      is_transient: false,
      error_user_title: message,
      error_user_msg: userMsg,
      fbtrace_id: fbtraceId(),
    },
  });
}

interface Form {
  fields: Record<string, string>;
  file?: Buffer;
  truncated: boolean;
}

/** A multipart form, a JSON body or a url-encoded body, read the same way. */
async function readForm(req: Request): Promise<Form> {
  const type = String(req.headers['content-type'] ?? '');
  if (type.startsWith('multipart/form-data')) {
    return new Promise((resolve, reject) => {
      let bb: busboy.Busboy;
      try {
        bb = busboy({ headers: req.headers, limits: { fileSize: MAX_JSON_BYTES + 1, files: 1, fields: 20 } });
      } catch {
        reject(paramError('Invalid parameter', 'Malformed multipart body.'));
        return;
      }
      const form: Form = { fields: {}, truncated: false };
      bb.on('field', (k, v) => (form.fields[k] = v));
      bb.on('file', (_name, stream) => {
        const parts: Buffer[] = [];
        stream.on('data', (c: Buffer) => parts.push(c));
        stream.on('limit', () => (form.truncated = true));
        stream.on('end', () => (form.file = Buffer.concat(parts)));
      });
      bb.on('close', () => resolve(form));
      bb.on('error', (e) => reject(paramError('Invalid parameter', `Malformed multipart body: ${(e as Error).message}`)));
      req.pipe(bb);
    });
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text) return { fields: {}, truncated: false };
  if (type.includes('json')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      throw paramError('Invalid parameter', 'The request body could not be parsed as JSON.');
    }
    const fields: Record<string, string> = {};
    if (isObj(v)) for (const [k, x] of Object.entries(v)) fields[k] = typeof x === 'string' ? x : JSON.stringify(x);
    return { fields, truncated: false };
  }
  return { fields: Object.fromEntries(new URLSearchParams(text)), truncated: false };
}

function wabaOf(ctx: SimContext, req: Request): PhoneNumber {
  const node = String(req.params.node);
  const pn = ctx.state.byWaba.get(node);
  if (!pn) {
    requireAnyToken(ctx.state, req);
    throw unsupportedRequest(req.method, node);
  }
  requireToken(req, pn);
  return pn;
}

/** The flow named by the path, visible to the request's token; null when the node is no flow. */
export function flowOf(ctx: SimContext, req: Request): SimFlow | null {
  const f = simFlows(ctx.state).get(String(req.params.node));
  if (!f) return null;
  const pn = ctx.state.phones.get(f.pnid);
  if (pn) requireToken(req, pn);
  return f;
}

function needFlow(ctx: SimContext, req: Request): SimFlow {
  const f = flowOf(ctx, req);
  if (!f) {
    requireAnyToken(ctx.state, req);
    throw unsupportedRequest(req.method, String(req.params.node));
  }
  return f;
}

function parseCategories(raw: string | undefined): string[] {
  if (raw === undefined) throw paramError('The parameter categories is required.');
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    list = raw.split(',').map((s) => s.trim());
  }
  if (!Array.isArray(list) || list.length === 0 || !list.every((c) => typeof c === 'string' && CATEGORIES.includes(c))) {
    throw paramError('Invalid parameter', `Param categories must be a non-empty list of ${CATEGORIES.join(', ')}.`);
  }
  return list as string[];
}

// ---------------------------------------------------------------------------------------------
// Validation of an uploaded Flow JSON (the simulator's own subset of Meta's checks)

function position(text: string, needle: string | null): Pick<SimFlowError, 'line_start' | 'line_end' | 'column_start' | 'column_end'> {
  const at = needle ? text.indexOf(needle) : -1;
  if (at < 0) return { line_start: 1, line_end: 1, column_start: 1, column_end: 1 };
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const column = at - before.lastIndexOf('\n');
  return { line_start: line, line_end: line, column_start: column, column_end: column + needle!.length - 1 };
}

export function checkFlowJson(text: string): { errors: SimFlowError[]; version: string | null; dataApi: string | null } {
  const errors: SimFlowError[] = [];
  const add = (error: string, error_type: string, message: string, needle: string | null) => errors.push({ error, error_type, message, ...position(text, needle) });
  let flow: unknown;
  try {
    flow = JSON.parse(text);
  } catch (e) {
    add('INVALID_JSON', 'JSON_SCHEMA_ERROR', `Invalid JSON: ${(e as Error).message}`, null);
    return { errors, version: null, dataApi: null };
  }
  if (!isObj(flow)) {
    add('INVALID_PROPERTY_TYPE', 'JSON_SCHEMA_ERROR', 'Expected property "$root" to be of type "object".', null);
    return { errors, version: null, dataApi: null };
  }
  const version = typeof flow.version === 'string' ? flow.version : null;
  if (version === null) add('REQUIRED_PROPERTY_MISSING', 'JSON_SCHEMA_ERROR', 'The required property "version" is missing at "$root".', null);
  else if (!VERSIONS.includes(version)) add('INVALID_PROPERTY_VALUE', 'JSON_SCHEMA_ERROR', `Invalid value found at "$root/version": "${version}" is not a supported version.`, `"${version}"`);
  const screens = flow.screens;
  if (!Array.isArray(screens) || screens.length === 0) {
    add('REQUIRED_PROPERTY_MISSING', 'JSON_SCHEMA_ERROR', 'The required property "screens" is missing or empty at "$root".', null);
  } else {
    let terminal = false;
    screens.forEach((s, i) => {
      if (!isObj(s)) return;
      if (typeof s.id !== 'string' || !/^[A-Za-z_]+$/.test(s.id) || s.id === 'SUCCESS') {
        add('INVALID_PROPERTY_VALUE', 'FLOW_JSON_ERROR', `Invalid value found at "$root/screens/${i}/id": screen ids may contain only letters and underscores and may not be "SUCCESS".`, typeof s.id === 'string' ? `"${s.id}"` : null);
      }
      if (s.terminal === true) terminal = true;
      const children = isObj(s.layout) && Array.isArray(s.layout.children) ? s.layout.children : null;
      if (!children) add('REQUIRED_PROPERTY_MISSING', 'JSON_SCHEMA_ERROR', `The required property "layout" is missing at "$root/screens/${i}".`, null);
      else if (s.terminal === true && !children.some((c) => isObj(c) && c.type === 'Footer')) {
        add('MISSING_FOOTER', 'FLOW_JSON_ERROR', `Terminal screen "${String(s.id)}" must have a Footer component.`, typeof s.id === 'string' ? `"${s.id}"` : null);
      }
    });
    if (!terminal) add('MISSING_TERMINAL_SCREEN', 'FLOW_JSON_ERROR', 'At least one screen must be terminal.', '"screens"');
  }
  return { errors, version, dataApi: typeof flow.data_api_version === 'string' ? flow.data_api_version : null };
}

// ---------------------------------------------------------------------------------------------
// Routes

function view(f: SimFlow, fields: string[], base: string) {
  const all: Record<string, unknown> = {
    id: f.id,
    name: f.name,
    status: f.status,
    categories: f.categories,
    validation_errors: f.validation_errors,
    json_version: f.json_version ?? undefined,
    data_api_version: f.data_api_version ?? undefined,
    updated_at: new Date(f.updated_at).toISOString(),
    preview: { preview_url: `${base}/_sim/flows/${f.id}/flow.json`, expires_at: new Date(f.updated_at + 30 * 86400_000).toISOString() },
    whatsapp_business_account: { id: f.waba_id },
  };
  const out: Record<string, unknown> = { id: f.id };
  for (const k of fields) if (all[k] !== undefined) out[k] = all[k];
  return out;
}

const DEFAULT_FIELDS = ['id', 'name', 'status', 'categories', 'validation_errors'];
const fieldsOf = (req: Request) => (typeof req.query.fields === 'string' && req.query.fields ? req.query.fields.split(',').map((s) => s.trim()) : DEFAULT_FIELDS);

export function createFlow(ctx: SimContext) {
  return async (req: Request, res: Response) => {
    const pn = wabaOf(ctx, req);
    const form = await readForm(req);
    if (String(req.headers['content-type'] ?? '').startsWith('multipart/')) recordForm(res, form.fields, form.file ? { bytes: form.file.length } : null);
    const name = form.fields.name;
    if (!name) throw paramError('The parameter name is required.');
    const categories = parseCategories(form.fields.categories);
    const flows = simFlows(ctx.state);
    for (const f of flows.values()) {
      if (f.waba_id === pn.waba_id && f.name === name) throw flowError('Flow name is not unique', `A flow named "${name}" already exists in this WhatsApp Business Account.`, 4016019);
    }
    const f: SimFlow = { id: numericId(15), waba_id: pn.waba_id, pnid: pn.phone_number_id, name, categories, status: 'DRAFT', json: null, json_version: null, data_api_version: null, validation_errors: [], updated_at: ctx.state.nowMs() };
    flows.set(f.id, f);
    const out: Record<string, unknown> = { id: f.id };
    if (form.fields.flow_json !== undefined) {
      applyAsset(ctx, f, Buffer.from(form.fields.flow_json, 'utf8'));
      out.success = true;
      out.validation_errors = f.validation_errors;
    }
    res.json(out);
  };
}

export function listFlows(ctx: SimContext) {
  return (req: Request, res: Response) => {
    const pn = wabaOf(ctx, req);
    const base = baseUrl(ctx, req);
    const data = [...simFlows(ctx.state).values()].filter((f) => f.waba_id === pn.waba_id).map((f) => view(f, fieldsOf(req), base));
    res.json({ data, paging: { cursors: { before: 'QVFIUmJ', after: 'QVFIUmJ' } } });
  };
}

export function getFlow(ctx: SimContext, req: Request, res: Response, f: SimFlow): void {
  res.json(view(f, fieldsOf(req), baseUrl(ctx, req)));
}

export function deleteFlow(ctx: SimContext, _req: Request, res: Response, f: SimFlow): void {
  if (f.status !== 'DRAFT') throw flowError('Flow can\'t be deleted', `Only a DRAFT flow can be deleted; this one is ${f.status}. Deprecate it instead.`, 4016013);
  simFlows(ctx.state).delete(f.id);
  res.json({ success: true });
}

function applyAsset(ctx: SimContext, f: SimFlow, bytes: Buffer): void {
  if (f.status !== 'DRAFT') throw flowError('Flow is immutable', `The flow is ${f.status}: its Flow JSON can no longer be changed. Create a new flow.`, 4016014);
  if (bytes.length > MAX_JSON_BYTES) throw paramError('Invalid parameter', `The Flow JSON is larger than ${MAX_JSON_BYTES} bytes.`);
  const text = bytes.toString('utf8');
  const r = checkFlowJson(text);
  f.json = text;
  f.json_version = r.version;
  f.data_api_version = r.dataApi;
  f.validation_errors = [...r.errors, ...takeForcedErrors(ctx.state)];
  f.updated_at = ctx.state.nowMs();
}

export function uploadAsset(ctx: SimContext) {
  return async (req: Request, res: Response) => {
    const f = needFlow(ctx, req);
    const form = await readForm(req);
    if (String(req.headers['content-type'] ?? '').startsWith('multipart/')) recordForm(res, form.fields, form.file ? { bytes: form.file.length } : null);
    if (form.truncated) throw paramError('Invalid parameter', `The Flow JSON is larger than ${MAX_JSON_BYTES} bytes.`);
    if (form.fields.asset_type !== undefined && form.fields.asset_type !== 'FLOW_JSON') throw paramError('Invalid parameter', 'Param asset_type must be FLOW_JSON.');
    if (!form.file) throw paramError('The parameter file is required.', 'Attach the Flow JSON as the multipart field "file".');
    applyAsset(ctx, f, form.file);
    res.json({ success: true, validation_errors: f.validation_errors });
  };
}

export function listAssets(ctx: SimContext) {
  return (req: Request, res: Response) => {
    const f = needFlow(ctx, req);
    const data = f.json === null ? [] : [{ name: 'flow.json', asset_type: 'FLOW_JSON', download_url: `${baseUrl(ctx, req)}/_sim/flows/${f.id}/flow.json` }];
    res.json({ data, paging: { cursors: { before: 'QVFIU', after: 'QVFIU' } } });
  };
}

export function publishFlow(ctx: SimContext) {
  return (req: Request, res: Response) => {
    const f = needFlow(ctx, req);
    if (f.status !== 'DRAFT') throw flowError('Flow can\'t be published', `Only a DRAFT flow can be published; this one is ${f.status}.`, 4016011);
    if (f.json === null) throw flowError('Flow can\'t be published', 'The flow has no Flow JSON: upload one as an asset first.', 4016012);
    if (f.validation_errors.length) {
      throw flowError('Flow can\'t be published', `The Flow JSON has ${f.validation_errors.length} validation error(s); fix them before publishing.`, 4016012);
    }
    f.status = 'PUBLISHED';
    f.updated_at = ctx.state.nowMs();
    res.json({ success: true });
  };
}

export function deprecateFlow(ctx: SimContext) {
  return (req: Request, res: Response) => {
    const f = needFlow(ctx, req);
    if (f.status !== 'PUBLISHED') throw flowError('Flow can\'t be deprecated', `Only a PUBLISHED flow can be deprecated; this one is ${f.status}.`, 4016015);
    f.status = 'DEPRECATED';
    f.updated_at = ctx.state.nowMs();
    res.json({ success: true });
  };
}

/** For the send path: a flow message must name a flow of the sender's account that can be sent. */
export function checkFlowSendable(state: SimState, pnid: string, params: Record<string, unknown>): string | null {
  const id = typeof params.flow_id === 'string' ? params.flow_id : undefined;
  const name = typeof params.flow_name === 'string' ? params.flow_name : undefined;
  const flows = [...simFlows(state).values()].filter((f) => f.pnid === pnid);
  const f = id ? flows.find((x) => x.id === id) : flows.find((x) => x.name === name);
  if (!f) return `Flow ${id ?? name ?? '(none)'} does not exist in this WhatsApp Business Account.`;
  const mode = params.mode === 'draft' ? 'draft' : 'published';
  if (mode === 'published' && f.status !== 'PUBLISHED') return `Flow ${f.id} is ${f.status}; only a PUBLISHED flow can be sent (or send with mode "draft").`;
  if (f.status === 'DEPRECATED') return `Flow ${f.id} is deprecated.`;
  return null;
}

/** An interactive `flow` send: Meta's parameters, and a flow of the sender's account that can be sent. */
export function validateFlowSend(state: SimState, pnid: string, o: Record<string, unknown>): void {
  const action = isObj(o.action) ? o.action : {};
  const p = isObj(action.parameters) ? action.parameters : null;
  if (action.name !== 'flow' || !p) throw waError(131008, "The parameter interactive['action'] must be {name: \"flow\", parameters: {...}}.");
  if (p.flow_message_version !== '3') throw waError(131009, "Param interactive['action']['parameters']['flow_message_version'] must be \"3\".");
  if (typeof p.flow_cta !== 'string' || !p.flow_cta || p.flow_cta.length > 30) throw waError(131009, "Param interactive['action']['parameters']['flow_cta'] must be 1 to 30 characters.");
  if ((p.flow_id === undefined) === (p.flow_name === undefined)) throw waError(131009, 'Give exactly one of flow_id or flow_name.');
  const why = checkFlowSendable(state, pnid, p);
  if (why) throw waError(131009, why);
}
