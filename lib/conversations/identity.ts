/**
 * Who a customer is: one contact per WhatsApp user of a project, known by its phone (E.164 digits),
 * its business-scoped user id (BSUID, Meta's `user_id`), or both.
 *
 * Policy and why:
 * - Meta sends the BSUID in every messages webhook since April 2026 and withholds the phone of a
 *   user with a username, so a contact may have no phone; nothing is dropped for want of one.
 * - A payload naming both ids links them: a phone-only contact and a BSUID-only contact found
 *   that way are the same user and become one. The older contact (lower id) stays; the other's
 *   conversation, messages, tags, attributes and broadcast rows move to it, and it is deleted.
 *   When both had a conversation, the messages move into the kept one, whose activity becomes the
 *   later of the two, and whose state is the state of the conversation with the later activity.
 * - Consent of a merge: an opt-out on either side wins (honouring an opt-out is the policy rule);
 *   else an opt-in on either side.
 * - A BSUID change (Meta's system message) re-keys the contact: the old BSUID is replaced.
 * - Creation is an INSERT … ON CONFLICT DO NOTHING then a read, so two notifications for one new
 *   user at once make one contact.
 */
import type { Prisma } from '../../generated/prisma/client.js';

type Tx = Prisma.TransactionClient;

/** `US.13491208655302741918`, a parent `US.ENT.…`: a country code, a dot, up to 128 letters or digits (parent: `ENT.` before them). */
const BSUID = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/;

export function isBsuid(v: unknown): v is string {
  return typeof v === 'string' && BSUID.test(v);
}

/** What a payload says about the customer; each field only when given. */
export interface CustomerIds {
  /** Digits only. */
  phone?: string;
  userId?: string;
  parentUserId?: string;
  username?: string;
  profileName?: string;
}

export interface ContactIdentity {
  id: bigint;
  phone: string | null;
  userId: string | null;
  parentUserId: string | null;
  username: string | null;
  name: string | null;
}

const SELECT = `SELECT id, phone, user_id AS "userId", parent_user_id AS "parentUserId", username, name FROM contacts`;

async function byPhone(tx: Tx, projectId: string, phone: string): Promise<ContactIdentity | undefined> {
  return (await tx.$queryRawUnsafe<ContactIdentity[]>(`${SELECT} WHERE project_id = $1 AND phone = $2 FOR UPDATE`, projectId, phone))[0];
}

async function byUserId(tx: Tx, projectId: string, userId: string): Promise<ContactIdentity | undefined> {
  return (await tx.$queryRawUnsafe<ContactIdentity[]>(`${SELECT} WHERE project_id = $1 AND user_id = $2 FOR UPDATE`, projectId, userId))[0];
}

/**
 * The contact of these ids, created, completed or merged as the ids say. Undefined when the
 * payload names neither a phone nor a BSUID.
 */
export async function resolveContact(tx: Tx, projectId: string, ids: CustomerIds, at: Date): Promise<ContactIdentity | undefined> {
  if (!ids.phone && !ids.userId) return undefined;
  let p = ids.phone ? await byPhone(tx, projectId, ids.phone) : undefined;
  let u = ids.userId ? await byUserId(tx, projectId, ids.userId) : undefined;
  if (p && u && p.id !== u.id) {
    const [keep, gone] = p.id < u.id ? [p, u] : [u, p];
    await mergeContacts(tx, projectId, keep.id, gone.id, at);
    p = u = (await tx.$queryRawUnsafe<ContactIdentity[]>(`${SELECT} WHERE id = $1::bigint`, String(keep.id)))[0];
  }
  let contact = p ?? u;
  if (!contact) {
    await tx.$executeRawUnsafe(
      `INSERT INTO contacts (project_id, phone, user_id, parent_user_id, username, name, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING`,
      projectId, ids.phone ?? null, ids.userId ?? null, ids.parentUserId ?? null, ids.username ?? null, ids.profileName ?? null, at,
    );
    contact = (ids.userId ? await byUserId(tx, projectId, ids.userId) : undefined) ?? (ids.phone ? await byPhone(tx, projectId, ids.phone) : undefined);
    if (!contact) throw new Error('contact neither inserted nor found');
  }
  // Fill in what this payload adds; an unchanged contact is not rewritten.
  const phone = contact.phone ?? ids.phone ?? null;
  const userId = ids.userId ?? contact.userId;
  const parentUserId = ids.parentUserId ?? contact.parentUserId;
  const username = ids.username ?? contact.username;
  const name = contact.name ?? ids.profileName ?? null;
  if (phone !== contact.phone || userId !== contact.userId || parentUserId !== contact.parentUserId || username !== contact.username || name !== contact.name) {
    await tx.$executeRawUnsafe(
      `UPDATE contacts SET phone = $2, user_id = $3, parent_user_id = $4, username = $5, name = $6, updated_at = $7 WHERE id = $1::bigint`,
      String(contact.id), phone, userId, parentUserId, username, name, at,
    );
    contact = { ...contact, phone, userId, parentUserId, username, name };
  }
  return contact;
}

