/**
 * The console's search and filters over customers (the dashboard's contacts and conversations
 * pages), as SQL conditions the contact and conversation lists add to their keyset reads
 * (contacts.ts, conversations.ts). `param` adds a value and returns its placeholder.
 */
import { needsReplySql, openSql } from './queue.js';

/** Conditions on a contact's conversation. */
export type ConversationCondition = 'needs_reply' | 'unread' | 'open' | 'snoozed' | 'resolved' | 'missed_call';
export const CONVERSATION_CONDITIONS: readonly ConversationCondition[] = ['needs_reply', 'unread', 'open', 'snoozed', 'resolved', 'missed_call'];

/** `text` as a LIKE pattern that matches it literally anywhere (escape character `\`). */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * A contact (alias `ct`) the search finds: part of its name, username (a leading `@` ignored) or
 * business-scoped user id, or, for a search of 3 digits or more written as a phone, part of its phone.
 */
export function contactSearchSql(ct: string, text: string, param: (v: unknown) => string): string {
  const term = text.trim().replace(/^@/, '');
  const like = param(containsPattern(term));
  const conds = [`${ct}.name ILIKE ${like} ESCAPE '\\'`, `${ct}.username ILIKE ${like} ESCAPE '\\'`, `${ct}.user_id ILIKE ${like} ESCAPE '\\'`];
  const digits = term.replace(/[^0-9]/g, '');
  if (digits.length >= 3 && /^[\s\d+\-.()]+$/.test(term)) conds.push(`${ct}.phone LIKE ${param(`%${digits}%`)}`);
  return `(${conds.join(' OR ')})`;
}

/**
 * A conversation (alias `v`) in a condition at `now` (a placeholder: the service's clock, which ends
 * snoozes): `needs_reply`, open and the customer's newest message unanswered (queue.ts); `unread`,
 * the customer wrote after a person last opened it in the dashboard (`seen_at`, conversations.ts
 * markConversationSeen); `open` (the customer has written, or a person holds it: a campaign-only
 * conversation is not one until the customer answers), `snoozed`, `resolved`, by the team's resolution;
 * `missed_call`, the customer's latest call was missed (docs/calls.md).
 */
export function conversationConditionSql(v: string, condition: ConversationCondition, nowParam: string | (() => string)): string {
  // The clock's placeholder is added only where the condition reads it: an unused one has no type for PostgreSQL.
  const now = () => (typeof nowParam === 'string' ? nowParam : nowParam());
  switch (condition) {
    case 'needs_reply': return needsReplySql(v, now());
    case 'unread': return `(${v}.last_inbound_at IS NOT NULL AND ${v}.last_inbound_at > COALESCE(${v}.seen_at, '-infinity'::timestamptz))`;
    case 'open': return `(${openSql(v, now())} AND (${v}.last_inbound_at IS NOT NULL OR ${v}.state = 'handover'))`;
    case 'snoozed': return `(${v}.resolution = 'snoozed' AND ${v}.snoozed_until > ${now()}::timestamptz)`;
    case 'resolved': return `(${v}.resolution = 'resolved')`;
    // The customer's latest call went unanswered (a call back, answered, clears it): a probe of calls (conversation_id, id DESC).
    case 'missed_call': return `((SELECT k.status FROM calls k WHERE k.conversation_id = ${v}.id AND k.direction = 'user_initiated' ORDER BY k.id DESC LIMIT 1) = 'missed')`;
  }
}

/**
 * Conversations (alias `c`, of the project `$project`) with a message whose text has every word of
 * `text` (PostgreSQL full-text over message_search_text, migration message_text_search, through
 * its GIN index: the matching messages are found first, then their conversations).
 */
export function messageSearchSql(c: string, project: string, text: string, param: (v: unknown) => string): string {
  return `${c}.id IN (SELECT m.conversation_id FROM messages m
    WHERE to_tsvector('simple'::regconfig, message_search_text(m.content)) @@ plainto_tsquery('simple'::regconfig, ${param(text.trim())})
      AND m.project_id = ${project})`;
}
