/**
 * WhatsApp voice calls (docs/calls.md): what the channel says of a call, applied (ringing,
 * answered, ended with its duration, missed), each change with its event (`call.ringing`,
 * `call.answered`, `call.ended`) in one transaction; what the business does with a call (connect,
 * pre-accept, accept with the SDP answer, reject, terminate), refused here when Meta would refuse
 * it; and the customer's call permission, kept on the contact. The service relays signalling only:
 * the media flows between the customer's phone and the business's softphone.
 *
 * The deployed bot hears of the same changes (`onCall`; docs/bot.md): each change that raises a
 * call event is also put into the bot's inbox in its transaction (`call:<id>:<status>`, through
 * BotHook.enqueueCall: calls never import the bot) and handed to the bot once committed.
 */
import { ApiError } from '../platform/errors.js';
import type { Deps } from '../deps.js';
import type { CallEvent, CallPermissionEvent, Customer } from '../channel-port/events.js';
import type { CallActionInput } from '../channel-port/port.js';
import { hasReason } from '../channel-port/errors.js';
import { asApiError } from '../channel-port/api-errors.js';
import { requireChannel, type OpenChannel } from '../channel-settings/settings.js';
import { isBsuid, resolveContact } from '../conversations/identity.js';
import { touchConversation } from '../conversations/conversations.js';
import { setCallPermission } from '../conversations/contact-store.js';
import { phoneView } from '../conversations/views.js';
import { recordEvent } from '../webhooks/events.js';
import { inTransaction } from '../platform/db/transaction.js';
import { type Tx, queryRows } from '../platform/db/tx.js';
import { callColumns, endCall, insertCall, moveCall, type CallRow } from './store.js';
import { capability } from '../channel-port/capabilities.js';

export { moveConversationCalls } from './store.js';

/** Business-initiated calls are unavailable to customers of these calling codes (US and Canada, Türkiye, Egypt, Vietnam, Nigeria). */
const NO_BUSINESS_CALLS: ReadonlyArray<[string, string]> = [['1', 'US/CA'], ['90', 'TR'], ['20', 'EG'], ['84', 'VN'], ['234', 'NG']];

export function callingUnavailableCountry(phone: string | null | undefined): string | undefined {
  if (!phone) return undefined;
  return NO_BUSINESS_CALLS.find(([code]) => phone.startsWith(code))?.[1];
}

export interface CallView {
  id: number;
  call_id: string;
  conversation_id: number;
  direction: 'user_initiated' | 'business_initiated';
  status: string;
  contact: { id: number; phone: string | null; user_id: string | null; name: string | null };
  offer_sdp: string | null;
  started_at: string;
  answered_at: string | null;
  ended_at: string | null;
  duration_seconds: number | null;
}

type CallWithContact = CallRow & { contactId: bigint; phone: string | null; userId: string | null; name: string | null; conversationState: string };

const SELECT_CALLS = `SELECT ${callColumns('c.')}, ct.id AS "contactId", ct.phone, ct.user_id AS "userId", ct.name, cv.state AS "conversationState"
  FROM calls c JOIN conversations cv ON cv.id = c.conversation_id JOIN contacts ct ON ct.id = cv.contact_id`;

export function callView(c: CallWithContact): CallView {
  return {
    id: Number(c.id),
    call_id: c.callId,
    conversation_id: Number(c.conversationId),
    direction: c.direction === 'business_initiated' ? 'business_initiated' : 'user_initiated',
    status: c.status,
    contact: { id: Number(c.contactId), phone: phoneView(c.phone), user_id: c.userId, name: c.name },
    offer_sdp: c.offerSdp,
    started_at: c.startedAt.toISOString(),
    answered_at: c.answeredAt?.toISOString() ?? null,
    ended_at: c.endedAt?.toISOString() ?? null,
    duration_seconds: c.durationSeconds,
  };
}

async function withContact(tx: Tx, projectId: string, callId: string): Promise<CallWithContact> {
  const rows = await queryRows<CallWithContact>(tx, `${SELECT_CALLS} WHERE c.project_id = $1 AND c.call_id = $2`, projectId, callId);
  return rows[0];
}

const EVENT_OF: Record<string, string> = { ringing: 'call.ringing', accepted: 'call.answered' };

/** The bot's view of a call (lib/bot/event-types.ts), named through Deps: calls never import the bot. */
type InboundCall = Parameters<NonNullable<NonNullable<Deps['bot']>['enqueueCall']>>[3];

