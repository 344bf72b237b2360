/** The project's own tables: rows (read, insert, update, delete) and schema. Thin: the rules are in lib/tables/. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import type { AppDeps } from '../http/app-deps.js';
import { readRows } from '../lib/tables/rows.js';
import { tablesSettingsOf } from '../lib/tables/settings.js';
import { describeTable } from '../lib/tables/describe.js';
import { insertRows } from '../lib/tables/inserts.js';
import { linkKeyToTransaction } from '../lib/platform/idempotency-transactions.js';
import { deleteRows, updateRows, writeFiltersFromBody, writeFiltersFromQuery } from '../lib/tables/writes.js';

const settings = (deps: AppDeps) => tablesSettingsOf(deps);

/** The table a request names: the caller's project, the path's table, the schema given or public. */
const tableOf = (req: { auth?: { project: { id: string } }; params: { table: string } }, schema: 'public' | 'preview' | undefined) =>
  ({ projectId: req.auth!.project.id, table: req.params.table, schema: schema ?? ('public' as const) });

export const listTableRows: Handler<operations['listTableRows']> = async (req, deps) => {
  const q = req.query;
  const page = await readRows(deps.db, settings(deps), {
    ...tableOf(req, q.schema),
    columns: q.columns,
    filters: q.filters,
    orderBy: q.order_by,
    direction: q.direction,
    limit: q.limit ?? 20,
    cursor: q.cursor,
  });
  return { data: page };
};

export const getTableSchema: Handler<operations['getTableSchema']> = async (req, deps) => ({
  data: await describeTable(deps.db, settings(deps), req.auth!.project.id, req.query.schema ?? 'public', req.params.table),
});

export const insertTableRows: Handler<operations['insertTableRows']> = async (req, deps) => {
  const b = req.body;
  const result = await insertRows(deps.db, settings(deps), {
    ...tableOf(req, b.schema),
    rows: b.rows,
    dryRun: b.dry_run ?? false,
    // Keyed: exactly once whatever becomes of the COMMIT (a retry replays this answer if it committed).
    beforeCommit: req.idempotencyKey
      ? (client, data) => linkKeyToTransaction(deps.db.sql, client, { projectId: req.auth!.project.id, key: req.idempotencyKey! }, { status: 201, body: { success: true, data } })
      : undefined,
  });
  return { status: result.dry_run ? 200 : 201, data: result };
};

export const updateTableRows: Handler<operations['updateTableRows']> = async (req, deps) => {
  const b = req.body;
  const result = await updateRows(deps.db, settings(deps), {
    ...tableOf(req, b.schema),
    filters: writeFiltersFromBody(b.filters),
    set: b.set,
    dryRun: b.dry_run ?? false,
    maxAffected: b.max_affected,
  });
  return { data: result };
};

export const deleteTableRows: Handler<operations['deleteTableRows']> = async (req, deps) => {
  const q = req.query;
  const result = await deleteRows(deps.db, settings(deps), {
    ...tableOf(req, q.schema),
    filters: writeFiltersFromQuery(q.filters),
    dryRun: q.dry_run ?? false,
    maxAffected: q.max_affected,
  });
  return { data: result };
};
