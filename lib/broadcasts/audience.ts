/**
 * A broadcast's audience: resolved from a segment or an inline filter, classified contact by
 * contact into eligible or one exclusion reason (the pre-flight report), and frozen at approval
 * into recipient rows. One SQL expression classifies, so the report and the frozen rows can never
 * disagree. Reasons are checked in a fixed order: opted out (every category), invalid phone, not
 * opted in (MARKETING), hit the per-user marketing limit (131049) in the last 24 hours
 * (MARKETING), a variable without a value.
 */
import { UUID } from '../platform/ids.js';
export { UUID };
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import type { PreflightQuota } from './quota-hold.js';
import { ApiError } from '../platform/errors.js';
import { compileFilter, Params, parseFilter, type FilterGroup } from './filter.js';
import { resolvedVariablesSql, variablesPresentSql, type BroadcastVariables } from './variables.js';
import { insertRecipientsSql } from './recipients.js';



export function segmentNotFound(id: string): ApiError {
  return new ApiError('SEGMENT_NOT_FOUND', `No segment ${id.slice(0, 64)} in this project.`);
}

export interface AudienceSpec {
  segment_id?: string;
  filter?: unknown;
  /** A retarget follow-up: its recipients were frozen when it was spawned (retarget.ts). */
  retarget_of?: string;
}

/** The filter an audience stands for now; null when its segment is gone. */
export async function audienceFilter(db: Tx, projectId: string, audience: AudienceSpec): Promise<FilterGroup | null> {
  if (audience.retarget_of !== undefined) return null;
  if (audience.segment_id !== undefined) {
    if (!UUID.test(audience.segment_id)) return null;
    const [row] = await queryRows<{ filter: unknown }>(db, 'SELECT filter FROM segments WHERE id = $1 AND project_id = $2', audience.segment_id, projectId);
    return row ? parseFilter(row.filter) : null;
  }
  return parseFilter(audience.filter, 'audience.filter');
}

/** Like audienceFilter, for a caller naming the audience: an unknown or foreign segment is 404 SEGMENT_NOT_FOUND. */
export async function requireAudienceFilter(db: Tx, projectId: string, audience: AudienceSpec): Promise<FilterGroup> {
  const filter = await audienceFilter(db, projectId, audience);
  if (!filter) throw segmentNotFound(String(audience.segment_id));
  return filter;
}

export interface AudienceRule {
  projectId: string;
  filter: FilterGroup;
  category: string;
  variables: BroadcastVariables;
  now: Date;
}

export const EXCLUSION_REASONS = ['opted_out', 'invalid_phone', 'not_opted_in', 'recent_marketing_limit', 'missing_variable'] as const;

/** `FROM contacts c WHERE …` plus the reason column (NULL = eligible). */
function classified(rule: AudienceRule, p: Params): { where: string; reason: string } {
  const project = p.add(rule.projectId);
  // A WhatsApp group's own record (kind group, docs/groups.md) is never in an audience.
  const where = `c.project_id = ${project} AND c.kind = 'customer' AND ${compileFilter(rule.filter, p)}`;
  const marketing = rule.category === 'MARKETING';
  const since = marketing ? p.add(new Date(rule.now.getTime() - 24 * 3600_000)) : '';
  const recentLimit = `(EXISTS (SELECT 1 FROM conversations cv JOIN messages m ON m.conversation_id = cv.id
                                WHERE cv.project_id = ${project} AND cv.contact_id = c.id AND m.status = 'failed'
                                  AND m.error ->> 'code' = '131049' AND m.status_at > ${since})
                        OR EXISTS (SELECT 1 FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id
                                   WHERE b.project_id = ${project} AND r.contact_id = c.id AND r.error_code = 131049 AND r.updated_at > ${since}))`;
  const reason = `CASE
      WHEN c.opted_out_at IS NOT NULL THEN 'opted_out'
      WHEN c.phone IS NULL AND c.user_id IS NULL THEN 'invalid_phone'
      WHEN c.phone !~ '^[1-9][0-9]{7,14}$' THEN 'invalid_phone'
      ${marketing ? `WHEN NOT c.opted_in THEN 'not_opted_in'` : ''}
      ${marketing ? `WHEN ${recentLimit} THEN 'recent_marketing_limit'` : ''}
      WHEN NOT ${variablesPresentSql(rule.variables, p)} THEN 'missing_variable'
      ELSE NULL END`;
  return { where, reason };
}

