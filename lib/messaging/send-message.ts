/**
 * Sending a message, as POST /v1/messages promises: validate, resolve media (a slug to its channel
 * media id, 404/410 MEDIA_EXPIRED; a header-sample handle given as media_id is 400), then the send
 * ledger (ledger.ts) as a batch of one: reserve a unit of the daily quota, check the 24-hour window
 * for session messages and record the message as `pending` under our reference (one statement; a
 * closed window gives the unit back), call the channel, then confirm (the message gets its wamid).
 * A call that certainly failed is abandoned (message gone, unit back, one statement); a call whose
 * outcome is unknown (timeout) leaves it pending, settled by its statuses (which echo our
 * reference) or, when none comes within the bound, made final `unknown` by the ledger's rule.
 * Sending never changes the conversation's state.
 */
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import { ApiError } from '../platform/errors.js';
import { queryRows } from '../platform/db/tx.js';
import { requireChannel } from '../channel-settings/settings.js';
import { assertCarries, portOf } from '../channel-port/capabilities.js';
import { bodyPlaceholderCount, composeMessage, type ComposedMessage } from './compose.js';
import { resolveMediaSlug } from '../media/assets.js';
import { resolveProjectMediaId } from '../media/media-id.js';
import { resolveFlowSend } from '../flows/send.js';
import { reserveSends } from './quota.js';
import { settleLater } from './send-cleanup.js';
import { abandonIntents, newSendRef, quotaExceeded, recordGroupIntent, releaseUnits, sendState, threadHeldBy, type Intent } from './ledger.js';
import { confirmSends } from './confirm-batch.js';
import { recordSend, type SendRecorded } from './record-batch.js';
import { hasReason, isChannelError } from '../channel-port/errors.js';
import { asApiError, channelApiError, invalidTemplateApiError } from '../channel-port/api-errors.js';
import type { ContentType, MessageContent, OutboundMessage } from '../channel-port/messages.js';
import { recipientChannelError, resolveRecipient } from '../conversations/recipient.js';
import { optOutOnSendError } from '../conversations/contact-store.js';
import { groupForSend, refuseInGroup } from './group-messages.js';

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
async function resolveMedia(deps: Deps, projectId: string, message: ComposedMessage, templateComponents: unknown): Promise<void> {
  const media = message.media!;
  if (media.mediaId !== undefined) await resolveProjectMediaId(deps, projectId, media.mediaId, media.headerParam ? 'template.header.media.media_id' : 'media.media_id');
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

const componentOf = (components: unknown, type: string): Record<string, any> | undefined =>
  Array.isArray(components) ? components.find((c) => typeof c === 'object' && c !== null && String(c.type).toUpperCase() === type) : undefined;

/**
 * A carousel's cards and a limited-time offer's expiry, checked against the known template (a card
 * for every card of the template, each card's body variables; the expiry when the offer shows
 * it), and each card's header media resolved like a header's (typed by the card header format).
 */
async function prepareNewerKinds(deps: Deps, projectId: string, message: ComposedMessage, templateComponents: unknown): Promise<void> {
  const t = message.template!;
  const refs = message.cardMedia ?? [];
  const sent = (message.payload.template as { components?: Array<Record<string, any>> }).components ?? [];
  const carousel = componentOf(templateComponents, 'CAROUSEL');
  if (templateComponents !== undefined) {
    const cards: Array<Record<string, any>> = Array.isArray(carousel?.cards) ? carousel.cards : [];
    if (cards.length !== refs.length) {
      throw new ApiError(
        'template_variable_mismatch',
        `Template ${t.name} (${t.language}) has ${cards.length} carousel card${cards.length === 1 ? '' : 's'}; ${refs.length} ${refs.length === 1 ? 'was' : 'were'} given (template.cards): the channel sends exactly the template's cards.`,
        { expected_cards: cards.length, given_cards: refs.length },
      );
    }
    const sentCards: Array<Record<string, any>> = sent.find((c) => c.type === 'carousel')?.cards ?? [];
    cards.forEach((card, i) => {
      const expected = bodyPlaceholderCount(card.components);
      const given = sentCards[i]?.components.find((c: Record<string, any>) => c.type === 'body')?.parameters.length ?? 0;
      if (expected !== given) {
        throw new ApiError('template_variable_mismatch', `Card ${i + 1} of template ${t.name} (${t.language}) has ${expected} body variables; ${given} were given.`, { card: i, expected, given });
      }
    });
    const lto = componentOf(templateComponents, 'LIMITED_TIME_OFFER');
    if (lto?.limited_time_offer?.has_expiration === true && !sent.some((c) => c.type === 'limited_time_offer')) {
      const text = `Template ${t.name} shows its offer's expiry: give template.limited_time_offer.expiration_time_ms.`;
      throw new ApiError('invalid_request', text, { fields: [{ field: 'template.limited_time_offer', message: text }] });
    }
  }
  for (const [i, ref] of refs.entries()) {
    const field = `template.cards[${i}].header.media`;
    if (ref.mediaId !== undefined) await resolveProjectMediaId(deps, projectId, ref.mediaId, `${field}.media_id`);
    let kind: string | undefined;
    if (ref.slug !== undefined) {
      const asset = await resolveMediaSlug(deps, projectId, ref.slug);
      ref.object.id = asset.mediaId;
      kind = asset.kind;
    }
    const header = componentOf((Array.isArray(carousel?.cards) ? carousel.cards[i] : undefined)?.components, 'HEADER');
    const format = String(header?.format ?? '').toLowerCase();
    const type = format === 'image' || format === 'video' ? format : kind === 'video' ? 'video' : 'image';
    for (const k of Object.keys(ref.headerParam!)) delete ref.headerParam![k];
    Object.assign(ref.headerParam!, { type, [type]: ref.object });
  }
}

/** Another app (e.g. Meta's Business Agent) holds the customer's thread: take it first (docs/coexistence.md). */
export function threadHeldElsewhere(holder: string): ApiError {
  return new ApiError(
    'thread_held_elsewhere',
    'Another app holds this customer\'s thread, so nothing was sent: take the thread back first (POST /v1/conversations/{id}/thread-control with action take).',
    { holder_app_id: holder },
  );
}

function outsideWindow(): ApiError {
  return new ApiError(
    'outside_24h_window',
    'The customer has not written in the last 24 hours, so only an approved template can be sent.',
  );
}

export interface SendOptions {
  /**
   * The request's Idempotency-Key, linked to the send before the channel is called; a send that
   * succeeds stores the key's answer in its confirm (the caller need not store it again).
   */
  idempotencyKey?: string;
  /** Called just before the channel is: a failure before it sent nothing, so a caller may try again. */
  onChannelCall?: () => void;
  /**
   * The caller's own reference for this send, unique in the project: a send already recorded under
   * it is answered from its record and the channel is not called again (a bot event handed over
   * after a crash repeats its sends under the same references).
   */
  ref?: string;
  /** Who sends it (api_key, person, agent, bot, schedule: lib/conversations/authors.ts), recorded on the message. */
  author?: { kind: string; id: string | null; name: string | null };
}

/** A send whose outcome the channel left unknown (a timeout after the request went out). */
export function isOutcomeUnknown(e: unknown): boolean {
  return e instanceof ApiError && (e.details as { outcome?: unknown } | undefined)?.outcome === 'unknown';
}

/**
 * How a retry with the Idempotency-Key of a send that did not finish with its request is answered
 * (middleware/idempotency.ts asks): no message means the send certainly did not happen (the key is
 * free again); `pending` waits for the channel's status (409); a send the channel named answers as
 * the send would have; a send settled `unknown` (no status within the bound) gets a final answer
 * saying so, replayed from then on: it is never sent again.
 */
export async function answerForPendingKey(db: Deps['db'], { projectId, ref, requestId }: { projectId: string; ref: string; requestId: string }): Promise<
  { state: 'pending'; message: string } | { state: 'gone' } | { state: 'final'; status: number; body: unknown }
> {
  const message = await sendState(db.sql, projectId, ref);
  if (!message) return { state: 'gone' };
  if (message.status === 'pending') {
    return { state: 'pending', message: 'The send started with this Idempotency-Key has no known outcome yet (the channel has not reported it); retry later: it is never sent twice.' };
  }
  if (message.status === 'unknown') {
    const error = new ApiError(
      'upstream_error',
      'The outcome of the send started with this Idempotency-Key is unknown: the channel never answered it and no status named it within the settle bound. It may or may not have been delivered; it will not be sent again (send anew with a new key).',
      { outcome: 'unknown', final: true, ref },
    );
    return { state: 'final', status: error.status, body: { success: false, error: { code: error.code, message: error.message, details: error.details }, request_id: requestId } };
  }
  return { state: 'final', status: 200, body: sentAnswer(message.wamid) };
}

/** The API's answer to a send (POST /v1/messages' 200 body), as a retry with its Idempotency-Key replays it. */
function sentAnswer(wamid: string): { success: true; data: { id: string; status: 'sent' } } {
  return { success: true, data: { id: wamid, status: 'sent' } };
}

/** A keyed send's answer, stored by its confirm (SendOptions.idempotencyKey). */
function keyedAnswer(opts: SendOptions, wamid: string): { key: string; answer: string } | undefined {
  return opts.idempotencyKey === undefined ? undefined : { key: opts.idempotencyKey, answer: JSON.stringify(sentAnswer(wamid)) };
}

/** Message types a metric label may carry (anything else is `other`: labels stay bounded). */
const METRIC_TYPES = new Set(['text', 'template', 'image', 'video', 'audio', 'document', 'sticker', 'interactive', 'location', 'reaction', 'flow']);

/** Sends one message (see sendOnce) and counts it by type and outcome. */
export async function sendMessage(deps: Deps, project: ProjectRef, body: SendRequest, opts: SendOptions = {}): Promise<{ id: string; status: 'sent' }> {
  const rawType = (body as { type?: unknown })?.type;
  const type = typeof rawType === 'string' && METRIC_TYPES.has(rawType) ? rawType : 'other';
  try {
    const sent = await sendOnce(deps, project, body, opts);
    deps.metrics?.send(type, 'sent');
    return sent;
  } catch (e) {
    deps.metrics?.send(type, e instanceof ApiError ? e.code : 'error');
    throw e;
  }
}

/** The steps of a send, each in its own function below: prepare, reserve, record, call, confirm. */
async function sendOnce(deps: Deps, project: ProjectRef, body: SendRequest, opts: SendOptions): Promise<{ id: string; status: 'sent' }> {
  if (body.group_id !== undefined) return sendToGroup(deps, project, body, opts);
  const message = composeMessage(body);
  const now = deps.clock.now();
  if (opts.ref) {
    const [sent] = await queryRows<{ wamid: string }>(deps.db.sql, 'SELECT wamid FROM messages WHERE project_id = $1 AND send_ref = $2', project.id, opts.ref);
    if (sent) return { id: sent.wamid, status: 'sent' };
  }
  await prepareMessage(deps, project.id, message);
  const channel = await requireChannel(deps, project.id);
  assertCarries(deps, channel, message.payload.type as ContentType);
  const to = { phone: message.phone, userId: message.userId };
  const ref = await recordIntent(deps, project.id, message, to, opts, now);
  const wamid = await callChannel(deps, project.id, channel, message, ref, opts, now);
  await confirmSends(deps.db.sql, project.id, ref, wamid, now, keyedAnswer(opts, wamid));
  return { id: wamid, status: 'sent' };
}

/**
 * A send to a WhatsApp group (docs/groups.md; lib/messaging/group-messages.ts): interactive is
 * refused before anything else, then the group must be the project's and active; the ledger's
 * steps follow as for a customer, the intent in the group's conversation.
 */
async function sendToGroup(deps: Deps, project: ProjectRef, body: SendRequest, opts: SendOptions): Promise<{ id: string; status: 'sent' }> {
  if (body.phone !== undefined || body.user_id !== undefined) {
    throw new ApiError('conflicting_recipient', 'Give the recipient as phone, user_id or group_id: only one.', { fields: [{ field: 'group_id', message: 'not with phone or user_id' }] });
  }
  refuseInGroup(body.type);
  const message = composeMessage(body, { toGroup: true });
  const now = deps.clock.now();
  if (opts.ref) {
    const [sent] = await queryRows<{ wamid: string }>(deps.db.sql, 'SELECT wamid FROM messages WHERE project_id = $1 AND send_ref = $2', project.id, opts.ref);
    if (sent) return { id: sent.wamid, status: 'sent' };
  }
  const group = await groupForSend(deps, project.id, body.group_id!);
  await prepareMessage(deps, project.id, message, { toGroup: true });
  const channel = await requireChannel(deps, project.id);
  assertCarries(deps, channel, message.payload.type as ContentType);
  await reserveSends(deps.db.sql, project.id, null, now);
  const ref = opts.ref ?? newSendRef();
  try {
    await recordGroupIntent(deps.db.sql, project.id, group.contactId, { ref, type: message.type, content: message.content, idempotencyKey: opts.idempotencyKey, author: opts.author }, now);
  } catch (e) {
    const release = () => releaseUnits(deps.db.sql, project.id, 1, now);
    await release().catch(() => settleLater('giving back the quota unit of a group send not recorded', release, deps.logger, { project_id: project.id }));
    throw e;
  }
  const wamid = await callChannel(deps, project.id, channel, message, ref, opts, now, { groupId: group.groupId });
  await confirmSends(deps.db.sql, project.id, ref, wamid, now, keyedAnswer(opts, wamid));
  return { id: wamid, status: 'sent' };
}

type Prepared = ReturnType<typeof composeMessage>;

/**
 * The message as the channel takes it: template variables checked against the known template,
 * media and flows resolved, and who it goes to (a BSUID send to a contact with a phone goes to the
 * phone; no MARKETING template to a contact who opted out): refused before anything is reserved.
 */
async function prepareMessage(deps: Deps, projectId: string, message: Prepared, opts: { toGroup?: boolean } = {}): Promise<void> {
  let known: { components: unknown; category?: string } | null = null;
  if (message.template) {
    known = await deps.db.prisma.template.findUnique({
      where: { projectId_name_language: { projectId, name: message.template.name, language: message.template.language } },
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
  if (message.media) await resolveMedia(deps, projectId, message, known?.components);
  if (message.template) await prepareNewerKinds(deps, projectId, message, known?.components);
  if (message.flow) await resolveFlowSend(deps, projectId, message.flow);
  if (!opts.toGroup) Object.assign(message, await resolveRecipient(deps.db.sql, projectId, message, known?.category));
}

/**
 * The quota unit and the intent, in one statement before the channel is called (the send ledger,
 * batched per project), with the window check: a crash or an outage after the call can leave a
 * `pending` message, never a sent message without a row. Meta echoes the reference as
 * biz_opaque_callback_data in the message's statuses, which resolve a pending message. The spec's
 * order stands when both refuse: outside the window is 409, whatever the quota.
 */
async function recordIntent(deps: Deps, projectId: string, message: Prepared, to: Intent['to'], opts: SendOptions, now: Date): Promise<string> {
  const ref = opts.ref ?? newSendRef();
  const intent: Intent = { to, ref, type: message.type, content: message.content, session: message.session, idempotencyKey: opts.idempotencyKey, author: opts.author };
  let recorded: SendRecorded;
  try {
    recorded = await recordSend(deps.db.sql, projectId, intent, now, { refuseHeld: true });
  } catch (e) {
    // The statement may have committed before its answer was lost: what it recorded goes, with its unit.
    const withdraw = () => abandonIntents(deps.db.sql, projectId, [ref], now, { withdraw: true });
    await withdraw().catch(() => settleLater('withdrawing a send not recorded', withdraw, deps.logger, { project_id: projectId, ref }));
    throw e;
  }
  if (recorded.outcome === 'over_quota') throw quotaExceeded(recorded.limit, now);
  if (recorded.outcome === 'closed') {
    const holder = await threadHeldBy(deps.db.sql, projectId, to);
    if (holder !== null) throw threadHeldElsewhere(holder);
    throw outsideWindow();
  }
  return ref;
}

/** The channel's call; its refusals become the spec's answers, and the ledger gives back what a certain refusal did not use. */
async function callChannel(
  deps: Deps, projectId: string, channel: Awaited<ReturnType<typeof requireChannel>>, message: Prepared, ref: string, opts: SendOptions, now: Date,
  group?: { groupId: string },
): Promise<string> {
  try {
    const payload: OutboundMessage = {
      recipient: group ? { kind: 'group', groupId: group.groupId } : { kind: 'customer', phone: message.phone, userId: message.userId },
      content: message.payload as MessageContent,
      reference: ref,
    };
    opts.onChannelCall?.();
    return (await portOf(deps, channel).sendMessage(channel, payload)).channelMessageId;
  } catch (e) {
    if (isChannelError(e) && e.outcomeUnknown) {
      // Maybe sent: the message stays pending and keeps its quota unit until a status names it.
      deps.logger.warn('send outcome unknown; the message stays pending until the channel reports it', { project_id: projectId, ref });
      const api = channelApiError(e);
      throw new ApiError(api.code, `${api.message}. The outcome is unknown: the message may have been sent; its status will settle it (do not resend; a retry with the same Idempotency-Key answers once it is known).`, { ...(api.details ?? {}), outcome: 'unknown', ref });
    }
    const abandon = () => abandonIntents(deps.db.sql, projectId, [ref], now);
    await abandon().catch(() => settleLater('abandoning a send the channel refused', abandon, deps.logger, { project_id: projectId, ref }));
    if (hasReason(e, 'window_closed')) throw outsideWindow();
    // A user who stopped marketing opts out; that and a message that needs a phone are the recipient's.
    if (isChannelError(e) && !group) {
      await optOutOnSendError(deps.db.sql, projectId, message, e, now).catch(() => undefined);
      const refused = recipientChannelError(e);
      if (refused) throw refused;
    }
    // The spec's rule: a template send the channel refuses with a 4xx template error is 400 invalid_template (not 502).
    if (hasReason(e, 'template_rejected')) throw invalidTemplateApiError(e);
    throw asApiError(e);
  }
}
