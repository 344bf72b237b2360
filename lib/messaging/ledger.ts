/**
 * The send ledger: the only writer of `messages` and of `send_counters`. Every
 * send (POST /v1/messages as a batch of one, the broadcast engine per batch, the bot through
 * POST's send) goes through the same five steps, each one statement for a whole batch:
 *
 * 1. reserve   quota units for today (a partial grant when the quota is nearly used); a send
 *              of the API reserves in its record's statement (reserveAndRecord);
 * 2. record    the intents: `pending` messages under our references, before the channel is
 *              called (window gate, contact and conversation in the same statement; an
 *              existing contact is only read, never rewritten);
 * 3. confirm   what the channel accepted: the message gets its wamid and becomes `sent`;
 * 4. abandon   what the channel certainly did not send: the pending message goes and its unit
 *              comes back;
 * 5. settle    what nobody settled: a send whose outcome stayed unknown (the answer was lost and
 *              no status came within the bound) becomes final `unknown`; its unit stays spent,
 *              and a later status still wins (status callbacks match it by reference).
 *
 * It is the only writer of `messages`: besides the steps above, an inbound message is recorded
 * here (recordInbound) and the channel's statuses move messages forward through statusMovesSql,
 * inside the notification's one statement (lib/messaging/inbound.ts).
 *
 * The recipient of an intent is a `Recipient`, not a bare phone, so that another way to name a
 * customer can join without touching the callers.
 */
import type { Prisma } from '../../generated/prisma/client.js';
import { statusRankSql } from './status-rank.js';
import { ApiError } from '../platform/errors.js';
import { insertContactsSql } from '../conversations/contact-store.js';
import { upsertConversationsSql } from '../conversations/conversations.js';
import { SERVICE_WINDOW_MS } from '../conversations/window.js';
import { dispatchedAtSql, EVENTS_CHANNEL, insertEventsSql } from '../webhooks/events.js';
import { newId } from '../platform/secrets.js';
import { completeLinkedKeysSql, linkKeysSql } from '../platform/idempotency-store.js';
import { retryDeadlock } from '../platform/db/transaction.js';
import { type Tx, execute, executeNamed, queryRows, queryRowsNamed } from '../platform/db/tx.js';
import { CLAIM_ROWS } from '../platform/db/claims.js';

/**
 * Who a send goes to: by phone when known (digits, no +), else by the business-scoped user id
 * (lib/conversations/identity.ts). At least one of the two.
 */
export interface Recipient {
  phone: string | null;
  userId?: string | null;
}

export interface Intent {
  to: Recipient;
  /** Our reference: recorded as the message's send_ref and sent as biz_opaque_callback_data. */
  ref: string;
  type: string;
  content: unknown;
  /** A session message: recorded only while the customer's 24-hour window is open. */
  session?: boolean;
  /** The request's Idempotency-Key, linked to the reference in the same statement. */
  idempotencyKey?: string;
  /** Who sends it (lib/conversations/authors.ts), recorded on the message; absent: not said. */
  author?: unknown;
}

export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10);
}

export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}

export function quotaExceeded(limit: number, now: Date): ApiError {
  const resetAt = nextUtcMidnight(now);
  const retryAfter = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
  return new ApiError(
    'quota_exceeded',
    `The project's daily send quota of ${limit} messages is used; it resets at ${resetAt.toISOString()} (UTC midnight).`,
    { limit, resetAt: resetAt.toISOString() },
    { 'Retry-After': String(retryAfter) },
  );
}

/**
 * 1. Takes up to `wanted` units of today's quota at once and answers how many it got (all, some
 * or none) and the limit that applied. `limit` null: the project's own daily quota, read in the
 * statement; less its conversation reserve for a campaign (`forCampaign`), which so never takes the
 * units kept for the bot's, agents' and people's replies. The counter row is locked and read in the statement that raises it, so the count is
 * exact under any concurrency; the day's first reservation creates the row (a second statement,
 * once a day).
 */
