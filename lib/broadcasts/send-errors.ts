/**
 * What the engine does with a failed send, by the reasons the channel gives its error
 * (lib/channel-port/errors.ts; Meta's codes in brackets). The policy:
 * - `throttle` (throughput_exceeded, 130429): the number's rate halves, the recipient waits
 *   a second and goes again; never a failure.
 * - `pair` (recipient_rate_exceeded, 131056): that recipient backs off (6 s, doubling).
 * - `retry` (channel unavailable, 5xx, a network failure that certainly did not send): backoff,
 *   at most `MAX_ATTEMPTS` attempts, then failed `retryable`.
 * - `stop` (sending_blocked: template paused, disabled, missing or malformed, spam or account
 *   limits; credentials rejected; the service's configuration refused, configuration_refused: an
 *   ended Graph API version): the whole campaign stops as `failed` with the reason; nothing else is sent.
 * - `later` (recipient_marketing_limit, 131049): failed, gathered for retargeting about 24 h on.
 * - `permanent` (anything else: not on WhatsApp, invalid number, …): failed for this recipient.
 *
 * The Marketing Messages route (a campaign's `route: marketing_messages`) has two refusals of its
 * own, each named for the recipient (`error.reason`) and stopping the campaign, since every other
 * send would be refused alike and only the business can fix it:
 * - `marketing_terms_not_accepted`: Meta's 131055, the business portfolio has not accepted the
 *   Marketing Messages API terms (onboarding).
 * - `marketing_template_required`: the route refused the template as not MARKETING (code 100,
 *   its details naming marketing messages / MM API, as Meta recommends matching on code and
 *   details), e.g. a template Meta recategorised after the campaign was created.
 */
import type { ChannelError, ChannelErrorReason } from '../channel-port/errors.js';
import type { SendRoute } from '../channel-port/messages.js';

export type CampaignRoute = 'cloud_api' | 'marketing_messages';

/** Our names for the route's refusals (the contract's BroadcastRecipient `error.reason`). */
export type RefusalReason = 'marketing_terms_not_accepted' | 'marketing_template_required';

/** The channel route of a campaign's sends. */
export function sendRouteOf(b: { route: CampaignRoute; ttl_seconds: number | null }): SendRoute {
  return b.route === 'marketing_messages' ? { kind: 'marketing_messages', ttlSeconds: b.ttl_seconds } : { kind: 'cloud_api' };
}

const has = (e: ChannelError, reason: ChannelErrorReason) => e.reasons.includes(reason);

export function refusalReasonOf(e: ChannelError, route: CampaignRoute): RefusalReason | null {
  if (route !== 'marketing_messages') return null;
  if (has(e, 'marketing_terms_not_accepted')) return 'marketing_terms_not_accepted';
  if (has(e, 'marketing_template_required')) return 'marketing_template_required';
  return null;
}

const REFUSAL_TITLE: Record<RefusalReason, string> = {
  marketing_terms_not_accepted:
    'The business has not accepted the Marketing Messages API terms (Meta 131055): accept them in WhatsApp Manager, or send on route cloud_api',
  marketing_template_required:
    'The Marketing Messages route refused the template as not MARKETING: only MARKETING templates go through it; check the template\'s category or send on route cloud_api',
};

/** What a failed recipient records: the channel's code, a title, and our reason when the route names one. */
export function failureOf(e: ChannelError, route: CampaignRoute): { code: number | null; title: string; reason: RefusalReason | null } {
  const reason = refusalReasonOf(e, route);
  return { code: e.code ?? e.httpStatus ?? null, title: reason ? REFUSAL_TITLE[reason] : e.title ?? e.message.slice(0, 200), reason };
}

export type SendOutcome = 'throttle' | 'pair' | 'retry' | 'stop' | 'later' | 'permanent';

export const MAX_ATTEMPTS = 5;

export function outcomeOf(e: ChannelError, route: CampaignRoute = 'cloud_api'): SendOutcome {
  if (refusalReasonOf(e, route)) return 'stop';
  if (has(e, 'throughput_exceeded')) return 'throttle';
  if (has(e, 'recipient_rate_exceeded')) return 'pair';
  if (has(e, 'recipient_marketing_limit')) return 'later';
  // The service's own set-up refused (credentials, an ended Graph version): every send would be refused alike.
  if (e.kind === 'auth' || has(e, 'configuration_refused')) return 'stop';
  if (has(e, 'sending_blocked')) return 'stop';
  if (e.kind === 'throttled') return 'throttle';
  if (e.kind === 'unavailable' || e.retryable) return 'retry';
  return 'permanent';
}

export function categoryOf(outcome: SendOutcome): 'retryable' | 'later' | 'permanent' | 'campaign' {
  if (outcome === 'stop') return 'campaign';
  if (outcome === 'later') return 'later';
  if (outcome === 'permanent') return 'permanent';
  return 'retryable';
}
