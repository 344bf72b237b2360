/** Contacts: the newest-first list, one contact, and the update of name, tags and attributes. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';
import { cursorId, cursorScope, cursorSecretOf, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/cursor.js';
import { contactView } from '../lib/views.js';
import { contactLimitsOf, findContactRow, listContactRows, parseContactChange, phoneFilter, updateContactRow, type ContactFilters } from '../lib/contacts.js';

function pathId(raw: string): bigint {
  if (!/^[1-9][0-9]{0,17}$/.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw}": a positive integer is expected.`);
  return BigInt(raw);
}

function notFound(id: bigint): ApiError {
  return new ApiError('not_found', `No contact ${id} in this project.`);
}

export const listContacts: Handler<operations['listContacts']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const q = req.query;
  const take = pageSize(q.limit);
  const filters: ContactFilters = {};
  if (q.phone !== undefined) filters.phone = phoneFilter(String(q.phone));
  if (q.name !== undefined) filters.name = String(q.name);
  if (q.tag !== undefined) filters.tag = String(q.tag);
  const scope = cursorScope('listContacts', projectId, { ...filters });
  const secret = cursorSecretOf(deps);
  let afterId: bigint | undefined;
  if (q.cursor !== undefined) {
    const payload = decodeCursor(String(q.cursor), scope, secret);
    if (payload.length !== 1) throw invalidCursor();
    afterId = cursorId(payload[0]);
  }
  const rows = await listContactRows(deps.db.pool, projectId, filters, afterId, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const nextCursor = rows.length > take && last ? encodeCursor([String(last.id)], scope, secret) : null;
  return { data: { contacts: page.map(contactView), nextCursor } };
};

export const getContact: Handler<operations['getContact']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const row = await findContactRow(deps.db.pool, req.auth!.project.id, id);
  if (!row) throw notFound(id);
  return { data: { contact: contactView(row) } };
};

export const updateContact: Handler<operations['updateContact']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const change = parseContactChange(req.body, contactLimitsOf(deps.contract));
  const row = await updateContactRow(deps.db.pool, req.auth!.project.id, id, change, deps.clock.now());
  if (!row) throw notFound(id);
  return { data: { contact: contactView(row) } };
};
