/**
 * The contract's read shapes (`Message`, `Conversation`, `Contact`) built from storage rows.
 *
 * Inputs are structural, so both Prisma rows (camelCase, BigInt ids) and plain SQL rows selected
 * with camelCase aliases (pg returns bigint as a decimal string) fit. Ids become JSON numbers.
 * Every handler and event that shows one of these resources should go through here, so the
 * shapes cannot drift between endpoints (responses are validated against the contract in tests).
 */
import type { components } from '../../generated/api.js';

type Schemas = components['schemas'];
export type MessageView = Schemas['Message'];
export type ConversationView = Schemas['Conversation'];
export type ContactView = Schemas['Contact'];
export type ContactSummaryView = Schemas['ContactSummary'];

/** A bigint id as Prisma (bigint), pg (decimal string) or a test (number) gives it. */
export type RowId = bigint | number | string;

import { serviceWindow } from './window.js';
import { authorOf, type AuthorColumns } from './authors.js';
import { consentView, type ConsentColumns } from './consent.js';

export { SERVICE_WINDOW_MS, serviceWindow } from './window.js';

export interface MessageRow extends AuthorColumns {
  id: RowId;
  wamid: string;
  conversationId: RowId;
  direction: string;
  type: string;
  content: unknown;
  status: string;
  error: unknown;
  sentAt: Date;
  statusAt: Date;
  /** The channel's pricing from the message's statuses (lib/pricing/status-pricing.ts); absent in rows that did not select it. */
  pricing?: unknown;
  /** A past message of coexistence's history sync. */
  history?: boolean;
}

export interface ContactSummaryRow {
  id: RowId;
  /** Null while WhatsApp withholds the number (a customer with a username). */
  phone: string | null;
  /** The business-scoped user id (BSUID). Optional so rows read before it existed still fit. */
  userId?: string | null;
  username?: string | null;
  name: string | null;
}

export interface ConversationRow {
  id: RowId;
  state: string;
  lastMessageAt: Date;
  lastInboundAt: Date | null;
  createdAt: Date;
  /** The recent-activity order's key (lib/conversations/order.ts), where the list reads it. */
  orderAt?: Date;
  contact: ContactSummaryRow;
  /** The member handling it (absent in rows that did not select it; id null: unassigned). */
  assignee?: { id: string | null; email: string | null };
  labels?: string[] | null;
  /** Who holds the thread at the channel (null: this app); absent in rows that did not select it. */
  threadHolder?: string | null;
  threadHolderSince?: Date | null;
  /** The contact's kind (`customer`, or `group`: a WhatsApp group's conversation, docs/groups.md); absent in rows that did not select it. */
  kind?: string;
  /** The team's resolution as stored (`open`, `resolved`, `snoozed`) and the snooze's end; absent in rows that did not select it. */
  resolution?: string;
  snoozedUntil?: Date | null;
  group?: { id: number; group_id: string | null; subject: string; status: string; participant_count: number } | null;
}

