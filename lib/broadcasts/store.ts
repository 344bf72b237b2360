/**
 * Broadcast rows and their read shapes: the Broadcast resource, its counts and its recipients.
 *
 * A recipient's public status is derived, never copied: our engine's state until the channel
 * accepted the send, then the status of the message it created (messages.status, which only
 * moves forward by rank, whatever order the channel's callbacks arrive in). So `counts` are
 * exact after out-of-order callbacks, and a status cannot be counted twice.
 */
import { quotaOutlook } from './quota-hold.js';
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { audienceFilter, computePreflight, UUID, type Preflight } from './audience.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { broadcastRate, pacingReport, pacingSettings } from './pacing.js';
import { phoneNumberIdOf } from './channel-number.js';
import type { BroadcastVariables } from './variables.js';
import { addChannelFacts, liveRecipients, type PreflightWithFacts } from './preflight-facts.js';
import { campaignBilling } from './campaign-billing.js';

type Schemas = components['schemas'];
export type BroadcastView = Schemas['Broadcast'];
export type RecipientView = Schemas['BroadcastRecipient'];

export interface BroadcastRow {
  id: string;
  project_id: string;
  name: string;
  template_name: string;
  template_language: string;
  category: string;
  audience: { segment_id?: string; filter?: unknown; retarget_of?: string };
  template_variables: BroadcastVariables;
  status: string;
  status_reason: string | null;
  scheduled_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  approved_at: Date | null;
  created_by: string;
  creator_name: string | null;
  creator_email: string | null;
  wave_size: number | null;
  wave_interval_s: number | null;
  wave_scheduled_at: Date | null;
  wave_scheduled_count: number | null;
  auto_retarget_quality: boolean;
  retarget_parent_id: string | null;
  retarget_count: number;
  retarget_due_at: Date | null;
  preflight: Preflight | null;
  /** cloud_api | marketing_messages (Graph's /messages or /marketing_messages). */
  route: BroadcastView['route'];
  ttl_seconds: number | null;
  created_at: Date;
}

export function broadcastNotFound(id: string): ApiError {
  return new ApiError('BROADCAST_NOT_FOUND', `No broadcast ${id.slice(0, 64)} in this project.`);
}

export function broadcastId(raw: string): string {
  if (!UUID.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw.slice(0, 64)}": a UUID is expected.`);
  return raw.toLowerCase();
}

export async function findBroadcast(db: Tx, id: string, projectId?: string): Promise<BroadcastRow | undefined> {
  const [row] = await queryRows<BroadcastRow>(
    db,
    `SELECT * FROM broadcasts WHERE id = $1 ${projectId !== undefined ? 'AND project_id = $2' : ''}`,
    ...(projectId !== undefined ? [id, projectId] : [id]),
  );
  return row;
}

/**
 * The SQL of a recipient's public status (recipient `r`, its message `m`). Once a recipient has
 * left the queue (`sent` or `unknown`) its status follows its message; a message still `pending`
 * there is a send whose outcome a crash or a lost answer left unknown: `unknown`, never `queued`
 * (an operator reading "queued" on a completed campaign would send again), until a status or the
 * unknown-outcome rule settles it.
 */
export const RECIPIENT_STATUS_SQL = `CASE r.state
    WHEN 'held' THEN 'held' WHEN 'queued' THEN CASE WHEN r.limit_held_until IS NOT NULL THEN 'held' ELSE 'queued' END WHEN 'sending' THEN 'queued'
    WHEN 'canceled' THEN 'canceled' WHEN 'failed' THEN 'failed'
    ELSE CASE m.status WHEN 'sent' THEN 'sent' WHEN 'delivered' THEN 'delivered' WHEN 'read' THEN 'read' WHEN 'failed' THEN 'failed'
                       WHEN 'pending' THEN 'unknown' WHEN 'unknown' THEN 'unknown'
                       ELSE CASE WHEN r.state = 'unknown' THEN 'unknown' ELSE 'sent' END END END`;

/**
 * A recipient's message id: the wamid on its row, else its message's once the channel named one (a
 * message recorded before the call carries our reference as a placeholder wamid until then).
 */