/** The bot's view of a call's change (lib/bot/event-types.ts), for the changes that raise an event. */
function botCallOf(c: CallWithContact): InboundCall | undefined {
  const status = c.endedAt ? (c.status === 'missed' ? 'missed' : 'ended') : c.status === 'ringing' ? 'ringing' : c.status === 'accepted' ? 'answered' : undefined;
  if (!status || (!c.phone && !c.userId)) return undefined;
  return {
    id: c.callId,
    status,
    direction: c.direction === 'business_initiated' ? 'business_initiated' : 'user_initiated',
    from: (c.phone ?? c.userId)!,
    conversation: { id: Number(c.conversationId), state: c.conversationState },
    contact: { phone: c.phone, user_id: c.userId, name: c.name },
    result: c.endedAt ? (c.status as InboundCall['result']) : null,
    started_at: c.startedAt.toISOString(),
    answered_at: c.answeredAt?.toISOString() ?? null,
    ended_at: c.endedAt?.toISOString() ?? null,
    duration_seconds: c.durationSeconds,
  };
}

/** Changes put into the bot's inbox in a transaction, handed to the bot once it committed. */
type BotHandovers = Array<{ key: string; call: InboundCall; at: Date }>;

function handOver(deps: Deps, projectId: string, handovers: BotHandovers): void {
  for (const h of handovers) deps.bot?.onEvent(projectId, h.key, { kind: 'call', call: h.call, context: { received_at: h.at.toISOString() } });
}

/**
 * Records the call's event for a change (ended calls raise `call.ended`), and puts the change into
 * the deployed bot's inbox in the same transaction (`handovers` says what to hand over after it).
 */
async function raise(deps: Deps, tx: Tx, projectId: string, row: CallRow, at: Date, handovers: BotHandovers): Promise<CallView> {
  const c = await withContact(tx, projectId, row.callId);
  const view = callView(c);
  const name = row.endedAt ? 'call.ended' : EVENT_OF[row.status];
  if (name) await recordEvent(tx, projectId, name, { conversation_id: view.conversation_id, call: view }, at);
  const call = name ? botCallOf(c) : undefined;
  if (call && deps.bot?.enqueueCall) {
    const key = await deps.bot.enqueueCall(tx, projectId, row.id, call, at);
    if (key) handovers.push({ key, call, at });
  }
  return view;
}

const seconds = (v: string | undefined): Date | undefined => (v && Number(v) > 0 ? new Date(Number(v) * 1000) : undefined);

function customerIds(c: Customer): Customer {
  const ids = { ...c };
  if (ids.userId !== undefined && !isBsuid(ids.userId)) delete ids.userId;
  return ids;
}

/**
 * One call notification, applied once: a `connect` inserts the call ringing, a status moves it
 * forward, a `terminate` ends it. The view of the call when it changed (the bot hears of it), else undefined.
 */
export async function applyCallEvent(deps: Deps, channel: OpenChannel, e: CallEvent, now: Date): Promise<CallView | undefined> {
  const ids = customerIds(e.customer);
  if (!e.callId || e.callId.length > 256 || (!ids.phone && !ids.userId)) return undefined;
  const projectId = channel.projectId;
  const handovers: BotHandovers = [];
  const view = await inTransaction(deps.db.pool, async (tx) => {
    const contact = await resolveContact(tx, projectId, ids, now, deps.contactMerge);
    if (!contact) return undefined;
    // A call is activity in the conversation but not a message: it does not open the 24-hour window.
    const conversationId = await touchConversation(tx, projectId, contact.id, now);
    const startedAt = seconds(e.startTime) ?? seconds(e.timestamp) ?? now;
    let row: CallRow | undefined;
    if (e.event === 'connect') {
      row = await insertCall(tx, {
        projectId, conversationId, callId: e.callId, direction: e.direction, status: e.direction === 'user_initiated' ? 'ringing' : 'dialing',
        offerSdp: e.sdp?.type === 'offer' ? e.sdp.sdp : null, startedAt,
      }, now);
    } else if (e.event === 'status') {
      const to = ({ RINGING: 'ringing', ACCEPTED: 'accepted', REJECTED: 'rejected' } as Record<string, string>)[e.status ?? ''];
      const from = ({ ringing: ['dialing'], accepted: ['dialing', 'ringing'], rejected: ['dialing', 'ringing'] } as Record<string, string[]>)[to ?? ''];
      if (to) row = await moveCall(tx, projectId, e.callId, from, to, now);
    } else {
      const endedAt = seconds(e.endTime) ?? seconds(e.timestamp) ?? now;
      const failed = e.status === 'FAILED';
      row = await endCall(tx, projectId, e.callId, failed, endedAt, e.durationSeconds ?? null, now);
      // A terminate of a call we never saw ringing is kept as it ended.
      row ??= await insertCall(tx, {
        projectId, conversationId, callId: e.callId, direction: e.direction,
        status: failed ? 'failed' : (e.durationSeconds ?? 0) > 0 ? 'completed' : 'missed', startedAt, endedAt, durationSeconds: e.durationSeconds ?? null,
      }, now);
    }
    return row ? raise(deps, tx, projectId, row, now, handovers) : undefined;
  });
  handOver(deps, projectId, handovers);
  return view;
}

