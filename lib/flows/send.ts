/**
 * Using a flow in a conversation: the interactive `flow` message of POST /v1/messages, and the
 * completion (`nfm_reply`) that comes back on the channel webhook.
 *
 * Policy:
 * - Only a PUBLISHED flow is sent, by the channel id of its published version (404 unknown,
 *   409 not published or deprecated). The first screen defaults to the published definition's
 *   first screen; a screen that declares data must be given that data (400 otherwise), and data
 *   the screen does not declare is refused.
 * - Every flow message carries a `flow_token` (the caller's, or a fresh `flt_…`), stored with the
 *   message, so a completion is tied to its flow even when the channel's context is missing.
 * - A completion is stored as it came (Meta's shape) plus `flow_reply`: the flow's name, the
 *   token and the parsed `response_json`; it is delivered in `message.received` like any message.
 */
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { randomToken } from '../platform/secrets.js';

type FlowSend = NonNullable<components['schemas']['InteractiveSend']['flow']>;

export interface FlowSendRef {
  name: string;
  screen?: string;
  data?: Record<string, unknown>;
  /** The payload's `action.parameters`, completed by resolveFlowSend. */
  parameters: Record<string, unknown>;
}

function invalid(message: string, field: string): ApiError {
  return new ApiError('invalid_request', message, { fields: [{ field, message }] });
}

/** The channel payload of a flow message (its flow id filled in later) and the reference to resolve. */
export function composeFlowMessage(flow: FlowSend, common: Record<string, unknown>): { payload: Record<string, unknown>; ref: FlowSendRef; token: string } {
  const token = flow.token ?? `flt_${randomToken(24)}`;
  const parameters: Record<string, unknown> = { flow_message_version: '3', flow_token: token, flow_id: '', flow_cta: flow.cta, flow_action: 'navigate' };
  return {
    payload: { type: 'interactive', interactive: { type: 'flow', ...common, action: { name: 'flow', parameters } } },
    ref: { name: flow.name, screen: flow.screen, data: flow.data as Record<string, unknown> | undefined, parameters },
    token,
  };
}

/** Fills in the published flow's channel id and first screen (see the policy above). */
export async function resolveFlowSend(deps: Deps, projectId: string, ref: FlowSendRef): Promise<void> {
  const flow = await deps.db.prisma.flow.findUnique({ where: { projectId_name: { projectId, name: ref.name } } });
  if (!flow) throw new ApiError('not_found', `No flow named "${ref.name}" in this project.`, { fields: [{ field: 'interactive.flow.name', message: 'unknown flow' }] });
  if (flow.status !== 'PUBLISHED' || !flow.channelFlowId || flow.publishedVersion === null) {
    throw new ApiError('conflict', `Flow "${ref.name}" is ${flow.status}: only a published flow can be sent (an operator publishes it).`);
  }
  const version = await deps.db.prisma.flowVersion.findUniqueOrThrow({ where: { flowId_version: { flowId: flow.id, version: flow.publishedVersion } } });
  const def = JSON.parse(version.definition) as { screens?: { id?: string; data?: Record<string, unknown> }[] };
  const screens = Array.isArray(def.screens) ? def.screens : [];
  const screenId = ref.screen ?? screens[0]?.id;
  const screen = screens.find((s) => s.id === screenId);
  if (!screen) throw invalid(`Flow "${ref.name}" has no screen "${String(ref.screen)}"; its screens are ${screens.map((s) => s.id).join(', ')}.`, 'interactive.flow.screen');
  const declared = Object.keys(screen.data ?? {});
  const given = Object.keys(ref.data ?? {});
  const missing = declared.filter((k) => !given.includes(k));
  const extra = given.filter((k) => !declared.includes(k));
  if (missing.length) throw invalid(`Screen ${screenId} declares data ${missing.join(', ')}: give it in interactive.flow.data.`, 'interactive.flow.data');
  if (extra.length) throw invalid(`Screen ${screenId} declares no data ${extra.join(', ')}.`, 'interactive.flow.data');
  ref.parameters.flow_id = flow.channelFlowId;
  ref.parameters.flow_action_payload = { screen: screenId, ...(given.length ? { data: ref.data } : {}) };
}

type Tx = Pick<Deps['db']['prisma'], 'message'>;

/**
 * For an inbound `interactive` `nfm_reply`: `{ flow_name, flow_token, response }`, the flow found
 * by the message it answers (its context) or by its token; null for any other message.
 */
export async function flowReplyOf(tx: Tx, projectId: string, m: Record<string, unknown>): Promise<Record<string, unknown> | null> {
  const interactive = m.interactive as { type?: unknown; nfm_reply?: { response_json?: unknown; name?: unknown } } | undefined;
  if (m.type !== 'interactive' || interactive?.type !== 'nfm_reply') return null;
  let response: unknown = null;
  const raw = interactive.nfm_reply?.response_json;
  if (typeof raw === 'string') {
    try {
      response = JSON.parse(raw);
    } catch {
      response = null;
    }
  }
  const token = response && typeof response === 'object' && typeof (response as { flow_token?: unknown }).flow_token === 'string' ? (response as { flow_token: string }).flow_token : null;
  const contextId = (m.context as { id?: unknown } | undefined)?.id;
  let sent = typeof contextId === 'string' ? await tx.message.findUnique({ where: { projectId_wamid: { projectId, wamid: contextId } }, select: { content: true } }) : null;
  if (!sent && token) {
    sent = await tx.message.findFirst({ where: { projectId, direction: 'outbound', content: { path: ['interactive', 'flow', 'token'], equals: token } }, select: { content: true } });
  }
  const flowName = (sent?.content as { interactive?: { flow?: { name?: unknown } } } | null)?.interactive?.flow?.name;
  return { flow_name: typeof flowName === 'string' ? flowName : null, flow_token: token, response };
}
