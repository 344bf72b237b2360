/**
 * The pricing object of a status notification (per-message pricing since 1 July 2025):
 * `{ pricing_model: "PMP", category, type }`, with the deprecated `billable` while Meta still sends
 * it. Stored as given: categories and types are open sets (Meta added `authentication_international`
 * and `marketing_lite`), so an unknown value is kept, never refused. Only the four known keys are
 * kept, each a short string (or a boolean for `billable`), so a malformed object cannot grow a row.
 */
import type { components } from '../../generated/api.js';

export type StoredPricing = components['schemas']['MessagePricing'];

const MAX = 64;

function text(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v.slice(0, MAX) : null;
}

/** The pricing a status carried, or null when it carried none (e.g. `read`, `failed`). */
export function pricingOf(status: unknown): StoredPricing | null {
  const p = (status as { pricing?: unknown } | null)?.pricing;
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return null;
  const o = p as Record<string, unknown>;
  const out: StoredPricing = { category: text(o.category), type: text(o.type), pricing_model: text(o.pricing_model) };
  if (typeof o.billable === 'boolean') out.billable = o.billable;
  if (out.category === null && out.type === null && out.pricing_model === null && out.billable === undefined) return null;
  return out;
}

/** The pricing type Meta charges for; every other type (free_customer_service, free_entry_point, …) is free. */
export const BILLABLE_TYPE = 'regular';
