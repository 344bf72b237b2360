/**
 * Trouble with the upstream WhatsApp Cloud API (Meta's Graph API, or the simulator) as the port's
 * ChannelError (lib/channel-port/errors.ts): its kind, whether to retry, and the reasons the domain
 * decides on, read from Graph's codes here and nowhere else. (What it means to our caller, in the
 * spec's envelope, is the domain's: lib/channel-port/api-errors.ts.)
 *
 * Graph errors look like `{ error: { message, type, code, error_subcode?, error_user_title?,
 * error_user_msg?, error_data?: { messaging_product, details }, is_transient?, fbtrace_id } }`.
 *
 * Nothing here ever holds a request config, a header or an axios error: an access token cannot leak
 * through a ChannelError's message, details, stack or `util.inspect`. Strings copied from the
 * provider are scrubbed of the call's token (and of anything shaped like a Meta token) as well.
 */

import { ChannelError, type ChannelErrorKind, type ChannelErrorReason, type ChannelOperation } from '../lib/channel-port/errors.js';

export { ChannelError, isChannelError } from '../lib/channel-port/errors.js';
export type { ChannelErrorKind, ChannelOperation } from '../lib/channel-port/errors.js';

// ---------------------------------------------------------------------------------------------
// Classification

/** Graph codes that mean the token/credentials are not good for this call. */
const AUTH_CODES = new Set([0, 102, 190, 10, 131005]);
const isPermissionCode = (c: number) => c >= 200 && c <= 299;
/** Graph/WhatsApp rate, spam and throughput limits. */
const THROTTLE_CODES = new Set([4, 17, 32, 613, 80007, 130429, 131048, 131056]);
/** Provider-side trouble reported inside a Graph error object. */
const UNAVAILABLE_CODES = new Set([1, 2, 131000]);

/**
 * Graph's refusals of the service's own set-up, whatever the request: 2635 "You are calling a
 * deprecated version of the Graph API" (the configured GRAPH_API_VERSION has ended) and 2500
 * "Unknown path components" (a version not released, or a path the adapter got wrong).
 */
const CONFIGURATION_CODES = new Set([2635, 2500]);

/** Template-payload rejections when sending (132xxx) or creating (subcodes 2388xxx, 2494xxx). */
const TEMPLATE_EXISTS_SUBCODES = new Set([2388024]);

/** Codes after which no further send can succeed now: template trouble, spam and account limits. */
const SENDING_BLOCKED_CODES = new Set([132000, 132001, 132005, 132007, 132012, 132015, 132016, 131048, 131031, 131042, 368, 133010]);
/** Meta's codes with one reason each (lib/channel-port/errors.ts names them). */
const CODE_REASONS = new Map<number, ChannelErrorReason>([
  [131047, 'window_closed'],
  [130429, 'throughput_exceeded'],
  [131056, 'recipient_rate_exceeded'],
  [131049, 'recipient_marketing_limit'],
  [131050, 'recipient_opted_out'],
  [131062, 'recipient_requires_phone'],
  [131055, 'marketing_terms_not_accepted'],
  // Calls: no call permission from the user (Meta's /calls description).
  [138006, 'call_permission_required'],
]);

interface Classified {
  kind: ChannelErrorKind;
  httpStatus?: number;
  operation?: ChannelOperation;
  messageType?: string;
  code?: number;
  subcode?: number;
  title?: string;
  details?: string;
}

