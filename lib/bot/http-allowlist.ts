/**
 * The hosts a project's bot may reach with `http.fetch` (table bot_http_allowlists; this module is
 * its only writer), set by operators.
 *
 * Policy and why:
 * - No list (the default): any public host. A list: only its hosts, every hop (a redirect to a
 *   host off the list is refused like the first URL would be). The address rules of
 *   lib/platform/net/public-address.ts hold either way: a list never lets a bot reach a private
 *   address.
 * - An entry is a lower-case host name (`shop.example.com`), a wildcard for its subdomains
 *   (`*.example.com`, which does not match `example.com` itself) or an IP address; at most
 *   MAX_ALLOWED_HOSTS entries.
 * - Every change writes an audit row in the same transaction.
 */
import { isIP } from 'node:net';
import type { Deps } from '../deps.js';
import { execute, queryRows } from '../platform/db/tx.js';
import { ApiError } from '../platform/errors.js';
import { inTransaction } from '../platform/db/transaction.js';
import { recordAuditOn, type AuditActor } from '../accounts/audit.js';

export const MAX_ALLOWED_HOSTS = 100;
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST_ENTRY = new RegExp(`^(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*$`);

function normalizeEntry(raw: unknown): string {
  if (typeof raw !== 'string') throw new ApiError('invalid_request', 'Each allowed host is a string.');
  const entry = raw.trim().toLowerCase().replace(/^\[|\]$/g, '');
  if (entry.length > 253 || !(HOST_ENTRY.test(entry) || isIP(entry))) {
    throw new ApiError('invalid_request', `"${String(raw).slice(0, 100)}" is not a host name (shop.example.com), a wildcard (*.example.com) or an IP address.`);
  }
  return entry;
}

/** The project's list, or null when any public host is allowed. */
export async function getAllowlist(deps: Pick<Deps, 'db'>, projectId: string): Promise<string[] | null> {
  const [row] = await queryRows<{ hosts: string[] }>(deps.db.sql, 'SELECT hosts FROM bot_http_allowlists WHERE project_id = $1', projectId);
  return row?.hosts ?? null;
}

/** Sets the list (null removes it: any public host); answers the list as stored. */
export async function setAllowlist(deps: Pick<Deps, 'db' | 'clock'>, actor: AuditActor, projectId: string, hosts: unknown[] | null): Promise<string[] | null> {
  let list: string[] | null = null;
  if (hosts !== null) {
    if (hosts.length > MAX_ALLOWED_HOSTS) throw new ApiError('invalid_request', `At most ${MAX_ALLOWED_HOSTS} allowed hosts.`, { limit: MAX_ALLOWED_HOSTS });
    list = [...new Set(hosts.map(normalizeEntry))].sort();
  }
  const now = deps.clock.now();
  return inTransaction(deps.db.pool, async (client) => {
    const before = (await queryRows<{ hosts: string[] }>(client, 'SELECT hosts FROM bot_http_allowlists WHERE project_id = $1 FOR UPDATE', projectId))[0]?.hosts ?? null;
    if (list === null) await execute(client, 'DELETE FROM bot_http_allowlists WHERE project_id = $1', projectId);
    else {
      await execute(
        client,
        `INSERT INTO bot_http_allowlists (project_id, hosts, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (project_id) DO UPDATE SET hosts = EXCLUDED.hosts, updated_at = EXCLUDED.updated_at`,
        projectId, list, now,
      );
    }
    await recordAuditOn(client, now, actor, { projectId, action: 'http_allowlist.set', subject: 'http.fetch', before: { hosts: before }, after: { hosts: list } });
    return list;
  });
}

/** Whether `host` (lower case, no brackets) is on the list; any host when there is none. */
export function hostAllowed(list: string[] | null, host: string): boolean {
  if (list === null) return true;
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return list.some((entry) => (entry.startsWith('*.') ? h.endsWith(entry.slice(1)) : h === entry));
}
