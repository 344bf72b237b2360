/**
 * Conversation reads and every write of `conversations` (this module is its only writer): the
 * state change, an inbound message's activity, the send ledger's batch (upsertConversationsSql)
 * and a contact merge's moves (identity.ts decides them). Plain SQL over the shared pg pool,
 * Prisma inside an inbound notification's transaction.
 *
 * Policy and why:
 * - Keyset paging everywhere: the list is ordered by (order_at DESC, id DESC), the recent-activity
 *   order (lib/conversations/order.ts: the same order as last_message_at's), and the next page
 *   starts with the row-value predicate `(order_at, id) < ($t, $id)`, which PostgreSQL turns into
 *   an index condition on `conversation_order (project_id, order_at DESC, conversation_id DESC)`
 *   (the order's own narrow table, so that a message's update of its conversation is HOT). A deep page
 *   costs what the first does, and rows inserted meanwhile never shift the pages still to come.
 *   A conversation's messages page by `id DESC` on `(conversation_id, id DESC)`.
 * - Every statement carries `project_id = $project`: a row of another project is simply absent.
 * - Rows are selected with camelCase aliases so lib/conversations/views.ts builds the contract shapes from them.
 */
import type { QueryResultRow } from 'pg';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import type { Prisma } from '../../generated/prisma/client.js';
import type { ConversationRow, MessageCustomerRow, MessageRow } from './views.js';
import { MESSAGE_ACTIVITY_SET_SQL } from './order.js';
import { cursorId, cursorTime, invalidCursor } from '../platform/cursor.js';
import { contactSearchSql, conversationConditionSql, messageSearchSql, type ConversationCondition } from './console-filters.js';
import { AUTHOR_COLUMNS } from './authors.js';
import { needsReplySql, resolutionSql } from './queue.js';

export { conversationConditionSql } from './console-filters.js';


/** The platform's own conversation states; a project's bot code may add more. */
export const PLATFORM_STATES = ['unstructured', 'handover', 'awaiting_form', 'done'] as const;
/** A person holds the conversation (the dashboard's take-over): the bot is not handed its messages (lib/bot/runtime.ts). */
export const HUMAN_STATE = 'handover';
/** The state a person gives a conversation back to the bot in. */
export const BOT_STATE = 'unstructured';

export interface ConversationFilters {
  state?: string;
  /** Contact phone, digits only. */
  phone?: string;
  /** Contact business-scoped user id. */
  userId?: string;
  /** Only conversations with activity at or after this time. */
  since?: Date;
  /** The console's search over the customer (console-filters.ts). */
  search?: string;
  /** The search also finds words of the conversation's messages (the inbox's; full-text). */
  searchMessages?: boolean;
  /** The console's filter (console-filters.ts). */
  condition?: ConversationCondition;
  /** The service's clock, for `condition` (a snooze ends by it). */
  now?: Date;
  /** Only conversations in the inbox's queue (true) or out of it (false): queue.ts. Needs `now`. */
  needsReply?: boolean;
  /** Only conversations with this resolution as read at `now` (a passed snooze is open). */
  resolution?: 'open' | 'resolved' | 'snoozed';
  /** Only conversations with this label (lower case). */
  label?: string;
  /** Only those assigned to this account, or none (`null`: unassigned), or anyone (`any`). */
  assignee?: { accountId: string } | { email: string } | null | 'any';
}

/** A person opened the conversation in the dashboard: what the customer wrote until now is read. */
export async function markConversationSeen(tx: Tx, projectId: string, id: bigint, now: Date): Promise<void> {
  await execute(tx,
    `UPDATE conversations SET seen_at = $3 WHERE project_id = $1 AND id = $2::bigint AND last_inbound_at IS NOT NULL AND (seen_at IS NULL OR seen_at < last_inbound_at)`,
    projectId, id.toString(), now,
  );
}

export interface ConversationKey {
  orderAt: Date;
  id: bigint;
}

