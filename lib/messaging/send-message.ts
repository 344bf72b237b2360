/**
 * Sending a message, as POST /v1/messages promises: validate, resolve media (a slug to its channel
 * media id, 404/410 MEDIA_EXPIRED; a header-sample handle given as media_id is 400), check the
 * 24-hour window for session messages, reserve a unit of the daily quota, record the message as
 * `pending` under our reference, call the channel, then give the message its wamid. A call that
 * certainly failed removes the message and gives its quota back in one statement; a call whose
 * outcome is unknown (timeout) leaves it pending, and its statuses (which echo our reference)
 * settle it. Sending never changes the conversation's state.
 */
import type { components } from '../../generated/api.js';
import type { AppDeps } from '../deps.js';
import type { ProjectRef } from '../credentials.js';
import { ApiError } from '../errors.js';
import { requireChannel } from '../channel-settings.js';
import { bodyPlaceholderCount, composeMessage, type ComposedMessage } from './compose.js';
import { isHeaderHandle, resolveMediaSlug } from '../media/assets.js';
import { releaseSend, reserveSends, utcDay } from './quota.js';
import { newId } from '../secrets.js';
import { abandonIntent, confirmSent, recordIntent, windowOpen } from './conversation-store.js';
import { asApiError, isChannelError, isOutsideWindowError, toApiError } from '../../channel/errors.js';
import type { GraphMessagePayload } from '../../channel/cloud-api.js';

type SendRequest = components['schemas']['SendMessageRequest'];

/** The format of a template's media header (image, video, document), if it has one. */
function headerFormat(templateComponents: unknown): string | undefined {
  if (!Array.isArray(templateComponents)) return undefined;
  const header = templateComponents.find((c) => String(c?.type).toUpperCase() === 'HEADER');
  const format = String(header?.format ?? '').toLowerCase();
  return ['image', 'video', 'document'].includes(format) ? format : undefined;
}

/**
 * The message's media: a header-sample handle given as `media_id` is refused (400
 * `invalid_media_id`); a slug becomes the asset's channel media id (404 unknown, 410
 * `MEDIA_EXPIRED`), and must be of the message's kind; a template header parameter is typed
 * from the template's header format, else the asset's kind, else image.
 */
async function resolveMedia(deps: AppDeps, projectId: string, message: ComposedMessage, templateComponents: unknown): Promise<void> {
  const media = message.media!;
  if (media.mediaId !== undefined && (await isHeaderHandle(deps, media.mediaId))) {
    const text = 'media_id is a template header-sample handle, not a media id: upload the file with POST /v1/media and send its slug or media_id.';
    throw new ApiError('invalid_media_id', text, { fields: [{ field: media.headerParam ? 'template.header.media.media_id' : 'media.media_id', message: text }] });
  }
  let kind: string | undefined;
  if (media.slug !== undefined) {
    const asset = await resolveMediaSlug(deps, projectId, media.slug);
    media.object.id = asset.mediaId;
    kind = asset.kind;
  }
  if (media.headerParam) {
    const type = headerFormat(templateComponents) ?? kind ?? 'image';
    if (type !== 'document') delete media.object.filename;
    for (const k of Object.keys(media.headerParam)) delete media.headerParam[k];
    Object.assign(media.headerParam, { type, [type]: media.object });
  } else if (kind !== undefined && kind !== message.type) {
    const text = `Media asset ${media.slug} is ${kind === 'image' || kind === 'audio' ? 'an' : 'a'} ${kind}, not ${message.type === 'image' || message.type === 'audio' ? 'an' : 'a'} ${message.type}.`;
    throw new ApiError('invalid_request', text, { fields: [{ field: 'media.slug', message: text }] });
  }
}

function outsideWindow(): ApiError {
  return new ApiError(
    'outside_24h_window',
    'The customer has not written in the last 24 hours, so only an approved template can be sent.',
  );
}

export interface SendOptions {
  /** The request's Idempotency-Key, linked to the send before the channel is called. */
  idempotencyKey?: string;
}

/** A send whose outcome the channel left unknown (a timeout after the request went out). */
export function isOutcomeUnknown(e: unknown): boolean {
  return e instanceof ApiError && (e.details as { outcome?: unknown } | undefined)?.outcome === 'unknown';
}

export async function sendMessage(deps: AppDeps, project: ProjectRef, body: SendRequest, opts: SendOptions = {}): Promise<{ id: string; status: 'sent' }> {
  const message = composeMessage(body);
  const { prisma, pool } = deps.db;
  const now = deps.clock.now();

  let known: { components: unknown } | null = null;
  if (message.template) {
    known = await prisma.template.findUnique({
      where: { projectId_name_language: { projectId: project.id, name: message.template.name, language: message.template.language } },
    });
    const expected = known ? bodyPlaceholderCount(known.components) : undefined;
    if (expected !== undefined && expected !== message.template.variables.length) {
      throw new ApiError(
        'template_variable_mismatch',
        `Template ${message.template.name} (${message.template.language}) has ${expected} body variables; ${message.template.variables.length} were given.`,
        { expected, given: message.template.variables.length },
      );
    }
  }
  if (message.media) await resolveMedia(deps, project.id, message, known?.components);

  const channel = await requireChannel(deps, project.id);
  const { rows } = await pool.query<{ daily_send_quota: number; last_inbound_at: Date | null }>({
    name: 'send-preconditions',
    text: `SELECT p.daily_send_quota, cv.last_inbound_at
           FROM projects p
           LEFT JOIN contacts ct ON ct.project_id = p.id AND ct.phone = $2
           LEFT JOIN conversations cv ON cv.project_id = p.id AND cv.contact_id = ct.id
           WHERE p.id = $1`,
    values: [project.id, message.phone],
  });
  if (message.session && !windowOpen(rows[0]?.last_inbound_at, now)) throw outsideWindow();
  await reserveSends(pool, project.id, rows[0]?.daily_send_quota ?? 0, now);

  // The intent is stored before the channel is called: a crash or an outage after the call can
  // leave a `pending` message, never a sent message without a row. Meta echoes `ref` as
  // biz_opaque_callback_data in the message's statuses, which resolve a pending message.
  const ref = newId('snd', 24);
  try {
    await recordIntent(pool, project.id, message, ref, now, opts.idempotencyKey);
  } catch (e) {
    await releaseSend(pool, project.id, now).catch((err) => deps.logger.error('quota release failed', { error: String(err) }));
    throw e;
  }

  let wamid: string;
  try {
    const payload = {
      messaging_product: 'whatsapp', recipient_type: 'individual', to: message.phone, ...message.payload, biz_opaque_callback_data: ref,
    } as GraphMessagePayload;
    ({ wamid } = await deps.channel.sendMessage(channel, payload));
  } catch (e) {
    if (isChannelError(e) && e.outcomeUnknown) {
      // Maybe sent: the message stays pending and keeps its quota unit until a status names it.
      deps.logger.warn('send outcome unknown; the message stays pending until the channel reports it', { project_id: project.id, ref });
      const api = toApiError(e);
      throw new ApiError(api.code, `${api.message}. The outcome is unknown: the message may have been sent; its status will settle it (do not resend; a retry with the same Idempotency-Key answers once it is known).`, { ...(api.details ?? {}), outcome: 'unknown', ref });
    }
    await abandonIntent(pool, project.id, ref, utcDay(now));
    if (isOutsideWindowError(e)) throw outsideWindow();
    throw asApiError(e);
  }

  await confirmSent(pool, project.id, ref, wamid, now);
  return { id: wamid, status: 'sent' };
}
