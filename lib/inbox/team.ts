/**
 * The team's hold on a conversation (issue 60): who handles it (a member of the project's
 * dashboard, any role) and its labels. The same functions serve the API (an integration or an
 * agent does what a person does) and the dashboard's inbox; each change and its event
 * (`conversation.assigned`, `conversation.labels_changed`) are written in one transaction, and an
 * event fires only when something changed.
 *
 * Assigning is not taking over: the state (`handover`, which silences the bot) is its own change.
 */
import type { components } from '../../generated/api.js';
import { ApiError } from '../platform/errors.js';
import { inTransaction } from '../platform/db/transaction.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import type { Database } from '../platform/db/database.js';
import { recordEvent } from '../webhooks/events.js';
import { setConversationAssignee, setConversationLabels } from '../conversations/conversations.js';
import type { Author } from '../conversations/authors.js';
import type { AuthContext } from '../access/types.js';

export type MemberView = components['schemas']['Member'];

export const MAX_LABELS = 20;
const LABEL = /^[a-z0-9][a-z0-9 ._-]{0,39}$/;

/** The project's members by email (any case); undefined when the email is not one of them. */
export async function findMember(tx: Tx, projectId: string, email: string): Promise<MemberView | undefined> {
  const rows = await queryRows<MemberView>(tx,
    `SELECT a.id, a.email FROM dashboard_accounts a JOIN dashboard_memberships m ON m.account_id = a.id AND m.project_id = $1 WHERE a.email = lower($2)`,
    projectId, email.trim(),
  );
  return rows[0];
}

/** Every member of the project, by email (the inbox's assign menu). */
export async function listMembers(tx: Tx, projectId: string): Promise<MemberView[]> {
  return queryRows<MemberView>(tx,
    `SELECT a.id, a.email FROM dashboard_accounts a JOIN dashboard_memberships m ON m.account_id = a.id AND m.project_id = $1 ORDER BY a.email`,
    projectId,
  );
}

async function memberById(tx: Tx, id: string | null): Promise<MemberView | null> {
  if (!id) return null;
  const rows = await queryRows<MemberView>(tx, 'SELECT id, email FROM dashboard_accounts WHERE id = $1', id);
  return rows[0] ?? null;
}

export interface AssignmentChange {
  id: number;
  assignee: MemberView | null;
  previous_assignee: MemberView | null;
}

/**
 * Assigns the conversation to the member `email` (null: unassigns it). 400 `unknown_member` for
 * an email that is not a member of the project; undefined when the conversation is not the project's.
 */
export async function assign(db: Pick<Database, 'pool' | 'sql'>, projectId: string, id: bigint, email: string | null, by: Author, now: Date): Promise<AssignmentChange | undefined> {
  const member = email === null ? null : await findMember(db.sql, projectId, email);
  if (member === undefined) {
    throw new ApiError('unknown_member', `${email} is not a member of this project's team; invite them on the dashboard's People page first.`, {
      fields: [{ field: 'email', message: 'is not a member of the project' }],
    });
  }
  return inTransaction(db.pool, async (tx) => {
    const changed = await setConversationAssignee(tx, projectId, id, member?.id ?? null, now);
    if (!changed) return undefined;
    const previous = changed.previousAssigneeId === member?.id ? member : await memberById(tx, changed.previousAssigneeId);
    const out: AssignmentChange = { id: Number(changed.id), assignee: member, previous_assignee: previous };
    if (changed.previousAssigneeId !== (member?.id ?? null)) {
      await recordEvent(tx, projectId, 'conversation.assigned', { conversation_id: out.id, assignee: out.assignee, previous_assignee: out.previous_assignee, by }, now);
    }
    return out;
  });
}

/**
 * Labels as stored: trimmed, lower case, a repeat once, sorted. 400 `invalid_request` naming the
 * first bad one (the contract's pattern, checked again for the dashboard's form).
 */
export function normalizeLabels(input: unknown[]): string[] {
  const out = new Set<string>();
  input.forEach((raw, i) => {
    const label = typeof raw === 'string' ? raw.trim().toLowerCase() : '';
    if (!LABEL.test(label)) {
      const message = 'must be 1 to 40 letters, digits, spaces, ".", "_" or "-", starting with a letter or a digit';
      throw new ApiError('invalid_request', `labels[${i}] ${message}.`, { fields: [{ field: `labels[${i}]`, message }] });
    }
    out.add(label);
  });
  if (out.size > MAX_LABELS) {
    throw new ApiError('invalid_request', `A conversation has at most ${MAX_LABELS} labels.`, { fields: [{ field: 'labels', message: `at most ${MAX_LABELS}` }] });
  }
  return [...out].sort();
}

