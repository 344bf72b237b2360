/** Calls (docs/calls.md): the list and one call, a business call, the actions on a call, and the call permission request. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { ApiError } from '../lib/platform/errors.js';
import { positiveId as pathId } from '../http/path-ids.js';
import { actOnCall as act, getCall as readCall, listCalls as readCalls, markPermissionRequested, startCall as start } from '../lib/calls/calls.js';
import { findContactRow } from '../lib/conversations/contacts.js';
import { credentialRef } from '../lib/conversations/authors.js';
import { sendMessage } from '../lib/messaging/send-message.js';

export const listCalls: Handler<operations['listCalls']> = async (req, deps) => {
  const q = req.query;
  const calls = await readCalls(deps, req.auth!.project.id, { limit: q.limit ?? 50, conversationId: q.conversation_id, beforeId: q.before });
  return { data: { calls } };
};

export const getCall: Handler<operations['getCall']> = async (req, deps) => ({ data: await readCall(deps, req.auth!.project.id, req.params.id) });

export const startCall: Handler<operations['startCall']> = async (req, deps) => ({
  data: await start(deps, req.auth!.project.id, req.body.contact_id, req.body.sdp, req.body.reference),
});

export const actOnCall: Handler<operations['actOnCall']> = async (req, deps) => ({
  data: await act(deps, req.auth!.project.id, req.params.id, req.body.action, req.body.sdp),
});

/**
 * The interactive call permission request, through the one send path: outside the 24-hour window it
 * is refused there (409 `outside_24h_window`); a template with a call permission component is then the way.
 */
export const requestCallPermission: Handler<operations['requestCallPermission']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const id = pathId(req.params.id);
  const contact = await findContactRow(deps.db.sql, projectId, id);
  if (!contact) throw new ApiError('not_found', `No contact ${id} in this project.`);
  const to = contact.phone ? { phone: `+${contact.phone}` } : { user_id: contact.userId! };
  const sent = await sendMessage(deps, req.auth!.project, { type: 'interactive', ...to, interactive: { body: req.body.body, call_permission_request: true } }, {
    author: credentialRef(req.auth!.credential),
  });
  await markPermissionRequested(deps, projectId, BigInt(contact.id));
  const after = await findContactRow(deps.db.sql, projectId, id);
  return { data: { id: sent.id, status: 'sent', call_permission_status: after?.callPermissionStatus ?? 'pending' } };
};
