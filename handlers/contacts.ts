/** Contacts: the newest-first list, one contact, and the update of name, tags and attributes. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { ApiError } from '../lib/errors.js';
import { cursorId, cursorScope, cursorSecretOf, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/cursor.js';
import { contactView } from '../lib/views.js';
import {
  findContactRow,
  listContactRows,
  phoneFilter,
  updateContactRow,
  type AttributeValue,
  type ContactChange,
  type ContactFilters,
} from '../lib/contacts.js';

const MAX_ATTRIBUTE_STRING = 1000;

/** Length in characters (code points), as the contract's validator counts maxLength. */
const chars = (s: string): number => [...s].length;

function pathId(raw: string): bigint {
  if (!/^[1-9][0-9]{0,17}$/.test(raw)) throw new ApiError('invalid_id', `Malformed id "${raw}": a positive integer is expected.`);
  return BigInt(raw);
}

function notFound(id: bigint): ApiError {
  return new ApiError('not_found', `No contact ${id} in this project.`);
}

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });
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

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringList(v: unknown, field: string): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((t) => typeof t !== 'string' || t.length === 0 || chars(t) > 100)) {
    throw invalid(field, 'must be a list of non-empty strings of at most 100 characters');
  }
  return v as string[];
}

/**
 * The body, checked again after the contract's validator: the rules that matter for stored data
 * (flat attribute values, string lengths, at least one member) must hold even if a validator
 * change let something through.
 */
function parseChange(body: unknown): ContactChange {
  if (!isPlainObject(body)) throw invalid('body', 'must be an object');
  const known = new Set(['name', 'tags', 'attributes']);
  const unknown = Object.keys(body).filter((k) => !known.has(k));
  if (unknown.length) throw invalid(unknown[0], 'is not a contact field (name, tags, attributes)');
  const change: ContactChange = {};
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || body.name.length === 0 || chars(body.name) > 200) throw invalid('name', 'must be a string of 1 to 200 characters');
    change.name = body.name;
  }
  if (body.tags !== undefined) {
    if (!isPlainObject(body.tags)) throw invalid('tags', 'must be an object with add and/or remove lists');
    const extra = Object.keys(body.tags).filter((k) => k !== 'add' && k !== 'remove');
    if (extra.length) throw invalid(`tags.${extra[0]}`, 'is not allowed (add, remove)');
    const add = stringList(body.tags.add, 'tags.add');
    const remove = stringList(body.tags.remove, 'tags.remove');
    if (add === undefined && remove === undefined) throw invalid('tags', 'needs add or remove');
    change.tags = { add, remove };
  }
  if (body.attributes !== undefined) {
    if (!isPlainObject(body.attributes)) throw invalid('attributes', 'must be an object');
    const attributes: Record<string, AttributeValue> = {};
    for (const [key, value] of Object.entries(body.attributes)) {
      const field = `attributes.${key}`;
      if (key.length === 0 || chars(key) > 100) throw invalid(field, 'key must be 1 to 100 characters');
      if (value === null || typeof value === 'boolean') attributes[key] = value;
      else if (typeof value === 'number') {
        if (!Number.isFinite(value)) throw invalid(field, 'must be a finite number');
        attributes[key] = value;
      } else if (typeof value === 'string') {
        if (chars(value) > MAX_ATTRIBUTE_STRING) throw invalid(field, `must be at most ${MAX_ATTRIBUTE_STRING} characters`);
        attributes[key] = value;
      } else {
        throw invalid(field, 'must be a string, number, boolean or null (nested objects and arrays are rejected)');
      }
    }
    change.attributes = attributes;
  }
  if (change.name === undefined && change.tags === undefined && change.attributes === undefined) {
    throw invalid('body', 'needs at least one of name, tags, attributes');
  }
  return change;
}

export const updateContact: Handler<operations['updateContact']> = async (req, deps) => {
  const id = pathId(req.params.id);
  const change = parseChange(req.body);
  const row = await updateContactRow(deps.db.pool, req.auth!.project.id, id, change, deps.clock.now());
  if (!row) throw notFound(id);
  return { data: { contact: contactView(row) } };
};
