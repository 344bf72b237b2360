/**
 * The inbox's queue (issue 68, item 1): which open conversations expect a person, and since when,
 * as SQL conditions over a conversation (alias given) that the lists and marks add to their reads.
 *
 * Policy and why:
 * - Open: `resolution` is `open`, or `snoozed` with its time passed. A snooze ends by reading the
 *   clock given (the service's injectable clock, as a placeholder), not by a job: nothing has to
 *   run for a snoozed conversation to come back, and a test moves the clock instead of sleeping.
 * - Needs a reply: open, and the customer's newest message (never a history-sync one) has no
 *   answer after it. An answer is an outbound message (not failed) by a person (dashboard or the
 *   Business app) or an approved automation: an API key, an agent, the service's own automatic
 *   answers. The bot's, a schedule's and a campaign's messages are no answer: a bot that hands over
 *   ("A colleague will answer you shortly") or answers a photo with its menu leaves the customer
 *   waiting, and a campaign-only conversation (no customer message) never enters the queue until
 *   the customer writes.
 * - Both read the newest messages through `(conversation_id, id DESC)`: one short index walk per
 *   listed conversation.
 */

/** Authors whose outbound message answers the customer (lib/conversations/authors.ts's kinds). */
export const ANSWER_KINDS = ['person', 'api_key', 'agent', 'business_app', 'automation'] as const;

/**
 * A message (alias `m`) that answers the customer. One without a recorded author (sent before
 * authors were, or a campaign's) answers unless its send reference names the bot, a schedule or a
 * campaign (authors.ts reads them the same way): an old answered conversation does not flood the queue.
 */
export function answerSql(m: string): string {
  const kinds = ANSWER_KINDS.map((k) => `'${k}'`).join(', ');
  const unrecorded = `(${m}.author IS NULL AND (${m}.send_ref IS NULL OR (${m}.send_ref NOT LIKE 'snd\\_bot%' AND ${m}.send_ref NOT LIKE 'snd\\_sch%'
    AND NOT EXISTS (SELECT 1 FROM broadcast_recipients b WHERE b.send_ref = ${m}.send_ref))))`;
  return `(${m}.direction = 'outbound' AND ${m}.status NOT IN ('failed', 'pending') AND (${m}.author->>'kind' IN (${kinds}) OR ${unrecorded}))`;
}

/** The conversation (alias `v`) is open at `now` (a placeholder of a timestamptz). */
export function openSql(v: string, now: string): string {
  return `(${v}.resolution = 'open' OR (${v}.resolution = 'snoozed' AND ${v}.snoozed_until <= ${now}::timestamptz))`;
}

/** The resolution as read at `now`: a snooze whose time has passed reads `open`. */
export function resolutionSql(v: string, now: string): string {
  return `(CASE WHEN ${v}.resolution = 'snoozed' AND ${v}.snoozed_until <= ${now}::timestamptz THEN 'open' ELSE ${v}.resolution END)`;
}

/** The customer's newest message is unanswered (whatever the resolution). */
export function unansweredSql(v: string): string {
  return `(${v}.last_inbound_at IS NOT NULL AND (SELECT m.direction FROM messages m
      WHERE m.conversation_id = ${v}.id AND NOT m.history AND (m.direction = 'inbound' OR ${answerSql('m')})
      ORDER BY m.id DESC LIMIT 1) = 'inbound')`;
}

/** Open and expecting a person. */
export function needsReplySql(v: string, now: string): string {
  return `(${openSql(v, now)} AND ${unansweredSql(v)})`;
}

/** Since when the customer waits: their first message after the last answer (null when nothing waits). */
export function waitingSinceSql(v: string): string {
  return `(SELECT min(w.sent_at) FROM messages w
    WHERE w.conversation_id = ${v}.id AND w.direction = 'inbound' AND NOT w.history
      AND w.id > COALESCE((SELECT a.id FROM messages a WHERE a.conversation_id = ${v}.id AND ${answerSql('a')} ORDER BY a.id DESC LIMIT 1), 0))`;
}
