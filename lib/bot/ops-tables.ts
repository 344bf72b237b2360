/**
 * The table helpers of the host API (lib/bot/host-api.ts): the project's own tables as the
 * project's role, `public` in production and `preview` in a preview run, with the API's rules
 * (page cap, statement timeout, storage quota; lib/tables/).
 */
import { readRows } from '../tables/rows.js';
import { deleteRows, updateRows, writeFiltersFromBody } from '../tables/writes.js';
import { quotaDefaultsOf } from '../tables/quota.js';
import { cursorSecretOf } from '../platform/cursor.js';
import { insertRow } from './table-insert.js';
import { ok, type Answer, type BotDeps, type Invocation } from './host-types.js';

const schemaOf = (inv: Invocation) => (inv.mode === 'preview' ? 'preview' : 'public');

function tableSettings(deps: BotDeps) {
  // The page cap holds for the bot's tables.select as for the API (lib/tables/rows.ts).
  return { statementTimeoutMs: deps.config.tablesStatementTimeoutMs, cursorSecret: cursorSecretOf(deps), quota: quotaDefaultsOf(deps.config), pageMaxBytes: deps.config.tablesPageMaxBytes };
}

export async function runSelect(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  const limit = Number.isInteger(args?.limit) ? Math.min(50, Math.max(1, args.limit)) : 20;
  const page = await readRows(deps.db, tableSettings(deps), {
    projectId: inv.projectId,
    table: String(args?.table ?? ''),
    schema: schemaOf(inv),
    columns: Array.isArray(args?.columns) ? args.columns.join(',') : undefined,
    filters: Array.isArray(args?.filters) ? JSON.stringify(args.filters) : undefined,
    orderBy: typeof args?.orderBy === 'string' ? args.orderBy : undefined,
    direction: args?.direction === 'desc' ? 'desc' : 'asc',
    limit,
    cursor: undefined,
  });
  return ok(page.rows);
}

export async function runInsert(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  return ok(await insertRow(deps.db, deps.config.tablesStatementTimeoutMs, inv.projectId, schemaOf(inv), args?.table, args?.row, quotaDefaultsOf(deps.config)));
}

export async function runUpdate(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  const r = await updateRows(deps.db, tableSettings(deps), {
    projectId: inv.projectId, table: String(args?.table ?? ''), schema: schemaOf(inv), filters: writeFiltersFromBody(args?.filters), set: args?.set ?? {}, dryRun: false, maxAffected: undefined,
  });
  return ok(r.affected);
}

export async function runDelete(deps: BotDeps, inv: Invocation, args: any): Promise<Answer> {
  const r = await deleteRows(deps.db, tableSettings(deps), {
    projectId: inv.projectId, table: String(args?.table ?? ''), schema: schemaOf(inv), filters: writeFiltersFromBody(args?.filters), dryRun: false, maxAffected: undefined,
  });
  return ok(r.affected);
}
