/**
 * One table of the console's database page: its rows with filters, sort and keyset pages (the rows
 * engine of `GET /v1/tables`, its limits included), its schema, a CSV export streamed page by page,
 * and rows added, edited and deleted through the project's confined writes (lib/tables/inserts.ts
 * and writes.ts, the functions of `POST`, `PATCH` and `DELETE /v1/tables/{table}/rows`). Every
 * change is shown as its dry run first; applying it is a second form, sent once. An edit or delete
 * carries `max_affected`: never more than CONSOLE_MAX_AFFECTED rows, and never more than its dry
 * run showed, so rows that came to match meanwhile make it refused before anything changes.
 */
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { recordAuditAfter } from '../../lib/accounts/audit.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { ApiError } from '../../lib/platform/errors.js';
import { readRows, type RowsPage } from '../../lib/tables/rows.js';
import { describeTable, type ColumnDescriptor } from '../../lib/tables/describe.js';
import { insertRows } from '../../lib/tables/inserts.js';
import { deleteRows, updateRows, writeFiltersFromBody, type WriteResult } from '../../lib/tables/writes.js';
import { tableCsv } from '../../lib/tables/csv.js';
import { tablesSettingsOf } from '../../lib/tables/settings.js';
import { IDENT_PATTERN, type TableSchema } from '../../lib/tables/names.js';
import { html, type Html } from './html.js';
import { csrfField, layout } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { cell, changeOnce, fieldText, onceField } from './console-kit.js';
import { databasePath, MANAGERS, schemaOf, tablePath } from './database-pages.js';
import { projectPages } from './page-routes.js';

/** The most rows one edit or delete of the console may change. */
export const CONSOLE_MAX_AFFECTED = 100;
const PAGE_ROWS = 25;
const FILTER_SLOTS = 3;
const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'is'] as const;

interface Target {
  projectId: string;
  schema: TableSchema;
  table: string;
}

function targetOf(req: Request, projectId: string): Target {
  const table = String(req.params.table);
  if (!IDENT_PATTERN.test(table)) throw new DashboardRefusal(404, 'There is no such table.');
  return { projectId, schema: schemaOf(req.params.schema), table };
}

/** The filter slots of the rows form (f0c, f0o, f0v …) as the engine's filter JSON. */
function filtersOf(src: Record<string, unknown>): { column: string; op: string; value: string }[] {
  const out = [];
  for (let i = 0; i < FILTER_SLOTS; i++) {
    const column = src[`f${i}c`];
    const op = src[`f${i}o`];
    const value = src[`f${i}v`];
    if (typeof column === 'string' && column && typeof op === 'string') out.push({ column, op, value: typeof value === 'string' ? value : '' });
  }
  return out;
}

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** The key of a row: its primary-key values as filters, as JSON (the edit and delete forms carry it). */
function keyOf(columns: ColumnDescriptor[], row: Record<string, unknown>): string | undefined {
  const pk = columns.filter((c) => c.is_primary_key);
  if (pk.length === 0) return undefined;
  return JSON.stringify(pk.map((c) => ({ column: c.name, op: row[c.name] === null ? 'is' : 'eq', value: row[c.name] === null ? null : fieldText(row[c.name]) })));
}

function valueInputs(columns: ColumnDescriptor[], values: Record<string, unknown> = {}, idPrefix: string): Html {
  return html`${columns.map((c) => {
    const id = `${idPrefix}-${c.name}`;
    const isNull = values[c.name] === null;
    return html`<div class="field"><label for="${id}">${c.name} <small class="muted">${c.type}${c.nullable ? '' : ', required'}${c.default_value ? `, default ${c.default_value}` : ''}</small></label>
  <input id="${id}" type="text" name="v_${c.name}" value="${isNull ? '' : fieldText(values[c.name])}" autocomplete="off">
  ${c.nullable ? html`<label class="check"><input type="checkbox" name="n_${c.name}" value="1"${isNull ? html` checked` : ''}> NULL</label>` : ''}</div>`;
  })}`;
}

/** The row a form describes: a NULL box sets null; an empty field is left out (the column's default). */
function rowOfForm(columns: ColumnDescriptor[], form: Record<string, unknown>): Record<string, string | null> {
  const row: Record<string, string | null> = {};
  for (const c of columns) {
    if (form[`n_${c.name}`] === '1') row[c.name] = null;
    else if (typeof form[`v_${c.name}`] === 'string' && form[`v_${c.name}`] !== '') row[c.name] = form[`v_${c.name}`] as string;
  }
  return row;
}

