/**
 * Calls (POST /{phone-number-id}/calls, Meta's `manageCalls`): the business connects, pre-accepts,
 * accepts (with its SDP answer), rejects or terminates a call. Signalling only: the media flows
 * between the customer's phone and the business's softphone (docs/calls.md).
 */
import type { ChannelCredentials, GraphTransport } from './graph-transport.js';
import type { CallActionInput } from '../lib/channel-port/port.js';

/** The body Meta's contract takes: `to` with every call action but terminate, `call_id` once the call exists, `session` with connect and (pre-)accept. */
export function callBody(input: CallActionInput): Record<string, unknown> {
  const body: Record<string, unknown> = { messaging_product: 'whatsapp' };
  if (input.action === 'connect') {
    Object.assign(body, { to: input.to, action: 'connect', session: { sdp_type: 'offer', sdp: input.sdp } });
    if (input.reference) body.biz_opaque_callback_data = input.reference;
    return body;
  }
  if (input.to && input.action !== 'terminate') body.to = input.to;
  Object.assign(body, { call_id: input.callId, action: input.action });
  if (input.action === 'accept' || input.action === 'pre_accept') body.session = { sdp_type: 'answer', sdp: input.sdp };
  return body;
}

export async function callAction(this: GraphTransport, creds: ChannelCredentials, input: CallActionInput): Promise<{ callId?: string }> {
  const answer = (await this.call(creds, { op: 'callAction', method: 'POST', segments: [creds.phoneNumberId, 'calls'], data: callBody(input) })) as
    { success?: unknown; calls?: { id?: unknown }[] } | null;
  if (input.action === 'connect') {
    const id = Array.isArray(answer?.calls) ? answer.calls[0]?.id : undefined;
    if (typeof id !== 'string' || !id) throw this.unexpected('callAction', 'no call id in the answer');
    return { callId: id };
  }
  if (answer?.success !== true) throw this.unexpected('callAction', 'no success in the answer');
  return {};
}
