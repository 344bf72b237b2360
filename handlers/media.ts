/** Media assets (lib/media/assets.ts): upload, list, read, delete. */
import type { operations } from '../generated/api.js';
import type { Handler } from './types.js';
import { cursorScope, cursorSecretOf, cursorTime, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/cursor.js';
import { createMediaAsset, deleteMediaAsset, getMediaAsset, listMediaRows, mediaView } from '../lib/media/assets.js';

export const listMedia: Handler<operations['listMedia']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const take = pageSize(req.query.limit);
  const scope = cursorScope('listMedia', projectId);
  const secret = cursorSecretOf(deps);
  let after: { at: Date; id: string } | undefined;
  if (req.query.cursor !== undefined) {
    const payload = decodeCursor(String(req.query.cursor), scope, secret);
    if (payload.length !== 2 || typeof payload[1] !== 'string') throw invalidCursor();
    after = { at: cursorTime(payload[0]), id: payload[1] };
  }
  const rows = await listMediaRows(deps, projectId, after, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  const now = deps.clock.now();
  const nextCursor = rows.length > take && last ? encodeCursor([last.createdAt.getTime(), last.id], scope, secret) : null;
  return { data: { media: page.map((r) => mediaView(r, now)), nextCursor } };
};

export const uploadMedia: Handler<operations['uploadMedia']> = async (req, deps) => {
  const upload = req.http.upload;
  const multipart = String(req.http.headers['content-type'] ?? '').toLowerCase().startsWith('multipart/form-data');
  const media = await createMediaAsset(
    deps,
    req.auth!.project,
    { body: (req.body ?? {}) as Record<string, unknown>, file: upload?.file, partFilename: upload?.partFilename, partType: upload?.partType, multipart },
    req.http.uploadBudget,
  );
  return { status: 201, data: { media } };
};

export const getMedia: Handler<operations['getMedia']> = async (req, deps) => ({
  data: { media: await getMediaAsset(deps, req.auth!.project.id, req.params.slug) },
});

export const deleteMedia: Handler<operations['deleteMedia']> = async (req, deps) => {
  await deleteMediaAsset(deps, req.auth!.project, req.params.slug);
  return { data: { slug: req.params.slug, deleted: true } };
};