/** What a Graph error means to the domain, as the port's reasons. */
export function reasonsOf(e: Classified): ChannelErrorReason[] {
  const out: ChannelErrorReason[] = [];
  const byCode = e.code !== undefined ? CODE_REASONS.get(e.code) : undefined;
  if (byCode) out.push(byCode);
  if (e.code !== undefined && SENDING_BLOCKED_CODES.has(e.code)) out.push('sending_blocked');
  // The Marketing Messages route refusing a template that is not MARKETING: code 100 with details
  // naming marketing messages (Meta recommends matching on code and details).
  if (e.code === 100 && /marketing|MM API/i.test(`${e.details ?? ''} ${e.title ?? ''}`)) out.push('marketing_template_required');
  // The service's configuration, not the caller's payload: never a template rejection.
  if (e.code !== undefined && CONFIGURATION_CODES.has(e.code)) return [...out, 'configuration_refused'];
  if (e.kind === 'rejected' && e.operation === 'createTemplate' && e.subcode !== undefined && TEMPLATE_EXISTS_SUBCODES.has(e.subcode)) out.push('template_exists');
  else if (isTemplatePayloadRejection(e)) out.push('template_rejected');
  return out;
}

/**
 * A 4xx rejection of a template payload: any rejection of template creation (except "already
 * exists"), and template-send rejections (132xxx codes, or a parameter error on a `type: template` send).
 */
function isTemplatePayloadRejection(e: Classified): boolean {
  if (e.kind !== 'rejected') return false;
  if (e.httpStatus === undefined || e.httpStatus < 400 || e.httpStatus >= 500) return false;
  // "Object with ID … does not exist": the channel's ids are wrong, not the template.
  if (e.code === 100 && e.subcode === 33) return false;
  if (e.operation === 'createTemplate') return true;
  if (e.operation !== 'sendMessage') return false;
  if (e.code !== undefined && e.code >= 132000 && e.code < 133000) return true;
  return e.messageType === 'template' && (e.code === 100 || e.code === 131008 || e.code === 131009);
}

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
      code,
      subcode,
      title,
      details,
      traceId: fbtraceId,
      outcomeUnknown: false,
      reasons: reasonsOf({ ...base, kind, code, subcode, title, details }),
      message: `WhatsApp Cloud API ${KIND_TEXT[kind]} (HTTP ${httpStatus}${code !== undefined ? `, code ${code}` : ''}${subcode !== undefined ? `/${subcode}` : ''})${what ? `: ${what}` : ''}`,
    });
  }

  // Not a Graph error object: an HTML error page from a proxy, garbage, a redirect, or a 2xx we cannot read.
  const fbtraceId = ctx.fbtraceHeader ? scrub(ctx.fbtraceHeader, secrets) : undefined;
  const snippet = ctx.rawText ? scrub(ctx.rawText.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' '), secrets).slice(0, 200) : undefined;
  const describe = (what: string) => `WhatsApp Cloud API ${what} (HTTP ${httpStatus})${snippet ? `: ${snippet}` : ''}`;
  if (httpStatus === 401) {
    return new ChannelError({ ...base, kind: 'auth', retryable: false, traceId: fbtraceId, details: snippet, message: describe(KIND_TEXT.auth) });
  }
  if (httpStatus === 429) {
    return new ChannelError({ ...base, kind: 'throttled', retryable: true, traceId: fbtraceId, details: snippet, message: describe(KIND_TEXT.throttled) });
  }
  const ok = httpStatus >= 200 && httpStatus < 300;
  return new ChannelError({
    ...base,
    kind: 'unavailable',
    // 5xx, 408, unreadable 2xx and garbage are worth another try; a redirect will redirect again.
    retryable: !(httpStatus >= 300 && httpStatus < 400),
    traceId: fbtraceId,
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
// The reasons as predicates (for this adapter's tests and tools)

/** Graph 131047 "Re-engagement message": the customer's 24-hour window is closed upstream. */
export const isOutsideWindowError = (e: unknown): e is ChannelError => e instanceof ChannelError && e.reasons.includes('window_closed');

/** The template name and language already exist upstream (409 `template_exists`). */
export const isTemplateExists = (e: unknown): e is ChannelError => e instanceof ChannelError && e.reasons.includes('template_exists');

/** A 4xx rejection of a template payload (400 `invalid_template` with the provider's detail). */
export const isTemplateRejection = (e: unknown): e is ChannelError => e instanceof ChannelError && e.reasons.includes('template_rejected');
