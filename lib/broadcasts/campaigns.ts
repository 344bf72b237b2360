/**
 * The only writer of `broadcasts`: a campaign's life as statements (created, approved, leased by
 * an engine, sending, parked, completed, failed, canceled, retargeted). Its recipients' rows are
 * recipients.ts's; where both change for one decision, the caller runs the two in order (the
 * campaign's status first, so no engine takes up rows of a campaign that has stopped).
 * Leases are read on the engine's wall clock (`t`), business times on the business clock.
 */
import { execute, queryRows, queryRowsNamed, type Tx } from '../platform/db/tx.js';
import type { BroadcastRow } from './store.js';
import { QUOTA_HOLD_PREFIX } from './quota-hold.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

export interface NewCampaign {
  id: string;
  projectId: string;
  name: string;
  templateName: string;
  templateLanguage: string;
  category: string;
  audience: unknown;
  variables: unknown;
  scheduledAt: Date | null;
  creator: { id: string | null; name: string | null };
  waveSize: number | null;
  waveIntervalS: number | null;
  waveScheduledCount: number | null;
  autoRetargetQuality: boolean;
  preflight: unknown;
  route: string;
  ttlSeconds: number | null;
}

export async function insertCampaign(db: Tx, c: NewCampaign, now: Date): Promise<BroadcastRow> {
  const rows = await queryRows<BroadcastRow>(
    db,
    `INSERT INTO broadcasts (id, project_id, name, template_name, template_language, category, audience, template_variables, status,
                             scheduled_at, created_by, creator_name, creator_email, wave_size, wave_interval_s, wave_scheduled_count,
                             auto_retarget_quality, preflight, created_at, updated_at, route, ttl_seconds)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending_approval', $9, $10, $11, NULL, $12, $13, $14, $15, $16, $17, $17, $18, $19)
     RETURNING *`,
    c.id, c.projectId, c.name, c.templateName, c.templateLanguage, c.category, JSON.stringify(c.audience), JSON.stringify(c.variables),
    c.scheduledAt, c.creator.id, c.creator.name, c.waveSize, c.waveIntervalS, c.waveScheduledCount, c.autoRetargetQuality,
    JSON.stringify(c.preflight), now, c.route, c.ttlSeconds,
  );
  return rows[0];
}

/** The campaign locked for a decision (approval, cancel) in the caller's transaction. */
export async function lockCampaign(tx: Tx, id: string): Promise<BroadcastRow | undefined> {
  return (await queryRows<BroadcastRow>(tx, 'SELECT * FROM broadcasts WHERE id = $1 FOR UPDATE', id))[0];
}

export async function markApproved(tx: Tx, id: string, a: { now: Date; approvedBy: string | null; scheduledAt: Date; preflight: unknown }): Promise<BroadcastRow> {
  const rows = await queryRows<BroadcastRow>(
    tx,
    `UPDATE broadcasts SET status = 'scheduled', approved_at = $2, approved_by = $3, scheduled_at = $4, preflight = $5, updated_at = $2
     WHERE id = $1 RETURNING *`,
    id, a.now, a.approvedBy, a.scheduledAt, JSON.stringify(a.preflight),
  );
  return rows[0];
}

export async function markCanceled(tx: Tx, id: string, reason: string, now: Date): Promise<BroadcastRow> {
  const rows = await queryRows<BroadcastRow>(
    tx,
    `UPDATE broadcasts SET status = 'canceled', status_reason = $3, completed_at = $2, wave_scheduled_at = NULL, retarget_due_at = NULL, updated_at = $2
     WHERE id = $1 RETURNING *`,
    id, now, reason,
  );
  return rows[0];
}

/**
 * Takes the lease of up to 20 due campaigns (scheduled and due; sending with a wave due, a reason
 * to look again, or recipients to send) whose lease ran out or is already ours.
 */
export async function leaseDueCampaigns(db: Tx, owner: string, now: Date, t: Date, leaseUntil: Date): Promise<string[]> {
  const rows = await queryRowsNamed<{ id: string }>(
    db,
    'broadcast-lease',
    `UPDATE broadcasts b SET lease_owner = $1, lease_until = $3
           WHERE b.id IN (
             SELECT id FROM broadcasts x
             WHERE ((x.status = 'scheduled' AND x.scheduled_at <= $2)
                    OR (x.status = 'sending' AND (x.wave_scheduled_at IS NULL OR x.wave_scheduled_at <= $2
                        OR x.status_reason IS NOT NULL
                        OR EXISTS (SELECT 1 FROM broadcast_recipients r WHERE r.broadcast_id = x.id AND r.state IN ('queued', 'sending')))))
               AND (x.lease_until IS NULL OR x.lease_until < $4 OR x.lease_owner = $1)
             ORDER BY x.scheduled_at NULLS FIRST LIMIT 20 ${CLAIM_ROWS})
           RETURNING b.id`,
    owner, now, leaseUntil, t,
  );
  return rows.map((r) => r.id);
}

/** Renews this engine's lease; answers the campaign, or nothing when it is no longer ours or no longer running. */
export async function renewLease(db: Tx, id: string, owner: string, leaseUntil: Date): Promise<BroadcastRow | undefined> {
  const rows = await queryRows<BroadcastRow>(
    db,
    `UPDATE broadcasts SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND status IN ('scheduled', 'sending') RETURNING *`,
    id, owner, leaseUntil,
  );
  return rows[0];
}

export async function releaseLease(db: Tx, id: string, owner: string): Promise<void> {
  await execute(db, 'UPDATE broadcasts SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2', id, owner);
}

/**
 * Parks a campaign: no owner, and a lease that runs until `until` (the tick takes it up again
 * then). `owner` given: only while it is still ours.
 */
