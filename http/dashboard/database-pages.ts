/**
 * The console's database page (issue 47, item 1): a project's tables in `public` and `preview`
 * with their rows and sizes against the quota, a table made with the structured form, one DDL
 * statement through the confined path (a refusal's reason shown, nothing run), and preview's
 * structure copied to public after its dry-run diff. Everything goes through lib/tables/ (the
 * operator API's functions: listTables, createTable, runDdl, copyPreviewToPublic, quotaReport);
 * owners and admins change, members read. Changes are audited right after they commit
 * (lib/accounts/audit.ts recordAuditAfter: the project's role cannot reach the audit table).
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { recordAuditAfter } from '../../lib/accounts/audit.js';
import { ApiError } from '../../lib/platform/errors.js';
import { copyPreviewToPublic, createTable, listTables, runDdl, type ColumnSpec, type CopyResult } from '../../lib/tables/ddl.js';
import { quotaDefaultsOf, quotaReport } from '../../lib/tables/quota.js';
import { tableSizes } from '../../lib/tables/stats.js';
import { TABLE_SCHEMAS, type TableSchema } from '../../lib/tables/names.js';
import { html, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { bytes, changeOnce, count, onceField, usage } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

export const MANAGERS = ['owner', 'admin'] as const;
/** Rows of the structured create form. */
const CREATE_COLUMNS = 6;
const TYPES = ['text', 'integer', 'bigint', 'numeric', 'boolean', 'date', 'time', 'timestamptz', 'jsonb', 'uuid', 'serial', 'bigserial'];

export function schemaOf(v: unknown): TableSchema {
  return v === 'preview' ? 'preview' : 'public';
}

export const databasePath = (projectId: string, schema: TableSchema, rest = '') => projectPath(projectId, `/database${rest}${rest.includes('?') ? '&' : '?'}schema=${schema}`);
export const tablePath = (projectId: string, schema: TableSchema, table: string, rest = '') =>
  projectPath(projectId, `/database/${schema}/${encodeURIComponent(table)}${rest}`);

function schemaSwitch(projectId: string, current: TableSchema): Html {
  return html`<nav class="switch" aria-label="Schema"><ul>${TABLE_SCHEMAS.map((s) => html`<li><a href="${databasePath(projectId, s)}"${s === current ? html` aria-current="page"` : ''}>${s === 'public' ? 'public (production)' : 'preview (development)'}</a></li>`)}</ul></nav>`;
}

interface Kept {
  error?: string;
  status?: number;
  sql?: string;
  create?: Record<string, string>;
}

