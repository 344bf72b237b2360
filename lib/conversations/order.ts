/**
 * The recent-activity order of conversations (the list's keyset, `order_at`), kept apart from the
 * exact `last_message_at` so that a message's update of its conversation can be HOT.
 *
 * Policy and why: an update that changes an indexed column adds an entry to every index of the
 * table and can never be HOT; a conversation is updated on every message. So `last_message_at`
 * (exact, shown) has no index, and `order_at` (indexed) moves only when the order changes: when
 * another conversation of the project is ahead of this one. A conversation already first stays
 * first whatever its new time, so it keeps its `order_at`; it lags `last_message_at` only while
 * first, and the next conversation to pass it does so with a later time than its exact one, so
 * ordering by `order_at` is ordering by `last_message_at` (two conversations updated at the same
 * instant may tie-break either way).
 *
 * The index on the order lives on `conversation_order` (one narrow row per conversation, kept
 * equal to `order_at` by triggers), so that no per-message update of `conversations` touches an
 * indexed column: those are all HOT, and only a reorder writes an index entry, to the narrow table.
 */

/**
 * The SET items of an `INSERT INTO conversations ... ON CONFLICT (project_id, contact_id) DO
 * UPDATE` that records a message at `EXCLUDED.last_message_at`. Activity only moves forward, so
 * a late or replayed message never pulls a conversation down.
 */
export const MESSAGE_ACTIVITY_SET_SQL = `
  last_message_at = GREATEST(conversations.last_message_at, EXCLUDED.last_message_at),
  updated_at = EXCLUDED.updated_at,
  order_at = CASE
    WHEN EXCLUDED.last_message_at > conversations.order_at AND EXISTS (
      SELECT 1 FROM conversation_order ahead
      WHERE ahead.project_id = conversations.project_id
        AND (ahead.order_at, ahead.conversation_id) > (conversations.order_at, conversations.id))
    THEN GREATEST(conversations.last_message_at, EXCLUDED.last_message_at)
    ELSE conversations.order_at END`;
