/**
 * What a channel notification may store, bounded as the API bounds the same field (openapi.yaml),
 * before anything is stored (applyChannelEvents). A notification is never refused for one long
 * field: the channel (Meta) would retry it for days and the rest of it would be lost with it. So:
 * - display text (a text body, a caption, a file name, a location's name, a contact card, a
 *   reply's title, a provider's error text, a group's subject) is cut at the API's bound: the
 *   message is kept and what shows is its beginning;
 * - an identifier that only matters whole (a button payload, a reply id, a call's reference) is
 *   cut at the bound too: longer than anything we send, it matches nothing of ours either way;
 * - what is useless cut (a call's SDP offer, a flow's response JSON) is dropped when over its
 *   bound, and the rest of the event is kept (a call over the API's 20,000-character SDP rings
 *   with no offer: the softphone cannot answer a broken one anyway);
 * - anything else a message carries is kept within a default bound per string, per array, per
 *   object and per depth, and a budget for the whole message, so a notification cannot grow a row
 *   (or GET /v1/messages) beyond what the API would ever answer for a message it sent.
 */
import type { CallEvent, ChannelEvent, Customer, StatusEvent } from '../channel-port/events.js';

/** The API's bounds for the same fields (openapi.yaml), by path in the stored content. */
const CONTENT_BOUNDS: Record<string, number> = {
  // SendMessageRequest.content
  'text.body': 4096,
  // MediaSend.caption, MediaSend.filename
  'image.caption': 1024,
  'video.caption': 1024,
  'document.caption': 1024,
  'document.filename': 255,
  // TemplateSend.buttons[].payload; TemplateButton.text
  'button.payload': 1000,
  'button.text': 25,
  // InteractiveSend: buttons[].id/title, list rows' id/title/description
  'interactive.button_reply.id': 256,
  'interactive.button_reply.title': 20,
  'interactive.list_reply.id': 200,
  'interactive.list_reply.title': 24,
  'interactive.list_reply.description': 72,
  // No API field: an emoji is a few code points; a place's name and address are display text (a caption's bound); its URL a link's.
  'reaction.emoji': 64,
  'location.name': 1024,
  'location.address': 1024,
  'location.url': 2048,
};

/** Over these, a value is dropped rather than cut (cut, it would be unreadable). */
const DROPPED_OVER: Record<string, number> = {
  // A flow's answer is JSON: cut, it would not parse. Meta's flow data is far below this.
  'interactive.nfm_reply.response_json': 100_000,
};

/** Any other string of a message (a contact card's fields, a referral's headline, ids, …). */
export const DEFAULT_STRING_MAX = 1024;
const MAX_ITEMS = 100;
const MAX_KEYS = 100;
const MAX_KEY_LENGTH = 128;
const MAX_DEPTH = 8;
/** Characters a message's content may hold in all (the 3 MB a notification may carry is for many messages). */
export const CONTENT_BUDGET = 128 * 1024;

/** The provider's text in a status error: as channel/errors.ts bounds provider text (1,000). */
const PROVIDER_TEXT_MAX = 1000;
/** CallActionRequest.sdp / StartCallRequest.sdp. */
export const SDP_MAX = 20_000;
/** StartCallRequest.reference. */
const CALL_REFERENCE_MAX = 512;
/** CreateGroupRequest / UpdateGroupRequest. */
const GROUP_SUBJECT_MAX = 128;
const GROUP_DESCRIPTION_MAX = 2048;
/** UpdateContactRequest.name. */
const CONTACT_NAME_MAX = 200;
const TEMPLATE_REASON_MAX = PROVIDER_TEXT_MAX;

const cut = (s: string, max: number): string => {
  if (s.length <= max) return s;
  // Never leave half of a surrogate pair at the end.
  const end = /[\uD800-\uDBFF]/.test(s[max - 1]) ? max - 1 : max;
  return s.slice(0, end);
};
/** The members named, each cut at its bound; absent ones stay absent. */
function cutMembers<T extends object>(e: T, bounds: Partial<Record<keyof T, number>>): T {
  const out = { ...e } as Record<string, unknown>;
  for (const [k, max] of Object.entries(bounds) as Array<[string, number]>) if (typeof out[k] === 'string') out[k] = cut(out[k] as string, max);
  return out as T;
}

