/** Templates (lib/templates.ts) and template header samples (lib/media/header-sample.ts). */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { cursorScope, cursorSecretOf, cursorTime, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/cursor.js';
import { createTemplate as create, deleteTemplate as remove, findTemplate, listTemplateRows, templateView, type TemplateFilters } from '../lib/templates.js';
import { createHeaderSample } from '../lib/media/header-sample.js';

export const listTemplates: Handler<operations['listTemplates']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const q = req.query;
  const take = pageSize(q.limit);
  const filters: TemplateFilters = {};
  for (const k of ['name', 'language', 'category', 'status'] as const) if (q[k] !== undefined) filters[k] = String(q[k]);
  const scope = cursorScope('listTemplates', projectId, { ...filters });
  const secret = cursorSecretOf(deps);
  let after: { at: Date; id: string } | undefined;
  if (q.cursor !== undefined) {
    const payload = decodeCursor(String(q.cursor), scope, secret);
    if (payload.length !== 2 || typeof payload[1] !== 'string') throw invalidCursor();
    after = { at: cursorTime(payload[0]), id: payload[1] };
  }
  const rows = await listTemplateRows(deps, projectId, filters, after, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const nextCursor = rows.length > take && last ? encodeCursor([last.createdAt.getTime(), last.id], scope, secret) : null;
  return { data: { templates: page.map(templateView), nextCursor } };
};

export const createTemplate: Handler<operations['createTemplate']> = async (req, deps) => ({
  status: 201,
  data: { template: await create(deps, req.auth!.project, req.body) },
});

export const getTemplate: Handler<operations['getTemplate']> = async (req, deps) => ({
  data: { template: templateView(await findTemplate(deps, req.auth!.project.id, req.params.name, req.query.language)) },
});

export const deleteTemplate: Handler<operations['deleteTemplate']> = async (req, deps) => ({
  data: { deleted: await remove(deps, req.auth!.project, req.params.name, req.query.language) },
});

export const uploadHeaderSample: Handler<operations['uploadHeaderSample']> = async (req, deps) => ({
  status: 201,
  data: await createHeaderSample(deps, req.auth!.project, req.body, req.http.upload?.file, req.http.uploadBudget),
});