export async function reserveUnits(db: Tx, projectId: string, wanted: number, now: Date, limit: number | null = null, forCampaign = false): Promise<{ granted: number; limit: number }> {
  if (limit !== null && limit <= 0) return { granted: 0, limit };
  const day = utcDay(now);
  for (;;) {
    const rows = await queryRowsNamed<{ q: number | null; granted: number | null }>(
      db,
      'quota-reserve',
      `WITH lim AS (SELECT GREATEST(0, COALESCE($4::int, (SELECT daily_send_quota - CASE WHEN $5::boolean THEN conversation_reserve ELSE 0 END FROM projects WHERE id = $1), 0)) AS q),
             old AS (SELECT count FROM send_counters WHERE project_id = $1 AND day = $2::date FOR UPDATE),
             upd AS (
               UPDATE send_counters s SET count = s.count + LEAST($3::int, (SELECT q FROM lim) - s.count)
               FROM old WHERE s.project_id = $1 AND s.day = $2::date AND s.count < (SELECT q FROM lim)
               RETURNING (s.count - old.count)::int AS granted
             )
             SELECT (SELECT q FROM lim) AS q,
                    CASE WHEN EXISTS (SELECT 1 FROM old) THEN COALESCE((SELECT granted FROM upd), 0) END AS granted`,
      projectId, day, wanted, limit, forCampaign,
    );
    const q = rows[0].q ?? 0;
    if (rows[0].granted !== null) return { granted: rows[0].granted, limit: q };
    if (q <= 0) return { granted: 0, limit: q };
    // No counter row yet today: the first reservation creates it with its grant.
    const created = await queryRowsNamed<{ count: number }>(
      db,
      'quota-reserve-first',
      'INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, $3) ON CONFLICT DO NOTHING RETURNING count',
      projectId, day, Math.min(wanted, q),
    );
    if (created[0]) return { granted: created[0].count, limit: q };
  }
}

/** Gives back `units` reserved and not used (never below zero). */
export async function releaseUnits(db: Tx, projectId: string, units: number, reservedAt: Date): Promise<void> {
  if (units <= 0) return;
  await executeNamed(
    db,
    'quota-release',
    'UPDATE send_counters SET count = GREATEST(0, count - $3) WHERE project_id = $1 AND day = $2::date AND count > 0',
    projectId, utcDay(reservedAt), units,
  );
}

/** The app holding the customer's thread when another app does (docs/coexistence.md): read on a refused send's path only. */
export async function threadHeldBy(db: Tx, projectId: string, to: Recipient): Promise<string | null> {
  const rows = await queryRows<{ holder: string }>(
    db,
    `SELECT w.thread_holder AS holder FROM contacts c JOIN conversations w ON w.project_id = c.project_id AND w.contact_id = c.id
     WHERE c.project_id = $1 AND (c.phone = $2 OR ($2::text IS NULL AND c.user_id = $3)) AND w.thread_holder IS NOT NULL LIMIT 1`,
    projectId, to.phone, to.userId ?? null,
  );
  return rows[0]?.holder ?? null;
}

/**
 * 2. Records the intents before the channel is called, in one statement: per intent the window
 * gate (session messages), the contact (created when missing; an existing one is only read), the
 * conversation (created, or its activity moved: lib/conversations/order.ts; its state untouched),
 * the Idempotency-Key's link and the `pending` message under the reference. Answers, per intent,
 * whether it was recorded (false: a session message whose window is closed, or with `refuseHeld`
 * a message to a customer whose thread another app holds (docs/coexistence.md); nothing written).
 */
export async function recordIntents(db: Tx, projectId: string, intents: Intent[], at: Date, opts: { refuseHeld?: boolean } = {}): Promise<boolean[]> {
  const { outcomes } = await recordWith(db, projectId, intents, at, { refuseHeld: opts.refuseHeld === true, reserve: false });
  return outcomes.map((o) => o === 'recorded');
}

/** What became of an intent given to `reserveAndRecord`. */
export type RecordOutcome = 'recorded' | 'closed' | 'over_quota';