function rowsTable(columns: string[], rows: Record<string, unknown>[], extra?: (row: Record<string, unknown>) => Html, id = 'rows'): Html {
  return html`<div class="table-wrap"><table class="stack data" id="${id}"><thead><tr>${columns.map((c) => html`<th scope="col">${c}</th>`)}${extra ? html`<th scope="col">Row</th>` : ''}</tr></thead><tbody>
${rows.map((r) => html`<tr>${columns.map((c) => html`<td data-label="${c}">${cell(r[c])}</td>`)}${extra ? html`<td data-label="Row">${extra(r)}</td>` : ''}</tr>`)}
</tbody></table></div>`;
}

function hidden(fields: Record<string, string>): Html {
  return html`${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}`;
}

export const showTable = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database');
  const t = targetOf(req, ctx.project.id);
  const settings = tablesSettingsOf(deps);
  const described = await describeTable(deps.db, settings, t.projectId, t.schema, t.table);
  const columns = described.columns;
  const q = req.query as Record<string, unknown>;
  const filters = filtersOf(q);
  const orderBy = str(q.order_by) || undefined;
  const direction = q.direction === 'desc' ? 'desc' : 'asc';
  const cursor = str(q.cursor) || undefined;
  let page: RowsPage | undefined;
  let error: string | undefined;
  let status = 200;
  try {
    page = await readRows(deps.db, settings, { projectId: t.projectId, table: t.table, schema: t.schema, filters: filters.length ? JSON.stringify(filters) : undefined, orderBy, direction, limit: PAGE_ROWS, cursor });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status >= 500) throw e;
    error = e.message;
    status = e.status;
  }
  const base = tablePath(t.projectId, t.schema, t.table);
  const keep: Record<string, string | undefined> = { order_by: orderBy, direction: direction === 'desc' ? 'desc' : undefined };
  filters.forEach((f, i) => Object.assign(keep, { [`f${i}c`]: f.column, [`f${i}o`]: f.op, [`f${i}v`]: f.value }));
  const manage = canManage(ctx.role);
  const names = columns.map((c) => c.name);
  const rowActions = manage
    ? (row: Record<string, unknown>) => {
        const key = keyOf(columns, row);
        if (!key) return html`<span class="muted">no primary key</span>`;
        return html`<a href="${`${base}/edit${query({ key })}`}">Edit</a>
<form method="post" action="${base}/delete" class="inline">${csrfField(ctx.csrf)}<input type="hidden" name="filters" value="${key}"><input type="hidden" name="step" value="preview"><button type="submit" class="danger" aria-label="Delete this row">Delete…</button></form>`;
      }
    : undefined;
  const filterForm = html`<form method="get" action="${base}" class="card filters" aria-label="Filter and sort">
  <fieldset><legend>Filters (all must hold)</legend>
  ${Array.from({ length: FILTER_SLOTS }, (_, i) => {
    const f = filters[i];
    return html`<div class="filter-row">
    <select name="f${i}c" aria-label="Filter ${i + 1} column"><option value="">(none)</option>${names.map((n) => html`<option${f?.column === n ? html` selected` : ''}>${n}</option>`)}</select>
    <select name="f${i}o" aria-label="Filter ${i + 1} comparison">${OPS.map((o) => html`<option${(f?.op ?? 'eq') === o ? html` selected` : ''}>${o}</option>`)}</select>
    <input type="text" name="f${i}v" aria-label="Filter ${i + 1} value" value="${f?.value ?? ''}" autocomplete="off"></div>`;
  })}</fieldset>
  <label for="order-by">Sort by</label><select id="order-by" name="order_by"><option value="">(primary key)</option>${names.map((n) => html`<option${orderBy === n ? html` selected` : ''}>${n}</option>`)}</select>
  <label for="direction">Direction</label><select id="direction" name="direction"><option value="asc">ascending</option><option value="desc"${direction === 'desc' ? html` selected` : ''}>descending</option></select>
  <div class="actions"><button type="submit">Show rows</button> <a href="${base}">Clear</a></div>
</form>`;
  const paging = page
    ? html`<p class="paging">${cursor ? html`<a href="${base + query(keep)}">First page</a> ` : ''}${page.pagination.nextCursor ? html`<a href="${base + query({ ...keep, cursor: page.pagination.nextCursor })}" rel="next">Next page</a>` : html`<span class="muted">No more rows.</span>`}${page.pagination.ordered ? '' : html` <span class="muted">(no primary key: rows come in storage order)</span>`}</p>`
    : '';
  const writeFilters = JSON.stringify(filters.map((f) => ({ column: f.column, op: f.op, value: f.op === 'is' ? f.value : f.value })));
  const bulk = manage && filters.length && page
    ? html`<section class="card" aria-labelledby="bulk-title"><h2 id="bulk-title">Change the rows these filters match</h2>
<form method="post" action="${base}/update">${csrfField(ctx.csrf)}<input type="hidden" name="filters" value="${writeFilters}"><input type="hidden" name="step" value="preview">
  <label for="bulk-column">Column</label><select id="bulk-column" name="set_column">${columns.filter((c) => !c.is_primary_key).map((c) => html`<option>${c.name}</option>`)}</select>
  <label for="bulk-value">New value</label><input id="bulk-value" type="text" name="set_value" autocomplete="off">
  <label class="check"><input type="checkbox" name="set_null" value="1"> NULL</label>
  <div class="actions"><button type="submit">Preview the change</button></div></form>
<form method="post" action="${base}/delete">${csrfField(ctx.csrf)}<input type="hidden" name="filters" value="${writeFilters}"><input type="hidden" name="step" value="preview"><div class="actions"><button type="submit" class="danger">Preview deleting them</button></div></form>
<p class="muted">At most ${CONSOLE_MAX_AFFECTED} rows change at once; you see them before anything changes.</p></section>`
    : '';
  const insert = manage
    ? html`<section class="card" aria-labelledby="insert-title"><h2 id="insert-title">Add a row</h2>
<p class="muted">Leave a field empty for the column's default.</p>
<form method="post" action="${base}/rows">${csrfField(ctx.csrf)}<input type="hidden" name="step" value="preview">${valueInputs(columns, {}, 'new')}
<div class="actions"><button type="submit" class="primary">Preview the new row</button></div></form></section>`
    : '';
  const schemaTable = html`<section class="card" aria-labelledby="schema-title"><h2 id="schema-title">Schema</h2><div class="table-wrap"><table class="stack" id="schema"><thead><tr><th scope="col">Column</th><th scope="col">Type</th><th scope="col">Nullable</th><th scope="col">Default</th><th scope="col">Primary key</th></tr></thead><tbody>
${columns.map((c) => html`<tr><td data-label="Column">${c.name}</td><td data-label="Type">${c.type}</td><td data-label="Nullable">${c.nullable ? 'yes' : 'no'}</td><td data-label="Default">${c.default_value ?? '—'}</td><td data-label="Primary key">${c.is_primary_key ? 'yes' : ''}</td></tr>`)}
</tbody></table></div></section>`;
  const body = html`<p><a href="${databasePath(t.projectId, t.schema)}">All tables in ${t.schema}</a> · <a href="${`${base}/csv${query(keep)}`}" download>Export CSV</a></p>
${filterForm}
${page ? (page.rows.length ? rowsTable(names, page.rows, rowActions) : html`<p class="muted">No rows${filters.length ? ' match these filters' : ''}.</p>`) : ''}
${paging}${bulk}${insert}${schemaTable}`;
  send(res, status, layout(ctx.shell(`${t.schema}.${t.table}`, { error }), body));
};