async function renderDatabase(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'database');
  const schema = schemaOf(req.query.schema ?? (req.body as Record<string, unknown> | undefined)?.schema);
  const [listed, sizes, quota] = await Promise.all([
    listTables(deps.db, ctx.project.id, schema),
    tableSizes(deps.db.sql, ctx.project.id, schema),
    quotaReport(deps.db.sql, quotaDefaultsOf(deps.config), ctx.project.id),
  ]);
  const q = quota.schemas.find((s) => s.schema === schema)!;
  const manage = canManage(ctx.role);
  const c = kept.create ?? {};
  const createForm = html`<section class="card" aria-labelledby="create-title"><h2 id="create-title">Create a table in ${schema}</h2>
<form method="post" action="${projectPath(ctx.project.id, '/database/tables')}">
  ${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="schema" value="${schema}">
  <label for="create-name">Table name</label><input id="create-name" name="name" type="text" required pattern="[a-z_][a-z0-9_]{0,62}" value="${c.name ?? ''}" autocomplete="off">
  <div class="table-wrap"><table class="stack"><caption>Columns (leave a name empty to skip the row)</caption><thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">May be empty</th><th scope="col">Default (SQL)</th><th scope="col">Primary key</th></tr></thead><tbody>
  ${Array.from({ length: CREATE_COLUMNS }, (_, i) => html`<tr>
    <td data-label="Name"><input type="text" name="col_name_${i}" aria-label="Column ${i + 1} name" value="${c[`col_name_${i}`] ?? (i === 0 && !kept.create ? 'id' : '')}" autocomplete="off"></td>
    <td data-label="Type"><select name="col_type_${i}" aria-label="Column ${i + 1} type">${TYPES.map((t) => html`<option${(c[`col_type_${i}`] ?? (i === 0 ? 'serial' : 'text')) === t ? html` selected` : ''}>${t}</option>`)}</select></td>
    <td data-label="May be empty"><input type="checkbox" name="col_null_${i}" value="1" aria-label="Column ${i + 1} may be empty"${(kept.create ? c[`col_null_${i}`] : i > 0) ? html` checked` : ''}></td>
    <td data-label="Default"><input type="text" name="col_default_${i}" aria-label="Column ${i + 1} default" value="${c[`col_default_${i}`] ?? ''}" autocomplete="off"></td>
    <td data-label="Primary key"><input type="checkbox" name="col_pk_${i}" value="1" aria-label="Column ${i + 1} is the primary key"${(kept.create ? c[`col_pk_${i}`] : i === 0) ? html` checked` : ''}></td></tr>`)}
  </tbody></table></div>
  <div class="actions"><button type="submit" class="primary">Create table</button></div>
</form></section>`;
  const ddlForm = html`<section class="card" aria-labelledby="ddl-title"><h2 id="ddl-title">Run one DDL statement in ${schema}</h2>
<p class="muted">One statement: CREATE or ALTER TABLE, CREATE INDEX, CREATE VIEW, DROP, COMMENT and the like, as the project's own role and within its quota. Anything else is refused with its reason and nothing runs.</p>
<form method="post" action="${projectPath(ctx.project.id, '/database/ddl')}">
  ${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="schema" value="${schema}">
  <label for="ddl-sql">Statement</label><textarea id="ddl-sql" name="sql" rows="4" required maxlength="10000">${kept.sql ?? ''}</textarea>
  <div class="actions"><button type="submit">Run statement</button></div>
</form></section>`;
  const copyForm = html`<section class="card" aria-labelledby="copy-title"><h2 id="copy-title">Copy preview's structure to public</h2>
<p class="muted">Adds to public the tables, columns, indexes, constraints and views that preview has and public lacks. Nothing in public is dropped or retyped, and no rows are copied. You see the statements first.</p>
<form method="post" action="${projectPath(ctx.project.id, '/database/copy-preview')}">${csrfField(ctx.csrf)}<input type="hidden" name="step" value="preview"><button type="submit">Show what would change</button></form></section>`;
  const body = html`${schemaSwitch(ctx.project.id, schema)}
<section class="card" aria-labelledby="quota-title"><h2 id="quota-title">Quota of ${schema}</h2>
  ${usage('Rows', q.rows, q.max_rows, count)}
  ${usage('Storage', q.bytes, q.max_bytes, bytes)}
</section>
${listed.tables.length
    ? html`<div class="table-wrap"><table class="stack" id="tables"><caption>Tables in ${schema}</caption><thead><tr><th scope="col">Table</th><th scope="col">Columns</th><th scope="col">Rows (about)</th><th scope="col">Size</th><th scope="col">Export</th></tr></thead><tbody>
${listed.tables.map((t) => {
  const size = sizes.get(t.name);
  return html`<tr><td data-label="Table"><a href="${tablePath(ctx.project.id, schema, t.name)}">${t.name}</a></td><td data-label="Columns">${t.columns.map((x) => x.name).join(', ')}</td>
  <td data-label="Rows (about)">${size ? count(size.rows) : '—'}</td><td data-label="Size">${size ? bytes(size.bytes) : '—'}</td>
  <td data-label="Export"><a href="${tablePath(ctx.project.id, schema, t.name, '/csv')}" download>CSV</a></td></tr>`;
})}</tbody></table></div>`
    : html`<p class="muted">No tables in ${schema} yet.</p>`}
${manage ? html`${createForm}${ddlForm}${schema === 'public' ? copyForm : ''}` : html`<p class="muted">Your role (${ctx.role}) reads the tables; owners and admins change them.</p>`}`;
  send(res, kept.status ?? 200, layout(ctx.shell('Database', { error: kept.error }), body));
}

export const showDatabase = (deps: AppDeps) => (req: Request, res: Response) => renderDatabase(deps, req, res);

/** A refusal of lib/tables shown on the page it came from, the form kept; anything else goes on to the error page. */
function refusal(e: unknown): { error: string; status: number } | undefined {
  if (e instanceof ApiError && e.status < 500) return { error: e.message, status: e.status };
  return undefined;
}

function formFields(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) if (typeof v === 'string' && k !== '_csrf' && k !== '_once') out[k] = v;
  return out;
}

