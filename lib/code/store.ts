/**
 * The bot's code trees in PostgreSQL: `development` (edited through PUT /v1/files) and
 * `production` (replaced only by a deploy or a rollback, lib/deploy/). A project's development
 * tree is created from the scaffold the first time it is used.
 *
 * Policy and why:
 * - Every write bumps the file's `version`; its ETag is the quoted SHA-256 of its bytes, so an
 *   editor that read a file can write it back only over that content (If-Match → 412 otherwise)
 *   and two editors never silently overwrite each other.
 * - Writes to one project's tree are serialised by a transaction-scoped advisory lock, so the
 *   tree limits and the ETag comparison see a stable tree.
 * - Reads and single statements take the one handle (`Tx`: `deps.db.sql`, or the caller's
 *   transaction, as a deploy's promotion); a change that opens a transaction (a file's write, the
 *   scaffold's refresh) takes the `Database` and names its pool only to open it.
 * - Limits: 256 KiB per file, 2 MiB and 200 files per tree (413 `payload_too_large`).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { ApiError } from '../platform/errors.js';
import { scaffoldFiles } from './scaffold.js';
import { canonicalPath, FLOWS_DIR, protectionOf, type ProtectedReason } from './paths.js';
import { lockForTransaction } from '../platform/db/locks.js';
import type { Database } from '../platform/db/database.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';

export const CODE_LIMITS = { fileBytes: 256 * 1024, treeBytes: 2 * 1024 * 1024, files: 200 } as const;

export type Tree = 'development' | 'production';

export interface FileInfo {
  path: string;
  size: number;
  etag: string;
  version: number;
  protected: boolean;
  protected_reason: ProtectedReason | null;
  updated_at: string;
}

export interface FileWithContent extends FileInfo {
  content: string;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function etagOf(sha: string): string {
  return `"${sha}"`;
}

/** SHA-256 over the tree's sorted paths and contents: what a deploy compares with production. */
export function treeHash(files: Map<string, string>): string {
  const h = createHash('sha256');
  for (const p of [...files.keys()].sort()) h.update(p).update('\0').update(files.get(p)!).update('\0');
  return h.digest('hex');
}

interface Row {
  path: string;
  content?: string;
  sha256: string;
  size: number;
  version: number;
  updated_at: Date;
}

function view(r: Row): FileInfo {
  const reason = protectionOf(r.path) ?? null;
  return { path: r.path, size: r.size, etag: etagOf(r.sha256), version: r.version, protected: reason !== null, protected_reason: reason, updated_at: r.updated_at.toISOString() };
}

const seeded = new Set<string>();

/** For tests: forget that this process has seen the project's tree (as a new process would). */
export function forgetTreeCache(projectId: string): void {
  seeded.delete(projectId);
}

/** The platform's own files, which the scaffold of this version of the service defines. */
const PLATFORM_REASONS = new Set<ProtectedReason>(['entry_point', 'dependency_manifest', 'channel_endpoint', 'runtime_helper', 'generated_manifest']);
const isPlatformFile = (path: string) => PLATFORM_REASONS.has(protectionOf(path) as ProtectedReason);

/**
 * Brings the platform's files of an existing development tree to this version's scaffold: each
 * platform-managed path of the scaffold (the entry point, manifests, channel endpoints, runtime
 * helpers, generated types) is written when its content differs, and a file under `src/platform/`
 * the scaffold no longer has is removed. Nobody but the platform writes these paths (PUT refuses
 * them), so no author's change is lost; the author's files and flow definitions are never touched.
 * Production keeps what it was deployed with until the next deploy, which builds the refreshed tree.
 */
async function refreshPlatformFiles(db: Pick<Database, 'pool' | 'sql'>, projectId: string, now: Date): Promise<void> {
  const wanted = new Map([...scaffoldFiles()].filter(([path]) => isPlatformFile(path)));
  const rows = await queryRows<{ path: string; sha256: string }>(db.sql, `SELECT path, sha256 FROM code_files WHERE project_id = $1 AND tree = 'development'`, projectId);
  const have = new Map(rows.filter((r) => isPlatformFile(r.path)).map((r) => [r.path, r.sha256]));
  const stale = [...wanted].filter(([path, content]) => have.get(path) !== sha256(content)).map(([path]) => path);
  const gone = [...have.keys()].filter((path) => path.startsWith('src/platform/') && !wanted.has(path));
  if (!stale.length && !gone.length) return;
  await inTransaction(db.pool, async (tx) => {
    await lockTree(tx, projectId);
    const contents = stale.map((p) => wanted.get(p)!);
    await execute(tx,
      `INSERT INTO code_files (project_id, tree, path, content, sha256, size, version, updated_at)
       SELECT $1, 'development', p, c, s, z, 1, $6 FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS t(p, c, s, z)
       ON CONFLICT (project_id, tree, path) DO UPDATE
         SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, size = EXCLUDED.size,
             version = code_files.version + 1, updated_at = EXCLUDED.updated_at
         WHERE code_files.sha256 <> EXCLUDED.sha256`,
      projectId, stale, contents, contents.map(sha256), contents.map((c) => Buffer.byteLength(c)), now,
    );
    if (gone.length) await execute(tx, `DELETE FROM code_files WHERE project_id = $1 AND tree = 'development' AND path = ANY($2::text[])`, projectId, gone);
  });
}

