/**
 * POST /v1/broadcasts as a short story: the template must exist for the project, the variables
 * must match its body placeholders, the audience resolves (segment or inline filter), the
 * pre-flight report must find someone to send to, and the campaign is stored in
 * `pending_approval`. Nothing is ever sent from here: an operator releases it (approval.ts).
 */
import { insertCampaign } from './campaigns.js';
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import type { AuthContext } from '../access/types.js';
import { ApiError } from '../platform/errors.js';
import { bodyPlaceholderCount } from '../messaging/compose.js';
import { computePreflight, requireAudienceFilter } from './audience.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { broadcastRate, pacingSettings } from './pacing.js';
import type { BroadcastRow } from './store.js';
import { parseVariable, type BroadcastVariables } from './variables.js';

type CreateRequest = components['schemas']['CreateBroadcastRequest'];
type BroadcastRoute = components['schemas']['BroadcastRoute'];

/** Who created it, from the credential: the key or connection id and its name. */
async function creatorOf(db: Tx, auth: AuthContext): Promise<{ id: string; name: string | null }> {
  const c = auth.credential;
  if (c.kind === 'api_key') {
    const [row] = await queryRows<{ name: string }>(db, 'SELECT name FROM api_keys WHERE id = $1', c.id);
    return { id: c.id, name: row?.name ?? null };
  }
  const [row] = await queryRows<{ name: string }>(db, 'SELECT name FROM agent_connections WHERE id = $1', c.connectionId);
  return { id: c.connectionId, name: row?.name ?? null };
}

import { phoneNumberIdOf } from './channel-number.js';
import { capability } from '../channel-port/capabilities.js';
import { openChannel } from '../channel-settings/settings.js';

/**
 * The campaign's route to Meta. Meta's Marketing Messages API carries MARKETING templates only, so
 * asking for it with another template (or a campaign category other than MARKETING) is refused
 * here rather than by Meta at send time; `ttl_seconds` (Meta's range for marketing messages, which
 * the contract enforces) belongs to that route alone.
 */
function routeOf(body: CreateRequest, templateCategory: string, category: string): { route: BroadcastRoute; ttlSeconds: number | null } {
  const route = body.route ?? 'cloud_api';
  if (route !== 'marketing_messages') {
    if (body.ttl_seconds !== undefined) {
      throw new ApiError('invalid_request', 'ttl_seconds is only accepted with route "marketing_messages".', {
        fields: [{ field: 'ttl_seconds', message: 'only with route marketing_messages' }],
      });
    }
    return { route, ttlSeconds: null };
  }
  if (templateCategory !== 'MARKETING' || category !== 'MARKETING') {
    throw new ApiError(
      'marketing_template_required',
      `The marketing_messages route carries MARKETING templates only; template ${body.template_name} (${body.template_language}) is ${templateCategory}` +
        (category !== templateCategory ? ` and the campaign's category is ${category}` : '') + '. Use route "cloud_api" or a MARKETING template.',
      { template_category: templateCategory, category },
    );
  }
  return { route, ttlSeconds: body.ttl_seconds ?? null };
}

export { phoneNumberIdOf };

const componentOf = (components: unknown, type: string): Record<string, any> | undefined =>
  Array.isArray(components) ? components.find((c) => typeof c === 'object' && c !== null && String(c.type).toUpperCase() === type) : undefined;

function invalidVariables(message: string, field: string): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

/**
 * A carousel campaign names a card for every card of the template (each with its header link and
 * body variables); an offer that shows its expiry names it; a COPY_CODE button gets its code.
 */