/** Streams the table (or the rows its filters match) as CSV; a header and then page after page. */
export const exportCsv = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database');
  const t = targetOf(req, ctx.project.id);
  const q = req.query as Record<string, unknown>;
  const filters = filtersOf(q);
  const lines = tableCsv(deps.db, tablesSettingsOf(deps), {
    projectId: t.projectId, schema: t.schema, table: t.table,
    filters: filters.length ? JSON.stringify(filters) : undefined,
    orderBy: str(q.order_by) || undefined,
    direction: q.direction === 'desc' ? 'desc' : 'asc',
  });
  // The first line is read before the headers go: an unknown table is still a page with its status.
  const first = await lines.next();
  res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${t.schema}-${t.table}.csv"`);
  res.setHeader('Cache-Control', 'no-store');
  async function* all() {
    if (!first.done) yield first.value;
    yield* lines;
  }
  await pipeline(Readable.from(all()), res).catch((e) => {
    deps.logger.warn('dashboard: CSV export cut short', { error: e instanceof Error ? e.message : String(e) });
    res.destroy();
  });
};

export const showEdit = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database', MANAGERS, 'edit rows');
  const t = targetOf(req, ctx.project.id);
  const settings = tablesSettingsOf(deps);
  const columns = (await describeTable(deps.db, settings, t.projectId, t.schema, t.table)).columns;
  const key = str(req.query.key) ?? '';
  const filters = writeFiltersFromBody(parseJson(key));
  const page = await readRows(deps.db, settings, { projectId: t.projectId, table: t.table, schema: t.schema, filters: JSON.stringify(filters), limit: 2 });
  if (page.rows.length !== 1) throw new DashboardRefusal(404, 'That row is no longer there (or its key now matches more than one row).');
  const row = page.rows[0];
  const base = tablePath(t.projectId, t.schema, t.table);
  const originals: Record<string, string> = {};
  for (const c of columns) {
    originals[`o_${c.name}`] = fieldText(row[c.name]);
    if (row[c.name] === null) originals[`on_${c.name}`] = '1';
  }
  const body = html`<form method="post" action="${base}/update" class="card">${csrfField(ctx.csrf)}<input type="hidden" name="filters" value="${key}"><input type="hidden" name="step" value="preview">${hidden(originals)}
${valueInputs(columns.filter((c) => !c.is_primary_key), row, 'edit')}
<div class="actions"><button type="submit" class="primary">Preview the change</button> <a href="${base}">Cancel</a></div></form>`;
  send(res, 200, layout(ctx.shell(`Edit a row of ${t.schema}.${t.table}`), body));
};

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new DashboardRefusal(400, 'The form is damaged (its row key is not readable). Reload the page; nothing was changed.');
  }
}

