/** Messaging helpers (managed by the platform). */
import { sendThroughService } from '../send.js';
import { hostCall } from './host.js';
import type { SendMessageRequest, SendResult } from './types.js';

/** Sends a message like POST /v1/messages; never throws: check `ok`. */
export function send(body: SendMessageRequest): Promise<SendResult> {
  return sendThroughService(body);
}

/** Sends a text message. */
export function sendText(phone: string, content: string): Promise<SendResult> {
  return send({ type: 'text', phone, content });
}

/** Sends up to three reply buttons. */
export function sendButtons(phone: string, content: string, buttons: Array<{ id: string; title: string }>): Promise<SendResult> {
  return send({ type: 'interactive', phone, interactive: { body: content, buttons } });
}

/**
 * Marks the customer's message read and shows that you are typing (WhatsApp clears it when your
 * reply is sent, or after 25 seconds): call it when an answer will take a moment. `messageId` is
 * the `id` of the message you are answering. Throws a HelperError when the channel refuses it.
 */
export async function showTyping(messageId: string): Promise<void> {
  await hostCall('showTyping', { messageId });
}

/**
 * Sets the conversation's state. Any value of 1 to 64 characters is accepted: this is how the
 * project introduces its own states (PATCH /v1/conversations/{id} accepts them afterwards).
 */
export async function setState(conversationId: number, state: string): Promise<void> {
  await hostCall('setState', { conversationId, state });
}
