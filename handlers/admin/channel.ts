/** Operator API: a project's WhatsApp channel. Secrets go in, never out. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { findChannel, projectOfNumber, saveChannel, webhookUrl } from '../../lib/channel-settings/settings.js';
import { findProject } from './projects.js';
import { servedKinds } from '../../lib/channel-port/capabilities.js';

type Ops = operations;

function view(row: { projectId: string; kind: string; phoneNumberId: string; wabaId: string; appId: string; displayPhoneNumber: string | null; updatedAt: Date }, baseUrl: string) {
  return {
    project_id: row.projectId,
    kind: row.kind,
    phone_number_id: row.phoneNumberId,
    waba_id: row.wabaId,
    app_id: row.appId,
    display_phone_number: row.displayPhoneNumber,
    webhook_url: webhookUrl(baseUrl, row.projectId),
    updated_at: row.updatedAt.toISOString(),
  };
}

export const adminGetChannel: Handler<Ops['adminGetChannel']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const row = await findChannel(deps, project.id);
  if (!row) throw new ApiError('not_found', `Project "${project.id}" has no channel configured.`);
  return { data: { channel: view(row, deps.config.publicBaseUrl) } };
};

export const adminSetChannel: Handler<Ops['adminSetChannel']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  if (project.status === 'deleted') throw new ApiError('conflict', `Project "${project.id}" is deleted.`);
  const b = req.body;
  const kinds = servedKinds(deps);
  if (b.kind !== undefined && !kinds.includes(b.kind)) {
    throw new ApiError('invalid_request', `This instance serves channels of kind ${kinds.join(', ')}; not ${b.kind}.`, { fields: [{ field: 'kind', message: `one of ${kinds.join(', ')}` }] });
  }
  const owner = await projectOfNumber(deps, b.phone_number_id);
  if (owner && owner !== project.id) throw new ApiError('conflict', `Phone number id ${b.phone_number_id} belongs to another project.`);
  const row = await saveChannel(deps, project.id, {
    kind: b.kind,
    phoneNumberId: b.phone_number_id,
    wabaId: b.waba_id,
    appId: b.app_id,
    accessToken: b.access_token,
    appSecret: b.app_secret,
    verifyToken: b.verify_token,
    displayPhoneNumber: b.display_phone_number,
  });
  return { data: { channel: view(row, deps.config.publicBaseUrl) } };
};
