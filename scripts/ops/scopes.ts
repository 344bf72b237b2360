/**
 * The scope catalogue as the CLI shows it: every scope with what it permits (the spec's table,
 * plus tables and media), printed in the help of each command that takes scopes, and `all` for
 * every one of them. The record is keyed by the contract's Scope type, so a scope added to
 * admin-openapi.yaml and missing here fails the type check.
 */
import type { Schemas } from './client.js';
import { parseList } from './args.js';

type Scope = Schemas['Scope'];

export const SCOPES = {
  'messages:send': 'Send session and template messages',
  'conversations:read': 'List conversations, read messages and delivery status',
  'conversations:write': "Change a conversation's state",
  'contacts:read': 'Read contacts',
  'contacts:write': 'Update name, tags, attributes; import contacts',
  'templates:read': 'List templates and approval status',
  'templates:manage': 'Create and delete templates; upload header samples',
  'broadcasts:read': 'View campaigns and status',
  'broadcasts:manage': 'Create and assemble campaigns and segments; never sends',
  'code:read': 'List and read code files',
  'code:write': 'Edit code files and deploy dev to production',
  'flows:read': 'List flows and read definitions',
  'flows:write': 'Generate and update flows',
  'webhooks:manage': 'Register and manage webhooks',
  'events:message_received': 'Subscribe to message.received',
  'events:message_status': 'Subscribe to message.status',
  'events:template_status': 'Subscribe to template.approved and template.rejected',
  'tables:read': "Read the project's tables",
  'tables:write': "Write rows of the project's tables",
  'media:read': 'List media assets',
  'media:write': 'Upload and delete media assets',
} satisfies Record<Scope, string>;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** `--scopes a,b` or `--scopes all` (every scope; a key with all of them can do anything in its project). */
export function scopeList(raw: string, what: string): Scope[] {
  if (raw.trim().toLowerCase() === 'all') return [...ALL_SCOPES];
  return parseList(raw, what) as Scope[];
}

/** The catalogue for a command's help. */
export function scopesHelp(): string {
  const width = Math.max(...ALL_SCOPES.map((s) => s.length));
  return [
    `Scopes (comma-separated, or "all" for all ${ALL_SCOPES.length}):`,
    ...ALL_SCOPES.map((s) => `  ${s.padEnd(width)}  ${SCOPES[s]}`),
  ].join('\n');
}
