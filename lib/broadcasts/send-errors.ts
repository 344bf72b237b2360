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
 */
import type { ChannelError } from '../../channel/errors.js';

export type SendOutcome = 'throttle' | 'pair' | 'retry' | 'stop' | 'later' | 'permanent';

export const MAX_ATTEMPTS = 5;

/** Codes that stop the whole campaign: template trouble, spam and account limits. */
const STOP_CODES = new Set([132000, 132001, 132005, 132007, 132012, 132015, 132016, 131048, 131031, 131042, 368, 133010]);

export function outcomeOf(e: ChannelError): SendOutcome {
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