function checkNewerKinds(components: unknown, v: BroadcastVariables, name: string, language: string): void {
  const carousel = componentOf(components, 'CAROUSEL');
  const cards: Array<Record<string, any>> = Array.isArray(carousel?.cards) ? carousel.cards : [];
  const given = v.cards ?? [];
  if (cards.length !== given.length) {
    throw new ApiError('template_variable_mismatch', `Template ${name} (${language}) has ${cards.length} carousel cards; template_variables.cards has ${given.length}.`, { expected_cards: cards.length, given_cards: given.length });
  }
  cards.forEach((card, i) => {
    const link = given[i].header?.link;
    if (typeof link !== 'string' || !/^https:\/\//i.test(link)) throw invalidVariables(`Card ${i + 1} needs header.link: the https URL of its image or video.`, `template_variables.cards[${i}].header.link`);
    const expected = bodyPlaceholderCount(card.components);
    const count = given[i].body?.length ?? 0;
    if (expected !== count) {
      throw new ApiError('template_variable_mismatch', `Card ${i + 1} of template ${name} (${language}) has ${expected} body variables; ${count} were given.`, { card: i, expected, given: count });
    }
  });
  const offer = componentOf(components, 'LIMITED_TIME_OFFER');
  if (offer?.limited_time_offer?.has_expiration === true && !v.limited_time_offer) {
    throw invalidVariables(`Template ${name} shows its offer's expiry: give template_variables.limited_time_offer.expiration_time_ms.`, 'template_variables.limited_time_offer');
  }
  const copyCode = (componentOf(components, 'BUTTONS')?.buttons ?? []).some((b: Record<string, unknown>) => String(b.type).toUpperCase() === 'COPY_CODE');
  if (copyCode && !v.coupon_code) throw invalidVariables(`Template ${name} has a COPY_CODE button: give template_variables.coupon_code.`, 'template_variables.coupon_code');
  if (!copyCode && v.coupon_code) throw invalidVariables(`Template ${name} has no COPY_CODE button.`, 'template_variables.coupon_code');
}

export async function createBroadcast(deps: Deps, auth: AuthContext, body: CreateRequest): Promise<BroadcastRow> {
  const { sql } = deps.db;
  const projectId = auth.project.id;
  const now = deps.clock.now();
  // A campaign sends a template: a channel without templates has none to send.
  const channel = await openChannel(deps, projectId);
  if (channel) capability(deps, channel, 'templates');
  const [template] = await queryRows<{ category: string; components: unknown; status: string }>(
    sql,
    'SELECT category, components, status FROM templates WHERE project_id = $1 AND name = $2 AND language = $3',
    projectId, body.template_name, body.template_language,
  );
  if (!template) {
    throw new ApiError('invalid_template', `No template ${body.template_name.slice(0, 100)} (${body.template_language}) in this project.`, {
      fields: [{ field: 'template_name', message: 'unknown template name and language' }],
    });
  }
  const given = body.template_variables;
  const variables = {
    body: given?.body ?? [],
    ...(given?.header ? { header: given.header } : {}),
    ...(given?.cards ? { cards: given.cards } : {}),
    ...(given?.limited_time_offer ? { limited_time_offer: given.limited_time_offer } : {}),
    ...(given?.coupon_code ? { coupon_code: given.coupon_code } : {}),
  };
  checkNewerKinds(template.components, variables, body.template_name, body.template_language);
  const expected = bodyPlaceholderCount(template.components);
  if (expected !== variables.body.length) {
    throw new ApiError(
      'template_variable_mismatch',
      `Template ${body.template_name} (${body.template_language}) has ${expected} body variables; ${variables.body.length} were given.`,
      { expected, given: variables.body.length },
    );
  }
  variables.body.forEach((v, i) => parseVariable(v, `template_variables.body[${i}]`));
  (variables.header ?? []).forEach((v, i) => parseVariable(v, `template_variables.header[${i}]`));
  (variables.cards ?? []).forEach((c, i) => (c.body ?? []).forEach((v, j) => parseVariable(v, `template_variables.cards[${i}].body[${j}]`)));
  const category = body.category ?? (['MARKETING', 'UTILITY', 'AUTHENTICATION'].includes(template.category) ? template.category : 'MARKETING');
  const { route, ttlSeconds } = routeOf(body, template.category, category);
  if (body.scheduled_at !== undefined && Number.isNaN(Date.parse(body.scheduled_at))) {
    throw new ApiError('invalid_request', 'scheduled_at is not a timestamp.', { fields: [{ field: 'scheduled_at', message: 'not a timestamp' }] });
  }

  const audience = body.audience as { segment_id?: string; filter?: unknown };
  const filter = await requireAudienceFilter(sql, projectId, audience);
  const rate = await broadcastRate(sql, await phoneNumberIdOf(sql, projectId), pacingSettings());
  const preflight = await computePreflight(sql, { projectId, filter, category, variables, now }, rate);
  if (preflight.eligible === 0) {
    throw new ApiError('empty_audience', 'The audience has no eligible recipient: nothing would be sent.', { preflight });
  }
  const creator = await creatorOf(sql, auth);
  return insertCampaign(sql, {
    id: randomUUID(), projectId, name: body.name, templateName: body.template_name, templateLanguage: body.template_language, category,
    audience: audience.segment_id !== undefined ? { segment_id: audience.segment_id.toLowerCase() } : { filter },
    variables, scheduledAt: body.scheduled_at ? new Date(body.scheduled_at) : null, creator,
    waveSize: body.wave_size ?? null, waveIntervalS: body.wave_size ? (body.wave_interval_minutes ?? 1440) * 60 : null,
    waveScheduledCount: body.wave_size ? body.wave_scheduled_count ?? null : null,
    autoRetargetQuality: body.auto_retarget_quality ?? false, preflight, route, ttlSeconds,
  }, now);
}
