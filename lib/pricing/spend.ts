/**
 * What a project's messages cost, as the console's Billing page shows it: an estimate.
 *
 * Policy and why:
 * - Counted from the pricing the channel reported on each outbound message's statuses (stored as
 *   given, status-pricing.ts): its category and type. Only type `regular` is charged (BILLABLE_TYPE);
 *   free types count as free. A message with no pricing reported is `unreported` (not priced).
 * - Priced at the operator's rate card as it is now (rate-card.ts), by the recipient's calling code
 *   (the longest the card lists) and the message's category, as campaign-billing.ts prices a
 *   campaign. A message the card has no price for is `unpriced`. So it is an estimate: the card may
 *   differ from what Meta invoices, and it is today's card, not the one in force when sent.
 * - Days and months are UTC, by when the message was sent. A message belongs to the campaign whose
 *   recipient it was sent to (broadcast_recipients.send_ref), else to none ("not a campaign").
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import { BILLABLE_TYPE } from './status-pricing.js';
import { getRateCard, money, type RateCard } from './rate-card.js';
import { messagingLimitReport, type MessagingLimitReport } from './messaging-limit.js';
import { Params } from '../platform/db/params.js';

export interface SpendLine {
  messages: number;
  billable: number;
  free: number;
  unpriced: number;
  amount: number;
}

export interface SpendReport {
  estimate: true;
  currency: string | null;
  rateCardUpdatedAt: Date | null;
  from: Date;
  to: Date;
  total: SpendLine;
  /** Outbound messages sent in the period whose statuses carried no pricing. */
  unreported: number;
  byDay: Array<{ day: string } & SpendLine>;
  byCategory: Array<{ category: string; type: string } & SpendLine>;
  byCampaign: Array<{ broadcastId: string | null; name: string | null } & SpendLine>;
}

const UNKNOWN = 'unknown';

const empty = (): SpendLine => ({ messages: 0, billable: 0, free: 0, unpriced: 0, amount: 0 });

function add(line: SpendLine, n: number, type: string, unit: number | undefined): void {
  line.messages += n;
  if (type !== BILLABLE_TYPE) {
    line.free += n;
    return;
  }
  line.billable += n;
  if (typeof unit === 'number') line.amount += unit * n;
  else line.unpriced += n;
}

const rounded = <T extends SpendLine>(l: T): T => ({ ...l, amount: money(l.amount) });

/** Spend of the project's outbound messages sent in [from, to), by UTC day (or month), category and type, and campaign. */
export async function spendReport(db: Tx, projectId: string, from: Date, to: Date, opts: { by?: 'day' | 'month'; card?: RateCard | null } = {}): Promise<SpendReport> {
  const card = opts.card === undefined ? await getRateCard(db) : opts.card;
  const unit = opts.by === 'month' ? 'month' : 'day';
  const rows = await queryRows<{ period: string; category: string | null; type: string | null; code: string | null; broadcast_id: string | null; name: string | null; n: bigint }>(
    db,
    `SELECT to_char(date_trunc('${unit}', m.sent_at AT TIME ZONE 'UTC'), '${unit === 'day' ? 'YYYY-MM-DD' : 'YYYY-MM'}') AS period,
            m.pricing ->> 'category' AS category, m.pricing ->> 'type' AS type,
            (SELECT k FROM unnest($4::text[]) k WHERE ct.phone LIKE k || '%' ORDER BY length(k) DESC LIMIT 1) AS code,
            b.id::text AS broadcast_id, b.name, count(*)::bigint AS n
       FROM messages m
       JOIN conversations cv ON cv.id = m.conversation_id JOIN contacts ct ON ct.id = cv.contact_id
       LEFT JOIN broadcast_recipients r ON r.send_ref = m.send_ref AND m.send_ref IS NOT NULL
       LEFT JOIN broadcasts b ON b.id = r.broadcast_id AND b.project_id = m.project_id
      WHERE m.project_id = $1 AND m.direction = 'outbound' AND m.sent_at >= $2 AND m.sent_at < $3 AND m.pricing IS NOT NULL
      GROUP BY 1, 2, 3, 4, 5, 6`,
    projectId, from, to, card ? Object.keys(card.prices) : [],
  );
  const [unreported] = await queryRows<{ n: bigint }>(
    db,
    `SELECT count(*)::bigint AS n FROM messages WHERE project_id = $1 AND direction = 'outbound' AND sent_at >= $2 AND sent_at < $3
        AND pricing IS NULL AND status IN ('sent', 'delivered', 'read')`,
    projectId, from, to,
  );
  const total = empty();
  const days = new Map<string, SpendLine>();
  const categories = new Map<string, { category: string; type: string } & SpendLine>();
  const campaigns = new Map<string, { broadcastId: string | null; name: string | null } & SpendLine>();
  for (const r of rows) {
    const n = Number(r.n);
    const category = r.category ?? UNKNOWN;
    const type = r.type ?? UNKNOWN;
    const price = card && r.code !== null ? card.prices[r.code]?.[category] : undefined;
    add(total, n, type, price);
    if (!days.has(r.period)) days.set(r.period, empty());
    add(days.get(r.period)!, n, type, price);
    const ck = `${category}\n${type}`;
    if (!categories.has(ck)) categories.set(ck, { category, type, ...empty() });
    add(categories.get(ck)!, n, type, price);
    const bk = r.broadcast_id ?? '';
    if (!campaigns.has(bk)) campaigns.set(bk, { broadcastId: r.broadcast_id, name: r.name, ...empty() });
    add(campaigns.get(bk)!, n, type, price);
  }
  const byAmount = (a: SpendLine, b: SpendLine) => b.amount - a.amount || b.messages - a.messages;
  return {
    estimate: true,
    currency: card?.currency ?? null,
    rateCardUpdatedAt: card?.updatedAt ?? null,
    from,
    to,
    total: rounded(total),
    unreported: Number(unreported?.n ?? 0),
    byDay: [...days.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([day, l]) => ({ day, ...rounded(l) })),
    byCategory: [...categories.values()].sort(byAmount).map(rounded),
    byCampaign: [...campaigns.values()].sort(byAmount).map(rounded),
  };
}

/** The portfolio's messaging limit and its use in the moving 24 hours, with no campaign in view. */
export function messagingLimitNow(db: Tx, projectId: string, now: Date): Promise<MessagingLimitReport> {
  return messagingLimitReport(db, projectId, { sql: 'SELECT NULL::text AS phone, NULL::text AS contact_id WHERE false', p: new Params() }, 0, now);
}
