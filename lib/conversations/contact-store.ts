/**
 * The only writer of `contacts`. Every change of a contact is one of the statements below, so a
 * rule about contact rows (consent, identity, the import's merge) is read in one place.
 *
 * Policy and why:
 * - The API's update is one UPDATE whose new values are computed from the row as it is when the
 *   row lock is held: attributes `(attributes || $set) - $deleted`, tags `(tags + add) - remove`
 *   without duplicates. Two concurrent PATCHes of different keys or tags therefore both survive
 *   (PostgreSQL re-evaluates the SET expressions on the newest row version after waiting).
 * - Consent changes are no-ops when the contact already has that consent, so replayed signals
 *   change nothing (consent.ts holds the SET list and the condition).
 * - Every statement runs on the one handle (Tx): the caller's transaction, pg's or Prisma's
 *   (identity, consent signals, the import's batch), or `deps.db.sql` for a change on its own.
 *   The send ledger creates the contacts of a batch inside its one statement (insertContactsSql).
 */
import type { ChannelError } from '../channel-port/errors.js';
import { type Tx, execute, queryRows } from '../platform/db/tx.js';
import { CONTACT_COLUMNS, type ContactChange } from './contacts.js';
import { consentIsSql, consentSetSql, type ConsentStatus } from './consent.js';
import type { ContactRow } from './views.js';

/**
 * Applies a change atomically and returns the contact after it; undefined when the contact is not
 * the project's. Tags: existing order kept, added ones appended, no duplicates, then removals (a
 * tag both added and removed in one request ends up removed).
 */