export interface LabelsChange {
  id: number;
  labels: string[];
  previous_labels: string[];
}

/** Replaces the labels (normalizeLabels); undefined when the conversation is not the project's. */
export async function relabel(db: Pick<Database, 'pool'>, projectId: string, id: bigint, labels: unknown[], by: Author, now: Date): Promise<LabelsChange | undefined> {
  const wanted = normalizeLabels(labels);
  return inTransaction(db.pool, (tx) => writeLabels(tx, projectId, id, wanted, by, now));
}

/** Writes the labels in the caller's transaction; the event goes only when the set changed. */
async function writeLabels(tx: Tx, projectId: string, id: bigint, labels: string[], by: Author, now: Date): Promise<LabelsChange | undefined> {
  const changed = await setConversationLabels(tx, projectId, id, labels, now);
  if (!changed) return undefined;
  const out: LabelsChange = { id: Number(changed.id), labels: changed.labels, previous_labels: changed.previousLabels };
  if (out.labels.join('\n') !== out.previous_labels.join('\n')) {
    await recordEvent(tx, projectId, 'conversation.labels_changed', { conversation_id: out.id, labels: out.labels, previous_labels: out.previous_labels, by }, now);
  }
  return out;
}

/**
 * Adds and removes labels, keeping the others (issue 68, item 3): a change made from a stale read
 * (a colleague labelled meanwhile) keeps the colleague's labels, where a whole set would drop them.
 * The row is locked while the set is read, so two concurrent changes both land. 400 for a label in
 * both lists or a result past MAX_LABELS; undefined when the conversation is not the project's.
 */
export async function changeLabels(db: Pick<Database, 'pool'>, projectId: string, id: bigint, delta: { add?: unknown[]; remove?: unknown[] }, by: Author, now: Date): Promise<LabelsChange | undefined> {
  const add = normalizeDelta(delta.add ?? [], 'add');
  const remove = normalizeDelta(delta.remove ?? [], 'remove');
  const both = add.find((l) => remove.includes(l));
  if (both !== undefined) {
    throw new ApiError('invalid_request', `"${both}" is both added and removed.`, { fields: [{ field: 'remove', message: `"${both}" is also in add` }] });
  }
  return inTransaction(db.pool, async (tx) => {
    const rows = await queryRows<{ labels: string[] }>(tx, 'SELECT labels FROM conversations WHERE project_id = $1 AND id = $2::bigint FOR UPDATE', projectId, id.toString());
    if (!rows[0]) return undefined;
    const next = normalizeLabels([...rows[0].labels.filter((l) => !remove.includes(l)), ...add]);
    return writeLabels(tx, projectId, id, next, by, now);
  });
}

/** One list of a delta, normalized; its bad label is named by the list's field. */
function normalizeDelta(input: unknown[], field: 'add' | 'remove'): string[] {
  try {
    return normalizeLabels(input);
  } catch (e) {
    if (e instanceof ApiError && e.details && Array.isArray((e.details as { fields?: unknown }).fields)) {
      const fields = (e.details as { fields: Array<{ field: string; message: string }> }).fields.map((f) => ({ ...f, field: f.field.replace(/^labels/, field) }));
      throw new ApiError('invalid_request', e.message.replace(/^labels/, field), { fields });
    }
    throw e;
  }
}

/** The API's caller: the key (its name), or the agent's connection (its name). One read by primary key. */
export async function credentialAuthor(tx: Tx, auth: AuthContext): Promise<Author> {
  const c = auth.credential;
  if (c.kind === 'api_key') {
    const rows = await queryRows<{ name: string }>(tx, 'SELECT name FROM api_keys WHERE id = $1', c.id);
    return { kind: 'api_key', id: c.id, name: rows[0]?.name ?? null };
  }
  const rows = await queryRows<{ name: string }>(tx, 'SELECT name FROM agent_connections WHERE id = $1', c.connectionId);
  return { kind: 'agent', id: c.connectionId, name: rows[0]?.name ?? null };
}