/** A conversation list's keyset position in a cursor, `[order_at epoch ms, id]` (GET /v1/conversations and the console). */
export const conversationPosition = {
  decode(payload: unknown[]): ConversationKey {
    if (payload.length !== 2) throw invalidCursor();
    return { orderAt: cursorTime(payload[0]), id: cursorId(payload[1]) };
  },
  encode(r: ConversationRow): unknown[] {
    return [(r.orderAt ?? r.lastMessageAt).getTime(), String(r.id)];
  },
};

const CONVERSATION_COLUMNS = `
  c.id::text AS "id", c.state AS "state", c.last_message_at AS "lastMessageAt",
  c.last_inbound_at AS "lastInboundAt", c.created_at AS "createdAt", c.order_at AS "orderAt",
  ct.id::text AS "contactId", ct.phone AS "contactPhone", ct.user_id AS "contactUserId",
  ct.username AS "contactUsername", ct.name AS "contactName",
  c.assignee_id AS "assigneeId", (SELECT a.email FROM dashboard_accounts a WHERE a.id = c.assignee_id) AS "assigneeEmail",
  c.labels AS "labels", c.thread_holder AS "threadHolder", c.thread_holder_since AS "threadHolderSince",
  ct.kind AS "contactKind", c.resolution AS "resolution", c.snoozed_until AS "snoozedUntil",
  (SELECT json_build_object('id', g.id, 'group_id', g.group_id, 'subject', g.subject, 'status', g.status,
          'participant_count', (SELECT count(*)::int FROM group_participants p WHERE p.group_row_id = g.id))
     FROM groups g WHERE g.contact_id = ct.id) AS "group"`;

interface ConversationSqlRow {
  id: string;
  state: string;
  lastMessageAt: Date;
  lastInboundAt: Date | null;
  createdAt: Date;
  orderAt: Date;
  contactId: string;
  contactPhone: string | null;
  contactUserId: string | null;
  contactUsername: string | null;
  contactName: string | null;
  assigneeId: string | null;
  assigneeEmail: string | null;
  labels: string[] | null;
  threadHolder: string | null;
  threadHolderSince: Date | null;
  contactKind: string;
  resolution: string;
  snoozedUntil: Date | null;
  group: { id: number | string; group_id: string | null; subject: string; status: string; participant_count: number } | null;
}

function toConversationRow(r: ConversationSqlRow): ConversationRow {
  return {
    id: r.id,
    state: r.state,
    lastMessageAt: r.lastMessageAt,
    lastInboundAt: r.lastInboundAt,
    createdAt: r.createdAt,
    orderAt: r.orderAt,
    contact: { id: r.contactId, phone: r.contactPhone, userId: r.contactUserId, username: r.contactUsername, name: r.contactName },
    assignee: { id: r.assigneeId, email: r.assigneeEmail },
    labels: r.labels ?? [],
    threadHolder: r.threadHolder,
    threadHolderSince: r.threadHolderSince,
    kind: r.contactKind,
    resolution: r.resolution,
    snoozedUntil: r.snoozedUntil,
    group: r.group ? { ...r.group, id: Number(r.group.id) } : null,
  };
}

