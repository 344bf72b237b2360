/**
 * The operator's rate card: what one delivered message costs per pricing category per recipient
 * country calling code. Meta charges per message by the recipient's market (per-message pricing
 * since 1 July 2025) and publishes its rates per market; the operator copies the ones it pays (or
 * charges) here, and campaign pre-flights estimate from it (estimate.ts). One card for the service.
 *
 * Unlike statuses (stored as given), a card is checked strictly: a category we do not know would
 * never match a message, and a negative price would make an estimate lie, so both are 400.
 */
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';

/** Meta's pricing categories (its status notifications may add more; a card names these only). */
export const PRICING_CATEGORIES = ['marketing', 'utility', 'authentication', 'authentication_international', 'service', 'marketing_lite'] as const;

/** Country calling codes are 1 to 3 digits; 4 allows the NANP area codes Meta prices apart (e.g. 1876). */
const CALLING_CODE = /^[1-9][0-9]{0,3}$/;
const MAX_PRICE = 1_000_000;

export type Prices = Record<string, Record<string, number>>;

export interface RateCard {
  currency: string;
  prices: Prices;
  updatedAt: Date;
}

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

/** Checks a card as given by the operator; returns it normalised (categories lower-case). */
export function validateRateCard(input: { currency?: unknown; prices?: unknown }): { currency: string; prices: Prices } {
  const currency = input.currency;
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) throw invalid('currency', 'currency must be an ISO 4217 code such as USD.');
  const prices = input.prices;
  if (typeof prices !== 'object' || prices === null || Array.isArray(prices) || Object.keys(prices).length === 0) {
    throw invalid('prices', 'prices must map at least one calling code to prices per category.');
  }
  const out: Prices = {};
  for (const [code, perCategory] of Object.entries(prices as Record<string, unknown>)) {
    if (!CALLING_CODE.test(code)) throw invalid(`prices.${code.slice(0, 20)}`, `"${code.slice(0, 20)}" is not a country calling code (1 to 4 digits, no leading zero or +).`);
    if (typeof perCategory !== 'object' || perCategory === null || Array.isArray(perCategory) || Object.keys(perCategory).length === 0) {
      throw invalid(`prices.${code}`, `prices.${code} must map at least one pricing category to a price.`);
    }
    out[code] = {};
    for (const [category, price] of Object.entries(perCategory as Record<string, unknown>)) {
      const name = category.toLowerCase();
      if (!(PRICING_CATEGORIES as readonly string[]).includes(name)) {
        throw invalid(`prices.${code}.${category.slice(0, 40)}`, `Unknown pricing category "${category.slice(0, 40)}": one of ${PRICING_CATEGORIES.join(', ')}.`);
      }
      if (typeof price !== 'number' || !Number.isFinite(price) || price < 0 || price > MAX_PRICE) {
        throw invalid(`prices.${code}.${category}`, `The price of ${category} for +${code} must be a number from 0 to ${MAX_PRICE}.`);
      }
      out[code][name] = price;
    }
  }
  return { currency, prices: out };
}

export async function getRateCard(db: Tx): Promise<RateCard | null> {
  const rows = await queryRows<{ currency: string; prices: Prices; updated_at: Date }>(db, `SELECT currency, prices, updated_at FROM rate_cards WHERE id = 'default'`);
  return rows[0] ? { currency: rows[0].currency, prices: rows[0].prices, updatedAt: rows[0].updated_at } : null;
}

export async function setRateCard(db: Tx, card: { currency: string; prices: Prices }, now: Date): Promise<RateCard> {
  await execute(
    db,
    `INSERT INTO rate_cards (id, currency, prices, updated_at) VALUES ('default', $1, $2::jsonb, $3)
     ON CONFLICT (id) DO UPDATE SET currency = EXCLUDED.currency, prices = EXCLUDED.prices, updated_at = EXCLUDED.updated_at`,
    card.currency, JSON.stringify(card.prices), now,
  );
  return { ...card, updatedAt: now };
}

export async function deleteRateCard(db: Tx): Promise<boolean> {
  return (await execute(db, `DELETE FROM rate_cards WHERE id = 'default'`)) > 0;
}

/** The card's calling code for a number (digits): the longest code it starts with, or null. */
export function callingCodeOf(card: Pick<RateCard, 'prices'>, phone: string): string | null {
  let best: string | null = null;
  for (const code of Object.keys(card.prices)) if (phone.startsWith(code) && (!best || code.length > best.length)) best = code;
  return best;
}

/** The card's price of one message of `category` to a number with calling code `code`, or null when it has none. */
export function priceOf(card: Pick<RateCard, 'prices'>, code: string | null, category: string): number | null {
  if (code === null) return null;
  const p = card.prices[code]?.[category];
  return typeof p === 'number' ? p : null;
}

/** Money rounded for display (6 decimals: Meta's rates have up to 4, sums of many stay exact enough). */
export const money = (n: number) => Math.round(n * 1e6) / 1e6;

export function rateCardView(card: RateCard) {
  return { currency: card.currency, prices: card.prices, updated_at: card.updatedAt.toISOString() };
}
