/**
 * The project's stored files (managed by the platform): files an operator uploaded (`npm run ops --
 * files upload`), such as a price list or a menu. Never throws: check `ok`. Files are the
 * project's own; a file is read whole, at most 1 MiB (BOT_FILE_READ_MAX_BYTES).
 */
import { hostCall } from './host.js';
import { send } from './messaging.js';
import type { HostResult } from '../generated/host-api.js';
import type { SendResult } from './types.js';

export type FileResult = HostResult<'files.get'>;

function asError(e: unknown): { ok: false; error: { code: string; message: string } } {
  const error = e as { code?: string; message?: string };
  return { ok: false, error: { code: error.code ?? 'helper_error', message: error.message ?? 'The call failed.' } };
}

export const files = {
  /**
   * `{ ok: true, name, contentType, size, text }` for plain text (JSON, CSV…), `{ ok: true, name,
   * contentType, size, base64 }` for anything else, or `{ ok: false, error }` (`not_found`,
   * `file_too_large`).
   */
  async get(name: string): Promise<FileResult> {
    try {
      return await hostCall('files.get', { name });
    } catch (e) {
      return asError(e);
    }
  },

  /**
   * Sends a stored file as media (an image, video, audio or document message, by its type): the
   * file is uploaded to the channel once and reused. A media asset you uploaded yourself is sent
   * with `sendMedia(phone, kind, { slug })`.
   */
  async sendAsMedia(phone: string, name: string, options: { caption?: string } = {}): Promise<SendResult> {
    let media: HostResult<'files.media'>;
    try {
      media = await hostCall('files.media', { name });
    } catch (e) {
      return asError(e);
    }
    if (!media.ok) return media;
    const caption = media.kind === 'audio' ? {} : options.caption === undefined ? {} : { caption: options.caption };
    return send({ type: media.kind, phone, media: { slug: media.slug, ...caption, ...(media.kind === 'document' ? { filename: name } : {}) } });
  },
};
