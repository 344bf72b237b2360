/**
 * What a channel failure (./errors.ts: ChannelError) means to our caller, in the spec's
 * envelope: the channel reports, the domain decides.
 */
import { ApiError } from '../platform/errors.js';
import { isChannelError, type ChannelError, type ChannelErrorKind } from './errors.js';

/** The provider's words for a rejection, for an ApiError message. */
function providerDetail(e: ChannelError): string {
  const parts = [e.title, e.details && e.details !== e.title ? e.details : undefined].filter(Boolean);
  return parts.length ? parts.join(': ') : e.message;
}

function detailsOf(e: ChannelError): Record<string, unknown> {
  const d: Record<string, unknown> = {
    provider_code: e.code,
    provider_subcode: e.subcode,
    provider_title: e.title,
    provider_details: e.details,
    http_status: e.httpStatus,
    fbtrace_id: e.traceId,
  };
  for (const k of Object.keys(d)) if (d[k] === undefined) delete d[k];
  return d;
}

/** What an upstream failure becomes for our caller: a channel error its ApiError, anything else itself. */
export function asApiError(e: unknown): unknown {
  return isChannelError(e) ? channelApiError(e) : e;
}

/** Map onto the spec's envelope: auth → 502 `upstream_auth_error`; anything else (a refused configuration too) → 502 `upstream_error`. */
export function channelApiError(e: ChannelError): ApiError {
  const details = detailsOf(e);
  const d = Object.keys(details).length ? details : undefined;
  if (e.kind === 'auth') {
    return new ApiError(
      'upstream_auth_error',
      `The provider rejected the project's channel credentials (${providerDetail(e)}). Reconnect the WhatsApp channel or renew its access token.`,
      d,
    );
  }
  if (e.reasons.includes('configuration_refused')) {
    // The service's own set-up (its Graph API version): the caller can do nothing but tell an operator.
    return new ApiError('upstream_error', `The messaging provider refused the service's channel configuration (${providerDetail(e)}); an operator must update it.`, d);
  }
  const lead: Record<Exclude<ChannelErrorKind, 'auth'>, string> = {
    rejected: 'The messaging provider rejected the call',
    throttled: 'The messaging provider throttled the call; retry later',
    unavailable: 'The messaging provider is unavailable; retry later',
  };
  return new ApiError('upstream_error', `${lead[e.kind]}: ${e.kind === 'unavailable' && e.code === undefined ? e.message : providerDetail(e)}`, d);
}

/** For a template-payload rejection (reason `template_rejected`): 400 `invalid_template` with the provider's detail. */
export function invalidTemplateApiError(e: ChannelError): ApiError {
  return new ApiError('invalid_template', `The provider rejected the template: ${providerDetail(e)}`, detailsOf(e));
}
