/**
 * The console's search and filters over customers (the dashboard's contacts and conversations
 * pages), as SQL conditions the contact and conversation lists add to their keyset reads
 * (contacts.ts, conversations.ts). `param` adds a value and returns its placeholder.
 */

/** Conditions on a contact's conversation. */
export type ConversationCondition = 'needs_reply' | 'unread';

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
 * A conversation (alias `v`) in a condition: `needs_reply`, the customer's message is its newest
 * (nothing went out since; by message id, so two messages in the same millisecond are told apart:
 * one probe of the `(conversation_id, id DESC)` index); `unread`, the customer wrote after a person
 * last opened it in the dashboard (`seen_at`, conversations.ts markConversationSeen).
 */
export function conversationConditionSql(v: string, condition: ConversationCondition): string {
  return condition === 'needs_reply'
    ? `(${v}.last_inbound_at IS NOT NULL AND (SELECT m.direction FROM messages m WHERE m.conversation_id = ${v}.id ORDER BY m.id DESC LIMIT 1) = 'inbound')`
    : `(${v}.last_inbound_at IS NOT NULL AND ${v}.last_inbound_at > COALESCE(${v}.seen_at, '-infinity'::timestamptz))`;
}