/** The SQL of one page of the conversation list (exported so a test can EXPLAIN it). */
export function conversationPageQuery(
  projectId: string,
  filters: ConversationFilters,
  after: ConversationKey | undefined,
  take: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [projectId];
  const where = ['o.project_id = $1'];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (filters.state !== undefined) where.push(`c.state = ${param(filters.state)}`);
  if (filters.phone !== undefined) where.push(`ct.phone = ${param(filters.phone)}`);
  if (filters.userId !== undefined) where.push(`ct.user_id = ${param(filters.userId)}`);
  if (filters.since !== undefined) where.push(`c.last_message_at >= ${param(filters.since)}::timestamptz`);
  if (filters.search) {
    const customer = contactSearchSql('ct', filters.search, param);
    where.push(filters.searchMessages ? `(${customer} OR ${messageSearchSql('c', '$1', filters.search, param)})` : customer);
  }
  if (filters.needsReply !== undefined || filters.resolution !== undefined || filters.condition) {
    if (!filters.now) throw new Error('a conversation condition needs the clock (filters.now)');
    let placeholder: string | undefined;
    const now = () => (placeholder ??= param(filters.now));
    if (filters.condition) where.push(conversationConditionSql('c', filters.condition, now));
    if (filters.needsReply !== undefined) where.push(`${filters.needsReply ? '' : 'NOT '}${needsReplySql('c', now())}`);
    if (filters.resolution !== undefined) where.push(`${resolutionSql('c', now())} = ${param(filters.resolution)}`);
  }
  if (filters.label !== undefined) where.push(`${param(filters.label)}::text = ANY (c.labels)`);
  if (filters.assignee === null) where.push('c.assignee_id IS NULL');
  else if (filters.assignee === 'any') where.push('c.assignee_id IS NOT NULL');
  else if (filters.assignee && 'accountId' in filters.assignee) where.push(`c.assignee_id = ${param(filters.assignee.accountId)}`);
  else if (filters.assignee) where.push(`c.assignee_id = (SELECT a.id FROM dashboard_accounts a WHERE a.email = lower(${param(filters.assignee.email)}))`);
  if (after) {
    where.push(`(o.order_at, o.conversation_id) < (${param(after.orderAt)}::timestamptz, ${param(after.id.toString())}::bigint)`);
  }
  const text = `SELECT ${CONVERSATION_COLUMNS}
    FROM conversation_order o
    JOIN conversations c ON c.id = o.conversation_id AND c.project_id = o.project_id
    JOIN contacts ct ON ct.id = c.contact_id AND ct.project_id = c.project_id
    WHERE ${where.join(' AND ')}
    ORDER BY o.order_at DESC, o.conversation_id DESC
    LIMIT ${param(take)}`;
  return { text, values };
}

export async function listConversationRows(
  tx: Tx,
  projectId: string,
  filters: ConversationFilters,
  after: ConversationKey | undefined,
  take: number,
): Promise<ConversationRow[]> {
  const q = conversationPageQuery(projectId, filters, after, take);
  return (await queryRows<ConversationSqlRow>(tx, q.text, ...q.values)).map(toConversationRow);
}

export async function findConversationRow(tx: Tx, projectId: string, id: bigint): Promise<ConversationRow | undefined> {
  const rows = await queryRows<ConversationSqlRow>(tx,
    `SELECT ${CONVERSATION_COLUMNS}
     FROM conversations c
     JOIN contacts ct ON ct.id = c.contact_id AND ct.project_id = c.project_id
     WHERE c.project_id = $1 AND c.id = $2::bigint`,
    projectId, id.toString(),
  );
  return rows[0] ? toConversationRow(rows[0]) : undefined;
}

export async function conversationExists(tx: Tx, projectId: string, id: bigint): Promise<boolean> {
  return (await queryRows(tx, 'SELECT 1 FROM conversations WHERE project_id = $1 AND id = $2::bigint', projectId, id.toString())).length === 1;
}

const MESSAGE_COLUMNS = `
  m.id::text AS "id", m.wamid, m.conversation_id::text AS "conversationId", m.direction, m.type, m.content,
  m.status, m.error, m.sent_at AS "sentAt", m.status_at AS "statusAt", m.pricing, m.history, ${AUTHOR_COLUMNS}`;

/**
 * One page of a conversation's messages, newest first by their own time (a history sync's past
 * message arrives after newer ones: it is listed where it was sent, not where it arrived); `after` is
 * the last message of the previous page.
 */
export async function listMessageRows(
  tx: Tx,
  projectId: string,
  conversationId: bigint,
  after: { at: Date; id: bigint } | undefined,
  take: number,
): Promise<MessageRow[]> {
  const values: unknown[] = [conversationId.toString(), projectId, take];
  let keyset = '';
  if (after !== undefined) {
    values.push(after.at, after.id.toString());
    keyset = 'AND (m.sent_at, m.id) < ($4::timestamptz, $5::bigint)';
  }
  return queryRows<MessageRow>(tx,
    // ORDER BY names the table's column: the output column "id" is text (id::text).
    `SELECT ${MESSAGE_COLUMNS} FROM messages m
     WHERE m.conversation_id = $1::bigint AND m.project_id = $2 AND m.status <> 'pending' ${keyset}
     ORDER BY m.sent_at DESC, m.id DESC
     LIMIT $3`,
    ...values,
  );
}

