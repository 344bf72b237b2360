/**
 * Message templates: created at the channel and mirrored in the Template table, whose status the
 * channel's decisions update (applyTemplateStatus, from the channel's webhook: template.approved / .rejected).
 *
 * Policy:
 * - The service checks what only it can know before calling the channel: a media header
 *   (IMAGE, VIDEO, DOCUMENT) needs `example.header_handle` with one handle (400 `invalid_request`
 *   otherwise), and that handle must be one header-sample issued to this project, for the same
 *   format, not used by another of its templates (400 `invalid_header_handle`; a channel media id
 *   is named as such); so does each carousel card's header. The newer kinds (carousel,
 *   limited-time offer, call and contact-request buttons, supported_apps) are checked as Meta
 *   checks them (kinds.ts: 400 `invalid_template` with the rule). Everything else about the
 *   payload is the channel's to judge: its 4xx rejection is 400 `invalid_template` with the
 *   provider's detail.
 * - Name + language are unique per project: the row is inserted first (status PENDING), so a
 *   concurrent duplicate is 409 `template_exists` without reaching the channel; the channel's own
 *   "already exists" (e.g. a template made outside the service) is 409 too. A failed channel call
 *   removes the row again.
 * - Deleting removes the template at the channel (all languages of the name, or one by its
 *   channel id) and here.
 */
import type { components } from '../../generated/api.js';
import type { TemplateStatusEvent } from '../channel-port/events.js';
import { recordEvent } from '../webhooks/events.js';
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { requireChannel } from '../channel-settings/settings.js';
import { isUniqueViolation } from '../platform/db/errors.js';
import { hasReason, isChannelError } from '../channel-port/errors.js';
import { asApiError, invalidTemplateApiError } from '../channel-port/api-errors.js';
import type { TemplateDefinitionComponent } from '../channel-port/port.js';
import { cardHeaders, checkTemplateKinds } from './kinds.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';
import { capability } from '../channel-port/capabilities.js';
import { queryRows } from '../platform/db/tx.js';

type CreateTemplateRequest = components['schemas']['CreateTemplateRequest'];
export type TemplateView = components['schemas']['Template'];

const MEDIA_FORMATS = new Set(['IMAGE', 'VIDEO', 'DOCUMENT']);