/**
 * 1 and 2 in one statement, for the API's sends (issue 69): the intents whose window is open take
 * units of the project's daily quota in order (the counter row locked and read in the statement
 * that raises it, so the count stays exact under any concurrency) and only those that got one are
 * recorded. A closed window is answered `closed` whatever the quota (the spec's 409 comes first);
 * an open one past the quota `over_quota`, with the limit that applied. A recorded intent's unit
 * is given back by abandonIntents. The day's first send creates the counter row (a second
 * statement, once a day).
 */
export async function reserveAndRecord(db: Tx, projectId: string, intents: Intent[], at: Date, opts: { refuseHeld?: boolean } = {}): Promise<{ outcomes: RecordOutcome[]; limit: number }> {
  for (;;) {
    const r = await recordWith(db, projectId, intents, at, { refuseHeld: opts.refuseHeld === true, reserve: true });
    if (r.counted || r.limit <= 0) return r;
    await executeNamed(
      db,
      'quota-counter-first',
      'INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, 0) ON CONFLICT DO NOTHING',
      projectId, utcDay(at),
    );
  }
}

interface RecordResult {
  outcomes: RecordOutcome[];
  /** The daily quota that applied (with `reserve`). */
  limit: number;
  /** Whether today's counter row existed (with `reserve`; without it, nothing was reserved or recorded). */
  counted: boolean;
}

