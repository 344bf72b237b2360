/** Templates (lib/templates/templates.ts) and template header samples (lib/media/header-sample.ts). */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { cursorScope, cursorSecretOf } from '../lib/platform/cursor.js';
import { keysetPage, positions } from '../lib/platform/keyset-page.js';
import { createTemplate as create, deleteTemplate as remove, findTemplate, listTemplateRows, templateView, type TemplateFilters } from '../lib/templates/templates.js';
import { createHeaderSample } from '../lib/media/header-sample.js';

export const listTemplates: Handler<operations['listTemplates']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const q = req.query;
  const filters: TemplateFilters = {};
  for (const k of ['name', 'language', 'category', 'status'] as const) if (q[k] !== undefined) filters[k] = String(q[k]);
  const { page, nextCursor } = await keysetPage(q, {
    scope: cursorScope('listTemplates', projectId, { ...filters }),
    secret: cursorSecretOf(deps),
    decode: positions.timeAndText,
    read: (after, take) => listTemplateRows(deps, projectId, filters, after, take),
    encode: (r) => [r.createdAt.getTime(), r.id],
  });
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
