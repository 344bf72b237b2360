/**
 * Delivery rows are the truth about what is owed to whom; timers (Agenda jobs, the in-memory queue)
 * only carry ids. A delivery is `pending` until it succeeds, is dropped after its last attempt
 * (`failed`) or its registration is disabled or deleted (`canceled`). `next_attempt_at` is when it
 * may next be attempted; whoever claims it moves it forward by a lease (a conditional UPDATE), so
 * two workers never attempt it at once, and a crashed worker's claim lapses and is retaken.
 * Outcomes are written in batches: one statement records the attempts and moves the deliveries
 * (registrations.ts then updates each registration once, in the same transaction).
 * This module is the only writer of `webhook_deliveries` and `webhook_attempts`.
 * Plain SQL on the one handle (Tx): the engine's background pool (`sql`) or the transaction that
 * holds it. This is the hot path: a statement run per attempt or per batch stays a named prepared
 * statement (queryRowsNamed, executeNamed) under its name, which database.ts routes by.
 */
import { type Tx, execute, executeNamed, queryRows, queryRowsNamed } from '../platform/db/tx.js';
import { MAX_ATTEMPTS } from './policy.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';



export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  /**
   * The attempt this claim reserved (1 to 5). Attempts are counted when claimed, before the POST,
   * so one cut off by a crash still counts and a failing receiver never gets more than 5.
   */
  attempt: number;
  event: string;
  url: string;
  secretEnc: string;
  /** The event payload as JSON text ('null' when none). */
  dataJson: string;
  eventCreatedAt: Date;
  /** The claim's lease: the delivery is ours until then. */
  leaseUntil: Date;
  /** Kept alive while queued (claims.ts extendClaims): when the claim was first made (its registration's changes since then are looked up). */
  claimedAt?: Date;
  /** Older than the changes this instance remembers: its registration is re-read (renewed) before use. */
  extended?: boolean;
  /** Set while the sweep is extending this claim: an attempt starting meanwhile waits for it (the two would race on the lease). */
  extending?: Promise<unknown>;
}

const CLAIM_RETURNING = `RETURNING d.id, d.webhook_id, d.attempts, d.event, e.url, e.secret_enc,
  COALESCE(ev.data::text, 'null') AS data_json, ev.created_at, d.next_attempt_at`;

/** A row of CLAIM_RETURNING. */
interface ClaimRow {
  id: string;
  webhook_id: string;
  attempts: number;
  event: string;
  url: string;
  secret_enc: string;
  data_json: string;
  created_at: Date;
  next_attempt_at: Date;
}

function claimed(r: ClaimRow): ClaimedDelivery {
  return {
    id: r.id, webhookId: r.webhook_id, attempt: r.attempts, event: r.event, url: r.url, secretEnc: r.secret_enc,
    dataJson: r.data_json, eventCreatedAt: r.created_at, leaseUntil: r.next_attempt_at,
  };
}

/** Claims a due delivery of an active registration, reserving (counting) its next attempt; none past the fifth. */
export async function claimDelivery(db: Tx, id: string, now: Date, leaseUntil: Date): Promise<ClaimedDelivery | undefined> {
  const rows = await queryRowsNamed<ClaimRow>(
    db,
    'webhook-claim',
    `UPDATE webhook_deliveries d SET next_attempt_at = $3, attempts = d.attempts + 1
       FROM webhook_endpoints e, events ev
      WHERE d.id = $1 AND d.status = 'pending' AND d.next_attempt_at <= $2 AND d.attempts < ${MAX_ATTEMPTS}
        AND e.id = d.webhook_id AND e.is_active AND ev.id = d.event_id
      ${CLAIM_RETURNING}`,
    id, now, leaseUntil,
  );
  return rows[0] ? claimed(rows[0]) : undefined;
}

