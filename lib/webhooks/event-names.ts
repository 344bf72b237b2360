/**
 * Which event names a registration may subscribe to, and which the bot may emit.
 *
 * - Platform events are matched exactly and each needs its scope besides `webhooks:manage`.
 * - Custom names: letters, digits, `.`, `_`, `-`, 1 to 100 characters, and (the spec's rule) not
 *   equal to a platform event name, since matching is by exact name and the platform scope would
 *   then apply: the bot may not emit `message.received` (400 `reserved_event_name`). Any other
 *   name is custom, `message.custom` included; a subscription to it needs only `webhooks:manage`.
 * - A registration lists 1 to 50 distinct names (`invalid_event_list`, `duplicate_event`).
 */
import { ApiError } from '../platform/errors.js';
import { PLATFORM_EVENTS, type PlatformEvent } from './events.js';

export const EVENT_SCOPES: Record<PlatformEvent, string> = {
  'message.received': 'events:message_received',
  'message.status': 'events:message_status',
  'template.approved': 'events:template_status',
  'template.rejected': 'events:template_status',
  // What the team does with a conversation is read with the conversation (no scope of its own).
  'conversation.assigned': 'conversations:read',
  'conversation.labels_changed': 'conversations:read',
  'conversation.note_added': 'conversations:read',
  // A call is read with the conversation it belongs to.
  'call.ringing': 'conversations:read',
  'call.answered': 'conversations:read',
  'call.ended': 'conversations:read',
  // A group is read with its conversation.
  'group.created': 'conversations:read',
  'group.deleted': 'conversations:read',
  'group.participants_changed': 'conversations:read',
  'group.settings_changed': 'conversations:read',
  'group.status_changed': 'conversations:read',
  // What the Business app sent, and who holds the thread, are read with the conversation too.
  'message.echo': 'conversations:read',
  'conversation.thread_control': 'conversations:read',
};

export const MAX_EVENTS_PER_WEBHOOK = 50;
export const MAX_EVENT_NAME_LENGTH = 100;
const CUSTOM_NAME = /^[A-Za-z0-9._-]+$/;

export function isPlatformEvent(name: string): name is PlatformEvent {
  return (PLATFORM_EVENTS as readonly string[]).includes(name);
}

function checkShape(name: unknown, where: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_EVENT_NAME_LENGTH || !CUSTOM_NAME.test(name)) {
    throw new ApiError(
      'invalid_event_name',
      `${where}: event names are 1 to ${MAX_EVENT_NAME_LENGTH} letters, digits, ".", "_" or "-".`,
      { event: typeof name === 'string' ? name.slice(0, 120) : name },
    );
  }
  return name;
}

/** A registration's event list, validated; returned in the given order. */
export function validateSubscription(events: unknown): string[] {
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_EVENTS_PER_WEBHOOK) {
    throw new ApiError('invalid_event_list', `events must list 1 to ${MAX_EVENTS_PER_WEBHOOK} event names.`, {
      count: Array.isArray(events) ? events.length : null,
    });
  }
  const seen = new Set<string>();
  events.forEach((raw, i) => {
    const name = checkShape(raw, `events[${i}]`);
    if (seen.has(name)) throw new ApiError('duplicate_event', `events[${i}]: "${name}" is listed twice.`, { event: name });
    seen.add(name);
  });
  return events as string[];
}

/** The scopes a subscription needs besides `webhooks:manage`, without repeats. */
export function scopesForEvents(events: string[]): string[] {
  return [...new Set(events.filter(isPlatformEvent).map((e) => EVENT_SCOPES[e]))];
}

/** A custom event name the bot emits. */
export function validateCustomEventName(name: unknown): string {
  const checked = checkShape(name, 'name');
  if (isPlatformEvent(checked)) {
    throw new ApiError('reserved_event_name', `"${checked}" is a platform event name; a custom event needs another name.`, {
      event: checked,
    });
  }
  return checked;
}
