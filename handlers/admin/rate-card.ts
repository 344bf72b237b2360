/** Operator API: the rate card campaign cost estimates use (lib/pricing/rate-card.ts). */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { deleteRateCard, getRateCard, rateCardView, setRateCard, validateRateCard } from '../../lib/pricing/rate-card.js';

type Ops = operations;

export const adminGetRateCard: Handler<Ops['adminGetRateCard']> = async (_req, deps) => {
  const card = await getRateCard(deps.db.sql);
  if (!card) throw new ApiError('not_found', 'No rate card is set: campaign pre-flights give no cost estimate.');
  return { data: { rate_card: rateCardView(card) } };
};

export const adminSetRateCard: Handler<Ops['adminSetRateCard']> = async (req, deps) => {
  const card = await setRateCard(deps.db.sql, validateRateCard(req.body), deps.clock.now());
  return { data: { rate_card: rateCardView(card) } };
};

export const adminDeleteRateCard: Handler<Ops['adminDeleteRateCard']> = async (_req, deps) => ({
  data: { deleted: await deleteRateCard(deps.db.sql) },
});