/** Claims those of `ids` that are due, reserving their next attempts (one statement for a whole retry job or sweep). */
export async function claimDeliveries(db: Tx, ids: string[], now: Date, leaseUntil: Date): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const rows = await queryRowsNamed<ClaimRow>(
    db,
    'webhook-claim-many',
    `UPDATE webhook_deliveries d SET next_attempt_at = $3, attempts = d.attempts + 1
       FROM webhook_endpoints e, events ev
      WHERE d.id = ANY($1::text[]) AND d.status = 'pending' AND d.next_attempt_at <= $2 AND d.attempts < ${MAX_ATTEMPTS}
        AND e.id = d.webhook_id AND e.is_active AND ev.id = d.event_id
      ${CLAIM_RETURNING}`,
    ids, now, leaseUntil,
  );
  return rows.map(claimed);
}

/**
 * Claims the due deliveries of several registrations in one statement: for each `[webhook id, n]`,
 * its `n` oldest due pending deliveries (by due time, through the partial index of due deliveries,
 * `webhook_deliveries_due_idx`), passing over rows another worker is claiming, each reserving
 * (counting) its next attempt; none past the fifth, none of an inactive registration. Returned
 * oldest first within each registration, with the time each was due (`dueAt`).
 *
 * `from` (per registration, or null) starts the scan at that due time: the caller's rows due
 * earlier are claimed already. A claim moves a row's due time forward, but its former index entry
 * stays until VACUUM; without `from`, every claim would step again over all the entries of the
 * rows claimed before it.
 */
export async function claimDue(db: Tx, wants: Array<[string, number, Date | null]>, now: Date, leaseUntil: Date): Promise<Array<ClaimedDelivery & { dueAt: Date }>> {
  const lanes = wants.filter(([, n]) => n > 0);
  if (lanes.length === 0) return [];
  const rows = await queryRowsNamed<ClaimRow & { due_at: Date }>(
    db,
    'webhook-claim-due',
    `WITH c AS (
       SELECT due.id, due.next_attempt_at AS due_at
         FROM unnest($1::text[], $2::int[], $5::timestamptz[]) AS w(webhook_id, n, from_at)
         CROSS JOIN LATERAL (
           SELECT q.id, q.next_attempt_at FROM webhook_deliveries q
            WHERE q.webhook_id = w.webhook_id AND q.status = 'pending' AND q.next_attempt_at <= $3
              AND q.next_attempt_at >= COALESCE(w.from_at, '-infinity') AND q.attempts < ${MAX_ATTEMPTS}
            ORDER BY q.next_attempt_at LIMIT w.n ${CLAIM_ROWS}
         ) due
     )
     UPDATE webhook_deliveries d SET next_attempt_at = $4, attempts = d.attempts + 1
       FROM c, webhook_endpoints e, events ev
      WHERE d.id = c.id AND e.id = d.webhook_id AND e.is_active AND ev.id = d.event_id
      ${CLAIM_RETURNING}, c.due_at`,
    lanes.map(([w]) => w), lanes.map(([, n]) => n), now, leaseUntil, lanes.map(([, , from]) => from),
  );
  return rows.sort((a, b) => a.due_at.getTime() - b.due_at.getTime()).map((r) => ({ ...claimed(r), dueAt: r.due_at }));
}

/**
 * The active registrations with deliveries due before `before` that may still be attempted (one
 * probe of the due index per active registration): the sweep's way to find work no timer of this
 * instance knows (another instance crashed, a retry job was lost).
 */
export async function lanesWithDue(db: Tx, before: Date): Promise<string[]> {
  const rows = await queryRowsNamed<{ id: string }>(
    db,
    'webhook-lanes-with-due',
    `SELECT w.id FROM webhook_endpoints w
      WHERE w.is_active AND EXISTS (
        SELECT 1 FROM webhook_deliveries d
         WHERE d.webhook_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= $1 AND d.attempts < ${MAX_ATTEMPTS})`,
    before,
  );
  return rows.map((r) => r.id);
}

/**
 * Pending deliveries whose last (fifth) attempt was claimed and whose claim lapsed before `before`
 * without an outcome (a crash): the sweep drops them (claims.ts).
 */
