/**
 * A returning customer's message in one statement (issue 49): the message stored once by wamid,
 * its conversation's activity and window moved, the bot's inbox row, `message.received` and the
 * dispatcher's wake-up, all or nothing, as one named prepared statement on the pool.
 *
 * The fast path is exactly a returning customer writing a normal message: one contact matches the
 * phone and/or BSUID, the payload adds nothing to it (no id, username or name to fill in), it has a
 * conversation, and the message is neither a system message (a BSUID change), a flow's reply, nor
 * possibly a consent keyword. Anything else (a new customer, a merge, ids to fill in, a first
 * conversation, those messages) writes nothing here and answers `fallback`: the caller runs the
 * full transaction (lib/messaging/inbound.ts), which is the rule this statement must agree with.
 * Those need writes whose outcome the rest depends on (a contact created or merged, a keyword's
 * consent and its confirmation), rare enough to pay this statement and the transaction.
 *
 * Concurrency, as in the transaction: the contact is locked FOR UPDATE, so messages of one customer
 * are stored one at a time, and a merge (which locks its contacts first) cannot move the
 * conversation underneath. A wamid already stored is seen first; one being stored by a concurrent
 * retry makes the insert do nothing (ON CONFLICT), and every other write hangs off the inserted
 * row, so the retry writes nothing at all (and is answered as a replay, where the transaction's
 * insert failed on the unique key). The conversation's update is computed from its locked row, so
 * a concurrent send's update of it is not lost.
 */
import type { Customer, MessageEvent } from '../channel-port/events.js';
import { inboundActivityUpdateSql } from '../conversations/conversations.js';
import { messageView } from '../conversations/views.js';
import { SERVICE_WINDOW_MS } from '../conversations/window.js';
import { DEFAULT_CONSENT_KEYWORDS, keywordCandidates } from '../consent/keywords.js';
import { dispatchedAtSql, EVENTS_CHANNEL, insertEventsSql } from '../webhooks/events.js';
import { newId } from '../platform/secrets.js';
import { retryDeadlock } from '../platform/db/transaction.js';
import { queryRowsNamed, type Tx } from '../platform/db/tx.js';
import { insertInboundSql } from './ledger.js';

/** What the caller needs once the message is stored (the bot's hand-off). */
export interface StoredInbound {
  message: { id: bigint; type: string };
  contact: { phone: string | null; userId: string | null; username: string | null; name: string | null };
  conversation: { id: bigint; state: string };
  /** The conversation is unassigned and the project assigns automatically (lib/inbox/auto-assign.ts). */
  autoAssign: boolean;
}

/** Longest raw text keywordConsent compares with keywords (lib/consent/signals.ts). */
const KEYWORD_MAX = 60;

/**
 * A loose key of a text: its letters and digits only, compared case-blind. Two texts the keyword
 * rule (lib/consent/keywords.ts: trimmed, inner spaces collapsed, trailing . or ! dropped, upper
 * case) holds equal have equal keys when the keyword is ASCII, so "no key matches and no keyword is
 * beyond ASCII" proves the message is no keyword; a match only means the transaction decides.
 */
function looseKey(text: string): string {
  return text.toUpperCase().replace(/[^A-Z0-9]/g, '').toLowerCase();
}

/** The same key in SQL, for an ASCII keyword `k` (locale-free: translate, not lower()). */
const LOOSE_KEY_SQL = (k: string) => `regexp_replace(translate(${k}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), '[^a-z0-9]', '', 'g')`;

/** The contract's `+<digits>` of a stored phone (views.ts phoneView). */
const PHONE_VIEW_SQL = (p: string) => `CASE WHEN ${p} IS NULL OR ${p} = '' THEN NULL WHEN left(${p}, 1) = '+' THEN ${p} ELSE '+' || ${p} END`;

