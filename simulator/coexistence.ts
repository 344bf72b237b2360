/**
 * A number shared with the WhatsApp Business app (coexistence) and thread control, as Meta does
 * them (docs/coexistence.md for the shapes):
 * - Graph `POST /:phoneNumberId/thread_control` (`pass` to `target_app_id`, `take`, `release`)
 *   answers `{ success: true }` and keeps who holds each customer's thread: while another app holds
 *   it, the customer's messages arrive as `standby` (inbound.ts);
 * - control calls that make Meta's notifications: an echo of a message sent from the Business app
 *   (`smb_message_echoes`), a history chunk (`history`), an address book change
 *   (`smb_app_state_sync`) and a handover by another app (`messaging_handovers`).
 * Each control call may name the wamid (`id`), so a test can deliver the same notification twice.
 */
import type { Request, Response } from 'express';
import type { SimContext } from './context.js';
import { postedNode } from './context.js';
import { paramError } from './errors.js';
import { ControlError } from './inbound.js';
import { wamid as newWamid } from './ids.js';
import type { PhoneNumber } from './state.js';
import { isObj, type Obj } from './validate.js';
import { envelopeOf, messagesValueOf } from './webhooks.js';

const ACTIONS = new Set(['pass', 'take', 'release']);
const fail = (status: number, message: string): never => {
  throw new ControlError(status, message);
};
const waIdOf = (v: unknown, field: string): string => {
  if (typeof v !== 'string' || !/^\+?\d{5,20}$/.test(v)) fail(400, `${field} must be a phone number (digits)`);
  return (v as string).replace(/\D/g, '');
};
const businessOf = (pn: PhoneNumber) => pn.display_phone_number.replace(/\D/g, '');

/** Graph: POST /:phoneNumberId/thread_control. */
export function threadControl(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const { state } = ctx;
    const pn = postedNode(state, req);
    const b: unknown = req.body;
    if (!isObj(b) || b.messaging_product !== 'whatsapp') throw paramError('The parameter messaging_product is required and must be whatsapp.');
    const who = b.to ?? b.recipient;
    if (typeof who !== 'string' || !who) throw paramError('The parameter to (or recipient) is required.');
    if (typeof b.action !== 'string' || !ACTIONS.has(b.action)) throw paramError(`Param action must be one of {PASS, TAKE, RELEASE} - got "${String(b.action)}".`);
    if (b.metadata !== undefined && (typeof b.metadata !== 'string' || b.metadata.length > 2000)) throw paramError('Param metadata must be a string of at most 2000 characters.');
    const key = `${pn.phone_number_id}:${who.replace(/^\+/, '')}`;
    if (b.action === 'pass') {
      if (typeof b.target_app_id !== 'string' && typeof b.target_app_id !== 'number') throw paramError('The parameter target_app_id is required to pass the thread.');
      if (state.threadHolders.has(key)) throw paramError('Invalid parameter', 'The thread is held by another app; only its holder can pass it.');
      state.threadHolders.set(key, String(b.target_app_id));
    } else {
      state.threadHolders.delete(key);
    }
    res.json({ success: true });
  };
}

function deliver(ctx: SimContext, pn: PhoneNumber, field: string, value: Obj, ref: string | null) {
  const body = JSON.stringify(envelopeOf(pn, field, messagesValueOf(pn, value), ctx.state.nowSec()));
  return ctx.dispatcher.deliverNow({ pnid: pn.phone_number_id, field, kind: field, ref, body, attempt: 0 });
}

function textMessage(b: Obj, from: string, to: string | undefined, ts: number): Obj {
  if (typeof b.text !== 'string') fail(400, 'text (string) is required');
  const id = typeof b.id === 'string' && b.id ? b.id : newWamid(to ?? from);
  return { from, ...(to ? { to } : {}), id, timestamp: String(ts), type: 'text', text: { body: b.text } };
}

/** `POST /_sim/phone-numbers/:id/echoes` `{ to, text, id? }`: the business wrote from the Business app. */
export async function emitEcho(ctx: SimContext, pn: PhoneNumber, b: Obj) {
  const to = waIdOf(b.to, 'to');
  const echo = textMessage(b, businessOf(pn), to, ctx.state.nowSec());
  return { id: echo.id, ...(await deliver(ctx, pn, 'smb_message_echoes', { message_echoes: [echo] }, echo.id as string)) };
}

