/**
 * The bot's `showTyping` helper: marks the customer's message read and shows the business typing,
 * as Meta documents it ("Typing indicators": POST /{phone-number-id}/messages with `status: read`,
 * the message id and `typing_indicator: { type: "text" }`). WhatsApp clears the indicator when the
 * reply is sent or after 25 seconds, so a bot calls it only when it is going to answer.
 *
 * Only a message this project received can be marked (its wamid, as the bot's event carries it).
 * Never throws: the answer is true, or an error answer with a code.
 */
import type { Deps } from '../deps.js';
import { openChannel } from '../channel-settings/settings.js';
import { isChannelError } from '../channel-port/errors.js';
import { channelApiError } from '../channel-port/api-errors.js';
import { portOf } from '../channel-port/capabilities.js';
import { queryRows } from '../platform/db/tx.js';

export type TypingAnswer = { ok: true; value: true } | { ok: false; error: { code: string; message: string } };

export async function showTyping(deps: Pick<Deps, 'db' | 'secretBox' | 'channel' | 'channels'>, projectId: string, args: unknown, preview: boolean): Promise<TypingAnswer> {
  const messageId = (args as { messageId?: unknown } | null)?.messageId;
  if (typeof messageId !== 'string' || messageId.length < 1 || messageId.length > 256) {
    return { ok: false, error: { code: 'invalid_request', message: 'messageId must be the id of the message the bot is answering (1 to 256 characters).' } };
  }
  // A preview reaches no customer.
  if (preview) return { ok: true, value: true };
  const rows = await queryRows(deps.db.sql, 'SELECT 1 FROM messages WHERE project_id = $1 AND wamid = $2 AND direction = $3', projectId, messageId, 'inbound');
  if (!rows[0]) return { ok: false, error: { code: 'not_found', message: `No received message ${messageId.slice(0, 64)} in this project.` } };
  const channel = await openChannel(deps, projectId);
  if (!channel) return { ok: false, error: { code: 'channel_not_configured', message: 'This project has no WhatsApp channel configured.' } };
  try {
    const port = portOf(deps, channel);
    // A channel without a typing indicator still marks the message read.
    if (port.capabilities.typing) await port.capabilities.typing.showTyping(channel, messageId);
    else await port.markRead(channel, messageId);
    return { ok: true, value: true };
  } catch (e) {
    // The API's code for the same refusal (a refused token is upstream_auth_error here too).
    if (isChannelError(e)) {
      const api = channelApiError(e);
      return { ok: false, error: { code: api.code, message: api.message.slice(0, 500) } };
    }
    return { ok: false, error: { code: 'upstream_error', message: 'The channel did not take the typing indicator.' } };
  }
}
