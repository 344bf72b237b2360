/**
 * Operator CLI: the rate card campaign cost estimates use (price per pricing category per recipient
 * country calling code; lib/pricing/rate-card.ts). `set` reads the card from a JSON file:
 * `{ "currency": "USD", "prices": { "44": { "marketing": 0.0529, "utility": 0.022 } } }`.
 */
import { readFileSync } from 'node:fs';
import { UsageError } from './args.js';
import type { Command } from './command.js';
import * as f from './format.js';

function cardText(card: { currency: string; prices: Record<string, Record<string, number>>; updated_at: string }): string {
  const rows = Object.entries(card.prices)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, perCategory]) => `  +${code}: ${Object.entries(perCategory).map(([c, p]) => `${c} ${p}`).join(', ')}`);
  return [`Rate card (${card.currency}), updated ${f.when(card.updated_at)}; prices per delivered message:`, ...rows].join('\n');
}

export const RATE_CARD_COMMANDS: Command[] = [
  {
    group: 'broadcasts', name: 'rate-card', args: [],
    summary: 'Show the rate card campaign cost estimates use',
    async run(api) {
      const data = await api.getRateCard();
      return { data, human: cardText(data.rate_card) };
    },
  },
  {
    group: 'broadcasts', name: 'rate-card-set', args: ['<card.json>'],
    summary: 'Set the rate card from a JSON file { currency, prices: { "<calling code>": { "<category>": price } } }',
    async run(api, [file]) {
      let body: unknown;
      try {
        body = JSON.parse(readFileSync(file, 'utf8'));
      } catch (e) {
        throw new UsageError(`cannot read the rate card from ${file}: ${e instanceof Error ? e.message : String(e)}`);
      }
      const data = await api.setRateCard(body as never);
      return { data, human: cardText(data.rate_card) };
    },
  },
  {
    group: 'broadcasts', name: 'rate-card-delete', args: [],
    summary: 'Remove the rate card (pre-flights then say there is no estimate)',
    async run(api) {
      const data = await api.deleteRateCard();
      return { data, human: data.deleted ? 'Rate card removed.' : 'There was no rate card.' };
    },
  },
];

/** The pre-flight's cost estimate and messaging limit, one line each (broadcasts show). */
export function preflightCostLines(pf: Record<string, any> | null | undefined): Array<[string, string]> {
  const e = pf?.cost_estimate;
  const l = pf?.messaging_limit;
  const estimate = !e ? '-' : !e.available ? e.reason
    : `about ${e.total} ${e.currency} (estimate from the rate card, ${e.category}): ${e.billable_recipients} charged, ${e.free_recipients} free, ${e.unpriced_recipients} unpriced`;
  const limit = !l ? '-' : l.state === 'unknown' ? `unknown (could not be read); ${l.reached_24h} reached in 24 h`
    : l.unlimited ? `unlimited; ${l.reached_24h} reached in 24 h`
    : `${l.limit} per 24 h (${l.tier}); ${l.reached_24h} reached, ${l.remaining} left; ${l.fits_now} of this audience fit now`;
  return [['cost estimate', estimate], ['messaging limit', limit]];
}

/** What the statuses reported beside the estimate (broadcasts show, once sending started). */
export function billingLine(b: Record<string, any>): Array<[string, string]> {
  const bill = b.billing;
  if (!bill) return [];
  const cost = bill.reported_cost ? `${bill.reported_cost.amount} ${bill.reported_cost.currency}` : 'no rate card';
  const est = bill.estimate?.available ? `${bill.estimate.total} ${bill.estimate.currency}` : 'none';
  return [['cost reported', `${bill.billable} charged, ${bill.free} free, ${bill.unreported} unreported: ${cost} (estimate ${est})`]];
}
