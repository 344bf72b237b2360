/**
 * Voice calls (managed by the platform): what a bot may do with a customer's call, the way of
 * POST /v1/calls/{id}/actions. Accepting a call needs a softphone's SDP answer, so it is not here:
 * a person answers from a softphone (docs/calls.md). Never throws: check `ok`. A call that is no
 * longer ringing (already rejected, answered, ended) is `{ ok: false, error: { code: 'conflict' } }`.
 */
import { hostCall } from './host.js';
import type { HostResult } from '../generated/host-api.js';

export type CallActionResult = HostResult<'calls.reject'>;

async function act(op: 'calls.reject' | 'calls.terminate', callId: string): Promise<CallActionResult> {
  try {
    return await hostCall(op, { callId });
  } catch (e) {
    const error = e as { code?: string; message?: string };
    return { ok: false, error: { code: error.code ?? 'helper_error', message: error.message ?? 'The call failed.' } };
  }
}

export const calls = {
  /** Rejects a ringing call (`call.id` of `onCall`): the customer's phone stops ringing. */
  reject: (callId: string): Promise<CallActionResult> => act('calls.reject', callId),
  /** Hangs up a live call. */
  terminate: (callId: string): Promise<CallActionResult> => act('calls.terminate', callId),
};