async function recordWith(db: Tx, projectId: string, intents: Intent[], at: Date, opts: { refuseHeld: boolean; reserve: boolean }): Promise<RecordResult> {
  const outcomes: RecordOutcome[] = intents.map(() => 'closed');
  let limit = 0;
  let todo = intents.map((_, i) => i);
  // A contact inserted by a concurrent transaction after the statement's snapshot is neither seen
  // nor inserted (ON CONFLICT DO NOTHING), so its intent is not recorded: the next try sees it.
  for (let attempt = 1; todo.length; attempt++) {
    const batch = todo.map((i) => intents[i]);
    const rows = await queryRowsNamed<{ ord: string; open: boolean; granted: boolean; recorded: boolean; q: number | null; counted: boolean }>(
      db,
      'record-intent',
      `WITH input AS (
               SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::jsonb[], $6::boolean[], $7::text[], $9::text[], $10::jsonb[])
                 WITH ORDINALITY AS i(phone, ref, type, content, session, ikey, user_id, author, ord)
             ), lim AS (
               SELECT GREATEST(0, daily_send_quota) AS q FROM projects WHERE $12::boolean AND id = $1
             ), old AS (
               SELECT count FROM send_counters WHERE $12::boolean AND project_id = $1 AND day = $13::date FOR UPDATE
             ), found AS (
               -- By phone, else by business-scoped user id.
               SELECT i.ord, c.id FROM input i JOIN contacts c ON c.project_id = $1
                 AND (c.phone = i.phone OR (i.phone IS NULL AND c.user_id = i.user_id))
             ), opened AS (
               SELECT i.*, (NOT i.session OR EXISTS (
                 SELECT 1 FROM found f JOIN conversations w ON w.project_id = $1 AND w.contact_id = f.id
                 WHERE f.ord = i.ord AND w.last_inbound_at > $8::timestamptz - interval '${SERVICE_WINDOW_MS} milliseconds'
               ) AND NOT ($11::boolean AND EXISTS (
                 SELECT 1 FROM found f JOIN conversations w ON w.project_id = $1 AND w.contact_id = f.id
                 WHERE f.ord = i.ord AND w.thread_holder IS NOT NULL
               ))) AS open FROM input i
             ), gate AS (
               -- With $12, the open intents take the units left today in their order.
               SELECT o.*, o.open AND (NOT $12::boolean OR
                 row_number() OVER (PARTITION BY o.open ORDER BY o.ord) <= COALESCE((SELECT q FROM lim) - (SELECT count FROM old), 0)) AS granted
               FROM opened o
             ), created AS (
               -- Either unique key (phone, user id) may conflict: DO NOTHING names neither.
               ${insertContactsSql(`SELECT DISTINCT $1, g.phone, CASE WHEN g.phone IS NULL THEN g.user_id END, $8::timestamptz, $8::timestamptz FROM gate g
               WHERE g.granted AND NOT EXISTS (SELECT 1 FROM found f WHERE f.ord = g.ord)`)}
               RETURNING id, phone, user_id
             ), ct AS (
               SELECT g.ord, COALESCE(f.id, c.id) AS contact_id FROM gate g
               LEFT JOIN found f ON f.ord = g.ord
               LEFT JOIN created c ON (c.phone = g.phone OR (g.phone IS NULL AND c.user_id = g.user_id))
               WHERE g.granted AND COALESCE(f.id, c.id) IS NOT NULL
             ), cv AS (
               ${upsertConversationsSql('SELECT DISTINCT $1, contact_id, $8::timestamptz, $8::timestamptz, $8::timestamptz FROM ct')}
               RETURNING id, contact_id
             ), ik AS (
               ${linkKeysSql('SELECT $1::text AS project_id, g.ikey, g.ref FROM gate g WHERE g.ikey IS NOT NULL AND g.granted')}
             ), ins AS (
               INSERT INTO messages (project_id, conversation_id, wamid, send_ref, direction, type, content, status, sent_at, status_at, author)
               SELECT $1, cv.id, g.ref, g.ref, 'outbound', g.type, g.content, 'pending', $8, $8, g.author
               FROM gate g JOIN ct ON ct.ord = g.ord JOIN cv ON cv.contact_id = ct.contact_id
               RETURNING send_ref
             ), units AS (
               -- A unit for each message recorded, no more (an intent lost to a contact race takes none).
               UPDATE send_counters s SET count = s.count + (SELECT count(*) FROM ins)
               WHERE $12::boolean AND s.project_id = $1 AND s.day = $13::date AND EXISTS (SELECT 1 FROM ins)
             )
             SELECT g.ord::text AS ord, g.open, g.granted, EXISTS (SELECT 1 FROM ins WHERE ins.send_ref = g.ref) AS recorded,
                    (SELECT q FROM lim) AS q, EXISTS (SELECT 1 FROM old) AS counted
             FROM gate g`,
      projectId,
      batch.map((b) => b.to.phone),
      batch.map((b) => b.ref),
      batch.map((b) => b.type),
      batch.map((b) => JSON.stringify(b.content)),
      batch.map((b) => b.session === true),
      batch.map((b) => b.idempotencyKey ?? null),
      at,
      batch.map((b) => b.to.userId ?? null),
      batch.map((b) => (b.author === undefined ? null : JSON.stringify(b.author))),
      opts.refuseHeld,
      opts.reserve,
      utcDay(at),
    );
    limit = rows[0]?.q ?? 0;
    const retry: number[] = [];
    for (const r of rows) {
      const i = todo[Number(r.ord) - 1];
      if (r.recorded) outcomes[i] = 'recorded';
      else if (r.granted) retry.push(i);
      else if (r.open) outcomes[i] = 'over_quota';
    }
    // No counter row today: nothing was granted; the caller creates it and tries again.
    if (opts.reserve && !(rows[0]?.counted ?? false)) return { outcomes, limit, counted: false };
    if (retry.length && attempt >= 3) {
      throw new Error(`recording ${retry.length} send(s) inserted no message (contacts raced ${attempt} times; first ref ${intents[retry[0]].ref})`);
    }
    todo = retry;
  }
  return { outcomes, limit, counted: true };
}

/**
 * 2'. A send to a WhatsApp group (lib/messaging/group-messages.ts): the intent is recorded in the
 * group's conversation (that of the group's own record, `contactId`), in one statement with the
 * conversation's activity and the Idempotency-Key's link, before the channel is called. No window
 * gate: a group is not a customer's 24-hour window (docs/groups.md).
 */
