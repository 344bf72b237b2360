/** Contacts: the newest-first list, one contact, and the update of name, tags and attributes. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { ApiError } from '../lib/platform/errors.js';
import { positiveId as pathId } from '../http/path-ids.js';
import { cursorScope, cursorSecretOf } from '../lib/platform/cursor.js';
import { keysetPage, positions } from '../lib/platform/keyset-page.js';
import { contactView } from '../lib/conversations/views.js';
import { findContactRow, listContactRows, parseContactChange, phoneFilter, type ContactFilters } from '../lib/conversations/contacts.js';
import { updateContactRow } from '../lib/conversations/contact-store.js';
import { contactLimitsOf } from '../http/contract-limits.js';
import { readKeywords, writeKeywords } from '../lib/consent/keywords.js';


function notFound(id: bigint): ApiError {
  return new ApiError('not_found', `No contact ${id} in this project.`);
}

export const listContacts: Handler<operations['listContacts']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const q = req.query;
  const filters: ContactFilters = {};
  if (q.phone !== undefined) filters.phone = phoneFilter(String(q.phone));
  if (q.user_id !== undefined) filters.userId = String(q.user_id);
  if (q.name !== undefined) filters.name = String(q.name);
  if (q.tag !== undefined) filters.tag = String(q.tag);
  const { page, nextCursor } = await keysetPage(q, {
    scope: cursorScope('listContacts', projectId, { ...filters }),
    secret: cursorSecretOf(deps),
    decode: positions.id,
    read: (afterId, take) => listContactRows(deps.db.sql, projectId, filters, afterId, take),
    encode: (r) => [String(r.id)],
  });
  return { data: { contacts: page.map(contactView), nextCursor } };
};

export const getContact: Handler<operations['getContact']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const row = await findContactRow(deps.db.sql, req.auth!.project.id, id);
  if (!row) throw notFound(id);
  return { data: { contact: contactView(row) } };
};

export const updateContact: Handler<operations['updateContact']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const change = parseContactChange(req.body, contactLimitsOf(deps.contract));
  const row = await updateContactRow(deps.db.sql, req.auth!.project.id, id, change, deps.clock.now());
  if (!row) throw notFound(id);
  return { data: { contact: contactView(row) } };
};

export const getConsentKeywords: Handler<operations['getConsentKeywords']> = async (req, deps) => {
  return { data: { keywords: await readKeywords(deps.db.sql, req.auth!.project.id) } };
};

export const setConsentKeywords: Handler<operations['setConsentKeywords']> = async (req, deps) => {
  const body = req.body;
  const keywords = await writeKeywords(deps.db.sql, req.auth!.project.id, {
    opt_out: body.opt_out,
    opt_in: body.opt_in,
    opt_out_confirmation: body.opt_out_confirmation ?? null,
    opt_in_confirmation: body.opt_in_confirmation ?? null,
  });
  return { data: { keywords } };
};
