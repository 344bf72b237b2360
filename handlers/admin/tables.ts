/** Operator API: a project's tables (the dashboard's database tab). The rules are in lib/tables/ddl.ts. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { findProject } from './projects.js';
import { copyPreviewToPublic, createTable, listTables, runDdl } from '../../lib/tables/ddl.js';
import { quotaDefaultsOf, quotaReport, setQuota } from '../../lib/tables/quota.js';

type Ops = operations;

export const adminListTables: Handler<Ops['adminListTables']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: await listTables(deps.db, project.id, req.query.schema ?? 'public') };
};

export const adminCreateTable: Handler<Ops['adminCreateTable']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const b = req.body;
  return { status: 201, data: await createTable(deps.db, project.id, b.schema ?? 'public', b.name, b.columns) };
};

export const adminRunTableDdl: Handler<Ops['adminRunTableDdl']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: await runDdl(deps.db, project.id, req.body.schema ?? 'public', req.body.sql, quotaDefaultsOf(deps.config)) };
};

export const adminCopyPreviewSchema: Handler<Ops['adminCopyPreviewSchema']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: await copyPreviewToPublic(deps.db, project.id, req.body?.dry_run ?? false) };
};

export const adminGetTableQuota: Handler<Ops['adminGetTableQuota']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: await quotaReport(deps.db.sql, quotaDefaultsOf(deps.config), project.id) };
};

export const adminSetTableQuota: Handler<Ops['adminSetTableQuota']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const b = req.body;
  await setQuota(deps.db.sql, project.id, b.schema, { max_rows: b.max_rows, max_bytes: b.max_bytes }, deps.clock.now());
  return { data: await quotaReport(deps.db.sql, quotaDefaultsOf(deps.config), project.id) };
};
