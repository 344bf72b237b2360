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
 * - Rows of other rooms that name the gone contact or its conversation (messages, broadcast
 *   recipients) are moved by their owners, through the MergeMoves the caller passes (Deps.contactMerge,
 *   composed in services.ts): this room never writes another's table.
 */
import { absorbConversation, deleteConversation, moveConversation } from './conversations.js';
import { foldContact, insertContactIfAbsent, setContactUserId, updateContactIds } from './contact-store.js';
import { queryRows, type Tx } from '../platform/db/tx.js';


/** What other rooms keep under a contact or its conversation, moved to the kept one in a merge's transaction. */
export interface MergeMoves {
  /** Messages of conversation `from` now belong to conversation `to` (`from` is deleted next). */
  moveMessages(tx: Tx, to: bigint, from: bigint): Promise<void>;
  /** Rows naming contact `from` now name contact `to` (`from` is deleted next). */
  moveContactRows(tx: Tx, to: bigint, from: bigint): Promise<void>;
}

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
  return (await queryRows<ContactIdentity>(tx, `${SELECT} WHERE project_id = $1 AND phone = $2 FOR UPDATE`, projectId, phone))[0];
}

async function byUserId(tx: Tx, projectId: string, userId: string): Promise<ContactIdentity | undefined> {
  return (await queryRows<ContactIdentity>(tx, `${SELECT} WHERE project_id = $1 AND user_id = $2 FOR UPDATE`, projectId, userId))[0];
}

/**
 * The contact of these ids, created, completed or merged as the ids say. Undefined when the
 * payload names neither a phone nor a BSUID.
 */
export async function resolveContact(tx: Tx, projectId: string, ids: CustomerIds, at: Date, moves: MergeMoves): Promise<ContactIdentity | undefined> {
  if (!ids.phone && !ids.userId) return undefined;
  let p = ids.phone ? await byPhone(tx, projectId, ids.phone) : undefined;
  let u = ids.userId ? await byUserId(tx, projectId, ids.userId) : undefined;
  if (p && u && p.id !== u.id) {
    const [keep, gone] = p.id < u.id ? [p, u] : [u, p];
    await mergeContacts(tx, projectId, keep.id, gone.id, at, moves);
    p = u = (await queryRows<ContactIdentity>(tx, `${SELECT} WHERE id = $1::bigint`, String(keep.id)))[0];
  }
  let contact = p ?? u;
  if (!contact) {
    await insertContactIfAbsent(tx, projectId, {
      phone: ids.phone ?? null, userId: ids.userId ?? null, parentUserId: ids.parentUserId ?? null, username: ids.username ?? null, name: ids.profileName ?? null,
    }, at);
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
    await updateContactIds(tx, contact.id, { phone, userId, parentUserId, username, name }, at);
    contact = { ...contact, phone, userId, parentUserId, username, name };
  }
  return contact;
}

/**
 * Folds contact `gone` into `keep` (same project), in the caller's transaction: conversation and
 * messages, tags, attributes, consent, broadcast rows; then deletes `gone`.
 */
export async function mergeContacts(tx: Tx, projectId: string, keep: bigint, gone: bigint, at: Date, moves: MergeMoves): Promise<void> {
  const k = String(keep);
  const g = String(gone);
  const convs = await queryRows<{ id: bigint; contact_id: bigint; state: string; last_message_at: Date; last_inbound_at: Date | null; order_at: Date }>(tx,
    `SELECT id, contact_id, state, last_message_at, last_inbound_at, order_at FROM conversations
     WHERE project_id = $1 AND contact_id IN ($2::bigint, $3::bigint) ORDER BY id FOR UPDATE`,
    projectId, k, g,
  );
  const kc = convs.find((c) => String(c.contact_id) === k);
  const gc = convs.find((c) => String(c.contact_id) === g);
  if (kc && gc) {
    await moves.moveMessages(tx, kc.id, gc.id);
    const later = gc.last_message_at > kc.last_message_at ? gc : kc;
    const maxDate = (a: Date | null, b: Date | null) => (a && b ? (a > b ? a : b) : (a ?? b));
    await deleteConversation(tx, gc.id);
    await absorbConversation(tx, kc.id, {
      state: later.state, lastMessageAt: later.last_message_at, lastInboundAt: maxDate(kc.last_inbound_at, gc.last_inbound_at), orderAt: gc.order_at,
    }, at);
  } else if (gc) {
    await moveConversation(tx, gc.id, keep, at);
  }
  await moves.moveContactRows(tx, keep, gone);
  await foldContact(tx, keep, gone, at);
}

/** Meta's BSUID change: the contact known by `from` is known by `to` from now on (a no-op when replayed). */
export async function rekeyContact(tx: Tx, projectId: string, from: string, to: string, at: Date, moves: MergeMoves): Promise<boolean> {
  const clash = await byUserId(tx, projectId, to);
  const old = await byUserId(tx, projectId, from);
  if (!old) return false;
  if (clash && clash.id !== old.id) {
    // Both known: the one already under the new id is the user now; fold the old one into it.
    const [keep, gone] = old.id < clash.id ? [old, clash] : [clash, old];
    await mergeContacts(tx, projectId, keep.id, gone.id, at, moves);
    await setContactUserId(tx, keep.id, to, at);
    return true;
  }
  await setContactUserId(tx, old.id, to, at);
  return true;
}
