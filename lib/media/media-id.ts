/**
 * A `media_id` given to a send (POST /v1/messages, the bot's `send`, a template's header media) must
 * be the channel media id of one of this project's media assets. The channel itself would accept any
 * id it holds for the number, including another project's upload, so the rule is ours: another
 * project's id and an id nobody uploaded get the same 404 `not_found`, and an expired asset the same
 * 410 `MEDIA_EXPIRED` as a send by slug, all before the channel is called. A header-sample handle
 * is refused first (400 `invalid_media_id`), as before.
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { isExpired, isHeaderHandle, mediaExpiredError } from './assets.js';
import { kindOf, type MediaKind } from './types.js';

/** Resolves a caller-given media id to this project's asset; throws the API's refusal otherwise. */
export async function resolveProjectMediaId(deps: Deps, projectId: string, mediaId: string, field: string): Promise<{ mediaId: string; kind: MediaKind }> {
  if (await isHeaderHandle(deps, mediaId)) {
    const text = 'media_id is a template header-sample handle, not a media id: upload the file with POST /v1/media and send its slug or media_id.';
    throw new ApiError('invalid_media_id', text, { fields: [{ field, message: text }] });
  }
  const row = await deps.db.prisma.mediaAsset.findFirst({ where: { projectId, channelMediaId: mediaId }, orderBy: { createdAt: 'desc' } });
  if (!row) throw new ApiError('not_found', `No media asset with media_id "${mediaId.slice(0, 200)}" in this project.`);
  if (isExpired(row, deps.clock.now())) throw mediaExpiredError(row);
  return { mediaId, kind: kindOf(row.mimeType) ?? 'document' };
}
