/**
 * Graph API error objects: `{ error: { message, type, code, error_subcode?, error_data?, fbtrace_id } }`.
 * Known WhatsApp codes carry Meta's titles, details and HTTP statuses (from Meta's error-code table).
 */
import type { Response } from 'express';
import { fbtraceId } from './ids.js';

export interface GraphErrorBody {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    is_transient?: boolean;
    error_user_title?: string;
    error_user_msg?: string;
    error_data?: { messaging_product: 'whatsapp'; details: string };
    fbtrace_id: string;
  };
}

export class GraphError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly body: GraphErrorBody,
  ) {
    super(body.error.message);
  }
}

interface Known {
  title: string;
  details: string;
  http: number;
  /** Messages without the "(#code) " prefix (OAuth errors). */
  plain?: boolean;
  transient?: boolean;
}

/** The codes the simulator knows by name; anything else gets a generic title and HTTP 400. */
export const KNOWN_CODES: Record<number, Known> = {
  2: { title: 'Service temporarily unavailable', details: 'Service temporarily unavailable. Try again later.', http: 503, transient: true },
  4: { title: 'Application request limit reached', details: 'The app has reached its API call rate limit.', http: 400, transient: true },
  100: { title: 'Invalid parameter', details: 'Invalid parameter', http: 400 },
  190: { title: 'Invalid OAuth access token - Cannot parse access token', details: 'Invalid OAuth access token', http: 401, plain: true },
  130429: { title: 'Rate limit hit', details: 'Cloud API message throughput has been reached.', http: 429, transient: true },
  131000: { title: 'Something went wrong', details: 'Message failed to send due to an unknown error.', http: 500, transient: true },
  131008: { title: 'Required parameter is missing', details: 'A required parameter is missing.', http: 400 },
  131009: { title: 'Parameter value is not valid', details: 'One or more parameter values are invalid.', http: 400 },
  131026: { title: 'Message undeliverable', details: 'Message Undeliverable.', http: 400 },
  131047: {
    title: 'Re-engagement message',
    details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
    http: 400,
  },
  131049: {
    title: 'This message was not delivered to maintain healthy ecosystem engagement.',
    details: 'In order to maintain a healthy ecosystem engagement, the message failed to be delivered.',
    http: 400,
  },
  131050: { title: 'Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.', details: 'The user stopped marketing messages from this business.', http: 400 },
  131062: { title: 'Business-scoped user ID recipients not supported', details: 'This message type cannot be sent to a business-scoped user ID.', http: 400 },
  // Marketing Messages API for WhatsApp: the business portfolio has not accepted its terms (onboarding).
  131055: {
    title: 'Marketing Messages API terms not accepted',
    details: 'The business has not accepted the Marketing Messages API for WhatsApp terms of service. Accept them in WhatsApp Manager to send marketing messages through this endpoint.',
    http: 400,
  },
  131053: { title: 'Media upload error', details: 'Unable to process the media.', http: 400 },
  131056: {
    title: '(Business Account, Consumer Account) pair rate limit hit',
    details: 'Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.',
    http: 400,
  },
  132000: { title: 'Number of parameters does not match the expected number of params', details: 'Parameter count mismatch.', http: 400 },
  132001: { title: 'Template name does not exist in the translation', details: 'Template name does not exist in the translation.', http: 400 },
  132012: { title: 'Parameter format does not match format in the created template', details: 'Parameter format mismatch.', http: 400 },
  132015: { title: 'Template is Paused', details: 'Template is paused due to low quality so it cannot be sent in a template message.', http: 400 },
  132016: { title: 'Template is Disabled', details: 'Template has been paused too many times due to low quality and is now permanently disabled.', http: 400 },
  133010: { title: 'Phone number Not Registered', details: 'The phone number is not registered on the WhatsApp Business Platform.', http: 400 },
};

export function knownHttpStatus(code: number): number {
  return KNOWN_CODES[code]?.http ?? 400;
}

/** A WhatsApp-style error: "(#code) Title" with error_data.details. */
export function waError(code: number, details?: string, opts: { http?: number; subcode?: number; message?: string } = {}): GraphError {
  const k = KNOWN_CODES[code];
  if (code === 190) return oauthError(opts.message);
  const title = k?.title ?? 'Error';
  const body: GraphErrorBody = {
    error: {
      message: opts.message ?? (k?.plain ? title : `(#${code}) ${title}`),
      type: 'OAuthException',
      code,
      ...(opts.subcode !== undefined ? { error_subcode: opts.subcode } : {}),
      ...(k?.transient ? { is_transient: true } : {}),
      error_data: { messaging_product: 'whatsapp', details: details ?? k?.details ?? title },
      fbtrace_id: fbtraceId(),
    },
  };
  return new GraphError(opts.http ?? k?.http ?? 400, body);
}

/** A Graph (non-WhatsApp) validation error as the template endpoints answer it. */
export function userError(title: string, msg: string, opts: { subcode?: number; code?: number; http?: number } = {}): GraphError {
  return new GraphError(opts.http ?? 400, {
    error: {
      message: 'Invalid parameter',
      type: 'OAuthException',
      code: opts.code ?? 100,
      ...(opts.subcode !== undefined ? { error_subcode: opts.subcode } : {}),
      is_transient: false,
      error_user_title: title,
      error_user_msg: msg,
      fbtrace_id: fbtraceId(),
    },
  });
}

export function oauthError(message = 'Invalid OAuth access token - Cannot parse access token'): GraphError {
  return new GraphError(401, { error: { message, type: 'OAuthException', code: 190, fbtrace_id: fbtraceId() } });
}

/** What Graph answers for an id that does not exist or the token may not see (subcode 33). */
export function unsupportedRequest(method: string, id: string): GraphError {
  const verb = method.toLowerCase() === 'get' ? 'get' : method.toLowerCase() === 'delete' ? 'delete' : 'post';
  return new GraphError(400, {
    error: {
      message: `Unsupported ${verb} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
      type: 'GraphMethodException',
      code: 100,
      error_subcode: 33,
      fbtrace_id: fbtraceId(),
    },
  });
}

export function unknownPath(path: string): GraphError {
  return new GraphError(400, {
    error: { message: `Unknown path components: ${path}`, type: 'OAuthException', code: 2500, fbtrace_id: fbtraceId() },
  });
}

/** A "(#100) ..." parameter error like the messages endpoint answers for bad top-level params. */
export function paramError(message: string, details?: string): GraphError {
  return new GraphError(400, {
    error: {
      message: `(#100) ${message}`,
      type: 'OAuthException',
      code: 100,
      error_data: { messaging_product: 'whatsapp', details: details ?? message },
      fbtrace_id: fbtraceId(),
    },
  });
}

export function sendGraphError(res: Response, err: GraphError): void {
  res.status(err.httpStatus).set('x-fb-trace-id', err.body.error.fbtrace_id);
  if (err.httpStatus === 401) {
    res.set('www-authenticate', `OAuth "Facebook Platform" "invalid_token" "${err.body.error.message.replace(/"/g, "'")}"`);
  }
  res.json(err.body);
}

/** Graph error for a fault the control API injected: known defaults, overridable message/status/subcode. */
export function injectedError(g: { code: number; http_status?: number; message?: string; subcode?: number; details?: string }): GraphError {
  if (g.code === 190) {
    const e = oauthError(g.message);
    return g.http_status ? new GraphError(g.http_status, e.body) : e;
  }
  return waError(g.code, g.details, { http: g.http_status, subcode: g.subcode, message: g.message });
}