export async function recordGroupIntent(db: Tx, projectId: string, contactId: bigint, intent: Omit<Intent, 'to' | 'session'>, at: Date): Promise<void> {
  await executeNamed(
    db,
    'record-group-intent',
    `WITH cv AS (
             ${upsertConversationsSql('SELECT $1, $2::bigint, $3::timestamptz, $3::timestamptz, $3::timestamptz')}
             RETURNING id
           ), ik AS (
             ${linkKeysSql('SELECT $1::text AS project_id, $7::text AS ikey, $4::text AS ref WHERE $7::text IS NOT NULL')}
           )
           INSERT INTO messages (project_id, conversation_id, wamid, send_ref, direction, type, content, status, sent_at, status_at, author)
           SELECT $1, cv.id, $4, $4, 'outbound', $5, $6::jsonb, 'pending', $3, $3, $8::jsonb FROM cv`,
    ...[
      projectId, String(contactId), at, intent.ref, intent.type, JSON.stringify(intent.content), intent.idempotencyKey ?? null,
      intent.author === undefined ? null : JSON.stringify(intent.author),
    ],
  );
}

/**
 * 3. The channel accepted these sends: each message gets its wamid (unless a status already gave
 * it one) and leaves `pending` (or `unknown`); a message a status already settled is left alone
 * (no write that changes nothing). Its rows are locked in id order first, as the status side
 * locks them (statusMovesSql), so the two never deadlock. A send made with an Idempotency-Key
 * (`key`) stores the key's answer (`answer`, JSON) in the same statement.
 */
export async function confirmIntents(db: Tx, projectId: string, accepted: Array<{ ref: string; wamid: string; at: Date; key?: string; answer?: string }>): Promise<void> {
  if (!accepted.length) return;
  await retryDeadlock(() => executeNamed(
    db,
    'confirm-sent-many',
    `WITH i AS (SELECT * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::jsonb[]) AS i(ref, wamid, at, ikey, answer)),
           answered AS (
             ${completeLinkedKeysSql('SELECT $1::text AS project_id, i.ikey, i.ref, i.answer AS body FROM i WHERE i.ikey IS NOT NULL')}
           ),
           locked AS (
             SELECT m.id FROM messages m JOIN i ON m.project_id = $1 AND m.send_ref = i.ref
             WHERE m.status IN ('pending', 'unknown') OR m.wamid IS DISTINCT FROM i.wamid
             ORDER BY m.id FOR UPDATE OF m
           )
           UPDATE messages m SET wamid = i.wamid,
                  status = CASE WHEN m.status IN ('pending', 'unknown') THEN 'sent' ELSE m.status END,
                  status_at = CASE WHEN m.status IN ('pending', 'unknown') THEN i.at ELSE m.status_at END
           FROM i, locked
           WHERE m.id = locked.id AND m.project_id = $1 AND m.send_ref = i.ref
             AND (m.status IN ('pending', 'unknown') OR m.wamid IS DISTINCT FROM i.wamid)`,
    projectId, accepted.map((w) => w.ref), accepted.map((w) => w.wamid), accepted.map((w) => w.at), accepted.map((w) => w.key ?? null), accepted.map((w) => w.answer ?? null),
  ));
}

/**
 * 4. The channel certainly did not send these: their pending messages go and their quota units
 * come back, in one statement, so the quota never keeps a unit for a send that did not happen.
 * `withdraw`: the intents' record failed (or committed with its answer lost); the unit came with
 * the record (reserveAndRecord), so what it recorded goes with its units, and nothing else (the
 * statement's other name lets the fault tests refuse each point of the send path).
 */
export async function abandonIntents(db: Tx, projectId: string, refs: string[], reservedAt: Date, opts: { withdraw?: boolean } = {}): Promise<void> {
  if (!refs.length) return;
  await retryDeadlock(() => executeNamed(
    db,
    // One text, two names: the fault tests refuse each point of the send path by name.
    opts.withdraw ? 'withdraw-send' : 'abandon-intent',
    `WITH gone AS (DELETE FROM messages WHERE project_id = $1 AND send_ref = ANY($2::text[]) AND status = 'pending' RETURNING 1),
           n AS (SELECT count(*)::int AS units FROM gone)
           UPDATE send_counters SET count = GREATEST(0, count - (SELECT units FROM n))
           WHERE project_id = $1 AND day = $3::date AND count > 0 AND (SELECT units FROM n) > 0`,
    projectId, refs, utcDay(reservedAt),
  ));
}

