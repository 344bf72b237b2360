/** Conversations: the recent-activity list, one conversation, its messages, and the state change. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';
import { cursorId, cursorScope, cursorSecretOf, cursorTime, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/cursor.js';
import { conversationView, messageView } from '../lib/views.js';
import {
  conversationExists,
  findConversationRow,
  isKnownState,
  knownStates,
  listConversationRows,
  listMessageRows,
  setConversationState,
  type ConversationFilters,
  type ConversationKey,
} from '../lib/conversations.js';
import { phoneFilter } from '../lib/contacts.js';

/** The path id: the contract's pattern (`^[1-9][0-9]{0,17}$`) guarantees it fits a bigint. */
function pathId(raw: string): bigint {
  if (!/^[1-9][0-9]{0,17}$/.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw}": a positive integer is expected.`);
  return BigInt(raw);
}

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
  if (q.since !== undefined) {
    const since = new Date(String(q.since));
    if (Number.isNaN(since.getTime())) {
      throw new ApiError('invalid_request', 'since must be a date-time.', { fields: [{ field: 'query.since', message: 'must be a date-time' }] });
    }
    filters.since = since;
  }
  const scope = cursorScope('listConversations', projectId, {
    state: filters.state,
    phone: filters.phone,
    since: filters.since?.getTime(),
  });
  const secret = cursorSecretOf(deps);
  let after: ConversationKey | undefined;
  if (q.cursor !== undefined) {
    const payload = decodeCursor(String(q.cursor), scope, secret);
    if (payload.length !== 2) throw invalidCursor();
    after = { lastMessageAt: cursorTime(payload[0]), id: cursorId(payload[1]) };
  }
  const rows = await listConversationRows(deps.db.pool, projectId, filters, after, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const nextCursor =
    rows.length > take && last ? encodeCursor([last.lastMessageAt.getTime(), String(last.id)], scope, secret) : null;
  const now = deps.clock.now();
  return { data: { conversations: page.map((r) => conversationView(r, now)), nextCursor } };
};

export const getConversation: Handler<operations['getConversation']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const row = await findConversationRow(deps.db.pool, req.auth!.project.id, id);
  if (!row) throw notFound(id);
  return { data: { conversation: conversationView(row, deps.clock.now()) } };
};

export const listConversationMessages: Handler<operations['listConversationMessages']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const id = pathId(req.params.id);
  const take = pageSize(req.query.limit);
  if (!(await conversationExists(deps.db.pool, projectId, id))) throw notFound(id);
  const scope = cursorScope('listConversationMessages', projectId, { conversation: id.toString() });
  const secret = cursorSecretOf(deps);
  let afterId: bigint | undefined;
  if (req.query.cursor !== undefined) {
    const payload = decodeCursor(String(req.query.cursor), scope, secret);
    if (payload.length !== 1) throw invalidCursor();
    afterId = cursorId(payload[0]);
  }
  const rows = await listMessageRows(deps.db.pool, projectId, id, afterId, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const nextCursor = rows.length > take && last ? encodeCursor([String(last.id)], scope, secret) : null;
  return { data: { messages: page.map(messageView), nextCursor } };
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
  const pool = deps.db.pool;
  if (!(await conversationExists(pool, projectId, id))) throw notFound(id);
  if (!(await isKnownState(pool, projectId, state))) {
    const known = await knownStates(pool, projectId);
    const listed = known.slice(0, LISTED_STATES).join(', ') + (known.length > LISTED_STATES ? `, … (${known.length - LISTED_STATES} more)` : '');
    throw new ApiError('INVALID_STATE', `Unknown state "${state}". Known values: ${listed}.`, { known_states: known });
  }
  const changed = await setConversationState(pool, projectId, id, state, deps.clock.now());
  if (!changed) throw notFound(id); // deleted meanwhile
  return { data: { conversation: { id: Number(changed.id), state: changed.state, previous_state: changed.previousState } } };
};
