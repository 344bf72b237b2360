/**
 * Meta's coexistence and thread-control notifications (a number shared with the WhatsApp Business
 * app, and another app holding a thread), read into the port's events (docs/coexistence.md):
 * - `smb_message_echoes`: messages the business sent from the Business app (`message_echoes[]`,
 *   `from` the business number, `to` the customer);
 * - `history`: past messages, in chunks (`history[].threads[].messages[]`); a message `from` the
 *   business number is outbound. A chunk of `errors` (2593109: the business declined to share
 *   its history) carries nothing to store;
 * - `smb_app_state_sync`: the Business app's contacts (`state_sync[]` of type `contact`);
 * - `standby`: what the customer wrote while another app held the thread (the `messages` shape);
 * - `messaging_handovers`: the thread changed hands (`control: { action, previous_owner_app_id,
 *   new_owner_app_id, metadata }`, `recipient: { wa_id | user_id }`): the shape is ours, after
 *   Messenger's handover protocol, as Meta's reference does not give WhatsApp's yet.
 */
import type { ChannelEvent, Customer, HistoryEvent } from '../lib/channel-port/events.js';
import { digits, messageEvent, str, text, type MetaMessage } from './notification-parts.js';

export const COEXISTENCE_FIELDS: ReadonlySet<unknown> = new Set(['smb_message_echoes', 'history', 'smb_app_state_sync', 'standby', 'messaging_handovers']);

const list = (v: unknown): any[] => (Array.isArray(v) ? v : []);
const obj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The message's content as stored: all it says but its id and the two numbers. */
function contentOf(m: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, from: _from, to: _to, history_context: _h, ...content } = m;
  return content;
}

/** The business's own number (digits) as the notification names it. */
function businessOf(value: any): string | undefined {
  return digits(value?.metadata?.display_phone_number);
}

export function coexistenceEvents(field: string, value: any, entries: Customer[]): ChannelEvent[] {
  const out: ChannelEvent[] = [];
  if (field === 'smb_message_echoes') {
    for (const m of list(value.message_echoes)) {
      if (!obj(m) || typeof m.id !== 'string' || !m.id) continue;
      const phone = digits(m.to);
      const userId = str(m.to_user_id);
      if (!phone && !userId) continue;
      out.push({ kind: 'message_echo', channelMessageId: m.id, customer: { phone, userId }, type: String(m.type ?? 'unknown'), timestamp: m.timestamp ? String(m.timestamp) : undefined, content: contentOf(m) });
    }
  } else if (field === 'history') {
    const business = businessOf(value);
    for (const chunk of list(value.history)) {
      // A declined share (errors, e.g. 2593109) has no threads: nothing to store.
      for (const thread of list(chunk?.threads)) {
        const customerId = digits(thread?.id);
        for (const m of list(thread?.messages)) {
          if (!obj(m) || typeof m.id !== 'string' || !m.id) continue;
          const from = digits(m.from);
          const outbound = from !== undefined && (from === business || (customerId !== undefined && from !== customerId));
          const phone = customerId ?? (outbound ? digits(m.to) : from);
          if (!phone) continue;
          const status = str(m.history_context?.status, 32)?.toLowerCase();
          const event: HistoryEvent = {
            kind: 'history', channelMessageId: m.id, direction: outbound ? 'outbound' : 'inbound', customer: { phone }, type: String(m.type ?? 'unknown'),
            timestamp: m.timestamp ? String(m.timestamp) : undefined, content: contentOf(m),
          };
          if (status) event.status = status;
          out.push(event);
        }
      }
    }
  } else if (field === 'smb_app_state_sync') {
    for (const s of list(value.state_sync)) {
      if (!obj(s) || s.type !== 'contact' || !obj(s.contact)) continue;
      const phone = digits(s.contact.phone_number);
      if (!phone) continue;
      out.push({ kind: 'contact_sync', customer: { phone }, action: String(s.action ?? 'add'), fullName: text(s.contact.full_name), firstName: text(s.contact.first_name) });
    }
  } else if (field === 'standby') {
    for (const m of list(value.messages)) {
      const event = obj(m) ? messageEvent(m as MetaMessage, entries) : undefined;
      if (event) out.push({ ...event, kind: 'standby_message' });
    }
  } else if (field === 'messaging_handovers') {
    const control = value.control;
    const action = control?.action;
    if (action !== 'pass' && action !== 'take' && action !== 'release') return out;
    const customer: Customer = { phone: digits(value.recipient?.wa_id), userId: str(value.recipient?.user_id) };
    if (!customer.phone && !customer.userId) return out;
    out.push({
      kind: 'thread_control_changed', customer, action,
      previousOwnerAppId: str(control.previous_owner_app_id, 64), newOwnerAppId: str(control.new_owner_app_id, 64),
      metadata: str(control.metadata, 2000), timestamp: value.timestamp ? String(value.timestamp) : undefined,
    });
  }
  return out;
}
