/**
 * Calls (Meta's Calling API, as its pages and contract describe it): a user calls the business
 * (POST /_sim/calls: the `calls` webhook's `connect` with the user's SDP offer), the business acts
 * with POST /:phoneNumberId/calls (connect, pre_accept, accept with its SDP answer, reject,
 * terminate; the body checked against Meta's schema), the user answers or hangs up
 * (/_sim/calls/:id/answer, /hangup), and the `terminate` webhook carries the status and duration.
 * A user answers a call permission request with /_sim/users/:user/call-permission (an interactive
 * `call_permission_reply` message); a business call to a user without permission is Meta's 138006.
 * No media: the SDPs are signalling only.
 */
import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { requireAnyToken, requireToken, type SimContext } from './context.js';
import { paramError, unsupportedRequest, waError } from './errors.js';
import { ControlError } from './inbound.js';
import { wamid as newWamid } from './ids.js';
import { checkCallBody } from './meta-check.js';
import type { PhoneNumber, SimState } from './state.js';
import { isObj, type Obj } from './validate.js';
import { envelopeOf, messagesValueOf } from './webhooks.js';
import { contactEntry, senderFields, shownPhone, type SimUser } from './user-model.js';

interface SimCall {
  id: string;
  pnid: string;
  userId: string;
  direction: 'USER_INITIATED' | 'BUSINESS_INITIATED';
  startedSec: number;
  answeredSec?: number;
  rejected?: boolean;
  endedSec?: number;
  opaque?: string;
}

interface CallsState {
  calls: Map<string, SimCall>;
  /** `${pnid}:${user_id}` → the user's permission, until `expiresSec` (null: permanent). */
  permissions: Map<string, { granted: boolean; expiresSec: number | null }>;
}

const byState = new WeakMap<SimState, CallsState>();
function callsOf(state: SimState): CallsState {
  let s = byState.get(state);
  if (!s) byState.set(state, (s = { calls: new Map(), permissions: new Map() }));
  return s;
}

/** A new call id, shaped like Meta's (`wacid.` and base64). */
const newCallId = () => `wacid.${randomBytes(24).toString('base64url')}`;

/** A tiny RFC 8866 offer or answer: enough for a softphone's parser, no real media behind it. */
export function sampleSdp(kind: 'offer' | 'answer'): string {
  const id = BigInt('0x' + randomBytes(7).toString('hex')).toString();
  return [
    'v=0', `o=- ${id} 2 IN IP4 127.0.0.1`, 's=-', 't=0 0', 'a=group:BUNDLE 0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'c=IN IP4 0.0.0.0',
    'a=rtcp:9 IN IP4 0.0.0.0', `a=ice-ufrag:${randomBytes(3).toString('hex')}`, `a=ice-pwd:${randomBytes(12).toString('base64')}`,
    `a=fingerprint:sha-256 ${[...randomBytes(32)].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(':')}`,
    `a=setup:${kind === 'offer' ? 'actpass' : 'active'}`, 'a=mid:0', 'a=sendrecv', 'a=rtcp-mux', 'a=rtpmap:111 opus/48000/2', '',
  ].join('\r\n');
}

function pnOf(ctx: SimContext, v: unknown): PhoneNumber {
  if (typeof v !== 'string') throw new ControlError(400, 'phone_number_id (string) is required');
  const pn = ctx.state.phones.get(v);
  if (!pn) throw new ControlError(404, `unknown phone_number_id ${v}`);
  return pn;
}

/** The user a control call names: `user_id` (a BSUID) or `from` (a phone; made on first contact). */
function userOf(ctx: SimContext, pn: PhoneNumber, b: Obj): SimUser {
  if (b.user_id !== undefined) {
    const u = typeof b.user_id === 'string' ? ctx.state.users.get(pn.phone_number_id, b.user_id) : undefined;
    if (!u) throw new ControlError(404, `unknown user_id ${String(b.user_id).slice(0, 140)}`);
    return u;
  }
  if (typeof b.from !== 'string' || !/^\+?\d{5,20}$/.test(b.from)) throw new ControlError(400, 'from must be a phone number (digits, optional +), or give user_id');
  return ctx.state.users.ofPhone(pn.phone_number_id, b.from.replace(/\D/g, ''), typeof b.name === 'string' ? b.name : undefined);
}

function callsValue(pn: PhoneNumber, user: SimUser, rest: Obj): Obj {
  return messagesValueOf(pn, { contacts: [contactEntry(user)], ...rest });
}

/** The `calls` entry of a call: the user is `from` of a call they placed and `to` of the business's. */
function callEntry(state: SimState, pn: PhoneNumber, call: SimCall, user: SimUser, event: 'connect' | 'terminate'): Obj {
  const phone = shownPhone(user);
  const userSide = call.direction === 'USER_INITIATED'
    ? { ...(phone ? { from: phone } : {}), from_user_id: user.user_id, to: pn.display_phone_number }
    : { from: pn.display_phone_number, ...(phone ? { to: phone } : {}), to_user_id: user.user_id };
  return { id: call.id, ...userSide, event, timestamp: String(state.nowSec()), direction: call.direction };
}

