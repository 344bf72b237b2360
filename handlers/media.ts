/** Media assets (lib/media/assets.ts): upload, list, read, delete. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { cursorScope, cursorSecretOf } from '../lib/platform/cursor.js';
import { keysetPage, positions } from '../lib/platform/keyset-page.js';
import { createMediaAsset, deleteMediaAsset, getMediaAsset, listMediaRows, mediaView } from '../lib/media/assets.js';

export const listMedia: Handler<operations['listMedia']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const { page, nextCursor } = await keysetPage(req.query, {
    scope: cursorScope('listMedia', projectId),
    secret: cursorSecretOf(deps),
    decode: positions.timeAndText,
    read: (after, take) => listMediaRows(deps, projectId, after, take),
    encode: (r) => [r.createdAt.getTime(), r.id],
  });
  const now = deps.clock.now();
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
