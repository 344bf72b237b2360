/**
 * Private notes on a conversation (issue 60): the team's, never sent to the customer (no message,
 * no channel call, no quota). This module is the only writer of `conversation_notes`; a note and
 * its `conversation.note_added` event are written in one transaction.
 */
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import type { Database } from '../platform/db/database.js';
import { recordEvent } from '../webhooks/events.js';
import type { Author } from '../conversations/authors.js';

export type NoteView = components['schemas']['ConversationNote'];

/** Longest note, in characters. */
export const MAX_NOTE_CHARS = 4096;
/** Most notes one conversation keeps: a bound on what a page of the inbox reads and a runaway writer. */
export const MAX_NOTES_PER_CONVERSATION = 1000;

interface NoteRow {
  id: string;
  conversationId: string;
  body: string;
  author: Author;
  createdAt: Date;
}

export function noteView(r: NoteRow): NoteView {
  return { id: Number(r.id), conversation_id: Number(r.conversationId), body: r.body, author: r.author, created_at: r.createdAt.toISOString() };
}

const COLUMNS = `id::text AS "id", conversation_id::text AS "conversationId", body, author, created_at AS "createdAt"`;

/**
 * Writes the note, its event and its mentions (the colleagues' account ids it names, mentions.ts),
 * in one transaction. Undefined when the conversation is not the project's.
 */
export async function addNote(db: Pick<Database, 'pool'>, projectId: string, conversationId: bigint, body: string, author: Author, now: Date, mentions: readonly string[] = []): Promise<NoteView | undefined> {
  return inTransaction(db.pool, async (tx) => {
    // The conversation row is locked, so two writers cannot both pass the count at its limit.
    const conv = await queryRows(tx, 'SELECT 1 FROM conversations WHERE project_id = $1 AND id = $2::bigint FOR UPDATE', projectId, conversationId.toString());
    if (conv.length !== 1) return undefined;
    const [count] = await queryRows<{ n: number }>(tx, 'SELECT count(*)::int AS n FROM conversation_notes WHERE conversation_id = $1::bigint', conversationId.toString());
    if (count.n >= MAX_NOTES_PER_CONVERSATION) {
      throw new ApiError('note_limit_reached', `This conversation already has ${MAX_NOTES_PER_CONVERSATION} notes, the most it keeps.`, { limit: MAX_NOTES_PER_CONVERSATION });
    }
    const rows = await queryRows<NoteRow>(tx,
      `INSERT INTO conversation_notes (project_id, conversation_id, body, author, created_at) VALUES ($1, $2::bigint, $3, $4::jsonb, $5)
       RETURNING ${COLUMNS}`,
      projectId, conversationId.toString(), body, JSON.stringify(author), now,
    );
    const note = noteView(rows[0]);
    if (mentions.length) {
      // Only the project's members are told (a name typed for someone who left is no notification).
      await execute(tx,
        `INSERT INTO note_mentions (project_id, conversation_id, note_id, account_id, created_at)
         SELECT $1, $2::bigint, $3::bigint, m.account_id, $5 FROM dashboard_memberships m WHERE m.project_id = $1 AND m.account_id = ANY($4::text[])
         ON CONFLICT (note_id, account_id) DO NOTHING`,
        projectId, conversationId.toString(), String(note.id), [...new Set(mentions)], now,
      );
    }
    await recordEvent(tx, projectId, 'conversation.note_added', { conversation_id: note.conversation_id, note }, now);
    return note;
  });
}

/** One page of a conversation's notes, newest first (`afterId`: the last id of the previous page). */
export async function listNotes(tx: Tx, projectId: string, conversationId: bigint, afterId: bigint | undefined, take: number): Promise<NoteRow[]> {
  const values: unknown[] = [projectId, conversationId.toString(), take];
  if (afterId !== undefined) values.push(afterId.toString());
  return queryRows<NoteRow>(tx,
    `SELECT ${COLUMNS} FROM conversation_notes WHERE project_id = $1 AND conversation_id = $2::bigint ${afterId !== undefined ? 'AND id < $4::bigint' : ''}
     ORDER BY id DESC LIMIT $3`,
    ...values,
  );
}

/** A note that names the person, not yet seen by them: the inbox's notification. */
export interface MentionView {
  conversation_id: number;
  note_id: number;
  body: string;
  author: Author;
  created_at: string;
}

/** The person's unseen mentions in the project, newest first, and how many there are (counted up to `cap`). */
export async function unseenMentions(tx: Tx, projectId: string, accountId: string, take: number, cap = 100): Promise<{ mentions: MentionView[]; count: number }> {
  const rows = await queryRows<{ conversation_id: string; note_id: string; body: string; author: Author; created_at: Date }>(tx,
    `SELECT m.conversation_id::text, m.note_id::text, n.body, n.author, m.created_at FROM note_mentions m JOIN conversation_notes n ON n.id = m.note_id
      WHERE m.account_id = $1 AND m.project_id = $2 AND m.seen_at IS NULL ORDER BY m.id DESC LIMIT $3`,
    accountId, projectId, take,
  );
  const [c] = await queryRows<{ n: number }>(tx,
    'SELECT count(*)::int AS n FROM (SELECT 1 FROM note_mentions WHERE account_id = $1 AND project_id = $2 AND seen_at IS NULL LIMIT $3) u',
    accountId, projectId, cap,
  );
  return {
    mentions: rows.map((r) => ({ conversation_id: Number(r.conversation_id), note_id: Number(r.note_id), body: r.body, author: r.author, created_at: r.created_at.toISOString() })),
    count: c.n,
  };
}

/** The person opened the conversation: its mentions of them are seen. */
export async function markMentionsSeen(tx: Tx, projectId: string, conversationId: bigint, accountId: string, now: Date): Promise<void> {
  await execute(tx,
    'UPDATE note_mentions SET seen_at = $4 WHERE account_id = $1 AND project_id = $2 AND conversation_id = $3::bigint AND seen_at IS NULL',
    accountId, projectId, conversationId.toString(), now,
  );
}