/** Whether `state` is one the project knows: a platform state or one its conversations have. */
export async function isKnownState(tx: Tx, projectId: string, state: string): Promise<boolean> {
  if ((PLATFORM_STATES as readonly string[]).includes(state)) return true;
  return (await queryRows(tx, 'SELECT 1 FROM conversations WHERE project_id = $1 AND state = $2 LIMIT 1', projectId, state)).length === 1;
}

/**
 * The platform states followed by the project's own, sorted. The distinct states are read with a
 * loose index scan over `(project_id, state)`: one index probe per distinct value, not one per
 * conversation.
 */
export async function knownStates(tx: Tx, projectId: string): Promise<string[]> {
  const rows = await queryRows<{ state: string }>(tx,
    `WITH RECURSIVE s(state) AS (
       (SELECT state FROM conversations WHERE project_id = $1 ORDER BY state LIMIT 1)
       UNION ALL
       SELECT (SELECT c.state FROM conversations c WHERE c.project_id = $1 AND c.state > s.state ORDER BY c.state LIMIT 1)
       FROM s WHERE s.state IS NOT NULL
     )
     SELECT state FROM s WHERE state IS NOT NULL`,
    projectId,
  );
  const own = rows.map((r) => r.state).filter((s) => !(PLATFORM_STATES as readonly string[]).includes(s));
  return [...PLATFORM_STATES, ...own];
}

/**
 * One statement that changes a project's conversation and answers what it replaced: the row is
 * locked while its `old` columns are read, so two concurrent changes each report the value they
 * replaced. `set` takes its values from $3 on; `returning` reads `c.` (now) and `old.` (before).
 * Undefined when the conversation is not the project's.
 */
async function changeLockedRow<R extends QueryResultRow>(
  tx: Tx,
  projectId: string,
  id: bigint,
  change: { set: string; old: string; returning: string },
  values: unknown[],
): Promise<R | undefined> {
  const rows = await queryRows<R>(tx,
    `UPDATE conversations c SET ${change.set}
     FROM (SELECT id, ${change.old} FROM conversations WHERE project_id = $1 AND id = $2::bigint FOR UPDATE) old
     WHERE c.id = old.id
     RETURNING ${change.returning}`,
    projectId, id.toString(), ...values,
  );
  return rows[0];
}

/**
 * Sets the state and returns it with the one it replaced, in one statement: the row is locked
 * while the previous value is read, so two concurrent changes each report the state they replaced.
 * Undefined when the conversation is not the project's.
 */
export async function setConversationState(
  tx: Tx,
  projectId: string,
  id: bigint,
  state: string,
  now: Date,
): Promise<{ id: string; state: string; previousState: string } | undefined> {
  return changeLockedRow<{ id: string; state: string; previousState: string }>(tx, projectId, id, {
    set: 'state = $3, updated_at = $4',
    old: 'state',
    returning: 'c.id::text AS "id", c.state AS "state", old.state AS "previousState"',
  }, [state, now]);
}

const MAX_BIGINT = 9223372036854775807n;

/**
 * A message by the lookup rule of GET /v1/messages/{id}: an id of digits only is the numeric
 * message id, anything else the channel's `wamid`. Undefined when the project has no such message.
 */
