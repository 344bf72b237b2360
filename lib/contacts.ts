/**
 * Contact reads and the update, in plain SQL over the shared pg pool.
 *
 * Policy and why:
 * - The list is newest first, keyset-paged by `id DESC` on `(project_id, id)`.
 * - The update is one UPDATE statement whose new values are computed from the row as it is when
 *   the row lock is held: attributes `(attributes || $set) - $deleted`, tags `(tags + add) - remove`
 *   without duplicates. Two concurrent PATCHes of different keys or tags therefore both survive
 *   (PostgreSQL re-evaluates the SET expressions on the newest row version after waiting).
 */
import type { Queryable } from './conversations.js';
import type { ContactRow } from './views.js';
import { normalizePhone } from './phone.js';

export interface ContactFilters {
  /** Digits only. */
  phone?: string;
  /** Case-insensitive substring of the name. */
  name?: string;
  tag?: string;
}

/**
 * A phone number given as a filter, as stored (digits only): `+`, spaces, dashes, dots and
 * parentheses are dropped. A value that is no phone number still filters (and matches nothing).
 */
export function phoneFilter(input: string): string {
  return normalizePhone(input) ?? input.replace(/[\s\-.()+]/g, '');
}

/** `text` as a LIKE pattern that matches it literally anywhere (escape character `\`). */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const CONTACT_COLUMNS = `
  id::text AS "id", phone, name, tags, attributes, opted_in AS "optedIn",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function listContactRows(
  db: Queryable,
  projectId: string,
  filters: ContactFilters,
  afterId: bigint | undefined,
  take: number,
): Promise<ContactRow[]> {
  const values: unknown[] = [projectId];
  const where = ['project_id = $1'];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (filters.phone !== undefined) where.push(`phone = ${param(filters.phone)}`);
  if (filters.name !== undefined) where.push(`name ILIKE ${param(containsPattern(filters.name))} ESCAPE '\\'`);
  if (filters.tag !== undefined) where.push(`tags @> ARRAY[${param(filters.tag)}::text]`);
  if (afterId !== undefined) where.push(`id < ${param(afterId.toString())}::bigint`);
  // ORDER BY names the table's column: the output column "id" is text (id::text).
  const res = await db.query<ContactRow>(
    `SELECT ${CONTACT_COLUMNS} FROM contacts WHERE ${where.join(' AND ')} ORDER BY contacts.id DESC LIMIT ${param(take)}`,
    values,
  );
  return res.rows;
}

export async function findContactRow(db: Queryable, projectId: string, id: bigint): Promise<ContactRow | undefined> {
  const res = await db.query<ContactRow>(`SELECT ${CONTACT_COLUMNS} FROM contacts WHERE project_id = $1 AND id = $2::bigint`, [
    projectId,
    id.toString(),
  ]);
  return res.rows[0];
}

export type AttributeValue = string | number | boolean | null;

export interface ContactChange {
  name?: string;
  tags?: { add?: string[]; remove?: string[] };
  /** Supplied keys only; null deletes the key. */
  attributes?: Record<string, AttributeValue>;
}

/**
 * Applies a change atomically and returns the contact after it; undefined when the contact is not
 * the project's. Tags: existing order kept, added ones appended, no duplicates, then removals (a
 * tag both added and removed in one request ends up removed).
 */
export async function updateContactRow(
  db: Queryable,
  projectId: string,
  id: bigint,
  change: ContactChange,
  now: Date,
): Promise<ContactRow | undefined> {
  const set: Record<string, string | number | boolean> = {};
  const deleted: string[] = [];
  for (const [k, v] of Object.entries(change.attributes ?? {})) {
    if (v === null) deleted.push(k);
    else set[k] = v;
  }
  const changeTags = change.tags !== undefined;
  const res = await db.query<ContactRow>(
    `UPDATE contacts SET
       name = COALESCE($3::text, name),
       tags = CASE WHEN $4::boolean THEN ARRAY(
                SELECT u.t
                FROM unnest(COALESCE(tags, '{}'::text[]) || $5::text[]) WITH ORDINALITY AS u(t, ord)
                WHERE NOT (u.t = ANY($6::text[]))
                GROUP BY u.t
                ORDER BY min(u.ord)
              ) ELSE tags END,
       attributes = (CASE WHEN jsonb_typeof(attributes) = 'object' THEN attributes ELSE '{}'::jsonb END || $7::jsonb) - $8::text[],
       updated_at = $9
     WHERE project_id = $1 AND id = $2::bigint
     RETURNING ${CONTACT_COLUMNS}`,
    [
      projectId,
      id.toString(),
      change.name ?? null,
      changeTags,
      change.tags?.add ?? [],
      change.tags?.remove ?? [],
      JSON.stringify(set),
      deleted,
      now,
    ],
  );
  return res.rows[0];
}