export interface TemplateRow {
  id: string;
  name: string;
  language: string;
  category: string;
  status: string;
  components: unknown;
  rejectedReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export function templateView(row: TemplateRow): TemplateView {
  return {
    id: row.id,
    name: row.name,
    language: row.language,
    category: row.category,
    status: row.status,
    components: Array.isArray(row.components) ? (row.components as Record<string, unknown>[]) : [],
    rejected_reason: row.rejectedReason,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function badHandle(message: string, field: string): ApiError {
  return new ApiError('invalid_header_handle', message, { fields: [{ field, message }] });
}

/** The media header's handle checks (see the policy above), for the template's header and each carousel card's. */
async function checkHeaderHandles(deps: Deps, projectId: string, body: CreateTemplateRequest): Promise<void> {
  const headers = [
    ...body.components.flatMap((c, i) => (c.type === 'HEADER' && MEDIA_FORMATS.has(String(c.format ?? 'TEXT'))
      ? [{ field: `components[${i}].example.header_handle`, format: String(c.format), handle: Array.isArray(c.example?.header_handle) && c.example.header_handle.length === 1 ? c.example.header_handle[0] : undefined }]
      : [])),
    ...cardHeaders(body.components),
  ];
  const seen = new Set<string>();
  for (const { field, format, handle } of headers) {
    if (typeof handle !== 'string' || handle === '') {
      const message = `A ${format} header needs example.header_handle: an array with one handle from POST /v1/templates/header-sample.`;
      throw new ApiError('invalid_request', message, { fields: [{ field, message }] });
    }
    if (seen.has(handle)) throw badHandle('The handle is used twice in this template; each header (each card) needs its own sample.', field);
    seen.add(handle);
    const sample = await deps.db.prisma.headerSample.findFirst({ where: { handle, projectId } });
    if (!sample) {
      const media = await deps.db.prisma.mediaAsset.findFirst({ where: { projectId, channelMediaId: handle }, select: { slug: true } });
      throw badHandle(
        media
          ? `"${handle.slice(0, 64)}" is the media id of asset ${media.slug}, not a header handle: upload the sample with POST /v1/templates/header-sample.`
          : 'The header handle was not issued to this project by POST /v1/templates/header-sample.',
        field,
      );
    }
    if (sample.format !== format) throw badHandle(`The handle is a ${sample.format} sample; this header is ${format}.`, field);
    // Anywhere in a template's components: a card's header is nested.
    const used = await queryRows<{ name: string; language: string }>(
      deps.db.sql,
      `SELECT name, language FROM templates WHERE project_id = $1 AND jsonb_path_exists(components, '$.**.header_handle[*] ? (@ == $h)', jsonb_build_object('h', $2::text)) LIMIT 1`,
      projectId, handle,
    );
    if (used[0]) {
      throw badHandle(`The handle was already used by template ${used[0].name} (${used[0].language}); a handle serves one template.`, field);
    }
  }
}

function exists(name: string, language: string): ApiError {
  return new ApiError('template_exists', `A template ${name} in ${language} already exists.`, { name, language });
}

export async function createTemplate(deps: Deps, project: ProjectRef, body: CreateTemplateRequest): Promise<TemplateView> {
  const { prisma } = deps.db;
  checkTemplateKinds(body);
  await checkHeaderHandles(deps, project.id, body);
  const channel = await requireChannel(deps, project.id);
  const templates = capability(deps, channel, 'templates');
  const id = newId('tpl');
  try {
    await prisma.template.create({
      data: { id, projectId: project.id, name: body.name, language: body.language, category: body.category, status: 'PENDING', components: body.components as object[] },
    });
  } catch (e) {
    if (isUniqueViolation(e)) throw exists(body.name, body.language);
    throw e;
  }
  let result;
  try {
    result = await templates.createTemplate(channel, {
      name: body.name,
      language: body.language,
      category: body.category,
      components: body.components as TemplateDefinitionComponent[],
      ...(body.parameter_format ? { parameter_format: body.parameter_format } : {}),
      ...(body.allow_category_change !== undefined ? { allow_category_change: body.allow_category_change } : {}),
    });
  } catch (e) {
    await prisma.template.delete({ where: { id } }).catch(() => undefined);
    if (hasReason(e, 'template_exists')) throw exists(body.name, body.language);
    if (hasReason(e, 'template_rejected')) throw invalidTemplateApiError(e);
    throw asApiError(e);
  }
  // A decision may already have arrived (inbound matches a row without a channel id by name and
  // language); keep it.
  const row = await prisma.template.update({
    where: { id },
    data: { channelTemplateId: result.id, category: result.category || body.category },
  });
  return templateView(row);
}

export interface TemplateFilters {
  name?: string;
  language?: string;
  category?: string;
  status?: string;
}

export async function listTemplateRows(deps: Deps, projectId: string, filters: TemplateFilters, after: { at: Date; id: string } | undefined, take: number) {
  return deps.db.prisma.template.findMany({
    where: {
      projectId,
      ...filters,
      ...(after ? { OR: [{ createdAt: { lt: after.at } }, { createdAt: after.at, id: { lt: after.id } }] } : {}),
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take,
  });
}

export async function findTemplate(deps: Deps, projectId: string, name: string, language?: string): Promise<TemplateRow> {
  const rows = await deps.db.prisma.template.findMany({ where: { projectId, name, ...(language ? { language } : {}) }, orderBy: { language: 'asc' } });
  if (rows.length === 0) throw new ApiError('not_found', `No template ${name}${language ? ` in ${language}` : ''} in this project.`);
  if (rows.length > 1) {
    const languages = rows.map((r) => r.language);
    throw new ApiError('bad_request', `Template ${name} exists in ${languages.length} languages (${languages.join(', ')}): name one with ?language=.`, { languages });
  }
  return rows[0];
}

export async function deleteTemplate(deps: Deps, project: ProjectRef, name: string, language?: string): Promise<{ name: string; language: string }[]> {
  const { prisma } = deps.db;
  const rows = await prisma.template.findMany({ where: { projectId: project.id, name, ...(language ? { language } : {}) } });
  if (rows.length === 0) throw new ApiError('not_found', `No template ${name}${language ? ` in ${language}` : ''} in this project.`);
  const channel = await requireChannel(deps, project.id);
  const one = language ? rows[0] : undefined;
  try {
    // One language: by the channel's id (the name alone would delete every language there).
    if (!one || one.channelTemplateId) await capability(deps, channel, 'templates').deleteTemplate(channel, { name, hsmId: one?.channelTemplateId ?? undefined });
  } catch (e) {
    // A 4xx rejection means the channel has no such template any more: ours goes too. Not a
    // refusal of our own configuration (a retired version): the channel still has it.
    if (!(isChannelError(e) && e.kind === 'rejected' && !hasReason(e, 'configuration_refused'))) throw asApiError(e);
  }
  await prisma.template.deleteMany({ where: { id: { in: rows.map((r) => r.id) } } });
  return rows.map((r) => ({ name: r.name, language: r.language }));
}

/**
 * The channel's decision on a template (the message_template_status_update webhook): the mirrored
 * row follows it, and an approval or rejection is raised as template.approved / .rejected.
 */
export async function applyTemplateStatus(deps: Pick<Deps, 'db'>, projectId: string, v: TemplateStatusEvent, now: Date): Promise<boolean> {
  const status = v.status;
  const byName = { name: v.name, language: v.language };
  // By the channel's id; a row still waiting for its id (created an instant ago) by name and language.
  const where = v.templateId !== undefined
    ? { projectId: projectId, OR: [{ channelTemplateId: v.templateId }, { ...byName, channelTemplateId: null }] }
    : { projectId: projectId, ...byName };
  return inPrismaTransaction(deps.db.prisma, async (tx) => {
    const template = await tx.template.findFirst({ where });
    if (!template) return true; // a template made outside the service: nothing of ours to update
    if (template.status === status) return true;
    await tx.template.update({
      where: { id: template.id },
      data: { status, rejectedReason: status === 'REJECTED' ? (v.reason ?? null) : null },
    });
    const name = status === 'APPROVED' ? 'template.approved' : status === 'REJECTED' ? 'template.rejected' : undefined;
    if (name) {
      await recordEvent(tx, projectId, name, {
        name: template.name, language: template.language, category: template.category, status,
        ...(v.reason && status === 'REJECTED' ? { reason: v.reason } : {}),
      }, now);
    }
    return true;
  });
}