export async function parkCampaign(db: Tx, id: string, until: Date, p: { reason?: string; owner?: string } = {}): Promise<void> {
  await execute(
    db,
    `UPDATE broadcasts SET lease_owner = NULL, lease_until = $2, status_reason = CASE WHEN $3::boolean THEN $4 ELSE status_reason END
     WHERE id = $1 AND ($5::text IS NULL OR lease_owner = $5)`,
    id, until, p.reason !== undefined, p.reason ?? null, p.owner ?? null,
  );
}

/** The reason a sending campaign gives (null clears it). */
export async function setStatusReason(db: Tx, id: string, reason: string | null): Promise<void> {
  await execute(db, `UPDATE broadcasts SET status_reason = $2 WHERE id = $1 AND status = 'sending'`, id, reason);
}

/** scheduled → sending; with waves, the next wave is scheduled when some recipients are held. */
export async function startSending(db: Tx, id: string, now: Date): Promise<BroadcastRow | undefined> {
  const rows = await queryRows<BroadcastRow>(
    db,
    `UPDATE broadcasts SET status = 'sending', started_at = COALESCE(started_at, $2), updated_at = $2,
            wave_scheduled_at = CASE WHEN wave_size IS NOT NULL AND EXISTS (SELECT 1 FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'held')
                                     THEN $2::timestamptz + make_interval(secs => COALESCE(wave_interval_s, 86400)) END
     WHERE id = $1 AND status = 'scheduled' RETURNING *`,
    id, now,
  );
  return rows[0];
}

/** After a wave's release: the next one is scheduled while recipients stay held, else none. */
export async function scheduleNextWave(db: Tx, id: string, stillHeld: boolean, now: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcasts SET wave_scheduled_at = CASE WHEN $2::boolean THEN $3::timestamptz + make_interval(secs => COALESCE(wave_interval_s, 86400)) END,
       updated_at = $3
     WHERE id = $1`,
    id, stillHeld, now,
  );
}

/** The channel refused the campaign (or it cannot run): failed with the reason. */
export async function markFailed(db: Tx, id: string, reason: string, now: Date): Promise<void> {
  await execute(
    db,
    `UPDATE broadcasts SET status = 'failed', status_reason = $2, completed_at = $3, wave_scheduled_at = NULL, updated_at = $3
     WHERE id = $1 AND status IN ('scheduled', 'sending')`,
    id, reason.slice(0, 500), now,
  );
}

/**
 * Nothing left to send: completed (a hold's reason goes), and a retarget is due 24 hours later
 * when the campaign asked for one.
 */
export async function markCompleted(db: Tx, id: string, now: Date, holdPrefix: string): Promise<void> {
  await execute(
    db,
    `UPDATE broadcasts SET status = 'completed', completed_at = $2, updated_at = $2,
            status_reason = CASE WHEN status_reason LIKE $3 || '%' THEN NULL ELSE status_reason END,
            retarget_due_at = CASE WHEN auto_retarget_quality AND retarget_count = 0 THEN $2::timestamptz + interval '24 hours' END
     WHERE id = $1 AND status = 'sending'`,
    id, now, holdPrefix,
  );
}

/**
 * The project's quota changed: campaigns parked on the used quota (no lease owner, a lease that
 * runs until midnight) get their lease cleared, so the engine's next tick (every second) takes
 * them up again; if the quota is still used they park again with the same reason.
 */
export async function wakeQuotaHeld(db: Tx, projectId: string): Promise<number> {
  const rowCount = await execute(
    db,
    `UPDATE broadcasts SET lease_until = NULL
     WHERE project_id = $1 AND status = 'sending' AND lease_owner IS NULL AND status_reason LIKE $2 || '%'`,
    projectId, QUOTA_HOLD_PREFIX,
  );
  return rowCount;
}

/** The completed parent due for a retarget, locked (skipped when another engine holds it). */
export async function lockDueRetargetParent(tx: Tx, now: Date) {
  const rows = await queryRows<{ id: string; project_id: string; name: string; category: string; started_at: Date }>(
    tx,
    `SELECT id, project_id, name, category, started_at FROM broadcasts
     WHERE status = 'completed' AND auto_retarget_quality AND retarget_count = 0 AND retarget_due_at <= $1
     ORDER BY retarget_due_at LIMIT 1 ${CLAIM_ROWS}`,
    now,
  );
  return rows[0];
}

/** The parent's retarget is settled: `spawned` (at most one follow-up, ever) or nobody to retarget. */
export async function settleRetarget(tx: Tx, parentId: string, spawned: boolean): Promise<void> {
  await execute(
    tx,
    spawned ? `UPDATE broadcasts SET retarget_count = 1, retarget_due_at = NULL WHERE id = $1` : `UPDATE broadcasts SET retarget_due_at = NULL WHERE id = $1`,
    parentId,
  );
}

/** The follow-up of `parentId`, frozen at once (`preflight`), waiting for approval like any campaign. */
export async function insertRetargetChild(tx: Tx, parentId: string, childId: string, preflight: unknown, now: Date): Promise<void> {
  await execute(
    tx,
    `INSERT INTO broadcasts (id, project_id, name, template_name, template_language, category, audience, template_variables, status,
                             created_by, creator_name, creator_email, auto_retarget_quality, retarget_parent_id, preflight, approved_at, created_at, updated_at,
                             route, ttl_seconds)
     SELECT $2, project_id, left('Retarget: ' || name, 200), template_name, template_language, category, jsonb_build_object('retarget_of', id::text),
            template_variables, 'pending_approval', created_by, creator_name, creator_email, false, id, $3, NULL, $4, $4, route, ttl_seconds
     FROM broadcasts WHERE id = $1`,
    parentId, childId, JSON.stringify(preflight), now,
  );
}