/** A timestamp as JavaScript's toISOString writes it (milliseconds, Z). */
const ISO_SQL = (t: string) => `to_char((${t}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const WINDOW_END = `upd.last_inbound_at + $16::int * interval '1 millisecond'`;

const TEMPLATE = `WITH seen AS (
    SELECT 1 FROM messages WHERE project_id = $1 AND wamid = $2
  ), found AS (
    -- resolveContact's lookups (by phone, by BSUID), locked as there.
    SELECT id, phone, user_id, parent_user_id, username, name FROM contacts
     WHERE project_id = $1 AND (phone = NULLIF($3::text, '') OR user_id = NULLIF($4::text, ''))
       AND NOT EXISTS (SELECT 1 FROM seen)
     FOR UPDATE
  ), keywords AS (
    -- The project's keywords and the defaults (a superset of the ones keywordsOf reads).
    SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(p.consent_keywords -> l) = 'array' THEN p.consent_keywords -> l END) AS k
      FROM projects p, unnest(ARRAY['opt_out', 'opt_in']) AS l
     WHERE p.id = $1 AND cardinality($18::text[]) > 0
    UNION ALL
    SELECT unnest($19::text[])
  ), gate AS (
    -- One contact the payload adds nothing to (resolveContact would not write it), its
    -- conversation, and a message that is no keyword.
    SELECT f.*, cv.id AS conversation_id FROM found f
      JOIN conversations cv ON cv.project_id = $1 AND cv.contact_id = f.id
     WHERE (SELECT count(*) FROM found) = 1
       AND COALESCE(f.phone, $3) IS NOT DISTINCT FROM f.phone
       AND COALESCE($4, f.user_id) IS NOT DISTINCT FROM f.user_id
       AND COALESCE($5, f.parent_user_id) IS NOT DISTINCT FROM f.parent_user_id
       AND COALESCE($6, f.username) IS NOT DISTINCT FROM f.username
       AND COALESCE(f.name, $7) IS NOT DISTINCT FROM f.name
       AND NOT EXISTS (
         SELECT 1 FROM keywords
          WHERE cardinality($18::text[]) > 0
            AND (octet_length(k) <> char_length(k) OR ${LOOSE_KEY_SQL('k')} = ANY ($18::text[])))
  ), ins AS (
    ${insertInboundSql(`SELECT $1::text, conversation_id, $2::text, $8::text, $9::jsonb, $10::timestamptz, $11::timestamptz FROM gate`)}
    RETURNING id, conversation_id
  ), upd AS (
    ${inboundActivityUpdateSql('ins', '$11::timestamptz', '$12::timestamptz')}
    RETURNING c.id, c.state, c.last_message_at, c.last_inbound_at, c.created_at, c.assignee_id, c.labels, c.thread_holder, c.thread_holder_since
  ), bot AS (
    -- The bot's enqueue (BotHook.enqueueSql, lib/bot/inbox.ts): the message in its inbox, leased
    -- to this instance, committed with the message. Without a bot, these rows alone (unused).
    {{bot}}
  ), ev AS (
    ${insertEventsSql(`SELECT $14, $1, 'message.received',
        jsonb_build_object(
          'conversation_id', upd.id,
          'message', $13::jsonb || jsonb_build_object(
            'id', ins.id, 'conversation_id', ins.conversation_id,
            'customer', jsonb_build_object('phone', ${PHONE_VIEW_SQL('g.phone')}, 'user_id', g.user_id, 'username', g.username),
            'author', jsonb_build_object('kind', 'customer', 'id', NULL, 'name', NULL)),
          'conversation', jsonb_build_object(
            'id', upd.id,
            'contact', jsonb_build_object('id', g.id, 'phone', ${PHONE_VIEW_SQL('g.phone')}, 'user_id', g.user_id, 'username', g.username, 'name', g.name),
            'state', upd.state,
            'status', upd.state,
            'last_message_at', ${ISO_SQL('upd.last_message_at')},
            'last_inbound_at', ${ISO_SQL('upd.last_inbound_at')},
            'window_open', COALESCE($11::timestamptz < ${WINDOW_END}, false),
            'window_expires_at', ${ISO_SQL(WINDOW_END)},
            'created_at', ${ISO_SQL('upd.created_at')},
            -- The team's hold (issue 60), as the API's conversation reads give it.
            'assignee', (SELECT jsonb_build_object('id', a.id, 'email', a.email) FROM dashboard_accounts a WHERE a.id = upd.assignee_id),
            'labels', to_jsonb(COALESCE(upd.labels, '{}'::text[])),
            -- Who holds the thread at the channel (issue 61), as conversationView gives it.
            'thread', jsonb_build_object('held_by', CASE WHEN upd.thread_holder IS NULL THEN 'us' ELSE 'other_app' END,
              'app_id', upd.thread_holder, 'since', ${ISO_SQL('upd.thread_holder_since')}),
            -- A customer's conversation (a group's messages take lib/messaging/group-messages.ts).
            'kind', 'individual', 'group', NULL,
            -- The customer's message opens it again (issue 68): open, no snooze.
            'resolution', 'open', 'snoozed_until', NULL)),
        $11::timestamptz, ${dispatchedAtSql('$1', `'message.received'`, '$11::timestamptz')}
      FROM ins JOIN upd ON upd.id = ins.conversation_id CROSS JOIN gate g`)}
    RETURNING project_id, dispatched_at
  )
  SELECT CASE WHEN EXISTS (SELECT 1 FROM seen) THEN 'seen'
              WHEN ins.id IS NOT NULL THEN 'stored'
              WHEN g.id IS NOT NULL THEN 'replay'
              ELSE 'fallback' END AS outcome,
         ins.id::text AS message_id, upd.id::text AS conversation_id, upd.state,
         g.phone, g.user_id, g.username, g.name,
         -- Auto-assignment's question (lib/inbox/auto-assign.ts), asked here so that a project without it costs no statement more.
         (upd.assignee_id IS NULL AND EXISTS (SELECT 1 FROM inbox_settings s WHERE s.project_id = $1 AND s.auto_assign)) AS auto_assign,
         (SELECT pg_notify($15, project_id) FROM ev WHERE dispatched_at IS NULL LIMIT 1) IS NULL AS quiet
    FROM (SELECT 1) one LEFT JOIN gate g ON true LEFT JOIN ins ON true LEFT JOIN upd ON true`;

/** The inbox rows of the stored message (message_id, project_id, lease_until, created_at), when a bot runs. */
const INBOX_ROWS = 'SELECT ins.id, $1::text, $17::timestamptz, $11::timestamptz FROM ins WHERE $20::boolean';

/**
 * The statement with the bot's inbox insert, or without a bot: two names, as a named statement
 * must keep one text on a connection.
 */
const texts = new Map<string, string>();
function statement(enqueueSql: ((rows: string) => string) | undefined): { name: string; text: string } {
  const bot = enqueueSql ? enqueueSql(INBOX_ROWS) : INBOX_ROWS;
  let text = texts.get(bot);
  if (text === undefined) texts.set(bot, (text = TEMPLATE.replace('{{bot}}', bot)));
  return { name: enqueueSql ? 'inbound-message-for-bot' : 'inbound-message', text };
}

interface Row {
  outcome: 'seen' | 'stored' | 'replay' | 'fallback';
  message_id: string | null;
  conversation_id: string | null;
  state: string | null;
  phone: string | null;
  user_id: string | null;
  username: string | null;
  name: string | null;
  auto_assign: boolean | null;
}

/** A BSUID change or a flow's reply: the transaction's own steps (rekeyContact, flowReplyOf) are needed. */
function needsTransaction(m: MessageEvent): boolean {
  if (m.type === 'system') return true;
  const interactive = m.content.interactive as { type?: unknown } | undefined;
  return m.type === 'interactive' && interactive?.type === 'nfm_reply';
}

/**
 * Stores a returning customer's message in one statement. `stored`, the message is stored (the
 * caller hands it to the bot); `not stored`, the wamid was stored before (nothing written);
 * undefined, this is not the fast path's case and nothing was written: run the transaction.
 */
export async function storeReturningCustomerMessage(
  db: Tx,
  opts: { projectId: string; message: MessageEvent; ids: Customer; content: Record<string, unknown>; now: Date; bot?: { leaseMs: number; enqueueSql: (rows: string) => string } },
): Promise<{ stored: StoredInbound } | 'not stored' | undefined> {
  const { projectId, message: m, ids, now } = opts;
  if (needsTransaction(m)) return undefined;
  const sentAt = m.timestamp ? new Date(Number(m.timestamp) * 1000) : now;
  if (Number.isNaN(sentAt.getTime())) return undefined;
  const type = String(m.type ?? 'unknown').slice(0, 32);
  // The content as stored (JSON), and the message's view of it (ids and customer added in SQL).
  const content = JSON.parse(JSON.stringify(opts.content)) as Record<string, unknown>;
  const view = messageView({ id: 0, wamid: m.channelMessageId, conversationId: 0, direction: 'inbound', type, content, status: 'received', error: null, sentAt, statusAt: now });
  const candidates = keywordCandidates(type, content).filter((c) => c.trim().length > 0 && c.length <= KEYWORD_MAX).map(looseKey);
  const defaults = [...DEFAULT_CONSENT_KEYWORDS.opt_out, ...DEFAULT_CONSENT_KEYWORDS.opt_in];
  const { name, text } = statement(opts.bot?.enqueueSql);
  const rows = await retryDeadlock(() =>
    queryRowsNamed<Row>(
      db, name, text,
      projectId, m.channelMessageId, ids.phone ?? null, ids.userId ?? null, ids.parentUserId ?? null, ids.username ?? null, ids.profileName ?? null,
      type, JSON.stringify(content), sentAt, now,
      // The conversation's updated_at is the wall clock's, as Prisma's @updatedAt writes it in the transaction.
      new Date(),
      JSON.stringify(view), newId('evt', 20), EVENTS_CHANNEL, SERVICE_WINDOW_MS,
      opts.bot ? new Date(now.getTime() + opts.bot.leaseMs) : null,
      candidates, defaults, opts.bot !== undefined,
    ),
  );
  const row = rows[0];
  if (row.outcome === 'fallback') return undefined;
  if (row.outcome !== 'stored') return 'not stored';
  return {
    stored: {
      message: { id: BigInt(row.message_id!), type },
      contact: { phone: row.phone, userId: row.user_id, username: row.username, name: row.name },
      conversation: { id: BigInt(row.conversation_id!), state: row.state! },
      autoAssign: row.auto_assign === true,
    },
  };
}
