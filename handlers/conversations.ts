/** Conversations: the recent-activity list, one conversation, its messages, and the state change. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import type { AppDeps } from '../http/app-deps.js';
import type { AuthContext } from '../lib/access/types.js';
import type { Author } from '../lib/conversations/authors.js';
import { ApiError } from '../lib/platform/errors.js';
import { positiveId as pathId } from '../http/path-ids.js';
import { cursorScope, cursorSecretOf, pageSize } from '../lib/platform/cursor.js';
import { keysetPage, positions, type KeysetList, type KeysetPage } from '../lib/platform/keyset-page.js';
import { conversationView, messageView } from '../lib/conversations/views.js';
import {
  conversationExists,
  findConversationRow,
  isKnownState,
  knownStates,
  listConversationRows,
  listMessageRows,
  setConversationState,
  conversationPosition,
  type ConversationFilters,
} from '../lib/conversations/conversations.js';
import { phoneFilter } from '../lib/conversations/contacts.js';
import { assign, changeLabels, credentialAuthor, listMembers, relabel } from '../lib/inbox/team.js';
import { mentionedIn } from '../lib/inbox/mentions.js';
import { checkResolution, setResolution } from '../lib/inbox/resolution.js';
import { addNote, listNotes, noteView } from '../lib/inbox/notes.js';
import { controlThread, parseThreadControl } from '../lib/messaging/thread-control.js';


function notFound(id: bigint): ApiError {
  return new ApiError('not_found', `No conversation ${id} in this project.`);
}

export const listConversations: Handler<operations['listConversations']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const q = req.query;
  const take = pageSize(q.limit);
  const filters: ConversationFilters = {};
  if (q.state !== undefined) filters.state = String(q.state);
  if (q.phone !== undefined) filters.phone = phoneFilter(String(q.phone));
  if (q.user_id !== undefined) filters.userId = String(q.user_id);
  if (q.since !== undefined) {
    const since = new Date(String(q.since));
    if (Number.isNaN(since.getTime())) {
      throw new ApiError('invalid_request', 'since must be a date-time.', { fields: [{ field: 'query.since', message: 'must be a date-time' }] });
    }
    filters.since = since;
  }
  if (q.label !== undefined) filters.label = String(q.label).trim().toLowerCase();
  if (q.assignee !== undefined) {
    const a = String(q.assignee).trim();
    filters.assignee = a === 'none' ? null : a === 'any' ? 'any' : { email: a };
  }
  if (q.needs_reply !== undefined) filters.needsReply = String(q.needs_reply) === 'true';
  if (q.resolution !== undefined) filters.resolution = q.resolution;
  const now = deps.clock.now();
  filters.now = now;
  const scope = cursorScope('listConversations', projectId, {
    state: filters.state,
    phone: filters.phone,
    user_id: filters.userId,
    since: filters.since?.getTime(),
    label: filters.label,
    assignee: q.assignee === undefined ? undefined : String(q.assignee).trim().toLowerCase(),
    needs_reply: filters.needsReply,
    resolution: filters.resolution,
  });
  const { page, nextCursor } = await keysetPage(q, {
    scope,
    secret: cursorSecretOf(deps),
    decode: conversationPosition.decode,
    read: (after, take) => listConversationRows(deps.db.sql, projectId, filters, after, take),
    encode: conversationPosition.encode,
  });
  return { data: { conversations: page.map((r) => conversationView(r, now)), nextCursor } };
};

export const getConversation: Handler<operations['getConversation']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const row = await findConversationRow(deps.db.sql, req.auth!.project.id, id);
  if (!row) throw notFound(id);
  return { data: { conversation: conversationView(row, deps.clock.now()) } };
};

/**
 * A page of what one conversation holds (its messages, its notes), listed by `operation`: a bad
 * limit is refused before the conversation is looked up, and one not in the project is 404.
 */
async function pageOfConversation<Row, Position>(
  deps: AppDeps,
  projectId: string,
  id: bigint,
  query: { cursor?: unknown; limit?: unknown },
  operation: string,
  list: Pick<KeysetList<Row, Position>, 'decode' | 'read' | 'encode'>,
): Promise<KeysetPage<Row>> {
  pageSize(query.limit);
  if (!(await conversationExists(deps.db.sql, projectId, id))) throw notFound(id);
  return keysetPage(query, { scope: cursorScope(operation, projectId, { conversation: id.toString() }), secret: cursorSecretOf(deps), ...list });
}

export const listConversationMessages: Handler<operations['listConversationMessages']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const id = pathId(req.params.id);
  const { page, nextCursor } = await pageOfConversation(deps, projectId, id, req.query, 'listConversationMessages', {
    decode: positions.timeAndId,
    read: (after, take) => listMessageRows(deps.db.sql, projectId, id, after, take),
    encode: (r) => [r.sentAt.getTime(), String(r.id)],
  });
  return { data: { messages: page.map((r) => messageView(r)), nextCursor } };
};

/** How many known states the INVALID_STATE message spells out before abbreviating. */
const LISTED_STATES = 50;