/**
 * `POST /_sim/phone-numbers/:id/history` `{ threads: [{ id: <wa_id>, messages: [{ from_business?, text, id?, timestamp?, status? }] }], phase?, chunk_order?, progress? }`,
 * or `{ declined: true }` (the business declined to share its history: Meta's error 2593109).
 */
export async function emitHistory(ctx: SimContext, pn: PhoneNumber, b: Obj) {
  if (b.declined === true) {
    return deliver(ctx, pn, 'history', { history: [{ errors: [{ code: 2593109, title: 'History sharing is turned off by the business', message: 'History sharing is turned off by the business', error_data: { details: 'The business declined to share its chat history.' } }] }] }, null);
  }
  if (!Array.isArray(b.threads)) fail(400, 'threads (a list) is required, or declined: true');
  const business = businessOf(pn);
  const now = ctx.state.nowSec();
  const threads = (b.threads as unknown[]).map((t) => {
    if (!isObj(t) || !Array.isArray(t.messages)) return fail(400, 'each thread needs id and messages');
    const waId = waIdOf(t.id, 'threads[].id');
    const messages = (t.messages as unknown[]).map((m) => {
      if (!isObj(m)) return fail(400, 'each message is an object');
      const ts = typeof m.timestamp === 'number' ? m.timestamp : now;
      const out = m.from_business === true ? textMessage(m, business, waId, ts) : textMessage(m, waId, undefined, ts);
      out.history_context = { status: typeof m.status === 'string' ? m.status : m.from_business === true ? 'READ' : 'DELIVERED' };
      return out;
    });
    return { id: waId, messages };
  });
  const chunk = { metadata: { phase: typeof b.phase === 'number' ? b.phase : 0, chunk_order: typeof b.chunk_order === 'number' ? b.chunk_order : 1, progress: typeof b.progress === 'number' ? b.progress : 100 }, threads };
  return { threads: threads.map((t) => ({ id: t.id, message_ids: t.messages.map((m) => m.id) })), ...(await deliver(ctx, pn, 'history', { history: [chunk] }, null)) };
}

/** `POST /_sim/phone-numbers/:id/state-sync` `{ contacts: [{ phone_number, full_name?, first_name?, action? }] }`. */
export async function emitStateSync(ctx: SimContext, pn: PhoneNumber, b: Obj) {
  if (!Array.isArray(b.contacts)) fail(400, 'contacts (a list) is required');
  const now = ctx.state.nowSec();
  const state_sync = (b.contacts as unknown[]).map((c) => {
    if (!isObj(c)) return fail(400, 'each contact is an object');
    const action = c.action === undefined ? 'add' : c.action;
    if (action !== 'add' && action !== 'remove') fail(400, 'action is add or remove');
    return {
      type: 'contact', action, metadata: { timestamp: String(now) },
      contact: { phone_number: waIdOf(c.phone_number, 'phone_number'), ...(typeof c.full_name === 'string' ? { full_name: c.full_name } : {}), ...(typeof c.first_name === 'string' ? { first_name: c.first_name } : {}) },
    };
  });
  return deliver(ctx, pn, 'smb_app_state_sync', { state_sync }, null);
}

/**
 * `POST /_sim/phone-numbers/:id/handovers` `{ wa_id, action, new_owner_app_id?, previous_owner_app_id?, metadata? }`:
 * another app passed, took or released the thread; the simulator's holder follows
 * (pass or take by another app: it holds the thread; release, or one to this number's app: nobody else does).
 */
export async function emitHandover(ctx: SimContext, pn: PhoneNumber, b: Obj) {
  const waId = waIdOf(b.wa_id, 'wa_id');
  if (typeof b.action !== 'string' || !ACTIONS.has(b.action)) fail(400, 'action is pass, take or release');
  const str = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
  const control: Obj = { action: b.action };
  for (const k of ['previous_owner_app_id', 'new_owner_app_id', 'metadata'] as const) if (str(b[k]) !== undefined) control[k] = str(b[k]);
  const key = `${pn.phone_number_id}:${waId}`;
  const owner = str(b.new_owner_app_id);
  if (b.action !== 'release' && owner && owner !== pn.app_id) ctx.state.threadHolders.set(key, owner);
  else ctx.state.threadHolders.delete(key);
  return deliver(ctx, pn, 'messaging_handovers', { recipient: { wa_id: waId }, timestamp: String(ctx.state.nowSec()), control }, null);
}