/**
 * Folds contact `gone` into `keep` (same project), in the caller's transaction: conversation and
 * messages, tags, attributes, consent, broadcast rows; then deletes `gone`.
 */
export async function mergeContacts(tx: Tx, projectId: string, keep: bigint, gone: bigint, at: Date): Promise<void> {
  const k = String(keep);
  const g = String(gone);
  const convs = await tx.$queryRawUnsafe<Array<{ id: bigint; contact_id: bigint; state: string; last_message_at: Date; last_inbound_at: Date | null; order_at: Date }>>(
    `SELECT id, contact_id, state, last_message_at, last_inbound_at, order_at FROM conversations
     WHERE project_id = $1 AND contact_id IN ($2::bigint, $3::bigint) ORDER BY id FOR UPDATE`,
    projectId, k, g,
  );
  const kc = convs.find((c) => String(c.contact_id) === k);
  const gc = convs.find((c) => String(c.contact_id) === g);
  if (kc && gc) {
    await tx.$executeRawUnsafe(`UPDATE messages SET conversation_id = $1::bigint WHERE conversation_id = $2::bigint`, String(kc.id), String(gc.id));
    const later = gc.last_message_at > kc.last_message_at ? gc : kc;
    const maxDate = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b));
    await tx.$executeRawUnsafe(`DELETE FROM conversations WHERE id = $1::bigint`, String(gc.id));
    await tx.$executeRawUnsafe(
      `UPDATE conversations SET state = $2, last_message_at = $3, last_inbound_at = $4, order_at = GREATEST(order_at, $5), updated_at = $6 WHERE id = $1::bigint`,
      String(kc.id), later.state, later.last_message_at, maxDate(kc.last_inbound_at, gc.last_inbound_at), gc.order_at, at,
    );
  } else if (gc) {
    await tx.$executeRawUnsafe(`UPDATE conversations SET contact_id = $1::bigint, updated_at = $3 WHERE id = $2::bigint`, k, String(gc.id), at);
  }
  await tx.$executeRawUnsafe(`UPDATE broadcast_recipients SET contact_id = $1::bigint WHERE contact_id = $2::bigint`, k, g);
  // The gone contact's fields, read before it is deleted (its unique ids must be free first).
  const [old] = await tx.$queryRawUnsafe<Array<Record<string, unknown>>>(`DELETE FROM contacts WHERE id = $1::bigint RETURNING *`, g);
  await tx.$executeRawUnsafe(
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
    k, old.phone ?? null, old.user_id ?? null, old.parent_user_id ?? null, old.username ?? null, old.name ?? null,
    (old.tags as string[] | null) ?? [], JSON.stringify(old.attributes ?? {}), Boolean(old.opted_in), old.opted_out_at ?? null,
    old.opted_in_at ?? null, old.consent_source ?? null, old.consent_at ?? null, at,
  );
}

/** Meta's BSUID change: the contact known by `from` is known by `to` from now on (a no-op when replayed). */
export async function rekeyContact(tx: Tx, projectId: string, from: string, to: string, at: Date): Promise<boolean> {
  const clash = await byUserId(tx, projectId, to);
  const old = await byUserId(tx, projectId, from);
  if (!old) return false;
  if (clash && clash.id !== old.id) {
    // Both known: the one already under the new id is the user now; fold the old one into it.
    const [keep, gone] = old.id < clash.id ? [old, clash] : [clash, old];
    await mergeContacts(tx, projectId, keep.id, gone.id, at);
    await tx.$executeRawUnsafe(`UPDATE contacts SET user_id = $2, updated_at = $3 WHERE id = $1::bigint`, String(keep.id), to, at);
    return true;
  }
  await tx.$executeRawUnsafe(`UPDATE contacts SET user_id = $2, updated_at = $3 WHERE id = $1::bigint`, String(old.id), to, at);
  return true;
}
