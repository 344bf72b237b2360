/**
 * The dashboard's read-only look at a project's customers: contacts (search by phone, name or
 * WhatsApp username; consent; tags) and conversations (latest first; one conversation's messages
 * with their statuses and its state), so an operator can find the customer a campaign or a bot
 * talked to. Reads only; always scoped by the project.
 */
import type { Deps } from '../deps.js';
import { DashboardRefusal } from './refusal.js';

type ReadDeps = Pick<Deps, 'db'>;
const PAGE = 50;

export interface ContactRow {
  id: string;
  phone: string;
  name: string | null;
  username: string | null;
  tags: string[];
  opted_in: boolean;
  opted_in_at: Date | null;
  opted_out_at: Date | null;
  conversation_id: string | null;
  updated_at: Date;
}

/** Contacts matching `q` (digits of a phone, part of a name or username), newest change first. */
export async function contactsOf(deps: ReadDeps, projectId: string, q: string): Promise<ContactRow[]> {
  const term = q.trim().slice(0, 100);
  const digits = term.replace(/[^0-9]/g, '');
  const values: unknown[] = [projectId];
  let where = 'c.project_id = $1';
  if (term) {
    values.push(`%${term.replace(/[\\%_]/g, (m) => '\\' + m)}%`);
    const conds = [`c.name ILIKE $2`, `c.attributes ->> 'username' ILIKE $2`];
    if (digits.length >= 3) conds.push(`c.phone LIKE $${values.push(`%${digits}%`)}`);
    where += ` AND (${conds.join(' OR ')})`;
  }
  const { rows } = await deps.db.pool.query<ContactRow>(
    `SELECT c.id::text, c.phone, c.name, c.attributes ->> 'username' AS username, c.tags, c.opted_in, c.opted_in_at, c.opted_out_at,
            v.id::text AS conversation_id, c.updated_at
     FROM contacts c LEFT JOIN conversations v ON v.project_id = c.project_id AND v.contact_id = c.id
     WHERE ${where} ORDER BY c.updated_at DESC, c.id DESC LIMIT ${PAGE}`,
    values,
  );
  return rows;
}

export interface ConversationRow {
  id: string;
  phone: string;
  name: string | null;
  state: string;
  last_message_at: Date;
  messages: number;
}

export async function conversationsOf(deps: ReadDeps, projectId: string): Promise<ConversationRow[]> {
  const { rows } = await deps.db.pool.query<ConversationRow>(
    `SELECT v.id::text, c.phone, c.name, v.state, v.last_message_at,
            (SELECT count(*)::int FROM messages m WHERE m.conversation_id = v.id) AS messages
     FROM conversations v JOIN contacts c ON c.id = v.contact_id
     WHERE v.project_id = $1 ORDER BY v.last_message_at DESC, v.id DESC LIMIT ${PAGE}`,
    [projectId],
  );
  return rows;
}

export interface MessageRow {
  wamid: string;
  direction: string;
  type: string;
  text: string | null;
  status: string;
  error: string | null;
  sent_at: Date;
  status_at: Date;
}

export async function conversationDetail(deps: ReadDeps, projectId: string, id: string) {
  if (!/^[0-9]{1,18}$/.test(id)) throw new DashboardRefusal(404, 'No such conversation in this project.');
  const { rows } = await deps.db.pool.query<ConversationRow & { opted_in: boolean; opted_out_at: Date | null; tags: string[] }>(
    `SELECT v.id::text, c.phone, c.name, v.state, v.last_message_at, c.opted_in, c.opted_out_at, c.tags, 0 AS messages
     FROM conversations v JOIN contacts c ON c.id = v.contact_id WHERE v.project_id = $1 AND v.id = $2`,
    [projectId, id],
  );
  if (!rows[0]) throw new DashboardRefusal(404, 'No such conversation in this project.');
  const messages = await deps.db.pool.query<MessageRow>(
    `SELECT wamid, direction, type,
            COALESCE(content ->> 'text', content -> 'text' ->> 'body', content -> 'template' ->> 'name', content ->> 'caption') AS text,
            status, COALESCE(error ->> 'title', error ->> 'message') AS error, sent_at, status_at
     FROM messages WHERE project_id = $1 AND conversation_id = $2 ORDER BY sent_at DESC, id DESC LIMIT 200`,
    [projectId, id],
  );
  return { conversation: rows[0], messages: messages.rows };
}
