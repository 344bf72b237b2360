/**
 * The call helpers of the host API (lib/bot/host-api.ts): `calls.reject` and `calls.terminate`,
 * what a bot may do with a WhatsApp voice call (docs/calls.md, docs/bot.md). Accepting needs the
 * SDP answer of a softphone, which a bot has not: that stays with the API and the console.
 *
 * Policy and why:
 * - One path: the same domain function as POST /v1/calls/{id}/actions (actOnCall, lib/calls/calls.ts),
 *   so a bot's reject is refused, sent to WhatsApp and recorded exactly as the API's.
 * - Never throws into the bot: `{ ok: true, call: { id, status } }` or `{ ok: false, error }`. A
 *   call that is unknown (`not_found`) or past the action (`conflict`: already rejected, ended…)
 *   is a refusal the bot can read, not an exception: the call's state is the customer's and
 *   WhatsApp's, and a bot reacting late must not fail for it.
 * - Once per event: the operations are journaled (lib/bot/journal.ts), so an event run again after
 *   a crash is answered from its record; a run whose record was lost meets the call already
 *   rejected and gets the harmless `conflict`, never a second reject at WhatsApp.
 * - A preview has no call to act on: it checks that the call exists and answers it unchanged.
 */
import { ApiError } from '../platform/errors.js';
import { actOnCall, getCall } from '../calls/calls.js';
import { ok, type Answer, type BotDeps, type Invocation } from './host-types.js';

export async function runCallAction(deps: BotDeps, inv: Invocation, action: 'reject' | 'terminate', args: { callId: string }): Promise<Answer> {
  try {
    const call = inv.mode === 'preview' ? await getCall(deps, inv.projectId, args.callId) : await actOnCall(deps, inv.projectId, args.callId, action, undefined);
    return ok({ ok: true, call: { id: call.call_id, status: call.status } });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    return ok({ ok: false, error: { code: e.code, message: e.message } });
  }
}