/**
 * 5. The unknown-outcome rule. A send whose answer was lost stays `pending` under its reference,
 * keeps its quota unit, and is settled by the first status that echoes the reference. When none
 * has come `boundMs` after the send (Meta retries a status callback for up to 7 days), none will:
 * the message becomes final `unknown` (its unit stays spent: it may have been sent), with a
 * `message.status` event, in one statement per batch of up to `limit`. A status that still comes
 * later wins (status callbacks match `pending` and `unknown` messages by reference). Sends whose
 * wamid is not known are found by a partial index (migration send_settle). Answers how many it
 * settled; a caller repeats while a batch comes back full.
 */
export async function settleUnknown(db: Tx, opts: { boundMs: number; now: Date; limit?: number }): Promise<number> {
  const rows = await queryRowsNamed<{ settled: number }>(
    db,
    'settle-unknown',
    `WITH due AS (
             SELECT id FROM messages WHERE wamid = send_ref AND sent_at <= $1 AND status = 'pending'
             ORDER BY sent_at LIMIT $3 ${CLAIM_ROWS}
           ), upd AS (
             UPDATE messages m SET status = 'unknown', status_at = $2
             FROM due WHERE m.id = due.id AND m.status = 'pending'
             RETURNING m.id, m.project_id, m.conversation_id, m.wamid
           ), ev AS (
             ${insertEventsSql(`SELECT 'evt_' || substr(md5(random()::text || clock_timestamp()::text || upd.id::text), 1, 20), upd.project_id, 'message.status',
                    jsonb_build_object('message_id', upd.wamid, 'id', upd.id, 'conversation_id', upd.conversation_id, 'status', 'unknown'),
                    $2::timestamptz, ${dispatchedAtSql('upd.project_id', `'message.status'`, '$2::timestamptz')}
             FROM upd`)}
             RETURNING project_id, dispatched_at
           )
           SELECT (SELECT count(*)::int FROM upd) AS settled,
                  (SELECT count(*) FROM (SELECT pg_notify($4, d.project_id) FROM (SELECT DISTINCT project_id FROM ev WHERE dispatched_at IS NULL) d) n) AS woken`,
    new Date(opts.now.getTime() - opts.boundMs), opts.now, opts.limit ?? 1000, EVENTS_CHANNEL,
  );
  return rows[0].settled;
}

/** What the ledger knows of a send by its reference: nothing (never recorded, or abandoned), or its message's status and wamid. */
export async function sendState(db: Tx, projectId: string, ref: string): Promise<{ status: string; wamid: string } | undefined> {
  const rows = await queryRowsNamed<{ status: string; wamid: string }>(
    db,
    'idempotency-send-outcome',
    'SELECT wamid, status FROM messages WHERE project_id = $1 AND send_ref = $2',
    projectId, ref,
  );
  return rows[0];
}

/** A fresh send reference. */
export function newSendRef(): string {
  return newId('snd', 24);
}

/** A customer's message, in the notification's transaction (lib/messaging/inbound.ts decides the rest). */
export async function recordInbound(
  tx: Pick<Prisma.TransactionClient, 'message'>,
  m: { projectId: string; conversationId: bigint; wamid: string; type: string; content: object; sentAt: Date; at: Date },
) {
  return tx.message.create({
    data: {
      projectId: m.projectId,
      conversationId: m.conversationId,
      wamid: m.wamid,
      direction: 'inbound',
      type: m.type,
      content: m.content,
      status: 'received',
      sentAt: m.sentAt,
      statusAt: m.at,
    },
  });
}