/**
 * Creates the development tree from the scaffold if the project has none yet; an existing tree's
 * platform files are brought to this version's scaffold (refreshPlatformFiles), once per process.
 */
export async function ensureTree(db: Pick<Database, 'pool' | 'sql'>, projectId: string, now: Date): Promise<void> {
  if (seeded.has(projectId)) return;
  const has = await queryRows(db.sql, `SELECT 1 FROM code_files WHERE project_id = $1 AND tree = 'development' LIMIT 1`, projectId);
  if (has.length !== 0) await refreshPlatformFiles(db, projectId, now);
  if (has.length === 0) {
    const files = scaffoldFiles();
    const paths = [...files.keys()];
    const contents = paths.map((p) => files.get(p)!);
    await execute(db.sql,
      `INSERT INTO code_files (project_id, tree, path, content, sha256, size, version, updated_at)
       SELECT $1, 'development', p, c, s, z, 1, $6 FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS t(p, c, s, z)
       ON CONFLICT DO NOTHING`,
      projectId, paths, contents, contents.map(sha256), contents.map((c) => Buffer.byteLength(c)), now,
    );
  }
  seeded.add(projectId);
}

/** The tree's files (the development tree created or refreshed first: ensureTree). */
export async function listFiles(db: Pick<Database, 'pool' | 'sql'>, projectId: string, tree: Tree, now: Date): Promise<{ files: FileInfo[]; totalSize: number }> {
  await ensureTree(db, projectId, now);
  const rows = await queryRows<Row>(db.sql,
    `SELECT path, sha256, size, version, updated_at FROM code_files WHERE project_id = $1 AND tree = $2 ORDER BY path COLLATE "C"`,
    projectId, tree,
  );
  return { files: rows.map(view), totalSize: rows.reduce((n, r) => n + r.size, 0) };
}

export async function readFile(db: Pick<Database, 'pool' | 'sql'>, projectId: string, tree: Tree, rawPath: string, now: Date): Promise<FileWithContent> {
  const path = canonicalPath(rawPath, { forWrite: false });
  await ensureTree(db, projectId, now);
  const rows = await queryRows<Row>(db.sql,
    `SELECT path, content, sha256, size, version, updated_at FROM code_files WHERE project_id = $1 AND tree = $2 AND path = $3`,
    projectId, tree, path,
  );
  const row = rows[0];
  if (!row) throw new ApiError('not_found', `No file "${path}" in the ${tree} tree.`);
  return { ...view(row), content: row.content! };
}

/** Every file of a tree, path → content. */
export async function readTree(tx: Tx, projectId: string, tree: Tree): Promise<Map<string, string>> {
  const rows = await queryRows<{ path: string; content: string }>(tx, `SELECT path, content FROM code_files WHERE project_id = $1 AND tree = $2`, projectId, tree);
  return new Map(rows.map((r) => [r.path, r.content]));
}

export interface Preconditions {
  ifMatch?: string;
  ifNoneMatch?: string;
}