/** The customer answered a call permission request: kept on the contact (`call_permission_status`). */
export async function applyCallPermission(deps: Deps, channel: OpenChannel, e: CallPermissionEvent, now: Date): Promise<void> {
  const ids = customerIds(e.customer);
  if (!ids.phone && !ids.userId) return;
  await inTransaction(deps.db.pool, async (tx) => {
    const contact = await resolveContact(tx, channel.projectId, ids, now, deps.contactMerge);
    if (!contact) return;
    await setCallPermission(tx, channel.projectId, contact.id, e.status, e.permanent || !e.expiresAt ? null : new Date(e.expiresAt * 1000), now);
  });
}

/** Marks a contact's permission `pending` once a request was sent (a granted permission stays). */
export async function markPermissionRequested(deps: Deps, projectId: string, contactId: bigint): Promise<void> {
  const now = deps.clock.now();
  await inTransaction(deps.db.pool, async (tx) => {
    const rows = await queryRows<{ status: string | null; expires: Date | null }>(tx,
      'SELECT call_permission_status AS status, call_permission_expires_at AS expires FROM contacts WHERE project_id = $1 AND id = $2::bigint FOR UPDATE', projectId, String(contactId),
    );
    if (rows[0] && !permissionGranted(rows[0].status, rows[0].expires, now)) await setCallPermission(tx, projectId, contactId, 'pending', null, now);
  });
}

function permissionGranted(status: string | null, expires: Date | null, now: Date): boolean {
  return status === 'granted' && (!expires || expires > now);
}

// ------------------------------------------------------------------ reads

export async function listCalls(deps: Pick<Deps, 'db'>, projectId: string, q: { conversationId?: number; limit: number; beforeId?: number }): Promise<CallView[]> {
  const rows = await queryRows<CallWithContact>(deps.db.sql,
    `${SELECT_CALLS} WHERE c.project_id = $1 AND ($2::bigint IS NULL OR c.conversation_id = $2::bigint) AND ($3::bigint IS NULL OR c.id < $3::bigint)
     ORDER BY c.id DESC LIMIT $4`,
    projectId, q.conversationId === undefined ? null : String(q.conversationId), q.beforeId === undefined ? null : String(q.beforeId), q.limit,
  );
  return rows.map(callView);
}

async function callById(deps: Deps, projectId: string, id: string): Promise<CallWithContact | undefined> {
  // A numeric id is ours, anything else the channel's call id.
  const numeric = /^\d{1,18}$/.test(id);
  const rows = await queryRows<CallWithContact>(deps.db.sql,
    `${SELECT_CALLS} WHERE c.project_id = $1 AND ${numeric ? 'c.id = $2::bigint' : 'c.call_id = $2'}`, projectId, id,
  );
  return rows[0];
}

export async function getCall(deps: Deps, projectId: string, id: string): Promise<CallView> {
  const row = await callById(deps, projectId, id);
  if (!row) throw new ApiError('not_found', `No call "${id.slice(0, 140)}" in this project.`);
  return callView(row);
}

// ------------------------------------------------------------------ the business's actions

export type CallAction = 'pre_accept' | 'accept' | 'reject' | 'terminate';

/** Which statuses each action may act on. */
const ACTS_ON: Record<CallAction, string[]> = {
  pre_accept: ['ringing'],
  accept: ['ringing', 'pre_accepted'],
  reject: ['ringing', 'pre_accepted'],
  terminate: ['dialing', 'ringing', 'pre_accepted', 'accepted'],
};

async function callChannel(deps: Deps, channel: OpenChannel, input: CallActionInput): Promise<{ callId?: string }> {
  try {
    return await capability(deps, channel, 'calls').callAction(channel, input);
  } catch (e) {
    if (hasReason(e, 'call_permission_required')) throw permissionRequired();
    throw asApiError(e);
  }
}

function permissionRequired(): ApiError {
  return new ApiError('call_permission_required', 'The customer has not granted this business permission to call: send a call permission request (POST /v1/contacts/{id}/call-permission-request) and call once they accept.');
}

/**
 * Pre-accepts, accepts (with the softphone's SDP answer), rejects or terminates a call. A user
 * call's answer is recorded (`call.answered`) when the channel took the accept; a reject or
 * terminate ends the call when the channel's terminate notification comes.
 */
