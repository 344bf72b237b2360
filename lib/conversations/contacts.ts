/**
 * Contact reads and the PATCH body, in plain SQL over the shared pg pool; every write of a contact
 * is contact-store.ts's.
 *
 * Policy and why: the list is newest first, keyset-paged by `id DESC` on `(project_id, id)`.
 */
import { queryRows, type Tx } from '../platform/db/tx.js';
import { containsPattern, contactSearchSql, conversationConditionSql, type ConversationCondition } from './console-filters.js';
import type { ContactRow } from './views.js';
import { normalizePhone } from './phone.js';
import { ApiError } from '../platform/errors.js';
import type { ConsentStatus } from './consent.js';

export { containsPattern, type ConversationCondition } from './console-filters.js';

export interface ContactFilters {
  /** Digits only. */
  phone?: string;
  /** A business-scoped user id, as given. */
  userId?: string;
  /** Case-insensitive substring of the name. */
  name?: string;
  tag?: string;
  /** The console's search: part of the name, username or BSUID, or (3 digits or more) of the phone. */
  search?: string;
  /** The console's filter: contacts whose conversation needs a reply, or has messages no person has opened. */
  conversation?: ConversationCondition;
  /** The service's clock, for `conversation` (a snooze ends by it). */
  now?: Date;
}

/**
 * A phone number given as a filter, as stored (digits only): `+`, spaces, dashes, dots and
 * parentheses are dropped. A value that is no phone number still filters (and matches nothing).
 */
export function phoneFilter(input: string): string {
  return normalizePhone(input) ?? input.replace(/[\s\-.()+]/g, '');
}

/** A condition read without the clock is a programming error: a snooze would end by the machine's time. */
function missingNow(): never {
  throw new Error('a conversation condition needs the clock (filters.now)');
}

