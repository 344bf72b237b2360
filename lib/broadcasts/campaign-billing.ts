/**
 * What a campaign cost as the channel reported it: its messages' pricing (stored from their
 * statuses, status-pricing.ts) counted per category and type, priced at the current rate card,
 * beside the estimate the pre-flight froze at approval.
 */
import type { components } from '../../generated/api.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { BILLABLE_TYPE } from '../pricing/status-pricing.js';
import { getRateCard, money } from '../pricing/rate-card.js';
import type { CostEstimate } from '../pricing/estimate.js';

export type CampaignBilling = components['schemas']['CampaignBilling'];

/** A category or type the statuses did not give is counted under this name. */
const UNKNOWN = 'unknown';

export async function campaignBilling(db: Tx, broadcastId: string, estimate: CostEstimate | null): Promise<CampaignBilling> {
  const card = await getRateCard(db);
  const rows = await queryRows<{ category: string | null; type: string | null; code: string | null; priced: boolean; n: bigint }>(
    db,
    // The recipient's message is found by our reference of its send (as the broadcast's counts find it, store.ts).
    `SELECT m.pricing ->> 'category' AS category, m.pricing ->> 'type' AS type,
            (SELECT k FROM unnest($2::text[]) k WHERE r.phone LIKE k || '%' ORDER BY length(k) DESC LIMIT 1) AS code,
            m.pricing IS NOT NULL AS priced, count(*)::bigint AS n
     FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id
     JOIN messages m ON m.project_id = b.project_id AND m.send_ref = r.send_ref
     WHERE r.broadcast_id = $1 AND m.status IN ('sent', 'delivered', 'read', 'failed')
     GROUP BY 1, 2, 3, 4`,
    broadcastId, card ? Object.keys(card.prices) : [],
  );
  const byCategory: Record<string, Record<string, number>> = {};
  let billable = 0;
  let free = 0;
  let unreported = 0;
  let amount = 0;
  let unpriced = 0;
  for (const r of rows) {
    const n = Number(r.n);
    if (!r.priced) {
      unreported += n;
      continue;
    }
    const category = r.category ?? UNKNOWN;
    const type = r.type ?? UNKNOWN;
    const perType = (byCategory[category] ??= {});
    perType[type] = (perType[type] ?? 0) + n;
    if (type !== BILLABLE_TYPE) {
      if (type !== UNKNOWN) free += n;
      continue;
    }
    billable += n;
    const unit = card && r.code !== null ? card.prices[r.code]?.[category] : undefined;
    if (typeof unit === 'number') amount += unit * n;
    else unpriced += n;
  }
  return {
    by_category: byCategory,
    billable,
    free,
    unreported,
    reported_cost: card ? { currency: card.currency, amount: money(amount), unpriced } : null,
    estimate,
  };
}