export async function actOnCall(deps: Deps, projectId: string, id: string, action: CallAction, sdp: string | undefined): Promise<CallView> {
  const call = await callById(deps, projectId, id);
  if (!call) throw new ApiError('not_found', `No call "${id.slice(0, 140)}" in this project.`);
  if ((action === 'accept' || action === 'pre_accept') && !sdp) {
    throw new ApiError('invalid_request', `${action} needs sdp: the softphone's SDP answer to the call's offer_sdp.`, { field: 'sdp' });
  }
  if ((action === 'accept' || action === 'pre_accept' || action === 'reject') && call.direction !== 'user_initiated') {
    throw new ApiError('conflict', `Only a customer's call is ${action === 'reject' ? 'rejected' : 'accepted'}; this call was placed by the business (terminate it).`, { status: call.status });
  }
  if (call.endedAt || !ACTS_ON[action].includes(call.status)) {
    throw new ApiError('conflict', `The call is ${call.status}: ${action} is not possible now.`, { status: call.status });
  }
  const channel = await requireChannel(deps, projectId);
  const to = call.phone ?? call.userId ?? '';
  const input: CallActionInput = action === 'accept' || action === 'pre_accept'
    ? { action, callId: call.callId, to, sdp: sdp! }
    : { action, callId: call.callId, to };
  if (action === 'reject') return rejectCall(deps, channel, projectId, call, input);
  await callChannel(deps, channel, input);
  const now = deps.clock.now();
  const moved = action === 'accept' ? 'accepted' : action === 'pre_accept' ? 'pre_accepted' : undefined;
  if (!moved) return callView(call);
  const handovers: BotHandovers = [];
  const view = await inTransaction(deps.db.pool, async (tx) => {
    const row = await moveCall(tx, projectId, call.callId, ACTS_ON[action], moved, now);
    return row ? raise(deps, tx, projectId, row, now, handovers) : callView(await withContact(tx, projectId, call.callId));
  });
  handOver(deps, projectId, handovers);
  return view;
}

/**
 * A reject is recorded before the channel is asked: the channel ends the call at once, and its
 * terminate notification can arrive before the channel's answer does (the call would end `missed`).
 * Put back as it was when the channel refuses.
 */
async function rejectCall(deps: Deps, channel: OpenChannel, projectId: string, call: CallRow, input: CallActionInput): Promise<CallView> {
  const row = await inTransaction(deps.db.pool, (tx) => moveCall(tx, projectId, call.callId, ACTS_ON.reject, 'rejected', deps.clock.now()));
  if (!row) throw new ApiError('conflict', 'The call ended or changed: reject is not possible now.');
  try {
    await callChannel(deps, channel, input);
  } catch (err) {
    await inTransaction(deps.db.pool, (tx) => moveCall(tx, projectId, call.callId, ['rejected'], call.status, deps.clock.now()));
    throw err;
  }
  return callView(await withContact(deps.db.sql, projectId, call.callId));
}

/**
 * A business-initiated call to a contact, with the softphone's SDP offer. Refused before the
 * channel where Meta forbids it: the customer's country (422 `calling_unavailable_in_country`),
 * no granted permission (409 `call_permission_required`).
 */
export async function startCall(deps: Deps, projectId: string, contactId: number, sdp: string, reference?: string): Promise<CallView> {
  const rows = await queryRows<{ id: bigint; phone: string | null; status: string | null; expires: Date | null }>(deps.db.sql,
    'SELECT id, phone, call_permission_status AS status, call_permission_expires_at AS expires FROM contacts WHERE project_id = $1 AND id = $2::bigint',
    projectId, String(contactId),
  );
  const contact = rows[0];
  if (!contact) throw new ApiError('not_found', `No contact ${contactId} in this project.`);
  if (!contact.phone) throw new ApiError('invalid_request', 'A business call goes to a phone number; this contact has none yet.', { field: 'contact_id' });
  const country = callingUnavailableCountry(contact.phone);
  if (country) {
    throw new ApiError('calling_unavailable_in_country', `WhatsApp does not offer business-initiated calls to numbers of ${country} (+${NO_BUSINESS_CALLS.find(([, c]) => c === country)![0]}).`, { country });
  }
  const now = deps.clock.now();
  if (!permissionGranted(contact.status, contact.expires, now)) throw permissionRequired();
  const channel = await requireChannel(deps, projectId);
  const { callId } = await callChannel(deps, channel, { action: 'connect', to: contact.phone, sdp, reference });
  return inTransaction(deps.db.pool, async (tx) => {
    const conversationId = await touchConversation(tx, projectId, contact.id, now);
    await insertCall(tx, { projectId, conversationId, callId: callId!, direction: 'business_initiated', status: 'dialing', startedAt: now }, now);
    return callView(await withContact(tx, projectId, callId!));
  });
}
