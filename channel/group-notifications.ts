/**
 * Meta's group notifications (docs/groups.md), read into the port's events. Each change carries
 * `groups[]` (Meta's `GroupValue`): `{ timestamp, group_id, type, request_id, subject?,
 * description?, added_participants?, removed_participants? }` (participants as `{ input, wa_id }`):
 * - `group_lifecycle_update`: `group_create` (naming the creation's `request_id`) or `group_delete`;
 * - `group_participants_update` (Meta's contract also spells it `group_participant_update`):
 *   `group_add_participants` / `group_remove_participants` (the lists say who);
 * - `group_settings_update`: the subject or description (a new picture is only announced);
 * - `group_status_update` (named by Meta's pages, absent from its v23.0 contract): `group_suspend`
 *   or `group_suspend_cleared`.
 * Meta's example spells the timestamp as a string, its schema as an integer: both are read.
 */
import type { ChannelEvent, GroupMember } from '../lib/channel-port/events.js';
import { digits, str, text } from './notification-parts.js';

export const GROUP_FIELDS: ReadonlySet<unknown> = new Set([
  'group_lifecycle_update', 'group_participants_update', 'group_participant_update', 'group_settings_update', 'group_status_update',
]);

const list = (v: unknown): any[] => (Array.isArray(v) ? v : []);

function members(v: unknown): GroupMember[] {
  const out: GroupMember[] = [];
  for (const p of list(v)) {
    const waId = digits(p?.wa_id) ?? digits(p?.input);
    if (waId && !out.some((m) => m.waId === waId)) out.push({ waId });
  }
  return out;
}

/** The subject and description as given (an empty description clears it); the domain cuts them at the API's bounds. */
function settingsOf(g: any): { subject?: string; description?: string } {
  const subject = text(g.subject);
  return { ...(subject ? { subject } : {}), ...(typeof g.description === 'string' ? { description: g.description } : {}) };
}

/** The events of one group change (`field` one of GROUP_FIELDS). */
export function groupEvents(field: string, value: any): ChannelEvent[] {
  const out: ChannelEvent[] = [];
  for (const g of list(value?.groups)) {
    const groupId = str(g?.group_id);
    if (!groupId) continue;
    const type = String(g.type ?? '');
    const common = { groupId, ...(str(g.timestamp) ? { timestamp: str(g.timestamp) } : {}) };
    const requestId = str(g.request_id);
    const added = members(g.added_participants);
    const removed = members(g.removed_participants);
    if (field === 'group_lifecycle_update' && (type === 'group_create' || type === 'group_delete')) {
      out.push({
        kind: 'group_lifecycle', ...common, change: type === 'group_create' ? 'created' : 'deleted',
        ...(requestId ? { requestId } : {}), ...settingsOf(g), ...(added.length ? { added } : {}),
      });
    } else if (field === 'group_participants_update' || field === 'group_participant_update') {
      // Meta's own example names the type `group_create` here: the lists say what changed.
      if (added.length || removed.length) out.push({ kind: 'group_participants', ...common, added, removed, ...(requestId ? { requestId } : {}) });
    } else if (field === 'group_settings_update') {
      out.push({
        kind: 'group_settings', ...common, ...(requestId ? { requestId } : {}), ...settingsOf(g),
      });
    } else if (field === 'group_status_update' && (type === 'group_suspend' || type === 'group_suspend_cleared')) {
      out.push({ kind: 'group_status', ...common, status: type === 'group_suspend' ? 'suspended' : 'active' });
    }
  }
  return out;
}