function tagsOf(header: string): string[] {
  return header.split(',').map((t) => t.trim().replace(/^W\//, '')).filter(Boolean);
}

function preconditionFailed(current: string | null, why: string): ApiError {
  return new ApiError('precondition_failed', why, { current_etag: current }, current ? { ETag: current } : undefined);
}

function checkContent(content: string): number {
  if (content.includes('\u0000')) throw new ApiError('unsupported_media_type', 'Code files are UTF-8 text; the content holds NUL characters (binary data).');
  const size = Buffer.byteLength(content, 'utf8');
  if (size > CODE_LIMITS.fileBytes) {
    throw new ApiError('payload_too_large', `The file is ${size} bytes; a file may have at most ${CODE_LIMITS.fileBytes}.`, { limit: CODE_LIMITS.fileBytes, size });
  }
  return size;
}

/** The tree's lock, held until the transaction on the pg connection `client` ends (advisory locks are pg's). */
async function lockTree(client: pg.PoolClient, projectId: string): Promise<void> {
  await lockForTransaction(client, `code:${projectId}`);
}

/**
 * Writes one file of the development tree at a canonical path, under the tree lock, with the
 * limits and preconditions. Protection is the caller's business (see putFile / writeFlowFile).
 */
async function writeDevFile(db: Pick<Database, 'pool' | 'sql'>, projectId: string, path: string, content: string, pre: Preconditions, now: Date): Promise<{ file: FileWithContent; created: boolean }> {
  const size = checkContent(content);
  await ensureTree(db, projectId, now);
  return inTransaction(db.pool, async (tx) => {
    await lockTree(tx, projectId);
    const rows = await queryRows<Row>(tx,
      `SELECT path, sha256, size, version, updated_at FROM code_files WHERE project_id = $1 AND tree = 'development'`,
      projectId,
    );
    const current = rows.find((r) => r.path === path);
    const currentTag = current ? etagOf(current.sha256) : null;
    if (pre.ifNoneMatch !== undefined) {
      const tags = tagsOf(pre.ifNoneMatch);
      if (current && (tags.includes('*') || tags.includes(currentTag!))) throw preconditionFailed(currentTag, `${path} already exists (If-None-Match).`);
    }
    if (pre.ifMatch !== undefined) {
      const tags = tagsOf(pre.ifMatch);
      if (!current) throw preconditionFailed(null, `${path} does not exist, so If-Match cannot match.`);
      if (!tags.includes('*') && !tags.includes(currentTag!)) throw preconditionFailed(currentTag, `${path} changed since you read it: its ETag is now ${currentTag}. Read it again and reapply your change.`);
    }
    if (!current) {
      const twin = rows.find((r) => r.path.toLowerCase() === path.toLowerCase());
      if (twin) throw new ApiError('conflict', `${path} differs only in case from the existing ${twin.path}.`, { existing: twin.path });
      if (rows.length + 1 > CODE_LIMITS.files) throw new ApiError('payload_too_large', `A tree may hold at most ${CODE_LIMITS.files} files.`, { limit: CODE_LIMITS.files });
    }
    const total = rows.reduce((n, r) => n + (r.path === path ? 0 : r.size), 0) + size;
    if (total > CODE_LIMITS.treeBytes) {
      throw new ApiError('payload_too_large', `The tree would hold ${total} bytes; at most ${CODE_LIMITS.treeBytes}.`, { limit: CODE_LIMITS.treeBytes, size: total });
    }
    const sha = sha256(content);
    const written = await queryRows<Row>(tx,
      `INSERT INTO code_files (project_id, tree, path, content, sha256, size, version, updated_at)
       VALUES ($1, 'development', $2, $3, $4, $5, 1, $6)
       ON CONFLICT (project_id, tree, path) DO UPDATE
         SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, size = EXCLUDED.size,
             version = code_files.version + 1, updated_at = EXCLUDED.updated_at
       RETURNING path, sha256, size, version, updated_at`,
      projectId, path, content, sha, size, now,
    );
    return { file: { ...view(written[0]), content }, created: !current };
  });
}

/** PUT /v1/files/{path}: protected paths (any spelling) and flow definitions are refused. */
export function putFile(db: Pick<Database, 'pool' | 'sql'>, projectId: string, rawPath: string, content: string, pre: Preconditions, now: Date) {
  const path = canonicalPath(rawPath, { forWrite: true });
  return writeDevFile(db, projectId, path, content, pre, now);
}

/**
 * For the flow endpoints only: writes `flows/<name>.json` of the development tree, which
 * PUT /v1/files refuses. `name` is a flow name of letters, digits, `_` and `-`.
 */
export async function writeFlowFile(db: Pick<Database, 'pool' | 'sql'>, projectId: string, name: string, definition: unknown, now: Date, pre: Preconditions = {}) {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(name)) throw new ApiError('invalid_request', 'A flow name has 1 to 100 letters, digits, "_" or "-".');
  return writeDevFile(db, projectId, `${FLOWS_DIR}${name}.json`, JSON.stringify(definition, null, 2) + '\n', pre, now);
}

/** Replaces the production tree with `files`, inside the caller's transaction (atomic promotion). */
export async function replaceProductionTree(tx: Tx, projectId: string, files: Map<string, string>, now: Date): Promise<void> {
  await execute(tx, `DELETE FROM code_files WHERE project_id = $1 AND tree = 'production'`, projectId);
  const paths = [...files.keys()];
  const contents = paths.map((p) => files.get(p)!);
  await execute(tx,
    `INSERT INTO code_files (project_id, tree, path, content, sha256, size, version, updated_at)
     SELECT $1, 'production', p, c, s, z, 1, $6 FROM unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS t(p, c, s, z)`,
    projectId, paths, contents, contents.map(sha256), contents.map((c) => Buffer.byteLength(c)), now,
  );
}

