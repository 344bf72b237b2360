/**
 * What the engine does with a failed send, by the channel's error. The policy:
 * - `throttle` (130429, the number's throughput): the number's rate halves, the recipient waits
 *   a second and goes again; never a failure.
 * - `pair` (131056, too many messages to this user): that recipient backs off (6 s, doubling).
 * - `retry` (channel unavailable, 5xx, a network failure that certainly did not send): backoff,
 *   at most `MAX_ATTEMPTS` attempts, then failed `retryable`.
 * - `stop` (template paused, disabled, missing or malformed; credentials rejected; spam or
 *   account limits): the whole campaign stops as `failed` with the reason; nothing else is sent.
 * - `later` (131049, per-user marketing limit): failed, gathered for retargeting about 24 h on.
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
import type { ChannelError } from '../../channel/errors.js';
import type { SendRoute } from '../../channel/cloud-api.js';

export type CampaignRoute = 'cloud_api' | 'marketing_messages';

/** Our names for the route's refusals (the contract's BroadcastRecipient `error.reason`). */
export type RefusalReason = 'marketing_terms_not_accepted' | 'marketing_template_required';

/** Meta's error for a business that has not accepted the Marketing Messages API terms. */
export const MM_TERMS_NOT_ACCEPTED = 131055;

/** The channel route of a campaign's sends. */
export function sendRouteOf(b: { route: CampaignRoute; ttl_seconds: number | null }): SendRoute {
  return b.route === 'marketing_messages' ? { kind: 'marketing_messages', ttlSeconds: b.ttl_seconds } : { kind: 'cloud_api' };
}

export function refusalReasonOf(e: ChannelError, route: CampaignRoute): RefusalReason | null {
  if (route !== 'marketing_messages') return null;
  if (e.graphCode === MM_TERMS_NOT_ACCEPTED) return 'marketing_terms_not_accepted';
  if (e.graphCode === 100 && /marketing|MM API/i.test(`${e.details ?? ''} ${e.title ?? ''}`)) return 'marketing_template_required';
  return null;
}

const REFUSAL_TITLE: Record<RefusalReason, string> = {
  marketing_terms_not_accepted:
    'The business has not accepted the Marketing Messages API terms (Meta 131055): accept them in WhatsApp Manager, or send on route cloud_api',
  marketing_template_required:
    'The Marketing Messages route refused the template as not MARKETING: only MARKETING templates go through it; check the template\'s category or send on route cloud_api',
};

/** What a failed recipient records: Meta's code, a title, and our reason when the route names one. */
export function failureOf(e: ChannelError, route: CampaignRoute): { code: number | null; title: string; reason: RefusalReason | null } {
  const reason = refusalReasonOf(e, route);
  return { code: e.graphCode ?? e.httpStatus ?? null, title: reason ? REFUSAL_TITLE[reason] : e.title ?? e.message.slice(0, 200), reason };
}

export type SendOutcome = 'throttle' | 'pair' | 'retry' | 'stop' | 'later' | 'permanent';

export const MAX_ATTEMPTS = 5;

/** Codes that stop the whole campaign: template trouble, spam and account limits. */
const STOP_CODES = new Set([132000, 132001, 132005, 132007, 132012, 132015, 132016, 131048, 131031, 131042, 368, 133010]);

export function outcomeOf(e: ChannelError, route: CampaignRoute = 'cloud_api'): SendOutcome {
  if (refusalReasonOf(e, route)) return 'stop';
  const code = e.graphCode;
  if (code === 130429) return 'throttle';
  if (code === 131056) return 'pair';
  if (code === 131049) return 'later';
  if (e.kind === 'auth') return 'stop';
  if (code !== undefined && STOP_CODES.has(code)) return 'stop';
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
