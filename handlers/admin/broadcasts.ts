/** Operator API: the approver's side of campaigns (list, read, approve, cancel), the number's throughput, contact imports. */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { ApiError } from '../../lib/platform/errors.js';
import { approveBroadcast, cancelBroadcast, requireBroadcast } from '../../lib/broadcasts/approval.js';
import { broadcastId, broadcastView, listBroadcastRows, type BroadcastRow } from '../../lib/broadcasts/store.js';
import { phoneNumberIdOf } from '../../lib/broadcasts/create.js';
import { broadcastRate, pacingSettings, setThroughput } from '../../lib/broadcasts/pacing.js';
import { getImportAnyProject, importId, listImportRows, startImport } from '../../lib/contacts-import/imports.js';
import type { AppDeps } from '../../http/app-deps.js';
import { findProject } from './projects.js';
import { refreshMessagingLimit } from '../../lib/pricing/messaging-limit.js';

type Ops = operations;

async function view(deps: AppDeps, row: BroadcastRow, live = true) {
  const v = await broadcastView(deps.db.sql, row, deps.clock.now(), live);
  return { ...v, approved_by: (row as unknown as { approved_by: string | null }).approved_by ?? null };
}

export const adminListBroadcasts: Handler<Ops['adminListBroadcasts']> = async (req, deps) => {
  const limit = Number(req.query.limit ?? 50);
  const offset = Number(req.query.offset ?? 0);
  const { rows, total } = await listBroadcastRows(deps.db.sql, req.query.project_id?.toLowerCase(), req.query.status, limit, offset);
  return { data: { broadcasts: await Promise.all(rows.map((r) => view(deps, r, false))), total, limit, offset } };
};

export const adminGetBroadcast: Handler<Ops['adminGetBroadcast']> = async (req, deps) => {
  const row = await requireBroadcast(deps.db.sql, broadcastId(req.params.broadcastId));
  // The approver sees the portfolio's messaging limit as the channel reports it now (lib/pricing/messaging-limit.ts).
  if (row.status === 'pending_approval') await refreshMessagingLimit(deps, row.project_id);
  return { data: { broadcast: await view(deps, row) } };
};

export const adminApproveBroadcast: Handler<Ops['adminApproveBroadcast']> = async (req, deps) => {
  const body = req.body ?? {};
  const scheduledAt = body.scheduled_at ? new Date(body.scheduled_at) : undefined;
  if (scheduledAt && Number.isNaN(scheduledAt.getTime())) throw new ApiError('invalid_request', 'scheduled_at is not a timestamp.');
  const pending = await requireBroadcast(deps.db.sql, broadcastId(req.params.broadcastId));
  await refreshMessagingLimit(deps, pending.project_id);
  const row = await approveBroadcast(deps.db, broadcastId(req.params.broadcastId), { scheduledAt, approvedBy: body.approved_by }, deps.clock.now());
  return { data: { broadcast: await view(deps, row) } };
};

export const adminCancelBroadcast: Handler<Ops['adminCancelBroadcast']> = async (req, deps) => {
  const row = await cancelBroadcast(deps.db, broadcastId(req.params.broadcastId), req.body?.reason, deps.clock.now());
  return { data: { broadcast: await view(deps, row) } };
};

export const adminSetBroadcastThroughput: Handler<Ops['adminSetBroadcastThroughput']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const pnid = await phoneNumberIdOf(deps.db.sql, project.id);
  if (!pnid) throw new ApiError('channel_not_configured', `Project ${project.id} has no channel number.`);
  const settings = pacingSettings();
  await setThroughput(deps.db.sql, pnid, req.body.messages_per_second, settings, deps.clock.now());
  return { data: { phone_number_id: pnid, messages_per_second: req.body.messages_per_second, broadcast_rate: await broadcastRate(deps.db.sql, pnid, settings) } };
};

export const adminCreateContactImport: Handler<Ops['adminCreateContactImport']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const started = await startImport(deps, project.id, req.http, { defaultCountry: req.query.default_country, filename: req.query.filename });
  return { status: 202, data: { import: started } };
};

export const adminGetContactImport: Handler<Ops['adminGetContactImport']> = async (req, deps) => {
  const id = importId(req.params.importId);
  const imp = await getImportAnyProject(deps.db.sql, id);
  return { data: { import: imp, rows: (await listImportRows(deps.db.sql, id, 100, 0)).rows } };
};
