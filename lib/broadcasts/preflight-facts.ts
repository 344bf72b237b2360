/**
 * The channel's facts a pre-flight adds to its audience counts: the cost estimate from the rate
 * card (estimate.ts) and the portfolio's messaging limit with how many recipients fit now
 * (messaging-limit.ts). Live recipients before approval (the eligible contacts), the frozen
 * recipient rows at approval.
 */
import type { AudienceRule, Preflight } from './audience.js';
import type { Tx } from '../platform/db/tx.js';
import { eligibleContactsSql } from './audience.js';
import { Params } from './filter.js';
import { estimateCost, type RecipientSource } from '../pricing/estimate.js';
import { messagingLimitReport } from '../pricing/messaging-limit.js';
import { pacingReport, pacingSettings } from './pacing.js';
import { phoneNumberIdOf } from './channel-number.js';

export type PreflightWithFacts = Preflight & {
  cost_estimate?: Awaited<ReturnType<typeof estimateCost>>;
  messaging_limit?: Awaited<ReturnType<typeof messagingLimitReport>>;
  throughput?: Awaited<ReturnType<typeof pacingReport>>;
};

export const liveRecipients = (rule: AudienceRule) => (): RecipientSource => {
  const p = new Params();
  return { sql: eligibleContactsSql(rule, p), p };
};

export const frozenRecipients = (broadcastId: string) => (): RecipientSource => {
  const p = new Params();
  return { sql: `SELECT r.contact_id, r.phone FROM broadcast_recipients r WHERE r.broadcast_id = ${p.add(broadcastId)}`, p };
};

/** Adds `cost_estimate`, `messaging_limit` and `throughput` (the number's level and what holds the pace) to the pre-flight (in place) and returns it. */
export async function addChannelFacts<T extends Preflight>(
  db: Tx,
  preflight: T,
  projectId: string,
  templateCategory: string,
  recipients: () => RecipientSource,
  now: Date,
): Promise<T & PreflightWithFacts> {
  const out = preflight as T & PreflightWithFacts;
  out.cost_estimate = await estimateCost(db, projectId, templateCategory, recipients(), now);
  out.messaging_limit = await messagingLimitReport(db, projectId, recipients(), preflight.eligible, now);
  out.throughput = await pacingReport(db, await phoneNumberIdOf(db, projectId), pacingSettings());
  return out;
}
