/** Messages: sending (lib/messaging/send-message.ts) and reading one with its delivery status. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { ApiError } from '../lib/platform/errors.js';
import { findMessageRow } from '../lib/conversations/conversations.js';
import { messageView } from '../lib/conversations/views.js';
import { credentialRef } from '../lib/conversations/authors.js';
import { answerForPendingKey, sendMessage as send } from '../lib/messaging/send-message.js';
import { registerPendingAnswers } from '../middleware/idempotency.js';

// A key whose send outlived its request (outcome unknown) is answered from the send's record.
registerPendingAnswers('sendMessage', (deps, linked) => answerForPendingKey(deps.db, linked));

export const sendMessage: Handler<operations['sendMessage']> = async (req, deps) => {
  // The key (validated and claimed by middleware/idempotency.ts) is linked to the send's record.
  // The caller (an API key, or an agent's connection) is recorded as the message's author, by id.
  // A keyed send's confirm stores the key's answer (lib/messaging/send-message.ts), so it is not stored twice.
  const data = await send(deps, req.auth!.project, req.body, { idempotencyKey: req.idempotencyKey, author: credentialRef(req.auth!.credential) });
  return { data, keyAnswered: req.idempotencyKey !== undefined };
};

/**
 * GET /v1/messages/{id}: an id of digits only is the numeric message id, anything else a `wamid`;
 * the response `id` is always the numeric id, with the current delivery status.
 */
export const getMessage: Handler<operations['getMessage']> = async (req, deps) => {
  const row = await findMessageRow(deps.db.sql, req.auth!.project.id, req.params.id);
  if (!row) throw new ApiError('not_found', `No message "${req.params.id}" in this project.`);
  return { data: messageView(row) };
};