export interface Preflight {
  eligible: number;
  excluded: Record<(typeof EXCLUSION_REASONS)[number] | 'duplicate', number>;
  estimated_duration_seconds: number;
  messages_per_second: number;
  computed_at: string;
  /** The daily quota on the day sending starts (quota-hold.ts); absent on reports stored before it existed. */
  quota?: PreflightQuota | null;
}

export async function computePreflight(db: Tx, rule: AudienceRule, ratePerSecond: number): Promise<Preflight> {
  const p = new Params();
  const { where, reason } = classified(rule, p);
  const rows = await queryRows<{ reason: string | null; n: bigint }>(
    db,
    `SELECT reason, count(*)::bigint AS n FROM (SELECT ${reason} AS reason FROM contacts c WHERE ${where}) x GROUP BY reason`,
    ...p.values,
  );
  const excluded = { opted_out: 0, invalid_phone: 0, not_opted_in: 0, recent_marketing_limit: 0, missing_variable: 0, duplicate: 0 };
  let eligible = 0;
  for (const r of rows) {
    if (r.reason === null) eligible = Number(r.n);
    else excluded[r.reason as keyof typeof excluded] = Number(r.n);
  }
  return preflightOf(eligible, excluded, ratePerSecond, rule.now);
}

export function preflightOf(eligible: number, excluded: Preflight['excluded'], ratePerSecond: number, now: Date): Preflight {
  return {
    eligible,
    excluded,
    estimated_duration_seconds: ratePerSecond > 0 ? Math.ceil(eligible / ratePerSecond) : 0,
    messages_per_second: ratePerSecond,
    computed_at: now.toISOString(),
  };
}

/** `SELECT contact_id, phone` of the eligible contacts (for the cost estimate and the messaging limit: lib/pricing/). */
export function eligibleContactsSql(rule: AudienceRule, p: Params): string {
  const { where, reason } = classified(rule, p);
  return `SELECT c.id AS contact_id, c.phone FROM contacts c WHERE ${where} AND (${reason}) IS NULL`;
}

/** Eligible contacts matching now (the live `recipient_count`). */
export async function countEligible(db: Tx, rule: AudienceRule): Promise<number> {
  const p = new Params();
  const { where, reason } = classified(rule, p);
  const [row] = await queryRows<{ n: bigint }>(db, `SELECT count(*)::bigint AS n FROM contacts c WHERE ${where} AND (${reason}) IS NULL`, ...p.values);
  return Number(row.n);
}

/**
 * The first recipient approval would freeze (contact order, as freezeAudience numbers its waves)
 * with its variables resolved by the same SQL: the approval page shows the message it would get.
 */
export async function sampleRecipient(db: Tx, rule: AudienceRule): Promise<{ name: string | null; phone: string | null; variables: BroadcastVariables } | null> {
  const p = new Params();
  const { where, reason } = classified(rule, p);
  const vars = resolvedVariablesSql(rule.variables, p);
  const [row] = await queryRows<{ name: string | null; phone: string | null; vars: BroadcastVariables }>(
    db,
    `SELECT c.name, c.phone, ${vars} AS vars FROM contacts c WHERE ${where} AND (${reason}) IS NULL ORDER BY c.id LIMIT 1`,
    ...p.values,
  );
  return row ? { name: row.name, phone: row.phone, variables: row.vars } : null;
}

/**
 * Freezes the audience into recipient rows (one per phone, variables resolved), inside the
 * approval's transaction. With a wave size, the first `waveSize` rows (in contact order) are
 * queued and the rest held. Returns how many rows were written.
 */
export async function freezeAudience(tx: Tx, broadcastId: string, rule: AudienceRule, waveSize: number | null): Promise<number> {
  const p = new Params();
  const { where, reason } = classified(rule, p);
  const vars = resolvedVariablesSql(rule.variables, p);
  const id = p.add(broadcastId);
  const now = p.add(rule.now);
  const wave = waveSize === null ? `1` : `CASE WHEN row_number() OVER (ORDER BY c.id) <= ${p.add(waveSize)} THEN 1 ELSE 2 END`;
  return execute(
    tx,
    insertRecipientsSql(
      `SELECT ${id}::uuid, x.id, x.phone, x.user_id, x.vars, CASE WHEN x.wave = 1 THEN 'queued' ELSE 'held' END, x.wave, ${now}
       FROM (SELECT c.id, c.phone, c.user_id, ${vars} AS vars, ${wave} AS wave FROM contacts c WHERE ${where} AND (${reason}) IS NULL) x`,
    ),
    ...p.values,
  );
}