/**
 * One notification, delivered `deliveries` times at once (Meta delivers at least once: a receiver
 * must take the same notification twice, even concurrently, on two instances).
 */
async function deliver(ctx: SimContext, pn: PhoneNumber, kind: string, ref: string, value: Obj, deliveries = 1): Promise<void> {
  const field = kind.startsWith('permission') ? 'messages' : 'calls';
  const body = JSON.stringify(envelopeOf(pn, field, value));
  await Promise.all(Array.from({ length: deliveries }, () => ctx.dispatcher.deliverNow({ pnid: pn.phone_number_id, field, kind, ref, body, attempt: 0 })));
}

function deliveriesOf(b: Obj): number {
  if (b.deliveries === undefined) return 1;
  if (!Number.isInteger(b.deliveries) || (b.deliveries as number) < 1 || (b.deliveries as number) > 5) throw new ControlError(400, 'deliveries: 1 to 5');
  return b.deliveries as number;
}

/** The call ended: one `terminate` notification, COMPLETED (with its duration when answered) or FAILED. */
async function terminate(ctx: SimContext, call: SimCall, failed = false, deliveries = 1): Promise<void> {
  if (call.endedSec !== undefined) return;
  const { state } = ctx;
  const pn = state.phones.get(call.pnid)!;
  const user = state.users.get(call.pnid, call.userId)!;
  call.endedSec = state.nowSec();
  const entry: Obj = { ...callEntry(state, pn, call, user, 'terminate'), status: failed ? 'FAILED' : 'COMPLETED' };
  if (call.answeredSec !== undefined) {
    Object.assign(entry, { start_time: String(call.answeredSec), end_time: String(call.endedSec), duration: call.endedSec - call.answeredSec });
  }
  if (call.opaque !== undefined) entry.biz_opaque_callback_data = call.opaque;
  await deliver(ctx, pn, 'call:terminate', call.id, callsValue(pn, user, { calls: [entry] }), deliveries);
}

/** A business call's progress: a `calls` status of type `call` (RINGING, ACCEPTED, REJECTED). */
async function callStatus(ctx: SimContext, call: SimCall, status: string): Promise<void> {
  const { state } = ctx;
  const pn = state.phones.get(call.pnid)!;
  const user = state.users.get(call.pnid, call.userId)!;
  const phone = shownPhone(user);
  const s: Obj = { id: call.id, timestamp: String(state.nowSec()), type: 'call', status, ...(phone ? { recipient_id: phone } : {}), recipient_user_id: user.user_id };
  if (call.opaque !== undefined) s.biz_opaque_callback_data = call.opaque;
  await deliver(ctx, pn, `call:${status.toLowerCase()}`, call.id, messagesValueOf(pn, { statuses: [s] }));
}

// ------------------------------------------------------------------ control API

/** POST /_sim/calls `{ phone_number_id, from | user_id, name?, sdp?, deliveries? }`: the user calls the business. */
export async function userCalls(ctx: SimContext, b: Obj): Promise<Obj> {
  const pn = pnOf(ctx, b.phone_number_id);
  const user = userOf(ctx, pn, b);
  if (b.sdp !== undefined && (typeof b.sdp !== 'string' || !b.sdp.startsWith('v=0'))) throw new ControlError(400, 'sdp must be an SDP offer (starting "v=0")');
  const sdp = (b.sdp as string | undefined) ?? sampleSdp('offer');
  const deliveries = deliveriesOf(b);
  const call: SimCall = { id: newCallId(), pnid: pn.phone_number_id, userId: user.user_id, direction: 'USER_INITIATED', startedSec: ctx.state.nowSec() };
  callsOf(ctx.state).calls.set(call.id, call);
  const entry = { ...callEntry(ctx.state, pn, call, user, 'connect'), session: { sdp_type: 'offer', sdp } };
  await deliver(ctx, pn, 'call:connect', call.id, callsValue(pn, user, { calls: [entry] }), deliveries);
  return { call_id: call.id, sdp };
}

function callOr404(ctx: SimContext, id: string): SimCall {
  const call = callsOf(ctx.state).calls.get(id);
  if (!call) throw new ControlError(404, `unknown call ${id.slice(0, 140)}`);
  return call;
}

/** POST /_sim/calls/:id/answer `{ reject? }`: the user picks up (or declines) a business call. */
export async function userAnswers(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const call = callOr404(ctx, id);
  if (call.direction !== 'BUSINESS_INITIATED' || call.endedSec !== undefined || call.answeredSec !== undefined) throw new ControlError(409, 'not a ringing business call');
  if (b.reject === true) {
    call.rejected = true;
    await callStatus(ctx, call, 'REJECTED');
    await terminate(ctx, call);
    return { call_id: id, status: 'rejected' };
  }
  call.answeredSec = ctx.state.nowSec();
  await callStatus(ctx, call, 'ACCEPTED');
  return { call_id: id, status: 'accepted', sdp: sampleSdp('answer') };
}