/** What a form's fields are, for the apply form that repeats them. */
function formOf(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((req.body ?? {}) as Record<string, unknown>)) if (typeof v === 'string' && !['_csrf', '_once', 'step'].includes(k)) out[k] = v;
  return out;
}

function previewPage(deps: AppDeps, req: Request, res: Response, ctx: Awaited<ReturnType<typeof projectContext>>, t: Target, what: { title: string; lead: string; result: WriteResult; action: string; button: string; danger?: boolean; extra?: Record<string, string> }) {
  const base = tablePath(t.projectId, t.schema, t.table);
  const names = Object.keys(what.result.rows[0] ?? {});
  const body = html`<p class="notice" role="status" id="dry-run">Dry run: ${what.lead} Nothing has changed yet.</p>
${what.result.rows.length ? rowsTable(names, what.result.rows, undefined, 'preview-rows') : ''}
${what.result.rows_truncated ? html`<p class="muted">The first ${what.result.rows.length} of ${what.result.affected} rows are shown.</p>` : ''}
${what.result.affected > 0 ? html`<form method="post" action="${base}/${what.action}">${csrfField(ctx.csrf)}${onceField()}${hidden({ ...formOf(req), ...(what.extra ?? {}) })}<input type="hidden" name="step" value="apply">
<div class="actions"><button type="submit" class="${what.danger ? 'danger' : 'primary'}">${what.button}</button> <a href="${base}">Cancel</a></div></form>` : html`<p><a href="${base}">Back to the table</a></p>`}`;
  send(res, 200, layout(ctx.shell(what.title), body));
}

export const submitInsert = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database', MANAGERS, 'add rows');
  const t = targetOf(req, ctx.project.id);
  const settings = tablesSettingsOf(deps);
  const columns = (await describeTable(deps.db, settings, t.projectId, t.schema, t.table)).columns;
  const row = rowOfForm(columns, req.body as Record<string, unknown>);
  const insert = (dryRun: boolean) => insertRows(deps.db, settings, { projectId: t.projectId, table: t.table, schema: t.schema, rows: [row], dryRun });
  if (field(req, 'step') !== 'apply') {
    const result = await insert(true);
    return previewPage(deps, req, res, ctx, t, { title: `Add a row to ${t.schema}.${t.table}`, lead: 'the row as it would be stored.', result, action: 'rows', button: 'Add this row' });
  }
  await changeOnce(deps, req, res, t.projectId, async () => {
    const result = await insert(false);
    await recordAuditAfter(deps, ctx.actor, { projectId: t.projectId, action: 'row.insert', subject: `${t.schema}.${t.table}`, after: { rows: result.rows } });
    return `${tablePath(t.projectId, t.schema, t.table)}?done=row_inserted`;
  });
};

/** The change an edit or bulk form asks for: the columns whose value changed, or the one bulk column. */
function setOfForm(columns: ColumnDescriptor[], form: Record<string, unknown>): Record<string, string | null> {
  if (typeof form.set_column === 'string') {
    const c = columns.find((x) => x.name === form.set_column);
    if (!c) throw new DashboardRefusal(400, 'Choose a column to change.');
    return { [c.name]: form.set_null === '1' ? null : typeof form.set_value === 'string' ? form.set_value : '' };
  }
  const set: Record<string, string | null> = {};
  for (const c of columns) {
    const original = form[`o_${c.name}`];
    if (typeof original !== 'string' || c.is_primary_key) continue;
    const wasNull = form[`on_${c.name}`] === '1';
    const isNull = form[`n_${c.name}`] === '1';
    const now = typeof form[`v_${c.name}`] === 'string' ? (form[`v_${c.name}`] as string) : original;
    if (isNull !== wasNull || (!isNull && now !== original)) set[c.name] = isNull ? null : now;
  }
  if (Object.keys(set).length === 0) throw new DashboardRefusal(400, 'Nothing was changed in the form, so there is nothing to save.');
  return set;
}