// A `pending` message (its send's outcome not known yet, lib/messaging/send-message.ts) is not
// shown: it has no wamid yet, and it may turn out never to have been sent.
export async function findMessageRow(tx: Tx, projectId: string, idOrWamid: string): Promise<(MessageRow & MessageCustomerRow) | undefined> {
  // The message's customer: its conversation's contact as it is now.
  const withCustomer = (where: string) => `SELECT ${MESSAGE_COLUMNS},
      ct.phone AS "customerPhone", ct.user_id AS "customerUserId", ct.username AS "customerUsername"
    FROM (SELECT * FROM messages WHERE project_id = $1 AND ${where} AND status <> 'pending') m
    LEFT JOIN conversations cv ON cv.id = m.conversation_id
    LEFT JOIN contacts ct ON ct.id = cv.contact_id`;
  if (/^[0-9]+$/.test(idOrWamid)) {
    const id = BigInt(idOrWamid);
    if (id < 1n || id > MAX_BIGINT) return undefined;
    return (await queryRows<MessageRow & MessageCustomerRow>(tx, withCustomer('id = $2::bigint'), projectId, id.toString()))[0];
  }
  return (await queryRows<MessageRow & MessageCustomerRow>(tx, withCustomer('wamid = $2'), projectId, idOrWamid))[0];
}

/**
 * The conversation of a contact (identity.ts resolves who it is), for an inbound message (outbound sends record theirs in the send ledger), created when
 * missing, its activity moved to `at`.
 */
export async function upsertConversation(tx: Prisma.TransactionClient, projectId: string, contactId: bigint, at: Date, opts: { inbound: boolean }) {
  const contact = { id: contactId };
  const existing = await tx.conversation.findUnique({ where: { projectId_contactId: { projectId, contactId: contact.id } } });
  if (!existing) {
    return tx.conversation.create({
      data: { projectId, contactId: contact.id, lastMessageAt: at, lastInboundAt: opts.inbound ? at : null },
      include: { contact: true },
    });
  }
  // Activity only moves forward, so a late or replayed message never pulls a conversation down;
  // the order moves only when another conversation is ahead (order.ts).
  const lastMessageAt = existing.lastMessageAt > at ? existing.lastMessageAt : at;
  const behind = at > existing.orderAt && (await tx.conversation.findFirst({
    where: { projectId, OR: [{ orderAt: { gt: existing.orderAt } }, { orderAt: existing.orderAt, id: { gt: existing.id } }] },
    select: { id: true },
  })) !== null;
  return tx.conversation.update({
    where: { id: existing.id },
    data: {
      lastMessageAt,
      ...(behind ? { orderAt: lastMessageAt } : {}),
      ...(opts.inbound && (!existing.lastInboundAt || existing.lastInboundAt < at) ? { lastInboundAt: at } : {}),
      // The customer wrote: a resolved or snoozed conversation is open again (queue.ts).
      ...(opts.inbound && existing.resolution !== 'open' ? { resolution: 'open', snoozedUntil: null } : {}),
    },
    include: { contact: true },
  });
}

/**
 * An inbound message's update of its conversation at `at` (SQL), for each row of `from` (a CTE with
 * `conversation_id`): the statement's form of upsertConversation's update with inbound: true
 * (lib/messaging/inbound-statement.ts); the caller adds its RETURNING (alias `c`):
 * activity and the window only move forward, the order moves only when another conversation is
 * ahead (order.ts). Computed from the locked row, so a concurrent send's update is not lost.
 */
export function inboundActivityUpdateSql(from: string, at: string, updatedAt: string): string {
  return `UPDATE conversations c SET last_message_at = GREATEST(c.last_message_at, ${at}),
    last_inbound_at = CASE WHEN c.last_inbound_at IS NULL OR c.last_inbound_at < ${at} THEN ${at} ELSE c.last_inbound_at END,
    resolution = 'open', snoozed_until = NULL,
    order_at = CASE
      WHEN ${at} > c.order_at AND EXISTS (
        SELECT 1 FROM conversation_order ahead
        WHERE ahead.project_id = c.project_id AND (ahead.order_at, ahead.conversation_id) > (c.order_at, c.id))
      THEN GREATEST(c.last_message_at, ${at})
      ELSE c.order_at END,
    updated_at = ${updatedAt}
    FROM ${from} WHERE c.id = ${from}.conversation_id`;
}

