/**
 * A project's own media asset by the channel's media id (a message sent with it): its bytes are in
 * the blob store, so the inbox shows them without the channel, and after the channel's 30 days.
 */
import type { Readable } from 'node:stream';
import type { Deps } from '../deps.js';
import { queryRows } from '../platform/db/tx.js';
import { blobStoreOf } from '../platform/storage/store-of.js';

export interface StoredMedia {
  data: Readable;
  mimeType: string;
  size: number;
  filename: string;
}

export async function openStoredMedia(deps: Pick<Deps, 'db' | 'config' | 'blobStore'>, projectId: string, channelMediaId: string): Promise<StoredMedia | undefined> {
  const rows = await queryRows<{ storage_key: string; mime_type: string; size: number; filename: string }>(
    deps.db.sql,
    'SELECT storage_key, mime_type, size, filename FROM media_assets WHERE project_id = $1 AND channel_media_id = $2 LIMIT 1',
    projectId, channelMediaId,
  );
  const row = rows[0];
  if (!row) return undefined;
  const data = await blobStoreOf(deps).open(row.storage_key).catch(() => undefined);
  return data && { data, mimeType: row.mime_type, size: row.size, filename: row.filename };
}

/** The same by the asset's slug (a send by slug records the slug). */
export async function openStoredMediaBySlug(deps: Pick<Deps, 'db' | 'config' | 'blobStore'>, projectId: string, slug: string): Promise<StoredMedia | undefined> {
  const rows = await queryRows<{ channel_media_id: string | null }>(deps.db.sql, 'SELECT channel_media_id FROM media_assets WHERE project_id = $1 AND slug = $2', projectId, slug);
  return rows[0]?.channel_media_id ? openStoredMedia(deps, projectId, rows[0].channel_media_id) : undefined;
}
