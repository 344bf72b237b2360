/**
 * The operator side of a campaign: approve (now or at `scheduled_at`), cancel (also while
 * sending). Approval freezes the audience into recipient rows in the same transaction that moves
 * the campaign to `scheduled`, with the pre-flight report as it was at that moment; from then on
 * the contacts can change without changing who gets the campaign. The engine picks a scheduled
 * campaign up when it is due (engine.ts).
 */
import { ApiError } from '../platform/errors.js';
import { inTransaction } from '../platform/db/transaction.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import type { Database } from '../platform/db/database.js';
import { computePreflight, freezeAudience, audienceFilter, preflightOf, type Preflight } from './audience.js';
import { broadcastNotFound, findBroadcast, type BroadcastRow } from './store.js';
import { broadcastRate, pacingSettings } from './pacing.js';
import { phoneNumberIdOf } from './channel-number.js';
import { addChannelFacts, frozenRecipients } from './preflight-facts.js';
import { quotaOutlook } from './quota-hold.js';
import { lockCampaign, markApproved, markCanceled } from './campaigns.js';
import { cancelUnsent } from './recipients.js';

function wrongState(row: BroadcastRow, action: string): ApiError {
  return new ApiError('conflict', `Broadcast ${row.id} is ${row.status}: it cannot be ${action}.`, { status: row.status });
}

export interface ApproveInput {
  scheduledAt?: Date;
  approvedBy?: string;
}

/** `inside` runs in the same transaction once the change is made (the dashboard's audit row): its failure undoes the change. */
export type InsideTransaction = (tx: Tx, after: BroadcastRow, before: BroadcastRow) => Promise<void>;

export async function approveBroadcast(db: Pick<Database, 'pool'>, id: string, input: ApproveInput, now: Date, inside?: InsideTransaction): Promise<BroadcastRow> {
  return inTransaction(db.pool, async (client) => {
    const row = await lockCampaign(client, id);
    if (!row) throw broadcastNotFound(id);
    if (row.status !== 'pending_approval') throw wrongState(row, 'approved');
    const rate = await broadcastRate(client, await phoneNumberIdOf(client, row.project_id), pacingSettings());
    let preflight: Preflight;
    let frozen: number;
    if (row.audience.retarget_of !== undefined) {
      // A retarget follow-up was frozen when it was spawned.
      const [n] = await queryRows<{ n: bigint }>(client, 'SELECT count(*)::bigint AS n FROM broadcast_recipients WHERE broadcast_id = $1', id);
      frozen = Number(n.n);
      preflight = preflightOf(frozen, row.preflight?.excluded ?? { opted_out: 0, invalid_phone: 0, not_opted_in: 0, recent_marketing_limit: 0, missing_variable: 0, duplicate: 0 }, rate, now);
    } else {
      const filter = await audienceFilter(client, row.project_id, row.audience);
      if (!filter) throw new ApiError('conflict', `The segment of broadcast ${id} was deleted: its audience cannot be resolved.`);
      const rule = { projectId: row.project_id, filter, category: row.category, variables: row.template_variables, now };
      preflight = await computePreflight(client, rule, rate);
      frozen = await freezeAudience(client, id, rule, row.wave_size);
      preflight.excluded.duplicate = Math.max(0, preflight.eligible - frozen);
      preflight.eligible = frozen;
    }
    if (frozen === 0) throw new ApiError('empty_audience', 'The audience has no eligible recipient now: nothing would be sent.', { preflight });
    // The cost estimate and the messaging limit, of the frozen recipients (lib/pricing/).
    await addChannelFacts(client, preflight, row.project_id, row.category, frozenRecipients(id), now);
    const scheduledAt = input.scheduledAt ?? row.scheduled_at ?? now;
    // The quota as it stood at approval, frozen with the rest of the report.
    preflight.quota = await quotaOutlook(client, row.project_id, frozen, scheduledAt, now);
    const updated = await markApproved(client, id, { now, approvedBy: input.approvedBy ?? null, scheduledAt: scheduledAt < now ? now : scheduledAt, preflight });
    await inside?.(client, updated, row);
    return updated;
  });
}

/**
 * Cancels a campaign that has not finished. Recipients not yet handed to the channel become
 * `canceled`; one being sent at this instant finishes its send (the engine checks the status
 * before each batch, so at most one batch is in flight).
 */
export async function cancelBroadcast(db: Pick<Database, 'pool'>, id: string, reason: string | undefined, now: Date, inside?: InsideTransaction): Promise<BroadcastRow> {
  return inTransaction(db.pool, async (client) => {
    const row = await lockCampaign(client, id);
    if (!row) throw broadcastNotFound(id);
    if (!['pending_approval', 'scheduled', 'sending'].includes(row.status)) throw wrongState(row, 'canceled');
    await cancelUnsent(client, id, now);
    const updated = await markCanceled(client, id, reason ?? 'canceled by an operator', now);
    await inside?.(client, updated, row);
    return updated;
  });
}

export async function requireBroadcast(db: Tx, id: string): Promise<BroadcastRow> {
  const row = await findBroadcast(db, id);
  if (!row) throw broadcastNotFound(id);
  return row;
}