/**
 * The send ledger's conversations of a batch, inside its one statement: `select` yields
 * (project_id, contact_id, last_message_at, created_at, updated_at); an existing conversation has
 * its activity moved forward (order.ts). The caller adds its RETURNING.
 */
export function upsertConversationsSql(select: string): string {
  return `INSERT INTO conversations (project_id, contact_id, last_message_at, created_at, updated_at)
          ${select}
          ON CONFLICT (project_id, contact_id) DO UPDATE SET ${MESSAGE_ACTIVITY_SET_SQL}`;
}

/**
 * A contact's conversation for activity that is not the customer's message (a call, a group's
 * creation): created when missing, else its activity moved forward to `at` as a send moves it
 * (upsertConversationsSql); its id. One statement, on either client.
 */
export async function touchConversation(tx: Tx, projectId: string, contactId: bigint, at: Date): Promise<bigint> {
  const [row] = await queryRows<{ id: bigint }>(tx,
    `${upsertConversationsSql('SELECT $1, $2::bigint, $3::timestamptz, $3::timestamptz, $3::timestamptz')} RETURNING id`, projectId, String(contactId), at);
  return row.id;
}

/** A merge's conversation of the gone contact, once its messages moved to the kept one. */
export async function deleteConversation(tx: Tx, id: bigint): Promise<void> {
  await execute(tx, `DELETE FROM conversations WHERE id = $1::bigint`, String(id));
}

/** A merge's kept conversation takes the merged activity and state (identity.ts says which). */
export async function absorbConversation(
  tx: Tx,
  id: bigint,
  merged: { state: string; lastMessageAt: Date; lastInboundAt: Date | null; orderAt: Date },
  at: Date,
): Promise<void> {
  await execute(tx, 
    `UPDATE conversations SET state = $2, last_message_at = $3, last_inbound_at = $4, order_at = GREATEST(order_at, $5), updated_at = $6 WHERE id = $1::bigint`,
    String(id), merged.state, merged.lastMessageAt, merged.lastInboundAt, merged.orderAt, at,
  );
}

/** A merge's only conversation, of the gone contact, moves to the kept contact. */
export async function moveConversation(tx: Tx, id: bigint, toContact: bigint, at: Date): Promise<void> {
  await execute(tx, `UPDATE conversations SET contact_id = $1::bigint, updated_at = $3 WHERE id = $2::bigint`, String(toContact), String(id), at);
}

/**
 * Sets (or clears, `accountId` null) the conversation's assignee and returns it with the one it
 * replaced, in one statement over the locked row (two concurrent changes each report what they
 * replaced). Undefined when the conversation is not the project's.
 */
export async function setConversationAssignee(
  tx: Tx,
  projectId: string,
  id: bigint,
  accountId: string | null,
  now: Date,
): Promise<{ id: string; assigneeId: string | null; previousAssigneeId: string | null } | undefined> {
  return changeLockedRow<{ id: string; assigneeId: string | null; previousAssigneeId: string | null }>(tx, projectId, id, {
    set: 'assignee_id = $3, assigned_at = CASE WHEN $3::text IS NULL THEN NULL ELSE $4::timestamptz END, updated_at = $4',
    old: 'assignee_id',
    returning: 'c.id::text AS "id", c.assignee_id AS "assigneeId", old.assignee_id AS "previousAssigneeId"',
  }, [accountId, now]);
}

/** Replaces the conversation's labels, returning them with the ones they replaced (as setConversationAssignee). */
export async function setConversationLabels(
  tx: Tx,
  projectId: string,
  id: bigint,
  labels: string[],
  now: Date,
): Promise<{ id: string; labels: string[]; previousLabels: string[] } | undefined> {
  const r = await changeLockedRow<{ id: string; labels: string[]; previousLabels: string[] | null }>(tx, projectId, id, {
    set: 'labels = $3::text[], updated_at = $4',
    old: 'labels',
    returning: 'c.id::text AS "id", c.labels AS "labels", old.labels AS "previousLabels"',
  }, [labels, now]);
  return r && { id: r.id, labels: r.labels, previousLabels: r.previousLabels ?? [] };
}

