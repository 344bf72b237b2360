/** Contact CSV imports (tag Contacts): start one (the body is the file, streamed), read its status and its row report. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { getImport, importId, listImportRows, startImport } from '../lib/contacts-import/imports.js';

export const createContactImport: Handler<operations['createContactImport']> = async (req, deps) => {
  const started = await startImport(deps, req.auth!.project.id, req.http, {
    defaultCountry: req.query.default_country,
    filename: req.query.filename,
  });
  return { status: 202, data: { import: started } };
};

export const getContactImport: Handler<operations['getContactImport']> = async (req, deps) => ({
  data: { import: await getImport(deps.db.sql, req.auth!.project.id, importId(req.params.id)) },
});

export const listContactImportRows: Handler<operations['listContactImportRows']> = async (req, deps) => {
  const limit = Number(req.query.limit ?? 50);
  const offset = Number(req.query.offset ?? 0);
  const id = importId(req.params.id);
  await getImport(deps.db.sql, req.auth!.project.id, id);
  return { data: { ...(await listImportRows(deps.db.sql, id, limit, offset)), limit, offset } };
};
