/** Media helpers (managed by the platform): send an uploaded asset by its slug. */
import { send } from './messaging.js';
import type { SendResult } from './types.js';

export function sendMedia(
  phone: string,
  kind: 'image' | 'video' | 'document' | 'audio',
  media: { slug?: string; media_id?: string; caption?: string; filename?: string },
): Promise<SendResult> {
  return send({ type: kind, phone, media });
}