/** `max_affected` of an apply: what its dry run showed (the form carries it), never past the console's limit. */
function confirmedCount(req: Request): number {
  const n = Number(field(req, 'confirmed'));
  return Number.isInteger(n) && n >= 0 && n <= CONSOLE_MAX_AFFECTED ? n : 0;
}

function overLimit(e: unknown): never {
  if (e instanceof ApiError && e.code === 'max_affected_exceeded') {
    throw new DashboardRefusal(409, `${e.message.replace(/max_affected \(\d+\)/, `the ${CONSOLE_MAX_AFFECTED} rows the console changes at once (or what the preview showed)`)} Narrow the filters.`);
  }
  throw e;
}

export const submitUpdate = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database', MANAGERS, 'edit rows');
  const t = targetOf(req, ctx.project.id);
  const settings = tablesSettingsOf(deps);
  const columns = (await describeTable(deps.db, settings, t.projectId, t.schema, t.table)).columns;
  const filters = writeFiltersFromBody(parseJson(field(req, 'filters') ?? ''));
  const set = setOfForm(columns, req.body as Record<string, unknown>);
  const update = (dryRun: boolean, maxAffected: number) =>
    updateRows(deps.db, settings, { projectId: t.projectId, table: t.table, schema: t.schema, filters, set, dryRun, maxAffected }).catch(overLimit);
  if (field(req, 'step') !== 'apply') {
    const result = await update(true, CONSOLE_MAX_AFFECTED);
    const change = Object.entries(set).map(([k, v]) => `${k} = ${v === null ? 'NULL' : JSON.stringify(v)}`).join(', ');
    return previewPage(deps, req, res, ctx, t, { title: `Change rows of ${t.schema}.${t.table}`, lead: `${result.affected} row(s) match and would get ${change}. They are shown as they are now.`, result, action: 'update', button: `Change ${result.affected} row(s)`, extra: { confirmed: String(result.affected) } });
  }
  await changeOnce(deps, req, res, t.projectId, async () => {
    const result = await update(false, confirmedCount(req));
    await recordAuditAfter(deps, ctx.actor, { projectId: t.projectId, action: 'row.update', subject: `${t.schema}.${t.table}`, before: { filters }, after: { set, affected: result.affected, rows: result.rows } });
    return `${tablePath(t.projectId, t.schema, t.table)}?done=rows_updated`;
  });
};

export const submitDelete = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'database', MANAGERS, 'delete rows');
  const t = targetOf(req, ctx.project.id);
  const settings = tablesSettingsOf(deps);
  const filters = writeFiltersFromBody(parseJson(field(req, 'filters') ?? ''));
  const remove = (dryRun: boolean, maxAffected: number) =>
    deleteRows(deps.db, settings, { projectId: t.projectId, table: t.table, schema: t.schema, filters, dryRun, maxAffected }).catch(overLimit);
  if (field(req, 'step') !== 'apply') {
    const result = await remove(true, CONSOLE_MAX_AFFECTED);
    return previewPage(deps, req, res, ctx, t, { title: `Delete rows of ${t.schema}.${t.table}`, lead: `${result.affected} row(s) would be deleted.`, result, action: 'delete', button: `Delete ${result.affected} row(s)`, danger: true, extra: { confirmed: String(result.affected) } });
  }
  await changeOnce(deps, req, res, t.projectId, async () => {
    const result = await remove(false, confirmedCount(req));
    await recordAuditAfter(deps, ctx.actor, { projectId: t.projectId, action: 'row.delete', subject: `${t.schema}.${t.table}`, before: { filters, rows: result.rows }, after: { affected: result.affected } });
    return `${tablePath(t.projectId, t.schema, t.table)}?done=rows_deleted`;
  });
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const tableRoutes = projectPages('database/:schema/:table', {
  '': { get: showTable },
  '/csv': { get: exportCsv },
  '/edit': { get: showEdit },
  '/rows': { post: submitInsert },
  '/update': { post: submitUpdate },
  '/delete': { post: submitDelete },
});
