/**
 * Flow storage: one Flow row per name and project, and an immutable FlowVersion per generate or
 * update. The ETag of a version is its definition's SHA-256, quoted (as for code files).
 *
 * Policy:
 * - Only definitions without error findings are stored; a version keeps its warnings.
 * - A write names the version it is based on with If-Match; the flow row is locked while the
 *   new version is written, so two writers based on the same version cannot both win (the second
 *   gets 412 `precondition_failed` with the current ETag).
 * - A definition identical to the current one writes no version.
 * - The definitions are files of the project's code tree (`flows/<name>.json`), read-only there:
 *   `listFlowFiles` gives them to the files API (development: the current versions; production:
 *   the versions published to the channel).
 */
import { createHash } from 'node:crypto';
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import { writeFlowFile } from '../code/store.js';
import type { Database } from '../platform/db/database.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { isUniqueViolation } from '../platform/db/errors.js';
import { queryRows } from '../platform/db/tx.js';
import type { FlowFinding } from './validator/index.js';
import { inPrismaTransaction } from '../platform/db/transaction.js';

export type FlowView = components['schemas']['Flow'];
export type FlowSource = 'generate' | 'update' | 'model_generate' | 'model_update';

export interface FlowRow {
  id: string;
  projectId: string;
  name: string;
  categories: string[];
  status: string;
  currentVersion: number;
  channelFlowId: string | null;
  channelDraftId: string | null;
  channelDraftVersion: number | null;
  publishedVersion: number | null;
  publishedAt: Date | null;
  channelFindings: unknown;
  createdAt: Date;
  updatedAt: Date;
}

export interface FlowVersionRow {
  flowId: string;
  version: number;
  definition: string;
  sha256: string;
  findings: unknown;
  source: string;
  createdAt: Date;
}

export const flowFilePath = (name: string) => `flows/${name}.json`;
export const sha256Hex = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
export const etagOf = (sha: string) => `"${sha}"`;

