/**
 * The dashboard's lines for a campaign's cost and reach: the pre-flight's cost estimate (labelled an
 * estimate; "no rate card" said plainly) and the portfolio's messaging limit with how many fit now,
 * and, once sending started, what the channel's statuses reported beside the estimate (lib/pricing/).
 */
import type { BroadcastView } from '../../lib/broadcasts/store.js';
import { html, money, plural, when, type Html } from './html.js';

type Estimate = NonNullable<NonNullable<BroadcastView['preflight']>['cost_estimate']>;
type Limit = NonNullable<NonNullable<BroadcastView['preflight']>['messaging_limit']>;
type Throughput = NonNullable<NonNullable<BroadcastView['preflight']>['throughput']>;

const amount = (currency: string | null, n: number | null) => (n === null ? '—' : money(n, currency));

export function estimateText(e: Estimate | undefined | null): string {
  if (!e) return 'not computed (pre-flight from before cost estimates)';
  if (!e.available) return e.reason ?? 'no estimate';
  const parts = [`about ${amount(e.currency, e.total)} (estimate from the rate card, ${e.category})`, `${plural(e.billable_recipients, 'recipient')} charged`];
  if (e.free_recipients) parts.push(`${plural(e.free_recipients, 'recipient')} free (service window open)`);
  if (e.unpriced_recipients) parts.push(`${plural(e.unpriced_recipients, 'recipient')} not priced by the card`);
  return parts.join('; ');
}

export function limitText(l: Limit | undefined | null): string {
  if (!l) return 'not computed';
  const reached = `${plural(l.reached_24h, 'user')} reached in the last 24 hours`;
  if (l.state === 'unknown') return `unknown (the channel's limit could not be read); ${reached}`;
  if (l.unlimited) return `unlimited (${l.tier ?? ''}); ${reached}`;
  return `${plural(l.limit ?? 0, 'user')} per 24 hours (${l.tier ?? ''}); ${l.reached_24h} reached, ${l.remaining} left; ${l.fits_now} of this audience ${l.fits_now === 1 ? 'fits' : 'fit'} now`
    + (l.next_release_at ? `; more from ${when(l.next_release_at)}` : '');
}

const HOLDS: Record<Throughput['limited_by'], string> = {
  channel: "held by the number's level at Meta",
  operator: "held by the operator's cap (below Meta's level)",
  default: "held by the default: the number's level not read from Meta yet",
  throttled: "slowed down after the channel's rate error (130429), climbing back",
};

/** The number's level, the caps and which limit holds the campaign, in words. */
export function throughputText(t: Throughput | undefined | null): string {
  if (!t) return 'not computed';
  const tier = t.tier === null ? 'level not read yet' : t.tier === 'COEXISTENCE' ? 'coexistence number' : `${t.tier} at Meta`;
  const caps = [
    t.channel_messages_per_second !== null ? `Meta allows ${t.channel_messages_per_second}/s` : null,
    t.operator_messages_per_second !== null ? `operator cap ${t.operator_messages_per_second}/s` : null,
  ].filter(Boolean).join(', ');
  const rate = Math.round(t.broadcast_rate * 10) / 10;
  return `${tier}${caps ? ` (${caps})` : ''}; campaigns send up to ${rate} messages/s, ${HOLDS[t.limited_by]}`;
}

/** The rows for the pre-flight's facts list. */
export function preflightCostRows(p: BroadcastView['preflight']): Html {
  return html`<dt>Estimated cost</dt><dd id="cost-estimate">${estimateText(p?.cost_estimate)}</dd>
  <dt>Messaging limit</dt><dd id="messaging-limit">${limitText(p?.messaging_limit)}</dd>
  <dt>Throughput</dt><dd id="throughput">${throughputText(p?.throughput)}</dd>`;
}

/** The campaign's cost as reported by the statuses, beside the estimate. */
export function billingSection(b: BroadcastView): Html {
  const bill = b.billing;
  if (!bill) return html``;
  const reported = bill.reported_cost ? `${amount(bill.reported_cost.currency, bill.reported_cost.amount)}${bill.reported_cost.unpriced ? ` (+${bill.reported_cost.unpriced} not priced by the card)` : ''}` : 'no rate card to price it';
  const categories = Object.entries(bill.by_category).map(([c, types]) => `${c}: ${Object.entries(types).map(([t, n]) => `${t} ${n}`).join(', ')}`).join('; ') || 'none yet';
  return html`<h2>Cost</h2><dl class="facts">
  <dt>Estimated</dt><dd id="billing-estimate">${estimateText(bill.estimate)}</dd>
  <dt>Reported by the channel</dt><dd id="billing-reported">${bill.billable} charged, ${bill.free} free, ${bill.unreported} not reported yet; ${reported}</dd>
  <dt>By category</dt><dd>${categories}</dd>
</dl>`;
}
