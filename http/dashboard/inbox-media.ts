/**
 * Media in the inbox's chat (issue 68, item 2): photos and stickers as thumbnails that open the
 * file, video and audio with the browser's own controls, documents as a download with their name
 * and size, locations and shared contacts in words. Every file is fetched through this service's
 * route below (the project's member, the message of that conversation: lib/messaging/message-media.ts),
 * never from the channel's URLs by the browser.
 *
 * The file is served with its type only when it is one the browser shows safely (images, video,
 * audio, PDF); anything else is an attachment of type application/octet-stream, and every answer
 * carries nosniff and a sandboxing CSP, so a file a customer sent never runs as a page of ours.
 */
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import type { AppDeps } from '../app-deps.js';
import { ApiError } from '../../lib/platform/errors.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { documentSizes, mediaOf, openMessageMedia, type MessageMedia } from '../../lib/messaging/message-media.js';
import type { MessageView } from '../../lib/conversations/views.js';
import { projectContext } from './context.js';
import { bytes } from './console-kit.js';
import { html, type Html } from './html.js';
import { projectPath } from './layout.js';

/** A message's media as the chat draws it (also sent to the live script, which draws the same). */
export type ChatMedia =
  | { kind: 'image' | 'sticker' | 'video' | 'audio' | 'document'; url: string | null; link: string | null; name: string; size: string | null }
  | { kind: 'location'; name: string; map: string }
  | { kind: 'contacts'; contacts: Array<{ name: string; phones: string[] }> };

const INLINE = /^(image\/(jpeg|png|webp|gif)|video\/(mp4|3gpp)|audio\/(aac|amr|mpeg|mp4|ogg)|application\/pdf)$/;

function fileName(m: Extract<MessageMedia, { id: string | null }>): string {
  if (m.filename) return m.filename;
  const words = { image: 'Photo', sticker: 'Sticker', video: 'Video', audio: 'Voice message or audio', document: 'Document' } as const;
  return words[m.kind];
}

/** The chat's media for a page of messages (documents' sizes read once each). */
export async function chatMediaOf(deps: AppDeps, projectId: string, conversationId: number, messages: MessageView[]): Promise<Map<number, ChatMedia>> {
  const out = new Map<number, ChatMedia>();
  const found = messages.map((m) => [m, mediaOf(m.type, m.content)] as const);
  const docs = found.flatMap(([, x]) => (x && x.kind === 'document' && x.id ? [x.id] : []));
  const sizes = docs.length ? await documentSizes(deps, projectId, docs) : new Map<string, number>();
  for (const [m, x] of found) {
    if (!x) continue;
    if (x.kind === 'location') {
      out.set(m.id, { kind: 'location', name: [x.name, x.address].filter(Boolean).join(', ') || `${x.latitude}, ${x.longitude}`, map: `https://www.openstreetmap.org/?mlat=${x.latitude}&mlon=${x.longitude}#map=17/${x.latitude}/${x.longitude}` });
    } else if (x.kind === 'contacts') {
      out.set(m.id, { kind: 'contacts', contacts: x.contacts });
    } else {
      const url = x.id || x.slug ? projectPath(projectId, `/conversations/${conversationId}/media/${m.id}`) : null;
      const size = x.id && sizes.has(x.id) ? bytes(sizes.get(x.id)!) : null;
      out.set(m.id, { kind: x.kind, url, link: url ? null : x.link, name: fileName(x), size });
    }
  }
  return out;
}

/** The media part of a chat bubble (dashboard.js draws the same from ChatMedia). */
export function mediaHtml(m: ChatMedia, by: string): Html {
  switch (m.kind) {
    case 'image':
    case 'sticker':
      return m.url
        ? html`<a class="media-thumb" href="${m.url}" target="_blank" rel="noopener"><img src="${m.url}" alt="${m.kind === 'sticker' ? 'Sticker' : 'Photo'} from ${by} (opens the full size)" loading="lazy" class="${m.kind}"></a>`
        : mediaLink(m);
    case 'video':
      return m.url ? html`<video class="media-player" controls preload="metadata" src="${m.url}" aria-label="Video from ${by}"></video>` : mediaLink(m);
    case 'audio':
      return m.url ? html`<audio class="media-player" controls preload="none" src="${m.url}" aria-label="Audio from ${by}"></audio>` : mediaLink(m);
    case 'document':
      return m.url ? html`<p class="media-file"><a href="${m.url}" download="${m.name}">${m.name}</a>${m.size ? html` <span class="muted">(${m.size})</span>` : ''}</p>` : mediaLink(m);
    case 'location':
      return html`<p class="media-location">Location: ${m.name} <a href="${m.map}" target="_blank" rel="noopener noreferrer">map</a></p>`;
    case 'contacts':
      return html`<ul class="media-contacts">${m.contacts.map((c) => html`<li>${c.name}${c.phones.length ? html`: ${c.phones.join(', ')}` : ''}</li>`)}</ul>`;
  }
}

function mediaLink(m: Extract<ChatMedia, { url: string | null }>): Html {
  return m.link ? html`<p class="media-file"><a href="${m.link}" target="_blank" rel="noopener noreferrer">${m.name} (sent by link)</a></p>` : html`<p class="media-file muted">${m.name} (no copy the service can fetch)</p>`;
}

/** GET …/conversations/:conversationId/media/:messageId: the file, streamed through the service. */
export const conversationMedia = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const cid = String(req.params.conversationId);
  if (!/^[0-9]{1,18}$/.test(cid)) throw new DashboardRefusal(404, 'No such media in this conversation.');
  let file;
  try {
    file = await openMessageMedia(deps, ctx.project.id, BigInt(cid), String(req.params.messageId));
  } catch (e) {
    if (e instanceof ApiError && (e.code === 'not_found' || e.code === 'MEDIA_EXPIRED')) throw new DashboardRefusal(404, e.message);
    if (e instanceof ApiError && e.status >= 500) throw new DashboardRefusal(502, e.message);
    throw e;
  }
  const inline = INLINE.test(file.mimeType);
  const name = (file.filename ?? 'media').replace(/[\r\n"\\]/g, '_');
  res.status(200);
  res.setHeader('Content-Type', inline ? file.mimeType : 'application/octet-stream');
  res.setHeader('Content-Disposition', `${inline ? 'inline' : 'attachment'}; filename="${name.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`);
  if (file.size !== null) res.setHeader('Content-Length', String(file.size));
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; sandbox");
  res.setHeader('Cache-Control', 'private, max-age=300');
  await pipeline(file.data, res).catch(() => res.destroy());
};
