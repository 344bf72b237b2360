/** POST /_sim/inbound: a WhatsApp user writes to a simulated business number. */
import { createHash } from 'node:crypto';
import type { AttemptResult } from './callbacks.js';
import type { SimContext } from './context.js';
import { wamid as newWamid } from './ids.js';
import { MEDIA_MIME, storeMedia } from './media.js';
import { isObj, type Obj } from './validate.js';
import { inboundWebhook } from './webhooks.js';
import { contactEntry, senderFields, shownPhone } from './user-model.js';

export class ControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Tiny valid-looking files so an inbound media message can be downloaded without providing bytes. */
const PLACEHOLDERS: Record<string, { mime: string; data: Buffer }> = {
  image: { mime: 'image/png', data: Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64') },
  sticker: { mime: 'image/webp', data: Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64') },
  audio: { mime: 'audio/ogg', data: Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60)]) },
  video: { mime: 'video/mp4', data: Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypmp42'), Buffer.alloc(52)]) },
  document: { mime: 'application/pdf', data: Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n') },
};
const MEDIA_KINDS = new Set(Object.keys(PLACEHOLDERS));

export interface InboundResult extends AttemptResult {
  wamid: string;
}

export async function injectInbound(ctx: SimContext, b: Obj): Promise<InboundResult> {
  const { state } = ctx;
  if (typeof b.phone_number_id !== 'string') throw new ControlError(400, 'phone_number_id (string) is required');
  const pn = state.phones.get(b.phone_number_id);
  if (!pn) throw new ControlError(404, `unknown phone_number_id ${b.phone_number_id}`);
  // The writer: a user by its BSUID (`user_id`, made with POST /_sim/users), or a phone (`from`;
  // a user without a username is made for it on first contact).
  let user;
  if (b.user_id !== undefined) {
    user = typeof b.user_id === 'string' ? state.users.get(pn.phone_number_id, b.user_id) : undefined;
    if (!user) throw new ControlError(404, `unknown user_id ${String(b.user_id).slice(0, 140)} (create it with POST /_sim/users)`);
  } else {
    if (typeof b.from !== 'string' || !/^\+?\d{5,20}$/.test(b.from)) throw new ControlError(400, 'from must be a phone number (digits, optional +), or give user_id');
    const phone = b.from.replace(/\D/g, '');
    user = state.users.ofPhone(pn.phone_number_id, phone, typeof b.name === 'string' ? b.name : undefined);
  }
  if (typeof b.name === 'string') user.name = b.name;
  const from = shownPhone(user) ?? '';

  let type: string;
  let obj: Obj;
  // A shared contacts card is a list (Meta's `contacts: [...]`), the one inbound kind that is no object.
  let list: unknown[] | undefined;
  if (b.type === undefined || b.type === 'text') {
    const body = typeof b.text === 'string' ? b.text : isObj(b.text) && typeof b.text.body === 'string' ? b.text.body : null;
    if (body === null) throw new ControlError(400, 'give text (string), or type plus object');
    type = 'text';
    obj = { body };
  } else {
    if (typeof b.type !== 'string') throw new ControlError(400, 'type must be a string');
    type = b.type;
    const given = b.object ?? b[type];
    if (type === 'contacts' && Array.isArray(given)) list = given;
    else if (!isObj(given)) throw new ControlError(400, `give the ${type} object as "object" (or "${type}")`);
    obj = list ? {} : { ...(given as Obj) };
  }

  if (MEDIA_KINDS.has(type)) {
    let m = typeof obj.id === 'string' ? state.liveMedia(obj.id) : null;
    if (!m) {
      const media = isObj(b.media) ? b.media : null;
      let data = PLACEHOLDERS[type].data;
      let mime = PLACEHOLDERS[type].mime;
      if (media) {
        if (typeof media.data_base64 !== 'string' || typeof media.mime_type !== 'string') throw new ControlError(400, 'media needs data_base64 and mime_type');
        data = Buffer.from(media.data_base64, 'base64');
        mime = media.mime_type.toLowerCase();
        if (!MEDIA_MIME[mime.split(';')[0]]) throw new ControlError(400, `unsupported media mime_type ${mime}`);
      }
      m = storeMedia(state, pn.phone_number_id, mime, data, typeof media?.filename === 'string' ? media.filename : null);
    }
    obj.id = m.id;
    obj.mime_type ??= m.mime_type;
    obj.sha256 ??= createHash('sha256').update(m.data ?? Buffer.alloc(0)).digest('base64');
    if (type === 'document' && obj.filename === undefined && m.filename) obj.filename = m.filename;
    if (type === 'audio' && obj.voice === undefined) obj.voice = false;
  }

  let ts = state.nowSec();
  if (b.timestamp !== undefined) {
    const t = Number(b.timestamp);
    if (!Number.isFinite(t) || t <= 0) throw new ControlError(400, 'timestamp must be unix seconds');
    ts = Math.floor(t);
  }
  const id = newWamid(from || user.user_id.replace(/\D/g, '').slice(0, 15), true);
  const message: Obj = { ...senderFields(user), id, timestamp: String(ts), type, [type]: list ?? obj };
  if (isObj(b.context)) message.context = b.context;
  // The customer-service window is the user's, whichever id a reply names.
  if (user.phone) state.lastInbound.set(`${pn.phone_number_id}:${user.phone}`, ts * 1000);
  state.lastInbound.set(`${pn.phone_number_id}:${user.user_id}`, ts * 1000);

  // While another app holds the customer's thread, Meta delivers the message to us as `standby`.
  const held = user.phone !== null && state.threadHolders.has(`${pn.phone_number_id}:${user.phone}`);
  const field = held ? 'standby' : 'messages';
  const body = JSON.stringify(inboundWebhook(pn, contactEntry(user), message, field));
  const r = await ctx.dispatcher.deliverNow({ pnid: pn.phone_number_id, field, kind: `inbound:${type}`, ref: id, body, attempt: 0 });
  return { wamid: id, ...r };
}
