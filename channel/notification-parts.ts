/**
 * The parts of Meta's notifications that several fields share (read by notifications.ts and
 * coexistence-notifications.ts): a message object and the `contacts[]` entries naming its sender.
 */
import type { Customer, MessageEvent } from '../lib/channel-port/events.js';

/** A message object of a notification, as Meta sends it. */
export interface MetaMessage {
  id: string;
  /** The sender's phone (digits); absent for a user whose number Meta withholds. */
  from?: string;
  from_user_id?: string;
  from_parent_user_id?: string;
  timestamp?: string;
  type: string;
  [k: string]: unknown;
}

export const str = (v: unknown, max = 256): string | undefined => (typeof v === 'string' && v.length > 0 && v.length <= max ? v : typeof v === 'number' ? String(v) : undefined);
/** A non-empty string of any length (display text the domain bounds). */
export const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
export const digits = (v: unknown): string | undefined => {
  const d = str(v)?.replace(/\D/g, '');
  return d ? d : undefined;
};

export function contactEntry(c: any): Customer {
  return {
    phone: digits(c?.wa_id),
    userId: str(c?.user_id),
    parentUserId: str(c?.parent_user_id),
    username: str(c?.profile?.username, 200),
    // Display text, however long: the domain cuts it at a contact name's bound (lib/messaging/inbound-bounds.ts).
    profileName: text(c?.profile?.name),
  };
}

/** The contacts entry for a message or status: by BSUID, else by phone, else the only one. */
export function findEntry(entries: Customer[], userId: string | undefined, phone: string | undefined): Customer | undefined {
  return (userId ? entries.find((e) => e.userId === userId) : undefined)
    ?? (phone ? entries.find((e) => e.phone === phone) : undefined)
    ?? (entries.length === 1 && !userId && !phone ? entries[0] : undefined);
}

export function merged(entry: Customer | undefined, own: Customer): Customer {
  const out: Customer = { ...(entry ?? {}) };
  for (const [k, v] of Object.entries(own) as Array<[keyof Customer, string | undefined]>) if (v !== undefined) out[k] = v;
  return out;
}

/** The sent-at time as given (seconds since the epoch), when there is one. */
export const when = (v: unknown): string | undefined => (v ? String(v) : undefined);

export function messageEvent(m: MetaMessage, entries: Customer[]): MessageEvent | undefined {
  if (typeof m.id !== 'string' || !m.id) return undefined;
  const own: Customer = { phone: digits(m.from), userId: str(m.from_user_id), parentUserId: str(m.from_parent_user_id) };
  const customer = merged(findEntry(entries, own.userId, own.phone), own);
  // What is stored as the message's content: all it says but its id and the sender's phone.
  const { id: _id, from: _from, ...content } = m;
  const event: MessageEvent = { kind: 'message', channelMessageId: m.id, customer, type: String(m.type ?? 'unknown'), timestamp: when(m.timestamp), content };
  // A message written in a group names it (docs/groups.md).
  const groupId = str(m.group_id);
  if (groupId) event.groupId = groupId;
  return event;
}