interface Budget {
  left: number;
}

function boundValue(v: unknown, path: string, depth: number, budget: Budget, stringMax: number): unknown {
  if (typeof v === 'string') {
    const dropOver = DROPPED_OVER[path];
    if (dropOver !== undefined) {
      if (v.length > dropOver || v.length > budget.left) return undefined;
      budget.left -= v.length;
      return v;
    }
    const s = cut(v, Math.min(CONTENT_BOUNDS[path] ?? stringMax, Math.max(budget.left, 0)));
    budget.left -= s.length;
    return s;
  }
  if (typeof v !== 'object' || v === null) {
    budget.left -= 8;
    return v;
  }
  if (depth >= MAX_DEPTH || budget.left <= 0) return undefined;
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const item of v.slice(0, MAX_ITEMS)) {
      if (budget.left <= 0) break;
      const b = boundValue(item, path, depth + 1, budget, stringMax);
      if (b !== undefined) out.push(b);
    }
    return out;
  }
  const out: Record<string, unknown> = {};
  let keys = 0;
  for (const [k, item] of Object.entries(v)) {
    if (keys >= MAX_KEYS || budget.left <= 0) break;
    if (k.length > MAX_KEY_LENGTH) continue;
    budget.left -= k.length;
    const b = boundValue(item, path ? `${path}.${k}` : k, depth + 1, budget, stringMax);
    if (b !== undefined) (out[k] = b), keys++;
  }
  return out;
}

/** A message's stored content within the API's bounds (see above). */
export function boundContent(content: Record<string, unknown>): Record<string, unknown> {
  return (boundValue(content, '', 0, { left: CONTENT_BUDGET }, DEFAULT_STRING_MAX) ?? {}) as Record<string, unknown>;
}

/** What a customer entry stores for display: the profile name as a contact's name is bounded. */
function boundCustomer(c: Customer): Customer {
  return c.profileName !== undefined && c.profileName.length > CONTACT_NAME_MAX ? { ...c, profileName: cut(c.profileName, CONTACT_NAME_MAX) } : c;
}

/** A failed status's error: the provider's words, bounded as the adapter bounds provider text. */
function boundStatus(s: StatusEvent): StatusEvent {
  const out: StatusEvent = { ...s, ...(s.customer ? { customer: boundCustomer(s.customer) } : {}) };
  if (s.errors) out.errors = (boundValue(s.errors.slice(0, 1), '', 0, { left: 8 * 1024 }, PROVIDER_TEXT_MAX) as unknown[]) ?? [];
  if (s.reference !== undefined) out.reference = cut(s.reference, CALL_REFERENCE_MAX);
  return out;
}

function boundCall(c: CallEvent): CallEvent {
  const out: CallEvent = { ...c, customer: boundCustomer(c.customer) };
  // A cut SDP is not an SDP: over the API's bound the call is kept without its offer.
  if (c.sdp && (c.sdp.sdp.length > SDP_MAX || c.sdp.type.length > 32)) delete out.sdp;
  if (c.status !== undefined) out.status = cut(c.status, 32);
  if (c.reference !== undefined) out.reference = cut(c.reference, CALL_REFERENCE_MAX);
  return out;
}

/** One event as it may be stored. */
export function boundEvent(e: ChannelEvent): ChannelEvent {
  switch (e.kind) {
    case 'message':
    case 'standby_message':
    case 'message_echo':
    case 'history':
      return { ...e, customer: boundCustomer(e.customer), type: cut(e.type, 32), content: boundContent(e.content) };
    case 'status':
      return boundStatus(e);
    case 'call':
      return boundCall(e);
    case 'template_status':
      return cutMembers(e, { reason: TEMPLATE_REASON_MAX });
    case 'contact_sync':
      return cutMembers(e, { fullName: CONTACT_NAME_MAX, firstName: CONTACT_NAME_MAX });
    case 'group_lifecycle':
    case 'group_settings':
      return cutMembers(e, { subject: GROUP_SUBJECT_MAX, description: GROUP_DESCRIPTION_MAX });
    case 'user_preference':
    case 'call_permission':
    case 'thread_control_changed':
      return { ...e, customer: boundCustomer(e.customer) };
    default:
      // Nothing stored as text (limits, throughput, group statuses and participants' ids).
      return e;
  }
}
