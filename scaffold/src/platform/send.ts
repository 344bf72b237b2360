/**
 * The send endpoint inside the bot (managed by the platform): a message goes out through the same
 * path as POST /v1/messages, with its validation, daily quota and 24-hour window rules.
 */
import { hostCall } from './runtime/host.js';
import type { SendMessageRequest, SendResult } from './runtime/types.js';

export async function sendThroughService(body: SendMessageRequest): Promise<SendResult> {
  return hostCall('send', body);
}