/** The labels in use in the project, most used first (the inbox's label filter). */
export async function projectLabels(tx: Tx, projectId: string, limit = 50): Promise<string[]> {
  const rows = await queryRows<{ label: string }>(tx,
    `SELECT l AS label FROM conversations c, unnest(c.labels) l WHERE c.project_id = $1 AND c.labels <> '{}'
     GROUP BY l ORDER BY count(*) DESC, l LIMIT $2`,
    projectId, limit,
  );
  return rows.map((r) => r.label);
}

/**
 * A person removed from a project's team hands on what they held: their conversations of that
 * project are unassigned (inside the removal's transaction). Returns the conversations' ids.
 */
export async function unassignAccount(tx: Tx, projectId: string, accountId: string, at: Date): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(tx,
    `UPDATE conversations SET assignee_id = NULL, assigned_at = NULL, updated_at = $3 WHERE project_id = $1 AND assignee_id = $2 RETURNING id::text AS id`,
    projectId, accountId, at,
  );
  return rows.map((r) => r.id);
}

/**
 * A person answered from the Business app (an echo): the conversation is the person's, as when
 * one takes it over in the dashboard, so the bot stays quiet (lib/messaging/coexistence.ts).
 */
export async function holdForPerson(tx: Prisma.TransactionClient, id: bigint, now: Date): Promise<{ state: string; previousState: string }> {
  const before = await tx.conversation.findUniqueOrThrow({ where: { id }, select: { state: true } });
  if (before.state !== HUMAN_STATE) await tx.conversation.update({ where: { id }, data: { state: HUMAN_STATE, updatedAt: now } });
  return { state: HUMAN_STATE, previousState: before.state };
}

/**
 * Who holds the customer's thread at the channel (docs/coexistence.md): `null` is this project's
 * app, else the other app's id. Returns the holder it replaced; undefined when the conversation
 * is not the project's. The row is locked while the previous holder is read.
 */
export async function setThreadHolder(tx: Tx, projectId: string, id: bigint, holder: string | null, now: Date): Promise<{ previous: string | null; since: Date } | undefined> {
  return changeLockedRow<{ previous: string | null; since: Date }>(tx, projectId, id, {
    set: 'thread_holder = $3, thread_holder_since = $4, updated_at = $4',
    old: 'thread_holder',
    returning: 'old.thread_holder AS "previous", c.thread_holder_since AS "since"',
  }, [holder, now]);
}

/**
 * The team's resolution (queue.ts): `open`, `resolved`, or `snoozed` until `until`. Returns it with
 * the one it replaced as read at `now` (a passed snooze reads open), over the locked row;
 * undefined when the conversation is not the project's.
 */
export async function setConversationResolution(
  tx: Tx,
  projectId: string,
  id: bigint,
  resolution: 'open' | 'resolved' | 'snoozed',
  until: Date | null,
  now: Date,
): Promise<{ id: string; previousResolution: string; previousUntil: Date | null } | undefined> {
  return changeLockedRow<{ id: string; previousResolution: string; previousUntil: Date | null }>(tx, projectId, id, {
    set: 'resolution = $3, snoozed_until = $4, updated_at = $5',
    old: 'resolution, snoozed_until',
    returning: 'c.id::text AS "id", old.resolution AS "previousResolution", old.snoozed_until AS "previousUntil"',
  }, [resolution, until, now]);
}

/** Assigns an unassigned conversation (auto-assignment, lib/inbox/auto-assign.ts); false when someone holds it already or it is not the project's. */
export async function assignIfUnassigned(tx: Tx, projectId: string, id: bigint, accountId: string, now: Date): Promise<boolean> {
  const changed = await execute(tx,
    `UPDATE conversations SET assignee_id = $3, assigned_at = $4, updated_at = $4 WHERE project_id = $1 AND id = $2::bigint AND assignee_id IS NULL`,
    projectId, id.toString(), accountId, now,
  );
  return changed === 1;
}
