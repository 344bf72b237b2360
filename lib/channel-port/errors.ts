/**
 * The port's one error: a channel operation failed. The adapter fills it from what its provider
 * answered (channel/errors.ts for the Cloud API) and names, in `reasons`, what the domain decides on
 * (a closed window, a template the provider refused, a rate limit, …), so the domain never reads a
 * provider's codes to decide. `code` is the provider's own code, kept only to be recorded and shown.
 *
 * An error never holds a request, a header or a token: the adapter scrubs what it copies.
 */

export type ChannelErrorKind = 'auth' | 'rejected' | 'throttled' | 'unavailable';

/** Which port operation failed (lets a reason depend on it: a template payload or any other). */
export type ChannelOperation =
  | 'sendMessage'
  | 'createTemplate'
  | 'listTemplates'
  | 'deleteTemplate'
  | 'uploadMedia'
  | 'getMedia'
  | 'downloadMedia'
  | 'deleteMedia'
  | 'createUploadSession'
  | 'uploadToSession'
  | 'createFlow'
  | 'uploadFlowAsset'
  | 'getFlow'
  | 'publishFlow'
  | 'deprecateFlow'
  | 'getMessagingLimit'
  | 'getThroughput'
  | 'markRead'
  | 'callAction'
  | 'threadControl'
  | 'createGroup'
  | 'createGroupInviteLink'
  | 'removeGroupParticipants'
  | 'listGroupJoinRequests'
  | 'approveGroupJoinRequests'
  | 'rejectGroupJoinRequests'
  | 'updateGroupSettings'
  | 'deleteGroup';

/**
 * What a failure means to the domain, as the adapter classifies it (one failure may have several):
 * - `window_closed`: the customer's service window is closed; only a template may be sent;
 * - `template_exists`: a template of that name and language exists at the channel;
 * - `template_rejected`: the channel refused a template payload (creating or sending one);
 * - `throughput_exceeded`: the sending number's rate was exceeded (slow the number down);
 * - `recipient_rate_exceeded`: too many messages to this one recipient (back off for it);
 * - `recipient_marketing_limit`: the recipient's marketing-message limit is reached (try a day later);
 * - `recipient_opted_out`: the recipient stopped marketing messages;
 * - `recipient_requires_phone`: this message can go only to a phone number, not a user id;
 * - `sending_blocked`: the template, the number or the account cannot send at all now (paused or
 *   disabled template, spam or account limits): every further send would be refused alike;
 * - `marketing_terms_not_accepted`: the business has not accepted the marketing route's terms;
 * - `marketing_template_required`: the marketing route takes marketing templates only;
 * - `call_permission_required`: the customer has not granted the business permission to call;
 * - `configuration_refused`: the channel refused the service's own set-up (an API version it no
 *   longer serves, a path it does not know), not anything the caller sent: no payload is at fault
 *   and no retry helps until an operator changes the configuration.
 */
export type ChannelErrorReason =
  | 'window_closed'
  | 'template_exists'
  | 'template_rejected'
  | 'throughput_exceeded'
  | 'recipient_rate_exceeded'
  | 'recipient_marketing_limit'
  | 'recipient_opted_out'
  | 'recipient_requires_phone'
  | 'sending_blocked'
  | 'marketing_terms_not_accepted'
  | 'marketing_template_required'
  | 'call_permission_required'
  | 'configuration_refused';

export interface ChannelErrorInit {
  kind: ChannelErrorKind;
  message: string;
  retryable: boolean;
  operation?: ChannelOperation;
  /** For sendMessage: the message's `type` (text, template, image, …). */
  messageType?: string;
  httpStatus?: number;
  /** The provider's error code and subcode (recorded and shown, never decided on). */
  code?: number;
  subcode?: number;
  title?: string;
  details?: string;
  /** The provider's trace id of the call, for its support. */
  traceId?: string;
  /** Transport-level code: ECONNREFUSED, ECONNRESET, ETIMEDOUT, … */
  networkCode?: string;
  outcomeUnknown?: boolean;
  reasons?: readonly ChannelErrorReason[];
}

const OPTIONAL = ['operation', 'messageType', 'httpStatus', 'code', 'subcode', 'title', 'details', 'traceId', 'networkCode'] as const;

export class ChannelError extends Error {
  readonly kind: ChannelErrorKind;
  /** Worth retrying later with backoff (5xx, timeouts, connection failures, rate limits). */
  readonly retryable: boolean;
  readonly operation?: ChannelOperation;
  readonly messageType?: string;
  readonly httpStatus?: number;
  readonly code?: number;
  readonly subcode?: number;
  readonly title?: string;
  readonly details?: string;
  readonly traceId?: string;
  readonly networkCode?: string;
  /**
   * The request may have reached the provider and taken effect although no usable answer came back
   * (timeout or reset after sending, a 2xx with an unreadable body). A retried send may duplicate.
   */
  readonly outcomeUnknown: boolean;
  readonly reasons: readonly ChannelErrorReason[];

  constructor(init: ChannelErrorInit) {
    super(init.message);
    this.name = 'ChannelError';
    this.kind = init.kind;
    this.retryable = init.retryable;
    this.outcomeUnknown = init.outcomeUnknown ?? false;
    this.reasons = init.reasons ?? [];
    // Assign only what is defined, so inspection and JSON show no noise.
    for (const k of OPTIONAL) {
      if (init[k] !== undefined) (this as Record<string, unknown>)[k] = init[k];
    }
  }

  toJSON(): Record<string, unknown> {
    const out: Record<string, unknown> = { name: this.name, kind: this.kind, message: this.message, retryable: this.retryable };
    for (const k of OPTIONAL) if (this[k] !== undefined) out[k] = this[k];
    if (this.outcomeUnknown) out.outcomeUnknown = true;
    if (this.reasons.length) out.reasons = this.reasons;
    return out;
  }
}

export const isChannelError = (e: unknown): e is ChannelError => e instanceof ChannelError;

/** The failure is a ChannelError the adapter gave this reason. */
export function hasReason(e: unknown, reason: ChannelErrorReason): e is ChannelError {
  return e instanceof ChannelError && e.reasons.includes(reason);
}
