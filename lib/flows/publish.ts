/**
 * Publishing a flow to the channel: an operator's decision (operator API and CLI), never a /v1
 * call, because Meta's publish is irreversible.
 *
 * Policy:
 * - The current version is validated again first (the rules may have grown since it was stored);
 *   errors stop here, before the channel is touched (400 `invalid_flow`).
 * - Then: create the channel flow (once per version to publish: a published channel flow is
 *   immutable, so a later version gets a new one, named `<name>-v<version>`), upload the Flow
 *   JSON asset, read back the channel's `validation_errors` and keep them on the flow. Errors there
 *   stop before publishing (400 `invalid_flow` with the channel's findings); the channel flow stays
 *   a draft and is reused by the next attempt.
 * - A dry run stops after the upload: the operator sees what the channel says without publishing.
 * - After publishing, the channel flow of the previous published version is deprecated (best
 *   effort: its failure is logged, the publish stands).
 * - The version already published is not published again (409 `conflict`).
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { requireChannel } from '../channel-settings/settings.js';
import { asApiError } from '../channel-port/api-errors.js';
import type { FlowValidationError } from '../channel-port/port.js';
import { findFlow, findVersion, recordChannelState, type FlowRow } from './store.js';
import { validateFlowJson } from './validator/index.js';
import { tryLockSession, unlockSession } from '../platform/db/locks.js';
import { capability } from '../channel-port/capabilities.js';

export interface PublishResult {
  flow: FlowRow;
  published: boolean;
  channelFindings: ChannelFinding[];
}

export type ChannelFinding = FlowValidationError & { severity: 'error' | 'warning'; pointer?: string };

/** Meta's errors with our severity: everything Meta lists blocks publishing. */
function asFindings(errors: FlowValidationError[]): ChannelFinding[] {
  return errors.map((e) => ({ ...e, severity: 'error' as const }));
}

/**
 * One publish of a flow at a time (two operators, or a retried CLI call): a session advisory lock
 * held on its own connection while the channel calls run; the second is 409 `conflict` at once.
 */
export async function publishFlow(deps: Deps, projectId: string, name: string, opts: { dryRun?: boolean } = {}): Promise<PublishResult> {
  const client = await deps.db.pool.connect();
  const key = `flow-publish:${projectId}:${name}`;
  try {
    if (!(await tryLockSession(client, key, 14))) throw new ApiError('conflict', `Flow "${name}" is being published by another request; try again when it is done.`);
    try {
      return await publishLocked(deps, projectId, name, opts);
    } finally {
      await unlockSession(client, key, 14).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

async function publishLocked(deps: Deps, projectId: string, name: string, opts: { dryRun?: boolean }): Promise<PublishResult> {
  let flow = await findFlow(deps, projectId, name);
  const version = await findVersion(deps, flow);
  const local = validateFlowJson(version.definition);
  if (!local.valid) {
    throw new ApiError('invalid_flow', `Version ${version.version} of flow "${name}" does not validate; fix it with PUT /v1/flows/${name} first.`, { findings: local.findings });
  }
  if (flow.status === 'PUBLISHED' && flow.publishedVersion === version.version && !opts.dryRun) {
    throw new ApiError('conflict', `Version ${version.version} of flow "${name}" is published already (channel flow ${flow.channelFlowId}).`);
  }
  const channel = await requireChannel(deps, projectId);
  try {
    // A channel draft made for this flow earlier (a dry run, a refused publish) is reused; a
    // published channel flow never is.
    let draftId = flow.channelDraftId;
    if (!draftId) {
      // Channel flow names are unique per account: the first is the flow's name, a later version's
      // `<name>-v<version>`, and a republish after deprecation gets a time suffix too.
      const first = flow.publishedVersion === null && flow.channelFlowId === null;
      const channelName = first ? name : `${name}-v${version.version}${flow.status === 'DEPRECATED' ? `-${deps.clock.now().getTime().toString(36)}` : ''}`;
      draftId = (await capability(deps, channel, 'flows').createFlow(channel, { name: channelName, categories: flow.categories })).id;
      flow = await recordChannelState(deps, flow.id, { channelDraftId: draftId });
    }
    const uploaded = await capability(deps, channel, 'flows').uploadFlowJson(channel, draftId, version.definition);
    // Read back what the channel now holds for the flow (its list is the one publishing obeys).
    const readBack = await capability(deps, channel, 'flows').getFlow(channel, draftId);
    const channelFindings = asFindings(readBack.validation_errors?.length ? readBack.validation_errors : uploaded.validationErrors);
    flow = await recordChannelState(deps, flow.id, { channelDraftVersion: version.version, channelFindings: channelFindings as object[] });
    if (channelFindings.length) {
      throw new ApiError(
        'invalid_flow',
        `The channel found ${channelFindings.length} validation error(s) in version ${version.version} of flow "${name}"; first: ${channelFindings[0].message}. Nothing was published.`,
        { findings: channelFindings, channel_flow_id: draftId },
      );
    }
    if (opts.dryRun) return { flow, published: false, channelFindings };
    await capability(deps, channel, 'flows').publishFlow(channel, draftId);
    const previous = flow.channelFlowId;
    flow = await recordChannelState(deps, flow.id, {
      status: 'PUBLISHED',
      channelFlowId: draftId,
      channelDraftId: null,
      channelDraftVersion: null,
      publishedVersion: version.version,
      publishedAt: deps.clock.now(),
    });
    if (previous && previous !== draftId) {
      await capability(deps, channel, 'flows').deprecateFlow(channel, previous).catch((e) =>
        deps.logger.warn('flow publish: the previous channel flow could not be deprecated', { flow: name, channel_flow_id: previous, error: String((e as Error)?.message ?? e) }),
      );
    }
    return { flow, published: true, channelFindings };
  } catch (e) {
    throw asApiError(e);
  }
}

/** Deprecates the published flow at the channel; it can no longer be sent. */
export async function deprecateFlow(deps: Deps, projectId: string, name: string): Promise<FlowRow> {
  const flow = await findFlow(deps, projectId, name);
  if (flow.status !== 'PUBLISHED' || !flow.channelFlowId) throw new ApiError('conflict', `Flow "${name}" is ${flow.status}: only a published flow can be deprecated.`);
  const channel = await requireChannel(deps, projectId);
  try {
    await capability(deps, channel, 'flows').deprecateFlow(channel, flow.channelFlowId);
  } catch (e) {
    throw asApiError(e);
  }
  return recordChannelState(deps, flow.id, { status: 'DEPRECATED' });
}