export const RECIPIENT_WAMID_SQL = `COALESCE(r.wamid, CASE WHEN m.wamid IS DISTINCT FROM m.send_ref THEN m.wamid END)`;

/** A failed message's channel error code, for recipients that failed after being accepted. */
export const RECIPIENT_ERROR_CODE_SQL = `COALESCE(r.error_code, CASE WHEN m.status = 'failed' AND (m.error ->> 'code') ~ '^[0-9]{1,9}$' THEN (m.error ->> 'code')::int END)`;

const JOIN_MESSAGE = `LEFT JOIN messages m ON m.project_id = b.project_id AND m.send_ref = r.send_ref`;

export type Counts = NonNullable<BroadcastView['counts']>;

export async function broadcastCounts(db: Tx, id: string): Promise<Counts> {
  const rows = await queryRows<{ status: string; n: bigint }>(
    db,
    `SELECT ${RECIPIENT_STATUS_SQL} AS status, count(*)::bigint AS n
     FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id ${JOIN_MESSAGE}
     WHERE r.broadcast_id = $1 GROUP BY 1`,
    id,
  );
  const counts: Counts = { total: 0, queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, canceled: 0, held: 0, unknown: 0 };
  for (const r of rows) {
    counts[r.status as keyof Counts] = Number(r.n);
    counts.total += Number(r.n);
  }
  return counts;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The Broadcast resource. `live` resolves `counts` and `recipient_count` (reads of one broadcast). */
export async function broadcastView(db: Tx, row: BroadcastRow, now: Date, live: boolean): Promise<BroadcastView> {
  let counts: Counts | null = null;
  let recipientCount: number | null = null;
  let preflight = row.preflight;
  const frozen = row.approved_at !== null || row.audience.retarget_of !== undefined;
  if (live) {
    if (frozen) {
      counts = await broadcastCounts(db, row.id);
      recipientCount = counts.total;
      // Until sending starts, counts are null (the frozen total is recipient_count).
      if (row.started_at === null) counts = null;
    } else {
      // Live until approval: the report and the count follow the contacts and the segment.
      const filter = await audienceFilter(db, row.project_id, row.audience).catch(() => null);
      if (filter) {
        const rate = await broadcastRate(db, await phoneNumberIdOf(db, row.project_id), pacingSettings());
        const rule = { projectId: row.project_id, filter, category: row.category, variables: row.template_variables, now };
        preflight = await addChannelFacts(db, await computePreflight(db, rule, rate), row.project_id, row.category, liveRecipients(rule), now);
        preflight.quota = await quotaOutlook(db, row.project_id, preflight.eligible, row.scheduled_at ?? now, now);
        recipientCount = preflight.eligible;
      }
    }
  }
  let audience: Record<string, unknown> = row.audience;
  if (live && row.audience.segment_id !== undefined) {
    const filter = await audienceFilter(db, row.project_id, row.audience).catch(() => null);
    audience = { ...row.audience, filter };
  }
  return {
    id: row.id,
    project_id: row.project_id,
    name: row.name,
    template_name: row.template_name,
    template_language: row.template_language,
    category: row.category as BroadcastView['category'],
    audience,
    template_variables: row.template_variables,
    status: row.status as BroadcastView['status'],
    status_reason: row.status_reason,
    scheduled_at: iso(row.scheduled_at),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
    created_by: row.created_by,
    creator_name: row.creator_name,
    creator_email: row.creator_email,
    counts,
    wave_size: row.wave_size,
    wave_scheduled_at: iso(row.wave_scheduled_at),
    wave_scheduled_count: row.wave_scheduled_at ? row.wave_scheduled_count : null,
    auto_retarget_quality: row.auto_retarget_quality,
    retarget_parent_id: row.retarget_parent_id,
    retarget_count: row.retarget_count,
    recipient_count: recipientCount,
    preflight: preflight ? { ...preflight, quota: preflight.quota ?? null } : null,
    // What the statuses reported about cost, beside the estimate frozen at approval (lib/pricing/).
    billing: live && counts !== null ? await campaignBilling(db, row.id, (preflight as PreflightWithFacts | null)?.cost_estimate ?? null) : null,
    route: row.route,
    ttl_seconds: row.ttl_seconds,
    // The number's throughput now and what holds the pace, while the campaign is to send (it follows an upgrade mid-way).
    ...(live && (row.status === 'scheduled' || row.status === 'sending')
      ? { pacing: await pacingReport(db, await phoneNumberIdOf(db, row.project_id), pacingSettings()) }
      : {}),
    created_at: row.created_at.toISOString(),
  };
}

export async function listBroadcastRows(db: Tx, projectId: string | undefined, status: string | undefined, limit: number, offset: number) {
  const where: string[] = [];
  const values: unknown[] = [];
  if (projectId !== undefined) where.push(`project_id = $${values.push(projectId)}`);
  if (status !== undefined) where.push(`status = $${values.push(status)}`);
  const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const [total] = await queryRows<{ n: bigint }>(db, `SELECT count(*)::bigint AS n FROM broadcasts ${w}`, ...values);
  const rows = await queryRows<BroadcastRow>(
    db,
    `SELECT * FROM broadcasts ${w} ORDER BY created_at DESC, id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
    ...values, limit, offset,
  );
  return { rows, total: Number(total.n) };
}

export const ERROR_CATEGORY_SQL = `COALESCE(r.error_category, CASE WHEN m.status = 'failed' THEN
    CASE WHEN (m.error ->> 'code') IN ('131049') THEN 'later'
         WHEN (m.error ->> 'code') IN ('130429', '131056', '131000', '1', '2') THEN 'retryable'
         ELSE 'permanent' END END)`;

interface RecipientRow {
  id: string;
  phone: string | null;
  user_id: string | null;
  contact_id: string | null;
  status: RecipientView['status'];
  wave: number;
  variables: RecipientView['variables'];
  wamid: string | null;
  attempts: number;
  error_code: number | null;
  error_title: string | null;
  error_category: NonNullable<RecipientView['error']>['category'] | null;
  error_reason: string | null;
  sent_at: Date | null;
  updated_at: Date;
}

export async function listRecipients(
  db: Tx,
  id: string,
  filters: { status?: string; errorCategory?: string },
  limit: number,
  offset: number,
): Promise<{ recipients: RecipientView[]; total: number }> {
  const values: unknown[] = [id];
  const where = ['r.broadcast_id = $1'];
  if (filters.status !== undefined) where.push(`(${RECIPIENT_STATUS_SQL}) = $${values.push(filters.status)}`);
  if (filters.errorCategory !== undefined) where.push(`(${ERROR_CATEGORY_SQL}) = $${values.push(filters.errorCategory)}`);
  const from = `FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id ${JOIN_MESSAGE} WHERE ${where.join(' AND ')}`;
  const [total] = await queryRows<{ n: bigint }>(db, `SELECT count(*)::bigint AS n ${from}`, ...values);
  const rows = await queryRows<RecipientRow>(
    db,
    `SELECT r.id::text AS id, r.phone, r.user_id, r.contact_id::text AS contact_id, ${RECIPIENT_STATUS_SQL} AS status, r.wave, r.variables,
            ${RECIPIENT_WAMID_SQL} AS wamid, r.attempts,
            ${RECIPIENT_ERROR_CODE_SQL} AS error_code,
            COALESCE(r.error_title, m.error ->> 'title', m.error ->> 'message') AS error_title,
            ${ERROR_CATEGORY_SQL} AS error_category, r.error_reason,
            r.sent_at, GREATEST(r.updated_at, m.status_at) AS updated_at
     ${from} ORDER BY r.id LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
    ...values, limit, offset,
  );
  return {
    total: Number(total.n),
    recipients: rows.map((r) => ({
      id: Number(r.id),
      phone: r.phone === null ? null : `+${r.phone}`,
      user_id: r.user_id ?? null,
      contact_id: r.contact_id === null ? null : Number(r.contact_id),
      status: r.status,
      wave: r.wave,
      variables: r.variables,
      message_id: r.wamid,
      attempts: r.attempts,
      error: r.error_category ? { code: r.error_code, title: r.error_title, category: r.error_category, reason: r.error_reason ?? null } : null,
      sent_at: iso(r.sent_at),
      updated_at: (r.updated_at as Date).toISOString(),
    })),
  };
}
