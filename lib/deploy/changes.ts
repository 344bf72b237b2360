/**
 * What each kept deployment changed, for people (the console's Bot page, issue 47 item 2): the
 * files added, changed and removed against the deployment before it, and who made it, beside the
 * records of lib/deploy/deployments.ts (listDeployments: the operator API's read).
 *
 * Policy and why:
 * - Files are compared by a hash of each file computed in PostgreSQL (`jsonb_each_text` of the
 *   stored `files`), so at most 20 trees of 2 MiB are not read into the process to list names.
 * - A deployment is compared with the succeeded deployment recorded just before it (a rollback
 *   too: it shows what it put back). A failed one has no files (it was not promoted); the oldest
 *   kept one is compared with nothing (every file "added", marked as such).
 * - "Who": `created_by` holds an API key's id for a deploy through the API (shown with the key's
 *   name), `operator` for the operator API, or a person's email for a rollback of the console.
 * - Reads only, on the one handle (`Tx`: `deps.db.sql`).
 */
import { ApiError } from '../platform/errors.js';
import { queryRows, type Tx } from '../platform/db/tx.js';
import { canonicalPath } from '../code/paths.js';
import { listDeployments, type DeploymentView } from './deployments.js';

export interface FileChanges {
  added: string[];
  changed: string[];
  removed: string[];
  /** True when no earlier deployment is kept to compare with. */
  first: boolean;
}

export interface DeploymentHistoryEntry extends DeploymentView {
  /** Null for a failed deployment (nothing was promoted). */
  changes: FileChanges | null;
  /** Who made it, for people: a key's name, the operator, a person's email. */
  author: string;
  /** Its bundle is kept (a rollback can promote it). */
  kept: boolean;
}

export async function deploymentHistory(tx: Tx, projectId: string): Promise<DeploymentHistoryEntry[]> {
  const deployments = await listDeployments(tx, projectId);
  const hashes = await queryRows<{ id: string; path: string; h: string }>(tx,
    `SELECT d.id, f.key AS path, md5(f.value) AS h FROM deployments d, jsonb_each_text(d.files) f
      WHERE d.project_id = $1 AND d.status = 'succeeded' AND d.files IS NOT NULL`,
    projectId,
  );
  const trees = new Map<string, Map<string, string>>();
  for (const r of hashes) {
    let tree = trees.get(r.id);
    if (!tree) trees.set(r.id, (tree = new Map()));
    tree.set(r.path, r.h);
  }
  const keyIds = [...new Set(deployments.map((d) => d.created_by).filter((c): c is string => !!c))];
  const keys = keyIds.length
    ? new Map((await queryRows<{ id: string; name: string }>(tx, 'SELECT id, name FROM api_keys WHERE project_id = $1 AND id = ANY($2::text[])', projectId, keyIds)).map((k) => [k.id, k.name]))
    : new Map<string, string>();
  // Newest first: each succeeded deployment is compared with the next succeeded one in the list.
  return deployments.map((d, i) => {
    const tree = trees.get(d.id);
    let changes: FileChanges | null = null;
    if (d.status === 'succeeded' && tree) {
      const before = deployments.slice(i + 1).find((o) => o.status === 'succeeded' && trees.has(o.id));
      changes = compare(before ? trees.get(before.id)! : new Map(), tree, !before);
    }
    const key = d.created_by ? keys.get(d.created_by) : undefined;
    const author = key !== undefined ? `API key "${key}" (${d.created_by})` : d.created_by === 'operator' ? 'the operator API' : (d.created_by ?? 'unknown');
    return { ...d, changes, author, kept: d.status === 'succeeded' && !!tree };
  });
}

function compare(before: Map<string, string>, after: Map<string, string>, first: boolean): FileChanges {
  const sorted = (xs: string[]) => xs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    added: sorted([...after.keys()].filter((p) => !before.has(p))),
    changed: sorted([...after.keys()].filter((p) => before.has(p) && before.get(p) !== after.get(p))),
    removed: sorted([...before.keys()].filter((p) => !after.has(p))),
    first,
  };
}

/** The ids of the project's kept deployments whose files can be read (deploymentFile). */
export async function keptDeployments(tx: Tx, projectId: string): Promise<Set<string>> {
  const rows = await queryRows<{ id: string }>(tx, `SELECT id FROM deployments WHERE project_id = $1 AND status = 'succeeded' AND files IS NOT NULL`, projectId);
  return new Set(rows.map((r) => r.id));
}

/** One file as a kept deployment promoted it (the bot log's errors point into it). */
export async function deploymentFile(tx: Tx, projectId: string, deploymentId: string, rawPath: string): Promise<string> {
  const path = canonicalPath(rawPath, { forWrite: false });
  const rows = await queryRows<{ content: string | null }>(tx,
    `SELECT files ->> $3 AS content FROM deployments WHERE project_id = $1 AND id = $2 AND status = 'succeeded'`,
    projectId, deploymentId, path,
  );
  const content = rows[0]?.content;
  if (content === null || content === undefined) throw new ApiError('not_found', `No file "${path}" in deployment "${deploymentId.slice(0, 40)}" (the last 20 deployments are kept).`);
  return content;
}
