/**
 * A message's media as the inbox shows it (issue 68, item 2): what the message carries (a photo, a
 * sticker, a video, a voice note, a document; a location; contacts), and its bytes fetched by the
 * service with the project's own credentials, so that a browser never calls the channel's URLs
 * (short-lived, and they need the project's token).
 *
 * Policy and why:
 * - Where the bytes come from: a project's own media asset (a send by slug, or by the asset's
 *   channel id) from the blob store, so the inbox shows it after the channel's 30 days; anything
 *   else through the channel (getMedia, then its URL). A `link` the integration sent with is never
 *   fetched here (an arbitrary URL): the page links to it.
 * - Documents show their size: read once per media id from the channel (getMedia) and kept in a
 *   small per-process cache, since the live chat is drawn every few seconds.
 */
import type { Readable } from 'node:stream';
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { ChannelError } from '../channel-port/errors.js';
import { requireChannel } from '../channel-settings/settings.js';
import { findMessageRow } from '../conversations/conversations.js';
import { openStoredMedia, openStoredMediaBySlug } from '../media/stored.js';
import { capability } from '../channel-port/capabilities.js';

export const FILE_KINDS = ['image', 'sticker', 'video', 'audio', 'document'] as const;
export type FileKind = (typeof FILE_KINDS)[number];
/** The largest file the inbox streams (Meta's document limit). */
export const MAX_MEDIA_BYTES = 100 * 1024 * 1024;

export type MessageMedia =
  | { kind: FileKind; id: string | null; slug: string | null; link: string | null; mimeType: string | null; filename: string | null; caption: string | null }
  | { kind: 'location'; latitude: number; longitude: number; name: string | null; address: string | null }
  | { kind: 'contacts'; contacts: Array<{ name: string; phones: string[] }> };

const obj = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

/** The media of a message from its type and stored content (inbound: the channel's object; outbound: our request's `media`). */
export function mediaOf(type: string, content: unknown): MessageMedia | undefined {
  const c = obj(content) ?? {};
  if ((FILE_KINDS as readonly string[]).includes(type)) {
    const m = obj(c[type]) ?? obj(c.media);
    if (!m) return undefined;
    return {
      kind: type as FileKind, id: str(m.id) ?? str(m.media_id), slug: str(m.slug), link: str(m.link),
      mimeType: str(m.mime_type), filename: str(m.filename), caption: str(m.caption),
    };
  }
  if (type === 'location') {
    const l = obj(c.location);
    const latitude = Number(l?.latitude);
    const longitude = Number(l?.longitude);
    if (!l || !Number.isFinite(latitude) || !Number.isFinite(longitude)) return undefined;
    return { kind: 'location', latitude, longitude, name: str(l.name), address: str(l.address) };
  }
  if (type === 'contacts' && Array.isArray(c.contacts)) {
    const contacts = c.contacts.slice(0, 20).map((raw) => {
      const x = obj(raw) ?? {};
      const name = str(obj(x.name)?.formatted_name) ?? [str(obj(x.name)?.first_name), str(obj(x.name)?.last_name)].filter(Boolean).join(' ');
      const phones = Array.isArray(x.phones) ? x.phones.map((p) => str(obj(p)?.phone) ?? str(obj(p)?.wa_id)).filter((p): p is string => p !== null).slice(0, 5) : [];
      return { name: name || 'Unnamed contact', phones };
    });
    return { kind: 'contacts', contacts };
  }
  return undefined;
}

export interface MediaBytes {
  data: Readable;
  mimeType: string;
  size: number | null;
  filename: string | null;
}

type MediaDeps = Pick<Deps, 'db' | 'config' | 'blobStore' | 'channel' | 'secretBox'>;

function gone(): ApiError {
  return new ApiError('MEDIA_EXPIRED', 'This media is no longer available at WhatsApp (media is kept there for 30 days).');
}

/**
 * The bytes of message `messageId` of the project's conversation `conversationId`. 404 `not_found`
 * for a message of another conversation or project, or one without a file the service can fetch;
 * 410 `MEDIA_EXPIRED` when the channel no longer has it; 502 `upstream_error` when it failed.
 */
export async function openMessageMedia(deps: MediaDeps, projectId: string, conversationId: bigint, messageId: string): Promise<MediaBytes> {
  const row = /^[0-9]{1,18}$/.test(messageId) ? await findMessageRow(deps.db.sql, projectId, messageId) : undefined;
  const media = row && String(row.conversationId) === conversationId.toString() ? mediaOf(row.type, row.content) : undefined;
  if (!media || !('id' in media) || (!media.id && !media.slug)) throw new ApiError('not_found', 'No such media in this conversation.');
  const stored = media.slug ? await openStoredMediaBySlug(deps, projectId, media.slug) : await openStoredMedia(deps, projectId, media.id!);
  if (stored) return { data: stored.data, mimeType: stored.mimeType, size: stored.size, filename: media.filename ?? stored.filename };
  if (!media.id) throw gone();
  const channel = await requireChannel(deps, projectId);
  try {
    const info = await capability(deps, channel, 'media').getMedia(channel, media.id);
    if (info.file_size) rememberSize(media.id, info.file_size);
    const got = await capability(deps, channel, 'media').downloadMedia(channel, info.url, MAX_MEDIA_BYTES);
    return { data: got.data, mimeType: media.mimeType ?? info.mime_type ?? got.mimeType, size: got.size, filename: media.filename };
  } catch (e) {
    if (e instanceof ChannelError && e.kind === 'rejected') throw gone();
    if (e instanceof ChannelError) throw new ApiError('upstream_error', 'WhatsApp did not give the media just now; try again.');
    throw e;
  }
}

const SIZES = new Map<string, number>();
const SIZES_KEPT = 2000;

function rememberSize(id: string, size: number): void {
  if (SIZES.size >= SIZES_KEPT) SIZES.delete(SIZES.keys().next().value!);
  SIZES.set(id, size);
}

/** The documents' sizes by media id (the channel's getMedia, once per id); absent when unknown. */
export async function documentSizes(deps: MediaDeps, projectId: string, ids: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const missing = [...new Set(ids)].filter((id) => (SIZES.has(id) ? (out.set(id, SIZES.get(id)!), false) : true));
  if (!missing.length) return out;
  const channel = await requireChannel(deps, projectId).catch(() => undefined);
  if (!channel) return out;
  await Promise.all(missing.slice(0, 10).map(async (id) => {
    const info = await capability(deps, channel, 'media').getMedia(channel, id).catch(() => undefined);
    if (info?.file_size) {
      rememberSize(id, info.file_size);
      out.set(id, info.file_size);
    }
  }));
  return out;
}
