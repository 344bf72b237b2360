/**
 * Custom events from a project's bot code: a name (see lib/webhooks/event-names.ts; platform
 * names and namespaces are refused) and a JSON payload (the body limit is the runtime contract's
 * `x-body-limit`), written to the event
 * outbox like platform events and delivered verbatim (`event` = name, `data` = payload).
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { recordEvent } from './events.js';
import { validateCustomEventName } from './event-names.js';

export async function emitCustomEvent(deps: Pick<Deps, 'db' | 'clock'>, projectId: string, body: unknown) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError('invalid_request', 'The body must be a JSON object { name, payload }.', { fields: [{ field: 'body', message: 'must be object' }] });
  }
  const unknown = Object.keys(body).filter((k) => k !== 'name' && k !== 'payload');
  if (unknown.length > 0) {
    throw new ApiError('invalid_request', `Unknown members: ${unknown.join(', ')}.`, {
      fields: unknown.map((field) => ({ field, message: 'must NOT have additional properties' })),
    });
  }
  const { name, payload } = body as { name?: unknown; payload?: unknown };
  const checked = validateCustomEventName(name);
  const at = deps.clock.now();
  const id = await recordEvent(deps.db.sql, projectId, checked, payload ?? null, at);
  return { id, name: checked, created_at: at.toISOString() };
}