/** The flow as the API shows it, at version `v`. */
export function flowView(row: FlowRow, v: FlowVersionRow): FlowView {
  return {
    name: row.name,
    categories: row.categories as FlowView['categories'],
    status: row.status as FlowView['status'],
    version: { number: v.version, sha256: v.sha256, etag: etagOf(v.sha256), source: v.source as FlowSource, created_at: v.createdAt.toISOString() },
    channel_flow_id: row.channelFlowId,
    published_version: row.publishedVersion,
    published_at: row.publishedAt ? row.publishedAt.toISOString() : null,
    findings: (Array.isArray(v.findings) ? v.findings : []) as FlowView['findings'],
    channel_findings: (Array.isArray(row.channelFindings) ? row.channelFindings : []) as FlowView['channel_findings'],
    file: flowFilePath(row.name),
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

export function notFound(name: string): ApiError {
  return new ApiError('not_found', `No flow named "${name}" in this project.`);
}

export async function findFlow(deps: Pick<Deps, 'db'>, projectId: string, name: string): Promise<FlowRow> {
  const row = await deps.db.prisma.flow.findUnique({ where: { projectId_name: { projectId, name } } });
  if (!row) throw notFound(name);
  return row;
}

export async function findVersion(deps: Pick<Deps, 'db'>, flow: FlowRow, version?: number): Promise<FlowVersionRow> {
  const n = version ?? flow.currentVersion;
  const v = await deps.db.prisma.flowVersion.findUnique({ where: { flowId_version: { flowId: flow.id, version: n } } });
  if (!v) throw new ApiError('not_found', `Flow "${flow.name}" has no version ${n} (the current one is ${flow.currentVersion}).`);
  return v;
}

export async function listFlowRows(deps: Pick<Deps, 'db'>, projectId: string, status: string | undefined, afterName: string | undefined, take: number) {
  const flows = await deps.db.prisma.flow.findMany({
    where: { projectId, ...(status ? { status } : {}), ...(afterName !== undefined ? { name: { gt: afterName } } : {}) },
    orderBy: { name: 'asc' },
    take,
  });
  const versions = await deps.db.prisma.flowVersion.findMany({
    where: { OR: flows.map((f) => ({ flowId: f.id, version: f.currentVersion })) },
    select: { flowId: true, version: true, sha256: true, findings: true, source: true, createdAt: true, definition: false },
  });
  const byFlow = new Map(versions.map((v) => [v.flowId, { ...v, definition: '' }]));
  return flows.map((f) => ({ flow: f, version: byFlow.get(f.id)! }));
}

/** Every flow of a project, by name (the operator's list). */
export function listAllFlows(deps: Pick<Deps, 'db'>, projectId: string): Promise<FlowRow[]> {
  return deps.db.prisma.flow.findMany({ where: { projectId }, orderBy: { name: 'asc' } });
}

export async function listVersions(deps: Pick<Deps, 'db'>, flow: FlowRow) {
  return deps.db.prisma.flowVersion.findMany({
    where: { flowId: flow.id },
    orderBy: { version: 'desc' },
    select: { flowId: true, version: true, sha256: true, findings: true, source: true, createdAt: true },
  });
}

export interface WriteInput {
  text: string;
  findings: FlowFinding[];
  source: FlowSource;
  categories?: string[];
  /** The If-Match header, verbatim. */
  ifMatch?: string;
  /** Refuse when the flow exists (generate). */
  createOnly?: boolean;
}

export interface WriteResult {
  flow: FlowRow;
  version: FlowVersionRow;
  created: boolean;
  unchanged: boolean;
}

function preconditionFailed(current: string | null): ApiError {
  return new ApiError(
    'precondition_failed',
    current ? 'The flow changed since that ETag: read it again and reapply the change.' : 'The flow does not exist, so no ETag can match.',
    { current_etag: current },
    current ? { ETag: current } : undefined,
  );
}

/** ETags in an If-Match header ("*" matches any existing flow). */
function matches(ifMatch: string, etag: string): boolean {
  return ifMatch
    .split(',')
    .map((s) => s.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag);
}

/**
 * Stores a new version (or the first), under the flow row's lock, then mirrors it into the
 * project's code tree as `flows/<name>.json` (readable through GET /v1/files, refused by PUT).
 * The flow tables stay the truth: a mirror that fails (a definition over the code tree's file
 * limit) is logged, never fails the write.
 */
export async function writeFlowVersion(deps: Pick<Deps, 'db'> & Partial<Pick<Deps, 'clock' | 'logger'>>, projectId: string, name: string, input: WriteInput): Promise<WriteResult> {
  const result = await writeVersionRows(deps, projectId, name, input);
  if (!result.unchanged) {
    let definition: unknown = null;
    try {
      definition = JSON.parse(input.text);
    } catch {
      definition = null;
    }
    if (definition !== null) {
      await writeFlowFile(deps.db, projectId, name, definition, deps.clock?.now() ?? new Date()).catch((e) =>
        deps.logger?.warn('flow definition not mirrored into the code tree', { project_id: projectId, flow: name, error: e instanceof Error ? e.message : String(e) }),
      );
    }
  }
  return result;
}

async function writeVersionRows(deps: Pick<Deps, 'db'>, projectId: string, name: string, input: WriteInput): Promise<WriteResult> {
  const sha = sha256Hex(input.text);
  const findings = input.findings.map((f) => ({ ...f })) as object[];
  try {
    return await inPrismaTransaction(deps.db.prisma, async (tx) => {
      const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM flows WHERE project_id = ${projectId} AND name = ${name} FOR UPDATE`;
      if (locked.length === 0) {
        if (input.ifMatch !== undefined) throw preconditionFailed(null);
        const id = newId('flw');
        const flow = await tx.flow.create({
          data: { id, projectId, name, categories: input.categories ?? ['OTHER'], status: 'DRAFT', currentVersion: 1 },
        });
        const version = await tx.flowVersion.create({ data: { flowId: id, version: 1, definition: input.text, sha256: sha, findings, source: input.source } });
        return { flow, version, created: true, unchanged: false };
      }
      if (input.createOnly) throw new ApiError('conflict', `A flow named "${name}" exists already: update it with PUT /v1/flows/${name}.`);
      const flow = await tx.flow.findUniqueOrThrow({ where: { id: locked[0].id } });
      const current = await tx.flowVersion.findUniqueOrThrow({ where: { flowId_version: { flowId: flow.id, version: flow.currentVersion } } });
      if (input.ifMatch !== undefined && !matches(input.ifMatch, etagOf(current.sha256))) throw preconditionFailed(etagOf(current.sha256));
      const sameCategories = !input.categories || input.categories.join() === flow.categories.join();
      if (current.sha256 === sha && sameCategories) return { flow, version: current, created: false, unchanged: true };
      if (current.sha256 === sha) {
        const updated = await tx.flow.update({ where: { id: flow.id }, data: { categories: input.categories } });
        return { flow: updated, version: current, created: false, unchanged: false };
      }
      const next = flow.currentVersion + 1;
      const version = await tx.flowVersion.create({ data: { flowId: flow.id, version: next, definition: input.text, sha256: sha, findings, source: input.source } });
      const updated = await tx.flow.update({
        where: { id: flow.id },
        data: { currentVersion: next, ...(input.categories ? { categories: input.categories } : {}) },
      });
      return { flow: updated, version, created: false, unchanged: false };
    });
  } catch (e) {
    // Two first writes of one name at once: the loser is told as if it had read the winner.
    if (isUniqueViolation(e)) {
      if (input.createOnly) throw new ApiError('conflict', `A flow named "${name}" exists already: update it with PUT /v1/flows/${name}.`);
      const flow = await findFlow(deps, projectId, name);
      const v = await findVersion(deps, flow);
      throw preconditionFailed(etagOf(v.sha256));
    }
    throw e;
  }
}

/**
 * The flow definitions as read-only files of the project's code tree: `flows/<name>.json`. The
 * development tree has the current versions; the production tree the versions the channel has.
 */
export async function listFlowFiles(db: Database, projectId: string, tree: 'development' | 'production' = 'development'): Promise<{ path: string; content: string; updatedAt: Date }[]> {
  const published = tree === 'production';
  const rows = await queryRows<{ name: string; definition: string; created_at: Date }>(
    db.sql,
    `SELECT f.name, v.definition, v.created_at
       FROM flows f JOIN flow_versions v ON v.flow_id = f.id AND v.version = ${published ? 'f.published_version' : 'f.current_version'}
      WHERE f.project_id = $1
      ORDER BY f.name`,
    projectId,
  );
  return rows.map((row) => ({ path: flowFilePath(row.name), content: row.definition, updatedAt: row.created_at }));
}

/** True for a code-tree path that is a flow definition (refused by PUT /v1/files). */
export function isFlowFilePath(path: string): boolean {
  return /^flows\/[^/]+\.json$/i.test(path.replace(/^\/+/, ''));
}

/** What the channel holds of a flow (its draft, findings, published version, status), as publishing learns it (lib/flows/publish.ts). */
export function recordChannelState(
  deps: Pick<Deps, 'db'>,
  flowId: FlowRow['id'],
  state: Partial<Pick<FlowRow, 'status' | 'channelFlowId' | 'channelDraftId' | 'channelDraftVersion' | 'publishedVersion' | 'publishedAt'>> & { channelFindings?: object[] },
): Promise<FlowRow> {
  return deps.db.prisma.flow.update({ where: { id: flowId }, data: state });
}
