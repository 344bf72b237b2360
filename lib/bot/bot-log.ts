/**
 * The project's bot log: what its bot wrote with `log`, and what the runtime says about its runs
 * (errors, limits, set-aside events). The project's 1,000 newest entries are kept; each is one line
 * (lib/bot/log-text.ts) of at most MAX_LOG_LINE characters.
 */
import type { Deps } from '../deps.js';
import { oneLine } from './log-text.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export const MAX_LOG_LINE = 2000;

export async function writeBotLog(deps: Pick<Deps, 'db' | 'clock'>, projectId: string, entry: { level: string; kind: string; message: string; deploymentId?: string | null }): Promise<void> {
  await execute(deps.db.sql,
    // The project's 1,000 newest entries are kept (the new one is not visible to the DELETE yet).
    `WITH ins AS (INSERT INTO bot_logs (project_id, level, kind, message, deployment_id, created_at) VALUES ($1, $2, $3, $4, $5, $6::timestamptz) RETURNING id)
     DELETE FROM bot_logs WHERE project_id = $1
       AND id < (SELECT id FROM bot_logs WHERE project_id = $1 ORDER BY id DESC OFFSET 998 LIMIT 1)`,
    projectId, entry.level, entry.kind, oneLine(entry.message, MAX_LOG_LINE), entry.deploymentId ?? null, deps.clock.now(),
  );
}

export interface BotLogRow {
  id: string;
  level: string;
  kind: string;
  message: string;
  deployment_id: string | null;
  created_at: Date;
}

/** A project's newest log entries first, optionally of one level. */
export async function listBotLogs(sql: Tx, projectId: string, level: string | undefined, limit: number): Promise<BotLogRow[]> {
  return queryRows<BotLogRow>(sql,
    `SELECT id::text, level, kind, message, deployment_id, created_at FROM bot_logs
     WHERE project_id = $1 AND ($2::text IS NULL OR level = $2) ORDER BY bot_logs.id DESC LIMIT $3`,
    projectId, level ?? null, limit,
  );
}

/**
 * A page of the project's log, by keyset on the entry's id (the console's live log): `before`
 * gives the entries older than that id, newest first; `after` gives those newer than it, oldest
 * first (a live view appends them in order and asks again from the last one).
 */
export async function botLogPage(
  sql: Tx, projectId: string, opts: { level?: string; before?: bigint; after?: bigint; limit: number },
): Promise<BotLogRow[]> {
  return queryRows<BotLogRow>(sql,
    `SELECT id::text, level, kind, message, deployment_id, created_at FROM bot_logs
     WHERE project_id = $1 AND ($2::text IS NULL OR level = $2) AND ($3::bigint IS NULL OR id < $3) AND ($4::bigint IS NULL OR id > $4)
     ORDER BY CASE WHEN $4::bigint IS NULL THEN -id ELSE id END LIMIT $5`,
    projectId, opts.level ?? null, opts.before?.toString() ?? null, opts.after?.toString() ?? null, opts.limit,
  );
}

/** Each project's newest log line (its id; '' when none): the live log's change cursor, read by every instance alike. */
export async function botLogCursors(sql: Tx, projectIds: string[]): Promise<Map<string, string>> {
  if (!projectIds.length) return new Map();
  const rows = await queryRows<{ id: string; newest: string | null }>(sql,
    `SELECT p.id, (SELECT max(l.id) FROM bot_logs l WHERE l.project_id = p.id)::text AS newest FROM unnest($1::text[]) AS p(id)`,
    projectIds,
  );
  return new Map(rows.map((r) => [r.id, r.newest ?? '']));
}

/** How many of the project's lines (of a level) are newer than `after`: the live log's "new since the page opened". */
export async function botLogCountAfter(sql: Tx, projectId: string, level: string | undefined, after: bigint): Promise<number> {
  const rows = await queryRows<{ n: number }>(sql,
    `SELECT count(*)::int AS n FROM bot_logs WHERE project_id = $1 AND ($2::text IS NULL OR level = $2) AND id > $3::bigint`,
    projectId, level ?? null, after.toString(),
  );
  return rows[0].n;
}
