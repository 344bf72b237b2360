/**
 * Who a send goes to: `phone` or `user_id` (a business-scoped user id), exactly one, and what the
 * channel is given for it. A contact known by both is sent to by phone (Meta: with both, `to`
 * wins); one known only by its BSUID by `recipient`. A MARKETING template to a contact who opted
 * out is refused here, before the channel is called (WhatsApp's policy: honour opt-outs).
 */
import type { ChannelError } from '../channel-port/errors.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { normalizePhone } from './phone.js';
import { isBsuid } from './identity.js';


export interface RecipientRequest {
  phone?: string;
  user_id?: string;
}

/** The request's recipient, checked: digits of a phone, or a BSUID. */
export function parseRecipient(body: RecipientRequest): { phone: string; userId?: undefined } | { phone: null; userId: string } {
  const hasPhone = body.phone !== undefined && String(body.phone).trim() !== '';
  const hasUser = body.user_id !== undefined && String(body.user_id).trim() !== '';
  if (hasPhone && hasUser) {
    throw new ApiError('conflicting_recipient', 'Give the recipient as phone or as user_id, not both.', { fields: [{ field: 'user_id', message: 'not with phone' }] });
  }
  if (hasUser) {
    const userId: string = String(body.user_id);
    const shown = userId.slice(0, 64);
    if (!isBsuid(userId)) {
      throw new ApiError('invalid_user_id', `"${shown}" is not a business-scoped user id (a country code, a dot and 1 to 128 letters or digits, e.g. US.13491208655302741918).`, { fields: [{ field: 'user_id', message: 'is not a business-scoped user id' }] });
    }
    return { phone: null, userId };
  }
  if (!hasPhone) throw new ApiError('missing_recipient', 'A send needs a recipient: phone (international form) or user_id (business-scoped user id).');
  const phone = normalizePhone(String(body.phone));
  if (!phone) throw new ApiError('invalid_phone', `"${String(body.phone).slice(0, 64)}" is not a phone number in international form (+ and 8 to 15 digits).`);
  return { phone };
}

export interface ResolvedRecipient {
  /** Digits, when known (then the send goes `to` it). */
  phone: string | null;
  userId: string | null;
}

export function optedOut(): ApiError {
  return new ApiError('recipient_opted_out', 'The contact opted out of marketing messages: a MARKETING template is not sent to them.');
}

/**
 * The recipient as the contact knows it (a BSUID send to a contact with a phone goes to the
 * phone), refusing a MARKETING template to an opted-out contact. One read.
 */
export async function resolveRecipient(tx: Tx, projectId: string, to: { phone: string | null; userId?: string | null }, category: string | undefined): Promise<ResolvedRecipient> {
  const marketing = String(category ?? '').toUpperCase() === 'MARKETING';
  // A send by phone that is no MARKETING template needs nothing from the contact: no statement.
  if (to.phone && !marketing) return { phone: to.phone, userId: to.userId ?? null };
  const rows = await queryRows<{ phone: string | null; user_id: string | null; out: boolean }>(tx,
    `SELECT phone, user_id, opted_out_at IS NOT NULL AS out FROM contacts
     WHERE project_id = $1 AND (phone = $2 OR user_id = $3) LIMIT 1`,
    projectId, to.phone, to.userId ?? null,
  );
  const c = rows[0];
  if (c?.out && marketing) throw optedOut();
  return { phone: c?.phone ?? to.phone ?? null, userId: c?.user_id ?? to.userId ?? null };
}

/** A channel refusal that concerns the recipient: this message needs a phone (Meta's 131062), or the user stopped marketing (131050). */
export function recipientChannelError(e: ChannelError): ApiError | undefined {
  if (e.reasons.includes('recipient_requires_phone')) {
    return new ApiError('recipient_requires_phone', 'WhatsApp sends this message only to a phone number (e.g. an authentication template with a one-tap, zero-tap or copy-code button); this customer is known only by user_id.', { provider_code: 131062 });
  }
  if (e.reasons.includes('recipient_opted_out')) return optedOut();
  return undefined;
}
