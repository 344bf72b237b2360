/**
 * The channel's consent signals, applied to contacts:
 * - a customer message that is exactly a consent keyword (lib/consent/keywords.ts), source `keyword`,
 *   with the project's confirmation text sent back when it has one;
 * - Meta's `user_preferences` webhook (`stop` / `resume` of marketing messages), source
 *   `user_preferences`. For a user we do not know yet, the contact is created with that consent
 *   (no conversation): the opt-out is kept for when the user appears, never lost;
 * - error 131050 (the user stopped marketing messages) on a send or in a failed status, source
 *   `error_131050`.
 * Each is a no-op when the contact already has that consent, so replayed notifications change nothing.
 * Also here: what statuses say about the recipient (BSUID, phone, username) fills in its contact.
 */
import type { Customer, StatusEvent, UserPreferenceEvent } from '../channel-port/events.js';
import type { ConsentStatus } from '../conversations/consent.js';
import { optOutMessageRecipients, setContactConsent, setPreferenceConsent } from '../conversations/contact-store.js';
import { keywordCandidates, keywordMatch, keywordsOf } from './keywords.js';
import { isBsuid, resolveContact, type MergeMoves } from '../conversations/identity.js';
import type { Database } from '../platform/db/database.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';
import { queryRows, type Tx } from '../platform/db/tx.js';

/** Longest text compared with keywords (longer messages are never one: no keyword read for them). */
const KEYWORD_MAX = 60;

/** A keyword message's effect on consent, applied in the message's transaction. */
export async function keywordConsent(
  tx: Tx, projectId: string, contactId: bigint, type: string, content: Record<string, unknown>, at: Date,
): Promise<{ status: 'opted_out' | 'opted_in'; keyword: string; confirmation: string | null } | undefined> {
  const candidates = keywordCandidates(type, content).filter((c) => c.trim().length > 0 && c.length <= KEYWORD_MAX);
  if (candidates.length === 0) return undefined;
  const [row] = await queryRows<{ k: unknown }>(tx, 'SELECT consent_keywords AS k FROM projects WHERE id = $1', projectId);
  const keywords = keywordsOf(row?.k ?? null);
  const match = keywordMatch(keywords, candidates);
  if (!match) return undefined;
  const status = match.change;
  await setContactConsent(tx, projectId, contactId, status, 'keyword', at);
  // The confirmation answers every keyword message (also a repeated STOP: the customer asked).
  return { status, keyword: match.keyword, confirmation: status === 'opted_out' ? keywords.opt_out_confirmation : keywords.opt_in_confirmation };
}

/** Meta's `user_preferences`: `stop` opts out, `resume` opts in (marketing messages only). */
export async function applyUserPreferences(db: Pick<Database, 'prisma' | 'sql'>, moves: MergeMoves, projectId: string, preferences: UserPreferenceEvent[], at: Date): Promise<number> {
  let changed = 0;
  for (const p of preferences) {
    if (p.category !== 'marketing_messages' || (p.value !== 'stop' && p.value !== 'resume')) continue;
    const ids = validIds(p.customer);
    if (!ids.phone && !ids.userId) continue;
    const status: ConsentStatus = p.value === 'stop' ? 'opted_out' : 'opted_in';
    const when = p.timestamp ? new Date(p.timestamp * 1000) : at;
    await inPrismaTransaction(db.prisma, async (tx) => {
      const contact = (await resolveContact(tx, projectId, ids, at, moves))!;
      if (await setPreferenceConsent(tx, projectId, contact.id, status, when)) changed++;
    });
  }
  return changed;
}

function validIds(c: Customer): Customer {
  const out = { ...c };
  if (out.userId !== undefined && !isBsuid(out.userId)) delete out.userId;
  if (out.parentUserId !== undefined && !isBsuid(out.parentUserId)) delete out.parentUserId;
  return out;
}

/** The statuses that say something about their recipient (BSUID, phone, username). */
function statusesNamingCustomers(statuses: StatusEvent[]) {
  return statuses.filter((s) => s.channelMessageId && s.customer && (s.customer.userId || s.customer.username || s.customer.phone));
}

/**
 * What the statuses say about their recipients, as the columns of a check in the statuses'
 * statement (lib/messaging/inbound.ts): per status naming one, its wamid and the valid ids given
 * (null when not given). The contact has news when an id it lacks is given, or another username:
 * exactly when fillStatusCustomers would write it.
 */
export function statusCustomerIds(statuses: StatusEvent[]): { wamid: string[]; phone: Array<string | null>; userId: Array<string | null>; username: Array<string | null> } {
  const out = { wamid: [] as string[], phone: [] as Array<string | null>, userId: [] as Array<string | null>, username: [] as Array<string | null> };
  for (const s of statusesNamingCustomers(statuses)) {
    const c = validIds(s.customer!);
    out.wamid.push(s.channelMessageId);
    out.phone.push(c.phone || null);
    out.userId.push(c.userId || null);
    out.username.push(c.username || null);
  }
  return out;
}

/**
 * Fills in the contacts of the statuses' messages with what the statuses say (BSUID, phone,
 * username): one read for the notification; a contact is written only when something is new.
 * The statuses' statement checks first (statusCustomerIds) and calls this only when there is news.
 */
export async function fillStatusCustomers(db: Pick<Database, 'prisma' | 'sql'>, moves: MergeMoves, projectId: string, statuses: StatusEvent[], at: Date): Promise<void> {
  const given = statusesNamingCustomers(statuses);
  if (given.length === 0) return;
  const rows = await queryRows<{ wamid: string; phone: string | null; user_id: string | null; username: string | null }>(db.sql,
    `SELECT m.wamid, ct.phone, ct.user_id, ct.username FROM messages m
       JOIN conversations cv ON cv.id = m.conversation_id JOIN contacts ct ON ct.id = cv.contact_id
     WHERE m.project_id = $1 AND m.wamid = ANY($2::text[])`,
    projectId, given.map((s) => s.channelMessageId),
  );
  const byWamid = new Map(rows.map((r) => [r.wamid, r]));
  for (const s of given) {
    const known = byWamid.get(s.channelMessageId);
    if (!known) continue;
    const c = validIds(s.customer!);
    // Only what the contact lacks (or a new username) is news: a status of another id changes nothing.
    const news = (c.userId && !known.user_id) || (c.phone && !known.phone) || (c.username && c.username !== known.username);
    if (!news) continue;
    // The contact is the one the message went to; its own ids lead, the status's complete them.
    await inPrismaTransaction(db.prisma, (tx) => resolveContact(tx, projectId, {
      phone: known.phone ?? c.phone, userId: known.user_id ?? c.userId, parentUserId: c.parentUserId, username: c.username,
    }, at, moves));
    known.user_id ??= c.userId ?? null;
    known.phone ??= c.phone ?? null;
    known.username = c.username ?? known.username;
  }
}

/** Failed statuses saying the user stopped marketing messages (Meta's 131050) opt their contacts out. */
export async function optOutOnFailedStatuses(tx: Tx, projectId: string, statuses: StatusEvent[], at: Date): Promise<void> {
  const wamids = statuses.filter((s) => s.status === 'failed' && s.recipientOptedOut && s.channelMessageId).map((s) => s.channelMessageId);
  if (wamids.length === 0) return;
  await optOutMessageRecipients(tx, projectId, wamids, at);
}
