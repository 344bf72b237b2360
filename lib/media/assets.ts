/**
 * Media assets: a verified file stored in the blob store and uploaded to the channel, named by a
 * slug the bot and POST /v1/messages send by.
 *
 * Policy:
 * - The file arrives as a multipart part or inline base64 (already in a temporary file, see
 *   middleware/upload-body.ts) or from `source_url`. Its type is verified from the bytes against
 *   WhatsApp's media types (./verify.ts); the ceiling is the verified kind's (image 5 MB, video and
 *   audio 16 MB, document 100 MB): 413 beyond, 400 `empty_file` when empty.
 * - Order: slug free? → channel upload (gives `media_id`) → blob store → row. A failure after the
 *   channel upload removes what was made, so a refused upload leaves nothing behind.
 * - The channel keeps media 30 days after upload (by `deps.clock`): then the asset is 410
 *   `MEDIA_EXPIRED` when read or sent. We do not re-upload behind the caller's back: the caller
 *   uploads again (a new slug, or the same after deleting the old asset), so what is sent is always
 *   what the caller last chose to upload.
 * - A slug names an asset of this project only; a header-sample handle is never a media id.
 */
import { createReadStream } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { requireChannel } from '../channel-settings/settings.js';
import { isUniqueViolation } from '../platform/db/errors.js';
import { asApiError } from '../channel-port/api-errors.js';
import { blobStoreOf } from '../platform/storage/store-of.js';
import type { UploadBudget } from './budget.js';
import { fileTooLarge } from './errors.js';
import { emptyFile } from './header-sample.js';
import { fetchSource } from './source.js';
import type { TempFile } from './temp-file.js';
import { cleanFilename, extensionOf, KIND_RULES, kindOf, MEDIA_MAX_BYTES, MEDIA_TYPES, type MediaKind } from './types.js';
import { sniffCeiling, verifyContent } from './verify.js';
import { capability } from '../channel-port/capabilities.js';
import type { MediaCapability } from '../channel-port/port.js';

export type MediaView = components['schemas']['MediaAsset'];
type MediaUploadRequest = components['schemas']['MediaUploadRequest'];

/** How long the channel keeps an uploaded media object. */
export const CHANNEL_MEDIA_TTL_MS = 30 * 24 * 3600 * 1000;

export interface MediaRow {
  id: string;
  slug: string;
  filename: string;
  mimeType: string;
  size: number;
  sha256: string;
  storageKey: string;
  channelMediaId: string | null;
  channelUploadedAt: Date | null;
  createdAt: Date;
}

export function expiresAt(row: Pick<MediaRow, 'channelUploadedAt'>): Date | null {
  return row.channelUploadedAt ? new Date(row.channelUploadedAt.getTime() + CHANNEL_MEDIA_TTL_MS) : null;
}

export function isExpired(row: Pick<MediaRow, 'channelUploadedAt'>, now: Date): boolean {
  const end = expiresAt(row);
  return end === null || end.getTime() <= now.getTime();
}

export function mediaView(row: MediaRow, now: Date): MediaView {
  const end = expiresAt(row);
  return {
    slug: row.slug,
    media_id: row.channelMediaId,
    kind: kindOf(row.mimeType) ?? 'document',
    filename: row.filename,
    mime_type: row.mimeType,
    size: row.size,
    sha256: row.sha256,
    created_at: row.createdAt.toISOString(),
    channel_uploaded_at: row.channelUploadedAt?.toISOString() ?? null,
    expires_at: end?.toISOString() ?? null,
    expired: isExpired(row, now),
  };
}

export function mediaExpiredError(row: MediaRow): ApiError {
  return new ApiError('MEDIA_EXPIRED', `Media ${row.slug} expired at the channel on ${expiresAt(row)?.toISOString() ?? 'upload'} (media is kept 30 days); upload it again.`, {
    slug: row.slug,
    expired_at: expiresAt(row)?.toISOString() ?? null,
  });
}

function notFound(slug: string): ApiError {
  return new ApiError('not_found', `No media asset "${slug.slice(0, 200)}" in this project.`);
}