export interface ContactRow extends ContactSummaryRow, ConsentColumns {
  parentUserId?: string | null;
  tags: string[] | null;
  attributes: unknown;
  optedIn: boolean;
  /** The customer's call permission (docs/calls.md); absent in rows that did not select it. */
  callPermissionStatus?: string | null;
  callPermissionExpiresAt?: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export function idView(id: RowId): number {
  return Number(id);
}

/** Storage keeps the WhatsApp id (digits only); the API shows `+<digits>`. */
export function phoneView(digits: string): string;
export function phoneView(digits: string | null | undefined): string | null;
export function phoneView(digits: string | null | undefined): string | null {
  if (!digits) return null;
  return digits.startsWith('+') ? digits : `+${digits}`;
}

/** The customer of a message, where the read joined its contact. */
export interface MessageCustomerRow {
  customerPhone?: string | null;
  customerUserId?: string | null;
  customerUsername?: string | null;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A message's content as stored, with one shape for text: a text message carries `text.body` in
 * both directions. Inbound messages have it as the channel gave it; an outbound text stored in our
 * request shape (`content`) gets `text.body` beside it (the old field kept, a compatible addition).
 */
function contentView(row: MessageRow): Record<string, unknown> {
  if (!isPlainObject(row.content)) return { value: row.content ?? null };
  const c = row.content;
  if (row.type === 'text' && typeof c.content === 'string' && !isPlainObject(c.text)) return { ...c, text: { body: c.content } };
  return c;
}

export function messageView(row: MessageRow & MessageCustomerRow, customer?: ContactSummaryRow): MessageView {
  const who = customer
    ? { phone: phoneView(customer.phone), user_id: customer.userId ?? null, username: customer.username ?? null }
    : row.customerPhone !== undefined || row.customerUserId !== undefined
      ? { phone: phoneView(row.customerPhone), user_id: row.customerUserId ?? null, username: row.customerUsername ?? null }
      : undefined;
  const author = authorOf(row);
  return {
    id: idView(row.id),
    wamid: row.wamid,
    conversation_id: idView(row.conversationId),
    direction: row.direction as MessageView['direction'],
    type: row.type,
    status: row.status as MessageView['status'],
    content: contentView(row),
    error: isPlainObject(row.error) ? row.error : null,
    created_at: row.sentAt.toISOString(),
    status_updated_at: row.statusAt.toISOString(),
    pricing: isPlainObject(row.pricing) ? (row.pricing as MessageView['pricing']) : null,
    ...(who ? { customer: who } : {}),
    ...(author ? { author } : {}),
    ...(row.history ? { history: true } : {}),
  };
}

export function contactSummaryView(row: ContactSummaryRow): ContactSummaryView {
  return { id: idView(row.id), phone: phoneView(row.phone), user_id: row.userId ?? null, username: row.username ?? null, name: row.name ?? null };
}


/**
 * `state` and its deprecated alias `status` always carry the same value. `window_expires_at` is the
 * end of the window from the last inbound message, also when it has already passed (then
 * `window_open` is false); null when the customer never wrote.
 */
export function conversationView(row: ConversationRow, now: Date): ConversationView {
  const window = serviceWindow(row.lastInboundAt, now);
  // A row read with its contact (Prisma's include) knows a customer's conversation by the contact's kind.
  const kind = row.kind ?? ((row.contact as { kind?: unknown }).kind === 'customer' ? 'customer' : undefined);
  return {
    id: idView(row.id),
    contact: contactSummaryView(row.contact),
    state: row.state,
    status: row.state,
    last_message_at: row.lastMessageAt.toISOString(),
    last_inbound_at: row.lastInboundAt ? row.lastInboundAt.toISOString() : null,
    window_open: window.open,
    window_expires_at: window.expiresAt ? window.expiresAt.toISOString() : null,
    created_at: row.createdAt.toISOString(),
    ...(row.assignee ? { assignee: row.assignee.id && row.assignee.email ? { id: row.assignee.id, email: row.assignee.email } : null } : {}),
    ...(row.labels !== undefined ? { labels: row.labels ?? [] } : {}),
    ...(row.resolution !== undefined ? resolutionView(row.resolution, row.snoozedUntil ?? null, now) : {}),
    ...(row.threadHolder !== undefined ? { thread: threadHolderView(row.threadHolder, row.threadHolderSince ?? null) } : {}),
    ...(kind !== undefined ? {
      kind: kind === 'group' ? 'group' as const : 'individual' as const,
      group: kind === 'group' && row.group ? { ...row.group, status: row.group.status as 'pending' | 'active' | 'suspended' | 'deleted' } : null,
    } : {}),
  };
}

/** The resolution as read at `now` (lib/conversations/queue.ts): a snooze whose time has passed reads open. */
export function resolutionView(resolution: string, snoozedUntil: Date | null, now: Date): { resolution: 'open' | 'resolved' | 'snoozed'; snoozed_until: string | null } {
  if (resolution === 'resolved') return { resolution: 'resolved', snoozed_until: null };
  if (resolution === 'snoozed' && snoozedUntil && snoozedUntil > now) return { resolution: 'snoozed', snoozed_until: snoozedUntil.toISOString() };
  return { resolution: 'open', snoozed_until: null };
}

/** Who holds the customer's thread at the channel (the contract's `ThreadHolder`): this app (`us`) or another one. */
export function threadHolderView(holder: string | null, since: Date | null): { held_by: 'us' | 'other_app'; app_id: string | null; since: string | null } {
  return { held_by: holder === null ? 'us' : 'other_app', app_id: holder, since: since ? since.toISOString() : null };
}

/**
 * The contract's flat attribute map: string, number or boolean values. Anything else stored by
 * other writers (null, nested objects, arrays) is left out rather than breaking the shape.
 */
export function attributesView(attributes: unknown): ContactView['attributes'] {
  const out: ContactView['attributes'] = {};
  if (!isPlainObject(attributes)) return out;
  for (const [k, v] of Object.entries(attributes)) {
    if (typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) {
      // defineProperty, so a stored key "__proto__" stays an ordinary key.
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
  }
  return out;
}

export function contactView(row: ContactRow): ContactView {
  return {
    id: idView(row.id),
    phone: phoneView(row.phone),
    user_id: row.userId ?? null,
    parent_user_id: row.parentUserId ?? null,
    username: row.username ?? null,
    name: row.name ?? null,
    tags: row.tags ?? [],
    attributes: attributesView(row.attributes),
    opted_in: consentView(row).status === 'opted_in',
    consent: consentView(row),
    ...(row.callPermissionStatus !== undefined ? {
      call_permission_status: row.callPermissionStatus,
      call_permission_expires_at: row.callPermissionExpiresAt?.toISOString() ?? null,
    } : {}),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
