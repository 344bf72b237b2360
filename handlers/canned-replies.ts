/** Canned replies: the project's saved texts (lib/conversations/canned-replies.ts), sent as text through POST /v1/messages. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { ApiError } from '../lib/platform/errors.js';
import { positiveId as pathId } from '../http/path-ids.js';
import { createCannedReply as create, deleteCannedReply as remove, listCannedReplies as list, SHORTCUT } from '../lib/inbox/canned-replies.js';

export const listCannedReplies: Handler<operations['listCannedReplies']> = async (req, deps) => {
  return { data: { canned_replies: await list(deps.db.sql, req.auth!.project.id) } };
};

export const createCannedReply: Handler<operations['createCannedReply']> = async (req, deps) => {
  const shortcut = req.body.shortcut;
  const text = req.body.text.trim();
  if (!SHORTCUT.test(shortcut)) {
    throw new ApiError('invalid_request', 'shortcut is 1 to 40 lower-case letters, digits, "_" or "-".', { fields: [{ field: 'shortcut', message: 'bad shape' }] });
  }
  if (!text) throw new ApiError('invalid_request', 'text is required.', { fields: [{ field: 'text', message: 'is required' }] });
  return { status: 201, data: { canned_reply: await create(deps.db.sql, req.auth!.project.id, shortcut, text, deps.clock.now()) } };
};

export const deleteCannedReply: Handler<operations['deleteCannedReply']> = async (req, deps) => {
  const id = pathId(req.params.id);
  if (!(await remove(deps.db.sql, req.auth!.project.id, id))) throw new ApiError('not_found', `No canned reply ${id} in this project.`);
  return { data: { deleted: Number(id) } };
};