/** A slug from a file name: lower-case, `-` for anything else, plus a random suffix. */
function slugFrom(filename: string): string {
  const base = filename.replace(/\.[^.]*$/, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
  return `${base || 'media'}-${randomBytes(4).toString('hex')}`;
}

interface Incoming {
  body: MediaUploadRequest | Record<string, unknown>;
  /** Multipart or inline bytes. */
  file?: TempFile;
  partFilename?: string;
  partType?: string;
  multipart: boolean;
}

export async function createMediaAsset(deps: Deps, project: ProjectRef, incoming: Incoming, budget: UploadBudget | undefined): Promise<MediaView> {
  const { prisma } = deps.db;
  const body = incoming.body as { source_url?: string; filename?: string; mime?: string; slug?: string; data?: string };
  const what = 'a media asset';
  const channel = await requireChannel(deps, project.id);
  let media: MediaCapability;
  try {
    media = capability(deps, channel, 'media');
  } catch (e) {
    await incoming.file?.remove();
    throw e;
  }
  if (body.slug && (await prisma.mediaAsset.findUnique({ where: { projectId_slug: { projectId: project.id, slug: body.slug } }, select: { id: true } }))) {
    await incoming.file?.remove();
    throw new ApiError('conflict', `The slug ${body.slug} is taken in this project.`, { slug: body.slug });
  }

  let file: TempFile;
  let declared: string | undefined;
  let name: string | undefined;
  if (incoming.file) {
    file = incoming.file;
    // A part without Content-Type reads as text/plain (RFC 7578 default; busboy cannot tell the
    // two apart), so that value declares nothing here; the `mime` field still can.
    declared = body.mime ?? (incoming.multipart && incoming.partType !== 'text/plain' ? incoming.partType : undefined);
    name = body.filename ?? incoming.partFilename;
  } else if (typeof body.source_url === 'string') {
    const fetched = await fetchSource(deps, body.source_url, {
      ceiling: MEDIA_MAX_BYTES,
      budget,
      what,
      onHead: async (head, sink) => {
        const ceiling = await sniffCeiling(head);
        if (ceiling !== undefined) sink.setLimit(ceiling, 'ceiling');
      },
    });
    file = fetched.file;
    declared = body.mime ?? fetched.contentType;
    name = body.filename ?? fetched.filename;
  } else {
    const field = incoming.multipart ? 'file' : 'data';
    throw new ApiError('invalid_request', `Send the file in ${field}.`, { fields: [{ field, message: 'is required' }] });
  }

  const storageKey = `${project.id}/${newId('med', 20)}`;
  const blobs = blobStoreOf(deps);
  let mediaId: string | undefined;
  try {
    if (file.size === 0) throw emptyFile();
    const mime = await verifyContent(file, declared, MEDIA_TYPES, what);
    const kind = kindOf(mime) as MediaKind;
    if (file.size > KIND_RULES[kind].maxBytes) throw fileTooLarge(KIND_RULES[kind].maxBytes, `${kind} media`);
    const filename = cleanFilename(name, `${kind}.${extensionOf(mime)}`);
    const slug = body.slug ?? slugFrom(filename);
    try {
      ({ id: mediaId } = await media.uploadMedia(channel, { data: createReadStream(file.path), mimeType: mime, filename, size: file.size }));
    } catch (e) {
      throw asApiError(e);
    }
    const uploadedAt = deps.clock.now();
    await blobs.putFile(storageKey, file.path, { size: file.size, contentType: mime, sha256: file.sha256 });
    try {
      const row = await prisma.mediaAsset.create({
        data: {
          id: storageKey.split('/')[1],
          projectId: project.id,
          slug,
          filename,
          mimeType: mime,
          size: file.size,
          sha256: file.sha256,
          storageKey,
          channelMediaId: mediaId,
          channelUploadedAt: uploadedAt,
          createdAt: uploadedAt,
        },
      });
      return mediaView(row, deps.clock.now());
    } catch (e) {
      if (isUniqueViolation(e)) throw new ApiError('conflict', `The slug ${slug} is taken in this project.`, { slug });
      throw e;
    }
  } catch (e) {
    await blobs.delete(storageKey).catch(() => undefined);
    if (mediaId) await media.deleteMedia(channel, mediaId).catch(() => undefined);
    throw e;
  } finally {
    await file.remove();
  }
}

export async function listMediaRows(deps: Deps, projectId: string, after: { at: Date; id: string } | undefined, take: number): Promise<MediaRow[]> {
  return deps.db.prisma.mediaAsset.findMany({
    where: { projectId, ...(after ? { OR: [{ createdAt: { lt: after.at } }, { createdAt: after.at, id: { lt: after.id } }] } : {}) },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take,
  });
}

async function findAsset(deps: Deps, projectId: string, slug: string): Promise<MediaRow> {
  const row = await deps.db.prisma.mediaAsset.findUnique({ where: { projectId_slug: { projectId, slug } } });
  if (!row) throw notFound(slug);
  return row;
}

/** GET /v1/media/{slug}: 410 once expired at the channel. */
export async function getMediaAsset(deps: Deps, projectId: string, slug: string): Promise<MediaView> {
  const row = await findAsset(deps, projectId, slug);
  const now = deps.clock.now();
  if (isExpired(row, now)) throw mediaExpiredError(row);
  return mediaView(row, now);
}

/** DELETE /v1/media/{slug}: here always; at the channel best effort (it drops media after 30 days anyway). */
export async function deleteMediaAsset(deps: Deps, project: ProjectRef, slug: string): Promise<void> {
  const row = await findAsset(deps, project.id, slug);
  if (row.channelMediaId && !isExpired(row, deps.clock.now())) {
    try {
      const channel = await requireChannel(deps, project.id);
      await capability(deps, channel, 'media').deleteMedia(channel, row.channelMediaId);
    } catch (e) {
      deps.logger.warn('media delete at the channel failed; deleted here only', { slug, error: e instanceof Error ? e.message : String(e) });
    }
  }
  await deps.db.prisma.mediaAsset.delete({ where: { id: row.id } });
  await blobStoreOf(deps).delete(row.storageKey).catch((e) => deps.logger.warn('blob delete failed', { key: row.storageKey, error: String(e) }));
}

/** For a send by slug: the channel media id and kind; 404 unknown, 410 expired. */
export async function resolveMediaSlug(deps: Deps, projectId: string, slug: string): Promise<{ mediaId: string; kind: MediaKind }> {
  const row = await findAsset(deps, projectId, slug);
  if (!row.channelMediaId || isExpired(row, deps.clock.now())) throw mediaExpiredError(row);
  return { mediaId: row.channelMediaId, kind: kindOf(row.mimeType) ?? 'document' };
}

/** True when `value` is a header-sample handle (ours, or shaped like the channel's upload handles). */
export async function isHeaderHandle(deps: Deps, value: string): Promise<boolean> {
  if (/^\d+::/.test(value)) return true;
  return (await deps.db.prisma.headerSample.findUnique({ where: { handle: value }, select: { handle: true } })) !== null;
}
