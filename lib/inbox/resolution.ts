/**
 * A person is done with a conversation (issue 68, item 1): resolved, or snoozed until a time, or
 * opened again. The customer's next message reopens it (lib/conversations/conversations.ts on
 * every inbound write), and a snooze ends when its time passes, read by the service's clock
 * (lib/conversations/queue.ts): no job has to run. The same function serves the API and the inbox.
 */
import type { Tx } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { setConversationResolution } from '../conversations/conversations.js';
import { resolutionView } from '../conversations/views.js';

export type Resolution = 'open' | 'resolved' | 'snoozed';
/** The longest snooze: past it a "snooze" is a resolution nobody will see come back. */
export const MAX_SNOOZE_DAYS = 90;

export interface ResolutionInput {
  resolution: Resolution;
  snoozedUntil?: Date;
}

export interface ResolutionChange {
  id: number;
  resolution: Resolution;
  snoozed_until: string | null;
  previous_resolution: Resolution;
}

function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', `${field} ${message}.`, { fields: [{ field, message }] });
}

/** The body's rules the contract cannot state: a snooze needs a future time within MAX_SNOOZE_DAYS, and only a snooze has one. */
export function checkResolution(input: { resolution?: unknown; snoozed_until?: unknown }, now: Date): ResolutionInput {
  const r = input.resolution;
  if (r !== 'open' && r !== 'resolved' && r !== 'snoozed') throw invalid('resolution', 'must be open, resolved or snoozed');
  if (r !== 'snoozed') {
    if (input.snoozed_until !== undefined && input.snoozed_until !== null) throw invalid('snoozed_until', 'is only given with resolution snoozed');
    return { resolution: r };
  }
  const until = typeof input.snoozed_until === 'string' ? new Date(input.snoozed_until) : undefined;
  if (!until || Number.isNaN(until.getTime())) throw invalid('snoozed_until', 'is required with resolution snoozed (a date-time)');
  if (until <= now) throw invalid('snoozed_until', 'must be in the future');
  if (until.getTime() - now.getTime() > MAX_SNOOZE_DAYS * 86_400_000) throw invalid('snoozed_until', `must be at most ${MAX_SNOOZE_DAYS} days ahead`);
  return { resolution: r, snoozedUntil: until };
}

/** Sets the resolution; undefined when the conversation is not the project's. */
export async function setResolution(tx: Tx, projectId: string, id: bigint, input: ResolutionInput, now: Date): Promise<ResolutionChange | undefined> {
  const changed = await setConversationResolution(tx, projectId, id, input.resolution, input.snoozedUntil ?? null, now);
  if (!changed) return undefined;
  return {
    id: Number(changed.id),
    resolution: input.resolution,
    snoozed_until: input.snoozedUntil?.toISOString() ?? null,
    previous_resolution: resolutionView(changed.previousResolution, changed.previousUntil, now).resolution,
  };
}
