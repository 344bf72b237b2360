/** WhatsApp Flows (lib/flows): list, read, versions, generate, update. Publishing is operator-only. */
import type { operations } from '../generated/api.js';
import type { Handler } from '../http/handler-types.js';
import { cursorScope, cursorSecretOf, decodeCursor, encodeCursor, invalidCursor, pageSize } from '../lib/platform/cursor.js';
import { etagOf, findFlow, findVersion, flowView, listFlowRows, listVersions } from '../lib/flows/store.js';
import { generateFlow as generate, updateFlow as update, withDefinition } from '../lib/flows/service.js';

export const listFlows: Handler<operations['listFlows']> = async (req, deps) => {
  const projectId = req.auth!.project.id;
  const take = pageSize(req.query.limit);
  const status = req.query.status !== undefined ? String(req.query.status) : undefined;
  const scope = cursorScope('listFlows', projectId, { status });
  const secret = cursorSecretOf(deps);
  let after: string | undefined;
  if (req.query.cursor !== undefined) {
    const payload = decodeCursor(String(req.query.cursor), scope, secret);
    if (payload.length !== 1 || typeof payload[0] !== 'string') throw invalidCursor();
    after = payload[0];
  }
  const rows = await listFlowRows(deps, projectId, status, after, take + 1);
  const page = rows.slice(0, take);
  const last = page[page.length - 1];
  return {
    data: {
      flows: page.map((r) => flowView(r.flow, r.version)),
      nextCursor: rows.length > take && last ? encodeCursor([last.flow.name], scope, secret) : null,
    },
  };
};

export const getFlow: Handler<operations['getFlow']> = async (req, deps) => {
  const flow = await findFlow(deps, req.auth!.project.id, req.params.name);
  const v = await findVersion(deps, flow, req.query.version !== undefined ? Number(req.query.version) : undefined);
  return { data: { flow: withDefinition(flow, v) }, headers: { ETag: etagOf(v.sha256) } };
};

export const listFlowVersions: Handler<operations['listFlowVersions']> = async (req, deps) => {
  const flow = await findFlow(deps, req.auth!.project.id, req.params.name);
  const versions = await listVersions(deps, flow);
  return {
    data: {
      versions: versions.map((v) => {
        const findings = Array.isArray(v.findings) ? (v.findings as { severity?: string }[]) : [];
        return {
          number: v.version,
          sha256: v.sha256,
          etag: etagOf(v.sha256),
          source: v.source as 'generate',
          created_at: v.createdAt.toISOString(),
          errors: findings.filter((f) => f.severity === 'error').length,
          warnings: findings.filter((f) => f.severity === 'warning').length,
          published: flow.publishedVersion === v.version,
        };
      }),
    },
  };
};

export const generateFlow: Handler<operations['generateFlow']> = async (req, deps) => {
  const r = await generate(deps, req.auth!.project.id, req.body);
  return { status: 201, data: { flow: r.flow, generator: r.generator, attempts: r.attempts }, headers: { ETag: r.etag } };
};

export const updateFlow: Handler<operations['updateFlow']> = async (req, deps) => {
  const ifMatch = req.http.get('if-match');
  const r = await update(deps, req.auth!.project.id, req.params.name, req.body, ifMatch);
  return {
    status: r.created ? 201 : 200,
    data: { flow: r.flow, unchanged: r.unchanged, ...(r.generator ? { generator: r.generator, attempts: r.attempts } : {}) },
    headers: { ETag: r.etag },
  };
};
