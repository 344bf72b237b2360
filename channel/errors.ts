/**
 * One error type for trouble with the upstream WhatsApp Cloud API (Meta's Graph API, or the simulator),
 * its classification, and its mapping onto the service's error envelope (spec "Errors": 502
 * `upstream_auth_error` / `upstream_error`).
 *
 * Graph errors look like `{ error: { message, type, code, error_subcode?, error_user_title?,
 * error_user_msg?, error_data?: { messaging_product, details }, is_transient?, fbtrace_id } }`.
 *
 * Nothing here ever holds a request config, a header or an axios error: an access token cannot leak
 * through a ChannelError's message, details, stack or `util.inspect`. Strings copied from the
 * provider are scrubbed of the call's token (and of anything shaped like a Meta token) as well.
 */

export type ChannelErrorKind = 'auth' | 'rejected' | 'throttled' | 'unavailable';

/** Which client call failed (lets helpers tell a template payload from any other). */
export type ChannelOperation =
  | 'sendMessage'
  | 'createTemplate'
  | 'listTemplates'
  | 'deleteTemplate'
  | 'uploadMedia'
  | 'getMedia'
  | 'deleteMedia'
  | 'createUploadSession'
  | 'uploadToSession'
  // WhatsApp Flows (channel/flows.ts)
  | 'createFlow'
  | 'uploadFlowAsset'
  | 'getFlow'
  | 'publishFlow'
  | 'deprecateFlow'
  // The phone number and its portfolio's messaging limit (channel/phone-numbers.ts)
  | 'getMessagingLimit'
  | 'getThroughput'
  // Mark read with a typing indicator (channel/messages.ts)
  | 'markRead';

export interface ChannelErrorInit {
  kind: ChannelErrorKind;
  message: string;
  retryable: boolean;
  operation?: ChannelOperation;
  /** For sendMessage: the payload's `type` (text, template, image, …). */
  messageType?: string;
  httpStatus?: number;
  graphCode?: number;
  subcode?: number;
  graphType?: string;
  title?: string;
  details?: string;
  fbtraceId?: string;
  /** Transport-level code: ECONNREFUSED, ECONNRESET, ETIMEDOUT, ECONNABORTED, ENOTFOUND, EBADRESPONSE, … */
  networkCode?: string;
  outcomeUnknown?: boolean;
}

export class ChannelError extends Error {
  readonly kind: ChannelErrorKind;
  /** Worth retrying later with backoff (5xx, timeouts, connection failures, rate limits). */
  readonly retryable: boolean;
  readonly operation?: ChannelOperation;
  readonly messageType?: string;
  readonly httpStatus?: number;
  /** Graph `error.code` (e.g. 190, 131047, 130429). */
  readonly graphCode?: number;
  /** Graph `error.error_subcode` (e.g. 2388024 for a duplicate template). */
  readonly subcode?: number;
  /** Graph `error.type` (OAuthException, GraphMethodException, …). */
  readonly graphType?: string;
  /** The error's title: `error_user_title`, else the message without its "(#code) " prefix. */
  readonly title?: string;
  /** `error.error_data.details`, else `error_user_msg`. */
  readonly details?: string;
  readonly fbtraceId?: string;
  readonly networkCode?: string;
  /**
   * The request may have reached the provider and taken effect although no usable answer came back
   * (timeout or reset after sending, a 2xx with an unreadable body). A retried send may duplicate.
   */
  readonly outcomeUnknown: boolean;

  constructor(init: ChannelErrorInit) {
    super(init.message);
    this.name = 'ChannelError';
    this.kind = init.kind;
    this.retryable = init.retryable;
    this.outcomeUnknown = init.outcomeUnknown ?? false;
    // Assign only what is defined, so inspection and JSON show no noise.
    const optional = [
      'operation', 'messageType', 'httpStatus', 'graphCode', 'subcode', 'graphType', 'title', 'details', 'fbtraceId', 'networkCode',
    ] as const;
    for (const k of optional) {
      if (init[k] !== undefined) (this as Record<string, unknown>)[k] = init[k];
    }
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { name: this.name, kind: this.kind, message: this.message, retryable: this.retryable };
    for (const k of ['operation', 'messageType', 'httpStatus', 'graphCode', 'subcode', 'graphType', 'title', 'details', 'fbtraceId', 'networkCode'] as const) {
      if (this[k] !== undefined) out[k] = this[k];
    }
    if (this.outcomeUnknown) out.outcomeUnknown = true;
    return out;
  }
}

export const isChannelError = (e: unknown): e is ChannelError => e instanceof ChannelError;

// ---------------------------------------------------------------------------------------------
// Classification

/** Graph codes that mean the token/credentials are not good for this call. */
const AUTH_CODES = new Set([0, 102, 190, 10, 131005]);
const isPermissionCode = (c: number) => c >= 200 && c <= 299;
/** Graph/WhatsApp rate, spam and throughput limits. */
const THROTTLE_CODES = new Set([4, 17, 32, 613, 80007, 130429, 131048, 131056]);
/** Provider-side trouble reported inside a Graph error object. */
const UNAVAILABLE_CODES = new Set([1, 2, 131000]);