export const updateConversationState: Handler<operations['updateConversationState']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const id = pathId(req.params.id);
  // `status` in the body is ignored (deprecated alias); the contract requires `state`.
  const state = req.body?.state;
  if (typeof state !== 'string' || state.length === 0) {
    throw new ApiError('invalid_request', 'state is required.', { fields: [{ field: 'state', message: 'is required' }] });
  }
  const sql = deps.db.sql;
  if (!(await conversationExists(sql, projectId, id))) throw notFound(id);
  if (!(await isKnownState(sql, projectId, state))) {
    const known = await knownStates(sql, projectId);
    const listed = known.slice(0, LISTED_STATES).join(', ') + (known.length > LISTED_STATES ? `, … (${known.length - LISTED_STATES} more)` : '');
    throw new ApiError('INVALID_STATE', `Unknown state "${state}". Known values: ${listed}.`, { known_states: known });
  }
  const changed = await setConversationState(sql, projectId, id, state, deps.clock.now());
  if (!changed) throw notFound(id); // deleted meanwhile
  return { data: { conversation: { id: Number(changed.id), state: changed.state, previous_state: changed.previousState } } };
};

/** Thread control (docs/coexistence.md): pass the thread to another app, take it, release it. */
export const controlConversationThread: Handler<operations['controlConversationThread']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const input = parseThreadControl(req.body);
  return { data: await controlThread(deps, req.auth!.project.id, id, input, 'api') };
};

// The team's operations (issue 60): assignment, labels and private notes, named by who made them.

/** A change to the team's hold made in the credential's name; answers the conversation as changed. */
async function changeByCredential<T>(deps: AppDeps, auth: AuthContext, id: bigint, change: (by: Author, now: Date) => Promise<T | undefined>) {
  const by = await credentialAuthor(deps.db.sql, auth);
  const changed = await change(by, deps.clock.now());
  if (!changed) throw notFound(id);
  return { data: { conversation: changed } };
}

export const assignConversation: Handler<operations['assignConversation']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const email = req.body?.email;
  if (typeof email !== 'string' || !email.trim()) {
    throw new ApiError('invalid_request', 'email is required.', { fields: [{ field: 'email', message: 'is required' }] });
  }
  return changeByCredential(deps, req.auth!, id, (by, now) => assign(deps.db, req.auth!.project.id, id, email, by, now));
};

export const unassignConversation: Handler<operations['unassignConversation']> = async (req, deps) => {
  const id = pathId(req.params.id);
  return changeByCredential(deps, req.auth!, id, (by, now) => assign(deps.db, req.auth!.project.id, id, null, by, now));
};

export const setConversationLabels: Handler<operations['setConversationLabels']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const labels = req.body?.labels;
  if (!Array.isArray(labels)) {
    throw new ApiError('invalid_request', 'labels is required (a list; empty removes them all).', { fields: [{ field: 'labels', message: 'is required' }] });
  }
  return changeByCredential(deps, req.auth!, id, (by, now) => relabel(deps.db, req.auth!.project.id, id, labels, by, now));
};

export const changeConversationLabels: Handler<operations['changeConversationLabels']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const body = req.body ?? {};
  if (body.add === undefined && body.remove === undefined) {
    throw new ApiError('invalid_request', 'add or remove is required (lists of labels).', { fields: [{ field: 'add', message: 'add or remove is required' }] });
  }
  return changeByCredential(deps, req.auth!, id, (by, now) => changeLabels(deps.db, req.auth!.project.id, id, { add: body.add, remove: body.remove }, by, now));
};

/** Resolve, snooze or reopen (lib/inbox/resolution.ts); the customer's next message reopens it. */
export const setConversationResolution: Handler<operations['setConversationResolution']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const now = deps.clock.now();
  const input = checkResolution(req.body ?? {}, now);
  const changed = await setResolution(deps.db.sql, req.auth!.project.id, id, input, now);
  if (!changed) throw notFound(id);
  return { data: { conversation: changed } };
};

export const createConversationNote: Handler<operations['createConversationNote']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const body = typeof req.body?.body === 'string' ? req.body.body.trim() : '';
  if (!body) throw new ApiError('invalid_request', 'body is required: the note\'s text.', { fields: [{ field: 'body', message: 'is required' }] });
  const by = await credentialAuthor(deps.db.sql, req.auth!);
  // Colleagues it @mentions are told in their inbox, as for a note written there (the writer is a key or an agent, never a member).
  const mentions = body.includes('@') ? mentionedIn(body, await listMembers(deps.db.sql, req.auth!.project.id), '') : [];
  const note = await addNote(deps.db, req.auth!.project.id, id, body, by, deps.clock.now(), mentions);
  if (!note) throw notFound(id);
  return { status: 201, data: { note } };
};

export const listConversationNotes: Handler<operations['listConversationNotes']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const id = pathId(req.params.id);
  const { page, nextCursor } = await pageOfConversation(deps, projectId, id, req.query, 'listConversationNotes', {
    decode: positions.id,
    read: (afterId, take) => listNotes(deps.db.sql, projectId, id, afterId, take),
    encode: (r) => [String(r.id)],
  });
  return { data: { notes: page.map(noteView), nextCursor } };
};
