/**
 * Who wrote a message or a note (issue 60): the inbox shows it beside each message, and the API
 * gives it as `author` (the contract's `Author`).
 *
 * Policy and why:
 * - A send records its author on the message (`messages.author`) where the send path knows it:
 *   the API's caller (an API key, or an agent's connection, which reaches the API through the
 *   same handlers), a person in the dashboard.
 * - The bot's and a schedule's sends are named by their send references, which the bot runtime
 *   already makes deterministic (`snd_bot…` for a reply to a message, `snd_sch<run id>_…` for a
 *   schedule's run): read back from the reference, so the bot's own code is not touched, and the
 *   schedule's name is joined from its run.
 * - A campaign's messages are named by their broadcast recipient (the same reference).
 * - The service's own automatic answers (a consent keyword's confirmation) are `automation`, named.
 * - Anything else outbound without a record (sent before authors were recorded) is `unknown`.
 */

export type AuthorKind = 'customer' | 'person' | 'api_key' | 'agent' | 'bot' | 'schedule' | 'campaign' | 'business_app' | 'automation' | 'unknown';

export interface Author {
  kind: AuthorKind;
  id: string | null;
  name: string | null;
}

const KINDS: readonly string[] = ['customer', 'person', 'api_key', 'agent', 'bot', 'schedule', 'campaign', 'business_app', 'automation', 'unknown'];

/**
 * The API's caller as a send records it, by id only (the send path reads nothing more; a message
 * read names the key or the connection as it is then): an API key, or an agent's connection.
 */
export function credentialRef(credential: { kind: 'api_key'; id: string } | { kind: 'access_token'; connectionId: string }): Author {
  return credential.kind === 'api_key' ? { kind: 'api_key', id: credential.id, name: null } : { kind: 'agent', id: credential.connectionId, name: null };
}

/** An automatic answer of the service itself, named by what answered. */
export function automationAuthor(name: 'consent_confirmation' | 'auto_assignment'): Author {
  return { kind: 'automation', id: null, name };
}

/** A dashboard person. */
export function personAuthor(actor: { accountId: string; email: string }): Author {
  return { kind: 'person', id: actor.accountId, name: actor.email };
}

/** SQL columns that let authorOf name a message: select them with the message (alias `m`). */
export const AUTHOR_COLUMNS = `m.author, m.send_ref AS "sendRef",
  (SELECT r.schedule FROM bot_schedule_runs r
    WHERE m.send_ref LIKE 'snd\\_sch%' AND r.project_id = m.project_id
      AND r.id = NULLIF(substring(m.send_ref from '^snd_sch([0-9]{1,18})_'), '')::bigint) AS "authorSchedule",
  (SELECT b.broadcast_id FROM broadcast_recipients b
    WHERE m.author IS NULL AND m.direction = 'outbound' AND m.send_ref LIKE 'snd\\_%' AND m.send_ref NOT LIKE 'snd\\_bot%'
      AND m.send_ref NOT LIKE 'snd\\_sch%' AND m.send_ref NOT LIKE 'snd\\_dsh%' AND b.send_ref = m.send_ref LIMIT 1)::text AS "authorCampaign",
  (SELECT k.name FROM api_keys k WHERE m.author->>'kind' = 'api_key' AND k.id = m.author->>'id') AS "authorKeyName",
  (SELECT c.name FROM agent_connections c WHERE m.author->>'kind' = 'agent' AND c.id = m.author->>'id') AS "authorAgentName"`;

export interface AuthorColumns {
  author?: unknown;
  sendRef?: string | null;
  authorSchedule?: string | null;
  authorCampaign?: string | null;
  /** The key's or the connection's name as it is now (a send records only its id: no read on the send path). */
  authorKeyName?: string | null;
  authorAgentName?: string | null;
}

/** A message's author from its row (AUTHOR_COLUMNS); undefined when the row did not select them. */
export function authorOf(row: AuthorColumns & { direction: string }): Author | undefined {
  if (row.author === undefined && row.sendRef === undefined) return undefined;
  if (row.direction === 'inbound') return { kind: 'customer', id: null, name: null };
  const a = row.author as Partial<Author> | null | undefined;
  if (a && typeof a === 'object' && typeof a.kind === 'string' && KINDS.includes(a.kind)) {
    const named = typeof a.name === 'string' ? a.name : a.kind === 'api_key' ? row.authorKeyName : a.kind === 'agent' ? row.authorAgentName : null;
    return { kind: a.kind as AuthorKind, id: typeof a.id === 'string' ? a.id : null, name: named ?? null };
  }
  const ref = row.sendRef ?? '';
  if (ref.startsWith('snd_bot')) return { kind: 'bot', id: null, name: null };
  if (ref.startsWith('snd_sch')) return { kind: 'schedule', id: null, name: row.authorSchedule ?? null };
  if (row.authorCampaign) return { kind: 'campaign', id: row.authorCampaign, name: null };
  if (ref.startsWith('snd_dsh') || ref.startsWith('snd_test_')) return { kind: 'person', id: null, name: null };
  return { kind: 'unknown', id: null, name: null };
}

/** An author in words, for the dashboard. */
export function authorWords(a: Author): string {
  switch (a.kind) {
    case 'customer': return 'Customer';
    case 'person': return a.name ?? 'A person (dashboard)';
    case 'api_key': return `API key${a.name ? ` “${a.name}”` : ''}`;
    case 'agent': return `Agent${a.name ? ` “${a.name}”` : ''}`;
    case 'bot': return 'Bot';
    case 'schedule': return `Schedule${a.name ? ` “${a.name}”` : ''}`;
    case 'campaign': return 'Campaign';
    case 'business_app': return 'WhatsApp Business app';
    case 'automation': return a.name === 'consent_confirmation' ? 'Automatic (consent confirmation)' : a.name === 'auto_assignment' ? 'Automatic (auto-assignment)' : 'Automatic';
    default: return 'Sent (author not recorded)';
  }
}