export async function updateContactRow(
  tx: Tx,
  projectId: string,
  id: bigint,
  change: ContactChange,
  now: Date,
): Promise<ContactRow | undefined> {
  const set: Record<string, string | number | boolean> = Object.create(null);
  const deleted: string[] = [];
  for (const [k, v] of Object.entries(change.attributes ?? {})) {
    if (v === null) deleted.push(k);
    else set[k] = v;
  }
  const changeTags = change.tags !== undefined;
  const rows = await queryRows<ContactRow>(tx,
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
       opted_in = CASE WHEN $10::text IS NULL THEN opted_in ELSE $10::text = 'opted_in' END,
       opted_in_at = CASE WHEN $10::text IS NULL THEN opted_in_at WHEN $10::text = 'opted_in' THEN $9 END,
       opted_out_at = CASE WHEN $10::text IS NULL THEN opted_out_at WHEN $10::text = 'opted_out' THEN $9 END,
       opt_in_import_id = CASE WHEN $10::text IS NULL THEN opt_in_import_id END,
       consent_source = CASE WHEN $10::text IS NULL THEN consent_source ELSE 'api' END,
       consent_at = CASE WHEN $10::text IS NULL THEN consent_at ELSE $9 END,
       updated_at = $9
     WHERE project_id = $1 AND id = $2::bigint AND kind = 'customer'
     RETURNING ${CONTACT_COLUMNS}`,
    projectId,
    id.toString(),
    change.name ?? null,
    changeTags,
    change.tags?.add ?? [],
    change.tags?.remove ?? [],
    JSON.stringify(set),
    deleted,
    now,
    change.consent ?? null,
  );
  return rows[0];
}

// ------------------------------------------------------------------ identity (identity.ts decides)

/** What a payload says about a customer, as stored. */
export interface ContactIds {
  phone: string | null;
  userId: string | null;
  parentUserId: string | null;
  username: string | null;
  name: string | null;
}

/** A new contact of these ids; nothing when another writer made it first (the caller reads it back). */
export async function insertContactIfAbsent(tx: Tx, projectId: string, ids: ContactIds, at: Date): Promise<void> {
  await execute(tx,
    `INSERT INTO contacts (project_id, phone, user_id, parent_user_id, username, name, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING`,
    projectId, ids.phone, ids.userId, ids.parentUserId, ids.username, ids.name, at,
  );
}

/** The contact's ids as given. */
export async function updateContactIds(tx: Tx, id: bigint, ids: ContactIds, at: Date): Promise<void> {
  await execute(tx,
    `UPDATE contacts SET phone = $2, user_id = $3, parent_user_id = $4, username = $5, name = $6, updated_at = $7 WHERE id = $1::bigint`,
    String(id), ids.phone, ids.userId, ids.parentUserId, ids.username, ids.name, at,
  );
}

/** The contact is known by `userId` from now on (Meta's BSUID change). */
export async function setContactUserId(tx: Tx, id: bigint, userId: string, at: Date): Promise<void> {
  await execute(tx, `UPDATE contacts SET user_id = $2, updated_at = $3 WHERE id = $1::bigint`, String(id), userId, at);
}

/**
 * Deletes contact `gone` and folds its fields into `keep`: ids the kept one lacks, tags, attributes
 * (the kept one's win), consent (an opt-out on either side wins, else an opt-in on either side).
 * The gone contact goes first: its unique ids must be free before the kept one takes them.
 */
export async function foldContact(tx: Tx, keep: bigint, gone: bigint, at: Date): Promise<void> {
  const [old] = await queryRows<Record<string, unknown>>(tx, `DELETE FROM contacts WHERE id = $1::bigint RETURNING *`, String(gone));
  await execute(tx,
    `UPDATE contacts c SET
       phone = COALESCE(c.phone, $2), user_id = COALESCE(c.user_id, $3), parent_user_id = COALESCE(c.parent_user_id, $4),
       username = COALESCE(c.username, $5), name = COALESCE(c.name, $6),
       tags = ARRAY(SELECT DISTINCT unnest(c.tags || $7::text[])),
       attributes = $8::jsonb || CASE WHEN jsonb_typeof(c.attributes) = 'object' THEN c.attributes ELSE '{}'::jsonb END,
       opted_in = CASE WHEN c.opted_out_at IS NOT NULL OR $10::timestamptz IS NOT NULL THEN false ELSE c.opted_in OR $9::boolean END,
       opted_out_at = COALESCE(c.opted_out_at, $10::timestamptz),
       opted_in_at = CASE WHEN c.opted_out_at IS NOT NULL OR $10::timestamptz IS NOT NULL THEN NULL ELSE COALESCE(c.opted_in_at, $11::timestamptz) END,
       consent_source = CASE WHEN c.opted_out_at IS NULL AND $10::timestamptz IS NOT NULL THEN $12
                             WHEN NOT c.opted_in AND c.opted_out_at IS NULL AND $9::boolean THEN $12 ELSE c.consent_source END,
       consent_at = CASE WHEN c.opted_out_at IS NULL AND $10::timestamptz IS NOT NULL THEN $13::timestamptz
                         WHEN NOT c.opted_in AND c.opted_out_at IS NULL AND $9::boolean THEN $13::timestamptz ELSE c.consent_at END,
       updated_at = $14
     WHERE c.id = $1::bigint`,
    String(keep), old.phone ?? null, old.user_id ?? null, old.parent_user_id ?? null, old.username ?? null, old.name ?? null,
    (old.tags as string[] | null) ?? [], JSON.stringify(old.attributes ?? {}), Boolean(old.opted_in), old.opted_out_at ?? null,
    old.opted_in_at ?? null, old.consent_source ?? null, old.consent_at ?? null, at,
  );
}

/**
 * The send ledger's contacts of a batch, inside its one statement: `select` yields (project_id,
 * phone, user_id, created_at, updated_at); a contact that exists under either id is left alone
 * (no per-send rewrite). The caller adds its RETURNING.
 */
export function insertContactsSql(select: string): string {
  return `INSERT INTO contacts (project_id, phone, user_id, created_at, updated_at)
          ${select}
          ON CONFLICT DO NOTHING`;
}

// ------------------------------------------------------------------ consent (consent.ts and lib/consent decide)

/** Sets a contact's consent in the caller's transaction; whether it changed. */
export async function setContactConsent(tx: Tx, projectId: string, contactId: bigint, status: ConsentStatus, source: string, at: Date): Promise<boolean> {
  const rows = await queryRows<unknown>(tx,
    `UPDATE contacts SET ${consentSetSql(status, '$3', '$4')} WHERE project_id = $1 AND id = $2::bigint AND NOT ${consentIsSql(status)} RETURNING id`,
    projectId, String(contactId), at, source,
  );
  return rows.length > 0;
}

/**
 * Meta's `user_preferences` consent, said at `when`: a stop and a resume can arrive out of order,
 * so an older preference never overrides a newer one. Whether it changed.
 */
export async function setPreferenceConsent(tx: Tx, projectId: string, contactId: bigint, status: ConsentStatus, when: Date): Promise<boolean> {
  const rows = await queryRows<unknown>(tx,
    `UPDATE contacts SET ${consentSetSql(status, '$3', `'user_preferences'`)}
     WHERE project_id = $1 AND id = $2::bigint AND NOT ${consentIsSql(status)}
       AND (consent_source IS DISTINCT FROM 'user_preferences' OR consent_at IS NULL OR consent_at < $3)
     RETURNING id`,
    projectId, String(contactId), when,
  );
  return rows.length > 0;
}

/** A send refused because the user stopped marketing messages (Meta's 131050): the recipient's contact, by phone or BSUID, opts out. */
export async function optOutOnSendError(tx: Tx, projectId: string, to: { phone?: string | null; userId?: string | null }, e: ChannelError, at: Date): Promise<void> {
  if (!e.reasons.includes('recipient_opted_out')) return;
  await execute(tx,
    `UPDATE contacts SET ${consentSetSql('opted_out', '$4', `'error_131050'`)}
     WHERE project_id = $1 AND opted_out_at IS NULL
       AND (($2::text IS NOT NULL AND phone = $2) OR ($3::text IS NOT NULL AND user_id = $3))`,
    projectId, to.phone ?? null, to.userId ?? null, at,
  );
}

/** Error 131050 in failed statuses: the contacts of those messages opt out. */
export async function optOutMessageRecipients(tx: Tx, projectId: string, wamids: string[], at: Date): Promise<void> {
  await execute(tx,
    `UPDATE contacts SET ${consentSetSql('opted_out', '$3', `'error_131050'`)}
     WHERE opted_out_at IS NULL AND id IN (
       SELECT cv.contact_id FROM messages m JOIN conversations cv ON cv.id = m.conversation_id
       WHERE m.project_id = $1 AND m.wamid = ANY($2::text[]))`,
    projectId, wamids, at,
  );
}

// ------------------------------------------------------------------ the CSV import (lib/contacts-import decides)

/**
 * The contacts of an import batch (`lines` as JSON: phone, name, tags, opt): a name fills a contact
 * without one (never replaces one), tags are added, opt-in and opt-out as lib/contacts-import's
 * header says. A row comes back only when something changed, so `unchanged` is exact.
 */
export async function upsertImportedContacts(tx: Tx, projectId: string, importId: string, now: Date, lines: string): Promise<Array<{ created: boolean }>> {
  return queryRows<{ created: boolean }>(tx, IMPORT_UPSERT, projectId, importId, now, lines);
}

const IMPORT_UPSERT = `INSERT INTO contacts AS c (project_id, phone, name, tags, opted_in, opted_in_at, opt_in_import_id, opted_out_at, consent_source, consent_at, created_at, updated_at)
       SELECT $1, u.phone, NULLIF(u.name, ''), u.tags, COALESCE(u.opt, false),
              CASE WHEN u.opt THEN $3::timestamptz END, CASE WHEN u.opt THEN $2 END, CASE WHEN u.opt = false THEN $3::timestamptz END,
              CASE WHEN u.opt IS NOT NULL THEN 'import' END, CASE WHEN u.opt IS NOT NULL THEN $3::timestamptz END, $3, $3
       FROM jsonb_to_recordset($4::jsonb) AS u(phone text, name text, tags text[], opt boolean)
       ON CONFLICT (project_id, phone) DO UPDATE SET
         name = COALESCE(c.name, EXCLUDED.name),
         tags = c.tags || ARRAY(SELECT t FROM unnest(EXCLUDED.tags) t WHERE NOT t = ANY(c.tags)),
         opted_in = CASE WHEN EXCLUDED.opted_in_at IS NOT NULL THEN true WHEN EXCLUDED.opted_out_at IS NOT NULL THEN false ELSE c.opted_in END,
         opted_in_at = CASE WHEN EXCLUDED.opted_in_at IS NOT NULL AND NOT (c.opted_in AND c.opted_out_at IS NULL) THEN EXCLUDED.opted_in_at
                            WHEN EXCLUDED.opted_out_at IS NOT NULL THEN NULL ELSE c.opted_in_at END,
         opt_in_import_id = CASE WHEN EXCLUDED.opted_in_at IS NOT NULL AND NOT (c.opted_in AND c.opted_out_at IS NULL) THEN EXCLUDED.opt_in_import_id
                                 WHEN EXCLUDED.opted_out_at IS NOT NULL THEN NULL ELSE c.opt_in_import_id END,
         opted_out_at = CASE WHEN EXCLUDED.opted_in_at IS NOT NULL THEN NULL WHEN EXCLUDED.opted_out_at IS NOT NULL THEN COALESCE(c.opted_out_at, EXCLUDED.opted_out_at) ELSE c.opted_out_at END,
         -- The consent's source and time move only when the import changes the consent.
         consent_source = CASE WHEN (EXCLUDED.opted_in_at IS NOT NULL AND NOT (c.opted_in AND c.opted_out_at IS NULL))
                                 OR (EXCLUDED.opted_out_at IS NOT NULL AND c.opted_out_at IS NULL) THEN 'import' ELSE c.consent_source END,
         consent_at = CASE WHEN (EXCLUDED.opted_in_at IS NOT NULL AND NOT (c.opted_in AND c.opted_out_at IS NULL))
                             OR (EXCLUDED.opted_out_at IS NOT NULL AND c.opted_out_at IS NULL) THEN EXCLUDED.updated_at ELSE c.consent_at END,
         updated_at = EXCLUDED.updated_at
       WHERE (EXCLUDED.name IS NOT NULL AND c.name IS NULL)
          OR NOT (c.tags @> EXCLUDED.tags)
          OR (EXCLUDED.opted_in_at IS NOT NULL AND NOT (c.opted_in AND c.opted_out_at IS NULL))
          OR (EXCLUDED.opted_out_at IS NOT NULL AND (c.opted_in OR c.opted_out_at IS NULL))
       RETURNING (xmax = 0) AS created`;

// ------------------------------------------------------------------ calls (lib/calls decides)

/** The customer's answer to a call permission request (or `pending` when one was sent); whether it changed. */
export async function setCallPermission(tx: Tx, projectId: string, contactId: bigint, status: string, expiresAt: Date | null, at: Date): Promise<boolean> {
  const rows = await queryRows<unknown>(tx,
    `UPDATE contacts SET call_permission_status = $3, call_permission_expires_at = $4, updated_at = $5
     WHERE project_id = $1 AND id = $2::bigint
       AND (call_permission_status IS DISTINCT FROM $3 OR call_permission_expires_at IS DISTINCT FROM $4) RETURNING id`,
    projectId, String(contactId), status, expiresAt, at,
  );
  return rows.length > 0;
}

/**
 * The Business app's address book named a customer (coexistence's state sync): the known contact
 * of that phone takes the name. A removal there never deletes a contact here (its conversations
 * and consent stay). False when no contact has the phone or the name is unchanged.
 */
export async function syncContactName(tx: Tx, projectId: string, phone: string, name: string, at: Date): Promise<boolean> {
  const changed = await execute(tx,
    `UPDATE contacts SET name = $3, updated_at = $4 WHERE project_id = $1 AND phone = $2 AND name IS DISTINCT FROM $3`,
    projectId, phone, name, at,
  );
  return changed > 0;
}

/**
 * A WhatsApp group's own record (kind `group`; docs/groups.md): what the group's conversation
 * belongs to, named by the group's subject, with neither phone nor user id. Never listed as a
 * contact nor in an audience (their reads exclude kind `group`).
 */
export async function insertGroupContact(tx: Tx, projectId: string, name: string, at: Date): Promise<bigint> {
  const rows = await queryRows<{ id: bigint }>(tx,
    `INSERT INTO contacts (project_id, kind, name, created_at, updated_at) VALUES ($1, 'group', $2, $3, $3) RETURNING id`,
    projectId, name, at,
  );
  return rows[0].id;
}

/** The group's record follows its subject. */
export async function renameGroupContact(tx: Tx, projectId: string, id: bigint, name: string, at: Date): Promise<void> {
  await execute(tx,
    `UPDATE contacts SET name = $3, updated_at = $4 WHERE project_id = $1 AND id = $2::bigint AND kind = 'group' AND name IS DISTINCT FROM $3`,
    projectId, String(id), name, at,
  );
}