/** Template-payload rejections when sending (132xxx) or creating (subcodes 2388xxx, 2494xxx). */
const TEMPLATE_EXISTS_SUBCODES = new Set([2388024]);

export interface ErrorContext {
  operation?: ChannelOperation;
  messageType?: string;
  /** Strings to scrub from anything copied out of a response (the call's access token). */
  secrets?: readonly string[];
  /** True when the request body may have been fully sent (for outcomeUnknown). */
  requestSent?: boolean;
}

interface GraphErrorObject {
  message?: unknown;
  type?: unknown;
  code?: unknown;
  error_subcode?: unknown;
  error_user_title?: unknown;
  error_user_msg?: unknown;
  error_data?: unknown;
  is_transient?: unknown;
  fbtrace_id?: unknown;
}

const MAX_TEXT = 1000;
/** Meta access tokens start with EAA; long opaque strings after "access_token=" are tokens too. */
const TOKENISH = /\bEAA[A-Za-z0-9]{20,}\b/g;
const ACCESS_TOKEN_PARAM = /(access_token=)[^&\s"']+/gi;

/** Remove secrets and token-shaped strings, flatten control characters, bound the length. */
export function scrub(text: string, secrets: readonly string[] = []): string {
  let s = text;
  for (const secret of secrets) {
    if (secret && secret.length >= 4) s = s.split(secret).join('[redacted]');
  }
  s = s.replace(TOKENISH, '[redacted]').replace(ACCESS_TOKEN_PARAM, '$1[redacted]');
  // eslint-disable-next-line no-control-regex
  s = s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s;
}

const str = (v: unknown, secrets: readonly string[]): string | undefined =>
  typeof v === 'string' && v.trim() ? scrub(v, secrets) : undefined;
const int = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) ? n : undefined;
};

/** The Graph error object of a parsed body, if it has one. */
export function graphErrorOf(body: unknown): GraphErrorObject | null {
  if (typeof body !== 'object' || body === null) return null;
  const e = (body as { error?: unknown }).error;
  if (typeof e !== 'object' || e === null || Array.isArray(e)) return null;
  const g = e as GraphErrorObject;
  return typeof g.message === 'string' || typeof g.code === 'number' ? g : null;
}

function classifyGraph(httpStatus: number, code: number | undefined, type: string | undefined): ChannelErrorKind {
  if (code !== undefined && (AUTH_CODES.has(code) || isPermissionCode(code))) return 'auth';
  if (code !== undefined && THROTTLE_CODES.has(code)) return 'throttled';
  if (httpStatus === 401) return 'auth';
  if (httpStatus === 403 && type === 'OAuthException') return 'auth';
  if (httpStatus === 429) return 'throttled';
  if (httpStatus >= 500 || (code !== undefined && UNAVAILABLE_CODES.has(code))) return 'unavailable';
  return 'rejected';
}

const KIND_TEXT: Record<ChannelErrorKind, string> = {
  auth: 'rejected the channel credentials',
  rejected: 'rejected the request',
  throttled: 'throttled the request',
  unavailable: 'is unavailable',
};

/**
 * Build a ChannelError from an HTTP answer that is not a success. `body` is the parsed JSON (or
 * undefined when the body was not JSON); `rawText` is used only to describe non-JSON answers.
 */
