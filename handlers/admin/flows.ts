/** Operator API: publishing and deprecating a project's flows at the channel (lib/flows/publish.ts). */
import type { operations } from '../../generated/admin-api.js';
import type { Handler } from '../../http/handler-types.js';
import { listAllFlows, type FlowRow } from '../../lib/flows/store.js';
import { deprecateFlow, publishFlow } from '../../lib/flows/publish.js';
import { findProject } from './projects.js';

type Ops = operations;

function view(row: FlowRow) {
  return {
    name: row.name,
    categories: row.categories,
    status: row.status as 'DRAFT' | 'PUBLISHED' | 'DEPRECATED',
    current_version: row.currentVersion,
    published_version: row.publishedVersion,
    published_at: row.publishedAt ? row.publishedAt.toISOString() : null,
    channel_flow_id: row.channelFlowId,
    channel_draft_id: row.channelDraftId,
    channel_findings: (Array.isArray(row.channelFindings) ? row.channelFindings : []) as Record<string, unknown>[],
    updated_at: row.updatedAt.toISOString(),
  };
}

export const adminListFlows: Handler<Ops['adminListFlows']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const rows = await listAllFlows(deps, project.id);
  return { data: { flows: rows.map(view) } };
};

export const adminPublishFlow: Handler<Ops['adminPublishFlow']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  const r = await publishFlow(deps, project.id, req.params.name, { dryRun: req.body?.dry_run === true });
  return { data: { flow: view(r.flow), published: r.published } };
};

export const adminDeprecateFlow: Handler<Ops['adminDeprecateFlow']> = async (req, deps) => {
  const project = await findProject(deps, req.params.projectId);
  return { data: { flow: view(await deprecateFlow(deps, project.id, req.params.name)) } };
};