/** POST /_sim/calls/:id/hangup `{ failed?, deliveries? }`: the user hangs up (a call not answered ends without a duration). */
export async function userHangsUp(ctx: SimContext, id: string, b: Obj): Promise<Obj> {
  const call = callOr404(ctx, id);
  if (call.endedSec !== undefined) throw new ControlError(409, 'the call has ended');
  await terminate(ctx, call, b.failed === true, deliveriesOf(b));
  return { call_id: id, ended: true };
}

/**
 * POST /_sim/users/:user/call-permission `{ phone_number_id, response: accept | reject, permanent? }`
 * (`:user` a BSUID or a phone): the user answers a call permission request, as an interactive
 * `call_permission_reply` message; a temporary grant lasts 7 days (Meta).
 */
export async function userAnswersPermission(ctx: SimContext, who: string, b: Obj): Promise<Obj> {
  const pn = pnOf(ctx, b.phone_number_id);
  const user = /^\+?\d{5,20}$/.test(who) ? ctx.state.users.ofPhone(pn.phone_number_id, who.replace(/\D/g, '')) : ctx.state.users.get(pn.phone_number_id, who);
  if (!user) throw new ControlError(404, `unknown user ${who.slice(0, 140)}`);
  if (b.response !== 'accept' && b.response !== 'reject') throw new ControlError(400, 'response must be accept or reject');
  const now = ctx.state.nowSec();
  const permanent = b.permanent === true;
  const expiresSec = b.response === 'accept' && !permanent ? now + 7 * 24 * 3600 : null;
  callsOf(ctx.state).permissions.set(`${pn.phone_number_id}:${user.user_id}`, { granted: b.response === 'accept', expiresSec });
  const reply: Obj = { response: b.response, is_permanent: permanent, response_source: 'user_action' };
  if (expiresSec !== null) reply.expiration_timestamp = expiresSec;
  const id = newWamid(shownPhone(user) ?? user.user_id.replace(/\D/g, '').slice(0, 15), true);
  const message = { ...senderFields(user), id, timestamp: String(now), type: 'interactive', interactive: { type: 'call_permission_reply', call_permission_reply: reply } };
  if (user.phone) ctx.state.lastInbound.set(`${pn.phone_number_id}:${user.phone}`, now * 1000);
  ctx.state.lastInbound.set(`${pn.phone_number_id}:${user.user_id}`, now * 1000);
  await deliver(ctx, pn, 'permission:reply', id, messagesValueOf(pn, { contacts: [contactEntry(user)], messages: [message] }));
  return { wamid: id, granted: b.response === 'accept', expiration_timestamp: expiresSec };
}

// ------------------------------------------------------------------ Graph

/** POST /:phoneNumberId/calls: the business's action on a call, answered as Meta answers. */
export function callAction(ctx: SimContext) {
  return async (req: Request, res: Response): Promise<void> => {
    const { state } = ctx;
    const pn = state.phones.get(String(req.params.node));
    if (!pn) {
      requireAnyToken(state, req);
      throw unsupportedRequest('post', String(req.params.node));
    }
    requireToken(req, pn);
    const invalid = checkCallBody(req.body);
    if (invalid) throw invalid;
    const b = req.body as Obj;
    const s = callsOf(state);
    if (b.action === 'connect') {
      const to = String(b.to ?? '').replace(/\D/g, '');
      const user = state.users.ofPhone(pn.phone_number_id, to);
      const p = s.permissions.get(`${pn.phone_number_id}:${user.user_id}`);
      if (!p?.granted || (p.expiresSec !== null && p.expiresSec <= state.nowSec())) {
        throw waError(138006, 'No approved call permission from the recipient', { message: '(#138006) Lack of call request permission' });
      }
      const call: SimCall = { id: newCallId(), pnid: pn.phone_number_id, userId: user.user_id, direction: 'BUSINESS_INITIATED', startedSec: state.nowSec() };
      if (typeof b.biz_opaque_callback_data === 'string') call.opaque = b.biz_opaque_callback_data;
      s.calls.set(call.id, call);
      res.json({ messaging_product: 'whatsapp', calls: [{ id: call.id }] });
      setImmediate(() => void callStatus(ctx, call, 'RINGING'));
      return;
    }
    const call = typeof b.call_id === 'string' ? s.calls.get(b.call_id) : undefined;
    if (!call || call.pnid !== pn.phone_number_id) throw paramError('Invalid parameter', `Unknown call_id ${String(b.call_id).slice(0, 140)}.`);
    if (call.endedSec !== undefined) throw paramError('Invalid parameter', 'The call has ended.');
    const action = String(b.action);
    if (action !== 'terminate' && (call.direction !== 'USER_INITIATED' || call.answeredSec !== undefined)) {
      throw paramError('Invalid parameter', `${action} applies to a ringing call placed by the user.`);
    }
    if (action === 'accept') call.answeredSec = state.nowSec();
    res.json({ success: true });
    // What the action makes happen at the user's end comes after the answer, as at Meta.
    if (action === 'reject') {
      call.rejected = true;
      setImmediate(() => void terminate(ctx, call));
    } else if (action === 'terminate') setImmediate(() => void terminate(ctx, call));
  };
}