/**
 * A message the channel told us of without our sending or the bot seeing it (coexistence,
 * lib/messaging/coexistence.ts): an echo of one the business sent from the Business app
 * (outbound, author business_app), or a past one of the history sync (`history`). Inserted once
 * per wamid: undefined when it was stored before.
 */
export async function recordTold(
  tx: Pick<Prisma.TransactionClient, 'message'>,
  m: { projectId: string; conversationId: bigint; wamid: string; direction: 'inbound' | 'outbound'; type: string; content: object; status: string; history: boolean; sentAt: Date; at: Date },
) {
  const { count } = await tx.message.createMany({
    data: [{
      projectId: m.projectId, conversationId: m.conversationId, wamid: m.wamid, direction: m.direction, type: m.type, content: m.content,
      status: m.status, history: m.history, sentAt: m.sentAt, statusAt: m.at,
      ...(m.direction === 'outbound' ? { author: { kind: 'business_app', id: null, name: null } } : {}),
    }],
    skipDuplicates: true,
  });
  if (count === 0) return undefined;
  return tx.message.findUniqueOrThrow({ where: { projectId_wamid: { projectId: m.projectId, wamid: m.wamid } } });
}

/**
 * recordInbound as SQL, for the inbound message's one statement (lib/messaging/inbound-statement.ts):
 * `select` yields (project_id, conversation_id, wamid, type, content, sent_at, status_at). A wamid
 * already stored (a provider's retry racing the first delivery) inserts nothing. The caller adds its RETURNING.
 */
export function insertInboundSql(select: string): string {
  return `INSERT INTO messages (project_id, conversation_id, wamid, type, content, sent_at, status_at, direction, status)
          SELECT s.*, 'inbound', 'received' FROM (${select}) s
          ON CONFLICT (project_id, wamid) DO NOTHING`;
}

/**
 * The statuses' moves, as a data-modifying CTE body over `input` (wamid, status, rank, error,
 * event_id, ref, pricing, ord) of project `project` at `at` (SQL given by the caller's statement).
 * A pending send (outcome unknown to us), or one the ledger settled as unknown, is found by our
 * reference, which Meta echoes as biz_opaque_callback_data, and gets its wamid here. The status's
 * pricing (lib/pricing/status-pricing.ts) is kept; one without keeps the last. Only a forward move
 * writes: delivered carries the pricing too, and Meta charges on delivery, so a "sent" for a send
 * already recorded as sent costs no extra row write.
 */
export function statusMovesSql(input: string, project: string, at: string): string {
  // The rows are locked first, in id order, as every writer of several messages locks them
  // (confirmIntents): otherwise a status batch and a confirm taking the same rows in other
  // orders deadlock, and PostgreSQL breaks that only after deadlock_timeout, a second. The lock
  // re-checks the match on a row changed meanwhile; the update re-checks the forward move.
  return `UPDATE messages m SET status = i.status, status_at = ${at}, error = i.error, wamid = i.wamid, pricing = COALESCE(i.pricing, m.pricing)
               FROM (SELECT lm.id, li.* FROM messages lm JOIN ${input} li
                       ON lm.project_id = ${project} AND lm.direction = 'outbound'
                      AND (lm.wamid = li.wamid OR (li.ref IS NOT NULL AND lm.send_ref = li.ref AND lm.status IN ('pending', 'unknown')))
                      AND ${statusRankSql('lm.status')} < li.rank
                     ORDER BY lm.id FOR UPDATE OF lm) i
               WHERE m.id = i.id AND ${statusRankSql('m.status')} < i.rank
               RETURNING m.id, m.conversation_id, i.wamid, i.status, i.error, i.event_id, i.ord, i.pricing`;
}

/** A contact merge's move (lib/conversations/identity.ts): the messages of conversation `from` now belong to `to`. */
export async function moveConversationMessages(tx: Tx, to: bigint, from: bigint): Promise<void> {
  await execute(tx, `UPDATE messages SET conversation_id = $1::bigint WHERE conversation_id = $2::bigint`, String(to), String(from));
}
