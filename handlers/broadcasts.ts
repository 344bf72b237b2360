/** Broadcasts (tag Broadcasts): create (always pending_approval) and reads. Never a send. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { createBroadcast as create } from '../lib/broadcasts/create.js';
import { broadcastId, broadcastNotFound, broadcastView, findBroadcast, listBroadcastRows, listRecipients } from '../lib/broadcasts/store.js';
import { refreshMessagingLimit } from '../lib/pricing/messaging-limit.js';

export const createBroadcast: Handler<operations['createBroadcast']> = async (req, deps) => {
  const row = await create(deps, req.auth!, req.body);
  await refreshMessagingLimit(deps, row.project_id);
  return { status: 201, data: { broadcast: await broadcastView(deps.db.sql, row, deps.clock.now(), true) } };
};

export const listBroadcasts: Handler<operations['listBroadcasts']> = async (req, deps) => {
  const limit = Number(req.query.limit ?? 50);
  const offset = Number(req.query.offset ?? 0);
  const { rows, total } = await listBroadcastRows(deps.db.sql, req.auth!.project.id, req.query.status, limit, offset);
  const now = deps.clock.now();
  const broadcasts = await Promise.all(rows.map((r) => broadcastView(deps.db.sql, r, now, false)));
  return { data: { broadcasts, total, limit, offset } };
};

export const getBroadcast: Handler<operations['getBroadcast']> = async (req, deps) => {
  const id = broadcastId(req.params.id);
  const row = await findBroadcast(deps.db.sql, id, req.auth!.project.id);
  if (!row) throw broadcastNotFound(id);
  if (row.status === 'pending_approval') await refreshMessagingLimit(deps, row.project_id);
  return { data: { broadcast: await broadcastView(deps.db.sql, row, deps.clock.now(), true) } };
};

export const listBroadcastRecipients: Handler<operations['listBroadcastRecipients']> = async (req, deps) => {
  const id = broadcastId(req.params.id);
  const row = await findBroadcast(deps.db.sql, id, req.auth!.project.id);
  if (!row) throw broadcastNotFound(id);
  const limit = Number(req.query.limit ?? 50);
  const offset = Number(req.query.offset ?? 0);
  const page = await listRecipients(deps.db.sql, id, { status: req.query.status, errorCategory: req.query.error_category }, limit, offset);
  return { data: { ...page, limit, offset } };
};
