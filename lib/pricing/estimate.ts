/**
 * The pre-flight's cost estimate: the campaign's recipients grouped by the rate card's calling
 * code, priced at the card's price for the template's pricing category. Labelled an estimate: the
 * channel's own pricing (reported in statuses, campaign-billing.ts) is what counts.
 *
 * A UTILITY template to a customer whose 24-hour service window is open now is free at Meta (type
 * `free_customer_service`), so it is counted free; the window may have closed by the send.
 * Authentication to some markets is charged as `authentication_international` by Meta: the card
 * may price it, but the estimate cannot tell which recipients it applies to, so it uses
 * `authentication`.
 */
import type { components } from '../../generated/api.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import type { Params } from '../platform/db/params.js';
import { SERVICE_WINDOW_MS } from '../conversations/window.js';
import { getRateCard, money, type RateCard } from './rate-card.js';

export type CostEstimate = components['schemas']['CostEstimate'];

/** The pricing category a campaign's template is charged as. */
export const pricingCategoryOf = (templateCategory: string) => templateCategory.toLowerCase();

export const NO_RATE_CARD = 'No rate card is set, so there is no cost estimate: an operator sets one (PUT /admin/rate-card or `ops broadcasts rate-card-set`).';

/** The recipients' SQL: `SELECT contact_id, phone …` with its parameters in `p`. */
export interface RecipientSource {
  sql: string;
  p: Params;
}

export function unavailable(category: string, recipients: number, reason: string): CostEstimate {
  return {
    estimate: true, available: false, reason, category, currency: null, total: null,
    recipients, billable_recipients: 0, free_recipients: 0, unpriced_recipients: 0, by_calling_code: [],
  };
}

export async function estimateCost(
  db: Tx,
  projectId: string,
  templateCategory: string,
  source: RecipientSource,
  now: Date,
  card?: RateCard | null,
): Promise<CostEstimate> {
  const category = pricingCategoryOf(templateCategory);
  card = card === undefined ? await getRateCard(db) : card;
  const { p } = source;
  const codes = p.add(card ? Object.keys(card.prices) : []);
  const windowFree = category === 'utility'
    ? `EXISTS (SELECT 1 FROM conversations cv WHERE cv.project_id = ${p.add(projectId)} AND cv.contact_id = x.contact_id AND cv.last_inbound_at > ${p.add(new Date(now.getTime() - SERVICE_WINDOW_MS))})`
    : 'false';
  const rows = await queryRows<{ code: string | null; free: boolean; n: bigint }>(
    db,
    `SELECT (SELECT k FROM unnest(${codes}::text[]) k WHERE x.phone LIKE k || '%' ORDER BY length(k) DESC LIMIT 1) AS code,
            ${windowFree} AS free, count(*)::bigint AS n
     FROM (${source.sql}) x GROUP BY 1, 2`,
    ...p.values,
  );
  const recipients = rows.reduce((a, r) => a + Number(r.n), 0);
  if (!card) return unavailable(category, recipients, NO_RATE_CARD);
  const perCode = new Map<string, { recipients: number; unit: number }>();
  let free = 0;
  let unpriced = 0;
  for (const r of rows) {
    const n = Number(r.n);
    if (r.free) {
      free += n;
      continue;
    }
    const unit = r.code === null ? undefined : card.prices[r.code]?.[category];
    if (r.code === null || typeof unit !== 'number') {
      unpriced += n;
      continue;
    }
    const e = perCode.get(r.code) ?? { recipients: 0, unit };
    e.recipients += n;
    perCode.set(r.code, e);
  }
  const byCode = [...perCode.entries()]
    .map(([calling_code, e]) => ({ calling_code, recipients: e.recipients, unit_price: e.unit, amount: money(e.unit * e.recipients) }))
    .sort((a, b) => b.amount - a.amount || a.calling_code.localeCompare(b.calling_code));
  const billable = byCode.reduce((a, e) => a + e.recipients, 0);
  return {
    estimate: true,
    available: true,
    reason: unpriced > 0 ? `${unpriced} recipient(s) have a calling code or category the rate card does not price: not in the total.` : null,
    category,
    currency: card.currency,
    total: money(byCode.reduce((a, e) => a + e.amount, 0)),
    recipients,
    billable_recipients: billable,
    free_recipients: free,
    unpriced_recipients: unpriced,
    by_calling_code: byCode,
  };
}
