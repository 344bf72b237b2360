/** The scope catalogue a key can hold (the operator contract's `Scope`), for the key forms. */
import type { components } from '../../generated/admin-api.js';

type Scope = components['schemas']['Scope'];

const CATALOGUE: Record<Scope, true> = {
  'messages:send': true, 'conversations:read': true, 'conversations:write': true, 'contacts:read': true,
  'contacts:write': true, 'templates:read': true, 'templates:manage': true, 'broadcasts:read': true,
  'broadcasts:manage': true, 'code:read': true, 'code:write': true, 'flows:read': true, 'flows:write': true,
  'webhooks:manage': true, 'events:message_received': true, 'events:message_status': true,
  'events:template_status': true, 'tables:read': true, 'tables:write': true, 'media:read': true, 'media:write': true,
};

export const SCOPES = Object.keys(CATALOGUE) as Scope[];

/** The scopes of a form (a checkbox list): known, distinct, at least one; else a message. */
export function parseScopes(raw: unknown): { scopes: Scope[] } | { problem: string } {
  const list = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((s): s is string => typeof s === 'string');
  const unknown = list.filter((s) => !(s in CATALOGUE));
  if (unknown.length) return { problem: `Unknown scope: ${unknown.slice(0, 3).join(', ')}.` };
  const scopes = [...new Set(list)] as Scope[];
  if (scopes.length === 0) return { problem: 'Choose at least one scope.' };
  return { scopes };
}