export function channelErrorFromResponse(
  httpStatus: number,
  body: unknown,
  ctx: ErrorContext & { fbtraceHeader?: string; rawText?: string } = {},
): ChannelError {
  const secrets = ctx.secrets ?? [];
  const base = { operation: ctx.operation, messageType: ctx.messageType, httpStatus };
  const g = graphErrorOf(body);
  if (g) {
    const code = int(g.code);
    const subcode = int(g.error_subcode);
    const type = str(g.type, secrets);
    const message = str(g.message, secrets);
    const data = typeof g.error_data === 'object' && g.error_data !== null ? (g.error_data as { details?: unknown }) : undefined;
    const details = str(data?.details, secrets) ?? (typeof g.error_data === 'string' ? str(g.error_data, secrets) : undefined) ?? str(g.error_user_msg, secrets);
    const title = str(g.error_user_title, secrets) ?? message?.replace(/^\(#\d+\)\s*/, '');
    const fbtraceId = str(g.fbtrace_id, secrets) ?? (ctx.fbtraceHeader ? scrub(ctx.fbtraceHeader, secrets) : undefined);
    const kind = classifyGraph(httpStatus, code, type);
    const retryable = kind === 'throttled' || kind === 'unavailable' || g.is_transient === true;
    const what = [message ?? title, details && details !== message && details !== title ? details : undefined].filter(Boolean).join(': ');
    return new ChannelError({
      ...base,
      kind,
      retryable,
      graphCode: code,
      subcode,
      graphType: type,
      title,
      details,
      fbtraceId,
      outcomeUnknown: false,
      message: `WhatsApp Cloud API ${KIND_TEXT[kind]} (HTTP ${httpStatus}${code !== undefined ? `, code ${code}` : ''}${subcode !== undefined ? `/${subcode}` : ''})${what ? `: ${what}` : ''}`,
    });
  }

  // Not a Graph error object: an HTML error page from a proxy, garbage, a redirect, or a 2xx we cannot read.
  const fbtraceId = ctx.fbtraceHeader ? scrub(ctx.fbtraceHeader, secrets) : undefined;
  const snippet = ctx.rawText ? scrub(ctx.rawText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' '), secrets).slice(0, 200) : undefined;
  const describe = (what: string) => `WhatsApp Cloud API ${what} (HTTP ${httpStatus})${snippet ? `: ${snippet}` : ''}`;
  if (httpStatus === 401) {
    return new ChannelError({ ...base, kind: 'auth', retryable: false, fbtraceId, details: snippet, message: describe(KIND_TEXT.auth) });
  }
  if (httpStatus === 429) {
    return new ChannelError({ ...base, kind: 'throttled', retryable: true, fbtraceId, details: snippet, message: describe(KIND_TEXT.throttled) });
  }
  const ok = httpStatus >= 200 && httpStatus < 300;
  return new ChannelError({
    ...base,
    kind: 'unavailable',
    // 5xx, 408, unreadable 2xx and garbage are worth another try; a redirect will redirect again.
    retryable: !(httpStatus >= 300 && httpStatus < 400),
    fbtraceId,
    details: snippet,
    networkCode: 'EBADRESPONSE',
    outcomeUnknown: ok,
    message: describe(ok ? 'answered with an unreadable response' : httpStatus >= 300 && httpStatus < 400 ? 'answered with an unexpected redirect' : 'answered with an error that is not a Graph error'),
  });
}

const TIMEOUT_CODES = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);
/** Errors raised before anything reached the provider. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE']);

/**
 * Build a ChannelError from a transport failure (no HTTP answer): timeout, refused or reset
 * connection, DNS failure, response too large. Reads only `code` and `message` of `err`.
 */
export function channelErrorFromTransport(err: unknown, ctx: ErrorContext & { timedOut?: boolean; timeoutMs?: number } = {}): ChannelError {
  const secrets = ctx.secrets ?? [];
  const e = (err ?? {}) as { code?: unknown; message?: unknown; cause?: { code?: unknown } };
  let code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : undefined;
  if (ctx.timedOut) code = 'ETIMEDOUT';
  const rawMessage = typeof e.message === 'string' ? scrub(e.message, secrets) : '';
  const timedOut = code !== undefined && TIMEOUT_CODES.has(code);
  let what: string;
  if (timedOut) what = `did not answer within ${ctx.timeoutMs ?? '?'} ms`;
  else if (code === 'ECONNREFUSED') what = 'refused the connection';
  else if (code === 'ECONNRESET' || code === 'EPIPE') what = 'closed the connection';
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') what = 'could not be resolved';
  else if (code === 'ERR_FR_MAX_CONTENT_LENGTH_EXCEEDED' || /maxContentLength/i.test(rawMessage)) what = 'answered with a response over the size limit';
  else what = 'could not be reached';
  return new ChannelError({
    kind: 'unavailable',
    retryable: true,
    operation: ctx.operation,
    messageType: ctx.messageType,
    networkCode: code,
    outcomeUnknown: !(code !== undefined && NOT_SENT_CODES.has(code)) && (ctx.requestSent ?? true),
    message: `WhatsApp Cloud API ${what}${code ? ` (${code})` : ''}`,
  });
}

// ---------------------------------------------------------------------------------------------
// Helpers for the service

/** Graph 131047 "Re-engagement message": the customer's 24-hour window is closed upstream. */
export function isOutsideWindowError(e: unknown): e is ChannelError {
  return e instanceof ChannelError && e.graphCode === 131047;
}

/** The template name and language already exist upstream (map to 409 `template_exists`). */
export function isTemplateExists(e: unknown): e is ChannelError {
  return e instanceof ChannelError && e.kind === 'rejected' && e.operation === 'createTemplate' && e.subcode !== undefined && TEMPLATE_EXISTS_SUBCODES.has(e.subcode);
}

/**
 * A 4xx rejection of a template payload (map to 400 `invalid_template` with the provider's detail):
 * any rejection of template creation (except "already exists"), and template-send rejections
 * (132xxx codes, or a parameter error on a `type: template` send).
 */
export function isTemplateRejection(e: unknown): e is ChannelError {
  if (!(e instanceof ChannelError) || e.kind !== 'rejected') return false;
  if (e.httpStatus === undefined || e.httpStatus < 400 || e.httpStatus >= 500) return false;
  // "Object with ID … does not exist": the channel's ids are wrong, not the template.
  if (e.graphCode === 100 && e.subcode === 33) return false;
  if (e.operation === 'createTemplate') return !isTemplateExists(e);
  if (e.operation !== 'sendMessage') return false;
  if (e.graphCode !== undefined && e.graphCode >= 132000 && e.graphCode < 133000) return true;
  return e.messageType === 'template' && (e.graphCode === 100 || e.graphCode === 131008 || e.graphCode === 131009);
}