export const submitCreateTable = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'database', MANAGERS, 'create tables');
  const schema = schemaOf(field(req, 'schema'));
  const name = (field(req, 'name') ?? '').trim();
  const columns: ColumnSpec[] = [];
  for (let i = 0; i < CREATE_COLUMNS; i++) {
    const colName = (field(req, `col_name_${i}`) ?? '').trim();
    if (!colName) continue;
    const dflt = (field(req, `col_default_${i}`) ?? '').trim();
    columns.push({ name: colName, type: (field(req, `col_type_${i}`) ?? 'text').trim(), nullable: field(req, `col_null_${i}`) === '1', primary_key: field(req, `col_pk_${i}`) === '1', ...(dflt ? { default: dflt } : {}) });
  }
  try {
    if (columns.length === 0) throw new ApiError('invalid_request', 'Give the table at least one column.');
    await changeOnce(deps, req, res, project.id, async () => {
      const made = await createTable(deps.db, project.id, schema, name, columns);
      await recordAuditAfter(deps, actor, { projectId: project.id, action: 'table.create', subject: `${schema}.${made.table}`, after: { columns: made.columns } });
      return tablePath(project.id, schema, made.table, '?done=table_created');
    });
  } catch (e) {
    const r = refusal(e);
    if (!r) throw e;
    await renderDatabase(deps, req, res, { ...r, create: formFields(req) });
  }
};

export const submitDdl = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'database', MANAGERS, 'run DDL');
  const schema = schemaOf(field(req, 'schema'));
  const sql = field(req, 'sql') ?? '';
  try {
    await changeOnce(deps, req, res, project.id, async () => {
      const ran = await runDdl(deps.db, project.id, schema, sql, quotaDefaultsOf(deps.config));
      await recordAuditAfter(deps, actor, { projectId: project.id, action: 'table.ddl', subject: schema, after: { command: ran.command, sql } });
      return databasePath(project.id, schema, '?done=ddl_ran');
    });
  } catch (e) {
    const r = refusal(e);
    if (!r) throw e;
    await renderDatabase(deps, req, res, { error: `Refused, nothing was run: ${r.error}`, status: r.status, sql });
  }
};

function copyDiff(result: CopyResult): Html {
  const list = (label: string, items: string[]) => (items.length ? html`<dt>${label}</dt><dd>${items.join(', ')}</dd>` : '');
  return html`<dl class="facts">${list('New tables', result.created_tables)}${list('New columns', result.added_columns)}${list('New indexes', result.added_indexes)}${list('New views', result.added_views)}${list('Left as they are', result.differences)}</dl>
${result.statements.length ? html`<h3>Statements</h3><ol class="statements">${result.statements.map((s) => html`<li><code>${s}</code></li>`)}</ol>` : html`<p>Public already has everything preview has: nothing to copy.</p>`}`;
}

export const submitCopyPreview = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database', MANAGERS, 'copy preview to public');
  const projectId = ctx.project.id;
  if (field(req, 'step') !== 'apply') {
    const diff = await copyPreviewToPublic(deps.db, projectId, true);
    const body = html`<p>This is a dry run: nothing has changed yet.</p>${copyDiff(diff)}
${diff.statements.length ? html`<form method="post" action="${projectPath(projectId, '/database/copy-preview')}" data-confirm="Apply these ${diff.statements.length} statements to public?">${csrfField(ctx.csrf)}${onceField()}<input type="hidden" name="step" value="apply"><input type="hidden" name="expect" value="${diff.statements.length}"><div class="actions"><button type="submit" class="primary">Apply to public</button> <a href="${databasePath(projectId, 'public')}">Back</a></div></form>` : html`<p><a href="${databasePath(projectId, 'public')}">Back</a></p>`}`;
    return send(res, 200, layout(ctx.shell('Copy preview to public: what would change'), body));
  }
  await changeOnce(deps, req, res, projectId, async () => {
    const done = await copyPreviewToPublic(deps.db, projectId, false);
    await recordAuditAfter(deps, ctx.actor, { projectId, action: 'table.copy_preview', subject: 'preview → public', after: { statements: done.statements, differences: done.differences } });
    return databasePath(projectId, 'public', '?done=copied');
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const databaseRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/database', handler: showDatabase },
  { method: 'post', path: '/projects/:projectId/database/tables', handler: submitCreateTable },
  { method: 'post', path: '/projects/:projectId/database/ddl', handler: submitDdl },
  { method: 'post', path: '/projects/:projectId/database/copy-preview', handler: submitCopyPreview },
];