export const CONTACT_COLUMNS = `
  id::text AS "id", phone, user_id AS "userId", parent_user_id AS "parentUserId", username, name, tags, attributes,
  opted_in AS "optedIn", opted_in_at AS "optedInAt", opted_out_at AS "optedOutAt", consent_source AS "consentSource",
  consent_at AS "consentAt", call_permission_status AS "callPermissionStatus", call_permission_expires_at AS "callPermissionExpiresAt",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function listContactRows(
  tx: Tx,
  projectId: string,
  filters: ContactFilters,
  afterId: bigint | undefined,
  take: number,
): Promise<ContactRow[]> {
  const values: unknown[] = [projectId];
  // A WhatsApp group's own record (kind group, docs/groups.md) is no contact.
  const where = ['project_id = $1', "kind = 'customer'"];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (filters.phone !== undefined) where.push(`phone = ${param(filters.phone)}`);
  if (filters.userId !== undefined) where.push(`user_id = ${param(filters.userId)}`);
  if (filters.name !== undefined) where.push(`name ILIKE ${param(containsPattern(filters.name))} ESCAPE '\\'`);
  if (filters.tag !== undefined) where.push(`tags @> ARRAY[${param(filters.tag)}::text]`);
  if (filters.search) where.push(contactSearchSql('contacts', filters.search, param));
  if (filters.conversation) {
    where.push(`EXISTS (SELECT 1 FROM conversations v WHERE v.project_id = contacts.project_id AND v.contact_id = contacts.id AND ${conversationConditionSql('v', filters.conversation, () => param(filters.now ?? missingNow()))})`);
  }
  if (afterId !== undefined) where.push(`id < ${param(afterId.toString())}::bigint`);
  // ORDER BY names the table's column: the output column "id" is text (id::text).
  const limit = param(take);
  return queryRows<ContactRow>(tx, `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE ${where.join(' AND ')} ORDER BY contacts.id DESC LIMIT ${limit}`, ...values);
}

/** A contact; `withGroups`: also a WhatsApp group's own record (the dashboard's group conversation, docs/groups.md). */
export async function findContactRow(tx: Tx, projectId: string, id: bigint, opts: { withGroups?: boolean } = {}): Promise<ContactRow | undefined> {
  const rows = await queryRows<ContactRow>(tx, `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE project_id = $1 AND id = $2::bigint AND (kind = 'customer' OR $3::boolean)`,
    projectId, id.toString(), opts.withGroups === true);
  return rows[0];
}

export type AttributeValue = string | number | boolean | null;

export interface ContactChange {
  name?: string;
  tags?: { add?: string[]; remove?: string[] };
  /** Supplied keys only; null deletes the key. */
  attributes?: Record<string, AttributeValue>;
  /** The marketing consent set through the API (source `api`). */
  consent?: ConsentStatus;
}

// ------------------------------------------------------------------ the PATCH body

/** The PATCH body's limits, as the contract states them (http/contract-limits.ts reads them; never repeated here). */
export interface ContactLimits {
  name: number;
  tag: number;
  attributeKeys: number;
  attributeKey: number;
  attributeString: number;
}

/** Length in characters (code points), as the contract's validator counts maxLength. */
const chars = (s: string): number => [...s].length;

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `Invalid request: ${field} ${message}`, { fields: [{ field, message }] });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringList(v: unknown, field: string, max: number): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((t) => typeof t !== 'string' || t.length === 0 || chars(t) > max)) {
    throw invalid(field, `must be a list of non-empty strings of at most ${max} characters`);
  }
  return v as string[];
}

/**
 * The body, checked again after the contract's validator: the rules that matter for stored data
 * (flat attribute values, string lengths, at least one member) must hold even if a validator
 * change let something through.
 */
export function parseContactChange(body: unknown, limits: ContactLimits): ContactChange {
  if (!isPlainObject(body)) throw invalid('body', 'must be an object');
  const known = new Set(['name', 'tags', 'attributes', 'consent']);
  const unknown = Object.keys(body).filter((k) => !known.has(k));
  if (unknown.length) throw invalid(unknown[0], 'is not a contact field (name, tags, attributes, consent)');
  const change: ContactChange = {};
  if (body.consent !== undefined) {
    if (body.consent !== 'opted_in' && body.consent !== 'opted_out' && body.consent !== 'unknown') {
      throw invalid('consent', 'must be opted_in, opted_out or unknown');
    }
    change.consent = body.consent;
  }
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || body.name.length === 0 || chars(body.name) > limits.name) {
      throw invalid('name', `must be a string of 1 to ${limits.name} characters`);
    }
    change.name = body.name;
  }
  if (body.tags !== undefined) {
    if (!isPlainObject(body.tags)) throw invalid('tags', 'must be an object with add and/or remove lists');
    const extra = Object.keys(body.tags).filter((k) => k !== 'add' && k !== 'remove');
    if (extra.length) throw invalid(`tags.${extra[0]}`, 'is not allowed (add, remove)');
    const add = stringList(body.tags.add, 'tags.add', limits.tag);
    const remove = stringList(body.tags.remove, 'tags.remove', limits.tag);
    if (add === undefined && remove === undefined) throw invalid('tags', 'needs add or remove');
    change.tags = { add, remove };
  }
  if (body.attributes !== undefined) {
    if (!isPlainObject(body.attributes)) throw invalid('attributes', 'must be an object');
    if (Object.keys(body.attributes).length > limits.attributeKeys) throw invalid('attributes', `must have at most ${limits.attributeKeys} keys`);
    // No prototype: a key such as "__proto__" is an ordinary key here.
    const attributes: Record<string, AttributeValue> = Object.create(null);
    for (const [key, value] of Object.entries(body.attributes)) {
      const field = `attributes.${key}`;
      if (key.length === 0 || chars(key) > limits.attributeKey) throw invalid(field, `key must be 1 to ${limits.attributeKey} characters`);
      if (value === null || typeof value === 'boolean') attributes[key] = value;
      else if (typeof value === 'number') {
        if (!Number.isFinite(value)) throw invalid(field, 'must be a finite number');
        attributes[key] = value;
      } else if (typeof value === 'string') {
        if (chars(value) > limits.attributeString) throw invalid(field, `must be at most ${limits.attributeString} characters`);
        attributes[key] = value;
      } else {
        throw invalid(field, 'must be a string, number, boolean or null (nested objects and arrays are rejected)');
      }
    }
    change.attributes = attributes;
  }
  if (change.name === undefined && change.tags === undefined && change.attributes === undefined && change.consent === undefined) {
    throw invalid('body', 'needs at least one of name, tags, attributes, consent');
  }
  return change;
}


/**
 * The names the project knows for these phones (its customers' contacts: a profile name or the
 * Business app's contact), by digits: a group's join requests and participants show who, not only a number.
 */
export async function namesByPhone(tx: Tx, projectId: string, phones: string[]): Promise<Map<string, string>> {
  const digits = [...new Set(phones.map((p) => p.replace(/[^0-9]/g, '')).filter(Boolean))];
  const out = new Map<string, string>();
  if (!digits.length) return out;
  const rows = await queryRows<{ phone: string; name: string }>(tx,
    `SELECT phone, name FROM contacts WHERE project_id = $1 AND kind = 'customer' AND phone = ANY($2::text[]) AND name IS NOT NULL`,
    projectId, digits,
  );
  for (const r of rows) out.set(r.phone, r.name);
  return out;
}