export async function interruptedLastAttempts(db: Tx, before: Date, limit: number): Promise<Array<{ id: string; webhookId: string; attempts: number }>> {
  const rows = await queryRows<{ id: string; webhook_id: string; attempts: number }>(
    db,
    `SELECT id, webhook_id, attempts FROM webhook_deliveries
      WHERE status = 'pending' AND attempts >= ${MAX_ATTEMPTS} AND next_attempt_at <= $1
      ORDER BY next_attempt_at LIMIT $2`,
    before, limit,
  );
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id, attempts: r.attempts }));
}

/** Extends a claim we hold (lease `heldUntil`, attempt already reserved), re-reading the registration; undefined if it is no longer ours or active. */
export async function renewClaim(db: Tx, id: string, heldUntil: Date, leaseUntil: Date): Promise<ClaimedDelivery | undefined> {
  const rows = await queryRowsNamed<ClaimRow>(
    db,
    'webhook-renew-claim',
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM webhook_endpoints e, events ev
      WHERE d.id = $1 AND d.status = 'pending' AND d.next_attempt_at = $2
        AND e.id = d.webhook_id AND e.is_active AND ev.id = d.event_id
      ${CLAIM_RETURNING}`,
    id, heldUntil, leaseUntil,
  );
  return rows[0] ? claimed(rows[0]) : undefined;
}

/** Pending deliveries whose registration is inactive or gone, or whose event is gone, are canceled. */
export async function cancelIfOrphaned(db: Tx, ids: string | string[], at: Date): Promise<number> {
  const list = Array.isArray(ids) ? ids : [ids];
  if (list.length === 0) return 0;
  // Before every retry batch's attempts: prepared once per connection (it was planned on every call).
  return executeNamed(
    db,
    'webhook-cancel-orphaned',
    `UPDATE webhook_deliveries d SET status = 'canceled', completed_at = $2, next_attempt_at = NULL
      WHERE d.id = ANY($1::text[]) AND d.status = 'pending'
        AND (NOT EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = d.webhook_id AND e.is_active)
             OR NOT EXISTS (SELECT 1 FROM events ev WHERE ev.id = d.event_id))`,
    list, at,
  );
}

export type OutcomeKind = 'success' | 'retry' | 'dropped';

export interface Outcome {
  deliveryId: string;
  webhookId: string;
  attempt: number;
  kind: OutcomeKind;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The first bytes of the receiver's answer (http-post.ts), kept for the delivery log. */
  responseExcerpt?: string | null;
  at: Date;
  nextAttemptAt: Date | null;
}

export type RecordedOutcome = Outcome;

const STATUS_OF: Record<OutcomeKind, string> = { success: 'succeeded', retry: 'pending', dropped: 'failed' };

/**
 * Records attempts and moves their deliveries (only those still pending: a delivery canceled or
 * deleted meanwhile is left alone). Returns the outcomes recorded, in the given order.
 */
export async function recordOutcomes(db: Tx, outcomes: Outcome[]): Promise<RecordedOutcome[]> {
  if (outcomes.length === 0) return [];
  const rows = await queryRowsNamed<{ id: string; webhook_id: string; ord: number }>(
    db,
    'webhook-record-outcomes',
    `WITH o AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::timestamptz[], $5::int[], $6::text[], $7::int[], $8::timestamptz[], $9::int[], $10::text[])
         AS o(delivery_id, attempt, status, next_attempt_at, status_code, error, duration_ms, at, ord, response_excerpt)
     ), d AS (
       UPDATE webhook_deliveries w SET attempts = o.attempt, status = o.status, next_attempt_at = o.next_attempt_at,
              completed_at = CASE WHEN o.status = 'pending' THEN NULL ELSE o.at END
         FROM o WHERE w.id = o.delivery_id AND w.status = 'pending'
         RETURNING w.id, w.webhook_id, o.attempt, o.status_code, o.error, o.duration_ms, o.at, o.ord, o.response_excerpt
     ), a AS (
       INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, status_code, error, duration_ms, at, response_excerpt)
       SELECT id, webhook_id, attempt, status_code, error, duration_ms, at, response_excerpt FROM d ORDER BY ord
     )
     SELECT id, webhook_id, ord FROM d`,
    outcomes.map((o) => o.deliveryId),
    outcomes.map((o) => o.attempt),
    outcomes.map((o) => STATUS_OF[o.kind]),
    outcomes.map((o) => o.nextAttemptAt),
    outcomes.map((o) => o.statusCode),
    outcomes.map((o) => o.error),
    outcomes.map((o) => o.durationMs),
    outcomes.map((o) => o.at),
    outcomes.map((_, i) => i),
    outcomes.map((o) => o.responseExcerpt ?? null),
  );
  return rows.sort((a, b) => a.ord - b.ord).map((r) => outcomes[r.ord]);
}

/**
 * Redelivery, asked for by a person (the console's Logs page): a finished delivery (succeeded,
 * failed or canceled) of an active registration becomes pending again with a fresh set of attempts,
 * due now; the sweep (or the next retry pass) takes it like any overdue delivery, with the same
 * event id, body and signature scheme. Its past attempts stay in the log. Returns false when the
 * delivery is not the project's, still pending, or its registration is inactive or gone.
 */
export async function redeliver(db: Tx, projectId: string, deliveryId: string, now: Date): Promise<{ id: string; webhookId: string; status: string } | undefined> {
  const rows = await queryRows<{ id: string; webhook_id: string; before: string }>(
    db,
    `UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, next_attempt_at = $3, completed_at = NULL
       FROM webhook_deliveries old, webhook_endpoints e
      WHERE d.id = $2 AND d.project_id = $1 AND old.id = d.id AND d.status <> 'pending'
        AND e.id = d.webhook_id AND e.is_active AND EXISTS (SELECT 1 FROM events ev WHERE ev.id = d.event_id)
      RETURNING d.id, d.webhook_id, old.status AS before`,
    projectId, deliveryId, now,
  );
  return rows[0] ? { id: rows[0].id, webhookId: rows[0].webhook_id, status: rows[0].before } : undefined;
}

/**
 * Gives back claims we hold and will not post: each is uncounted and due at `dueAt`. Only a claim
 * still ours (same lease, still pending) is touched. Returns the ids given back.
 */
export async function releaseClaims(db: Tx, claims: Array<{ id: string; leaseUntil: Date }>, dueAt: Date): Promise<string[]> {
  if (claims.length === 0) return [];
  const rows = await queryRowsNamed<{ id: string }>(
    db,
    'webhook-release-claims',
    `UPDATE webhook_deliveries d SET attempts = d.attempts - 1, next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease_until)
      WHERE d.id = c.id AND d.status = 'pending' AND d.next_attempt_at = c.lease_until AND d.attempts > 0
      RETURNING d.id`,
    claims.map((c) => c.id), claims.map((c) => c.leaseUntil), dueAt,
  );
  return rows.map((r) => r.id);
}

/**
 * Keeps claims alive while their deliveries wait in a long queue (a slow receiver's lane): without
 * it a lapsed claim would be retaken and counted again, unposted. Each claim still ours (same lease)
 * gets `leaseUntil`; returns the ids extended.
 */
export async function extendClaims(db: Tx, claims: Array<{ id: string; leaseUntil: Date }>, leaseUntil: Date): Promise<string[]> {
  if (claims.length === 0) return [];
  const rows = await queryRowsNamed<{ id: string }>(
    db,
    'webhook-extend-claims',
    `UPDATE webhook_deliveries d SET next_attempt_at = $3
       FROM unnest($1::text[], $2::timestamptz[]) AS c(id, lease_until)
      WHERE d.id = c.id AND d.status = 'pending' AND d.next_attempt_at = c.lease_until
      RETURNING d.id`,
    claims.map((c) => c.id), claims.map((c) => c.leaseUntil), leaseUntil,
  );
  return rows.map((r) => r.id);
}

/**
 * Writes the deliveries of a fan-out. A row with `claimed` is born claimed by the caller until
 * `leaseUntil` with its first attempt counted; one without is parked: pending, nothing counted, due
 * at `dueAt`, for claimDue to take when its registration has room. A pair already delivered (same
 * event and registration) is skipped. Returns the ids written.
 */
export async function insertClaimedDeliveries(
  db: Tx,
  rows: Array<{ id: string; projectId: string; webhookId: string; eventId: string; event: string; claimed?: boolean }>,
  leaseUntil: Date,
  now: Date,
  dueAt: Date = now,
): Promise<Set<string>> {
  const inserted = await queryRowsNamed<{ id: string }>(
    db,
    'webhook-fanout-insert',
    `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at)
     SELECT d.id, d.project_id, d.webhook_id, d.event_id, d.event, 'pending',
            CASE WHEN d.claimed THEN 1 ELSE 0 END, CASE WHEN d.claimed THEN $6::timestamptz ELSE $8::timestamptz END, $7
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $9::boolean[]) AS d(id, project_id, webhook_id, event_id, event, claimed)
     ON CONFLICT (event_id, webhook_id) DO NOTHING
     RETURNING id`,
    rows.map((r) => r.id), rows.map((r) => r.projectId), rows.map((r) => r.webhookId), rows.map((r) => r.eventId), rows.map((r) => r.event),
    leaseUntil, now, dueAt, rows.map((r) => r.claimed !== false),
  );
  return new Set(inserted.map((r) => r.id));
}

/** A registration disabled by its owner receives nothing further: its pending deliveries are canceled, in the caller's transaction. */
export async function cancelPendingOfRegistration(tx: Tx, webhookId: string, at: Date): Promise<number> {
  return execute(tx,
    `UPDATE webhook_deliveries SET status = 'canceled', completed_at = $2, next_attempt_at = NULL
      WHERE webhook_id = $1 AND status = 'pending'`,
    webhookId, at,
  );
}

/** After an auto-disable: the registrations receive nothing further (and other instances hear of it on `channel`). */
export async function cancelPending(db: Tx, webhookIds: string[], at: Date, channel: string): Promise<number> {
  if (webhookIds.length === 0) return 0;
  const canceled = await execute(
    db,
    `UPDATE webhook_deliveries SET status = 'canceled', completed_at = $2, next_attempt_at = NULL
      WHERE webhook_id = ANY($1::text[]) AND status = 'pending'`,
    webhookIds, at,
  );
  await execute(db, `SELECT pg_notify($2, id) FROM unnest($1::text[]) AS id`, webhookIds, channel);
  return canceled;
}

/**
 * Pending deliveries due before `before` (their timer or claim was lost, e.g. in a crash, or a
 * graceful stop released them), oldest first, with their ids and the attempts counted so far.
 */
export async function overdueDeliveries(db: Tx, before: Date, limit: number): Promise<Array<{ id: string; webhookId: string; attempts: number }>> {
  const rows = await queryRows<{ id: string; webhook_id: string; attempts: number }>(
    db,
    `SELECT id, webhook_id, attempts FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= $1
      ORDER BY next_attempt_at LIMIT $2`,
    before, limit,
  );
  return rows.map((r) => ({ id: r.id, webhookId: r.webhook_id, attempts: r.attempts }));
}

/**
 * Keeps the newest `keep` completed deliveries of a registration and its newest `keep * 5`
 * attempts, deleting at most `budget` deliveries per call (the sweep meters its work). Attempts go
 * first, through their (webhook_id, id) index; the deliveries' cascade then finds little to do.
 */
export async function pruneLog(tx: Tx, webhookId: string, keep: number, budget: number): Promise<{ attempts: number; deliveries: number }> {
  // The registration first, as every writer does, so a concurrent delete of it cannot deadlock with us.
  await execute(tx, `SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR KEY SHARE`, webhookId);
  const attempts = await execute(
    tx,
    `DELETE FROM webhook_attempts WHERE webhook_id = $1
        AND id < (SELECT id FROM webhook_attempts WHERE webhook_id = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)`,
    webhookId, keep * 5,
  );
  const deliveries = await execute(
    tx,
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE webhook_id = $1 AND status <> 'pending'
        ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT $3)`,
    webhookId, keep, budget,
  );
  return { attempts, deliveries };
}
