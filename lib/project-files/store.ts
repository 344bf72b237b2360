/**
 * A project's files (the spec's "storage uploads"; table project_files, this module its only
 * writer): operators upload them, the bot reads them (`files.get`) and sends them as media.
 *
 * Policy and why:
 * - A name is one flat segment: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/ and no "..", so never a path
 *   (no "../", no "/", no absolute path, no backslash, no control character): 400 otherwise. The
 *   bytes are stored in the blob store (the one media uses) under a key built from the row's id,
 *   never from the name.
 * - Files are per project: every read names the project, so another project's name is not found.
 * - The upload is streamed to a temporary file, never held in memory, and stops as soon as it
 *   passes what the project's quota leaves (PROJECT_FILES_MAX files, PROJECT_FILES_MAX_BYTES bytes
 *   in all; a replacement counts its new size instead of the old one): 413 `file_quota_exceeded`
 *   with the limit. One file is at most 100 MB (the largest media): 413 `file_too_large`. The quota is checked again under a per-project lock when the row is written,
 *   so two uploads at once cannot pass it together.
 * - The type is verified from the bytes as for media (lib/media/verify.ts): the media types
 *   WhatsApp accepts (images, video, audio, PDF and Office documents, plain UTF-8 text, which
 *   covers JSON and CSV); anything else is 415. An empty file is 400 `empty_file`.
 * - Every upload, replacement and deletion writes an audit row in its transaction (name, type,
 *   size and SHA-256; never the content).
 * - Turning a file into media makes a media asset (lib/media/assets.ts: the channel upload, 30 days)
 *   and remembers its slug on the file: the next send of the same file reuses it until it expires
 *   at the channel or the file is replaced.
 */
import type { Readable } from 'node:stream';
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { newId } from '../platform/secrets.js';
import { inTransaction } from '../platform/db/transaction.js';
import { execute, queryRows, type Tx } from '../platform/db/tx.js';
import { blobStoreOf } from '../platform/storage/store-of.js';
import { recordAuditOn, type AuditActor } from '../accounts/audit.js';
import { findProject } from '../access/projects.js';
import { TempFileSink, LimitExceeded, type TempFile } from '../media/temp-file.js';
import { verifyContent } from '../media/verify.js';
import { MEDIA_MAX_BYTES, MEDIA_TYPES, TEXT, kindOf, type MediaKind } from '../media/types.js';
import { fileTooLarge } from '../media/errors.js';
import { createMediaAsset, getMediaAsset } from '../media/assets.js';
import { lockForTransaction } from '../platform/db/locks.js';

export const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
/** The types a project file may have: what can also be sent as media. */
export const PROJECT_FILE_TYPES: readonly string[] = MEDIA_TYPES;

type FileDeps = Pick<Deps, 'db' | 'clock' | 'config' | 'blobStore'>;

export interface ProjectFileView {
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  created_at: string;
  updated_at: string;
}

export interface FilesUsage {
  files: number;
  bytes: number;
  max_files: number;
  max_bytes: number;
}

interface Row {
  id: string;
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  storage_key: string;
  media_slug: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, name, content_type, size, sha256, storage_key, media_slug, created_at, updated_at';

function view(r: Row): ProjectFileView {
  return { name: r.name, content_type: r.content_type, size: r.size, sha256: r.sha256, created_at: r.created_at.toISOString(), updated_at: r.updated_at.toISOString() };
}

/** The name, or 400 naming the rule. */
export function checkFileName(name: unknown): string {
  if (typeof name !== 'string' || !FILE_NAME.test(name) || name.includes('..')) {
    throw new ApiError('invalid_request', 'A file name is 1 to 128 letters, digits, ".", "_" or "-", starting with a letter or digit, without ".." (one name, never a path).', { pattern: FILE_NAME.source });
  }
  return name;
}

function notFound(name: string): ApiError {
  return new ApiError('not_found', `No file "${name}" in this project.`);
}

function quotaError(quota: 'files' | 'bytes', limit: number, used: number): ApiError {
  return new ApiError(
    'file_quota_exceeded',
    quota === 'files' ? `A project has at most ${limit} files; delete one first.` : `A project's files hold at most ${limit} bytes in all; ${used} are used. Delete or replace a file first.`,
    { quota, limit, used },
  );
}

async function usage(tx: Tx, projectId: string): Promise<{ files: number; bytes: number }> {
  // count(*) and the sum of an int4 are int8: bigints on the handle.
  const [r] = await queryRows<{ n: bigint; b: bigint }>(tx, 'SELECT count(*) AS n, coalesce(sum(size), 0) AS b FROM project_files WHERE project_id = $1', projectId);
  return { files: Number(r.n), bytes: Number(r.b) };
}

async function findRow(tx: Tx, projectId: string, name: string): Promise<Row | undefined> {
  return (await queryRows<Row>(tx, `SELECT ${COLUMNS} FROM project_files WHERE project_id = $1 AND name = $2`, projectId, name))[0];
}

/** The project's files by name, and its quota. */
export async function listProjectFiles(deps: Pick<Deps, 'db' | 'config'>, projectId: string): Promise<{ files: ProjectFileView[]; usage: FilesUsage }> {
  const rows = await queryRows<Row>(deps.db.sql, `SELECT ${COLUMNS} FROM project_files WHERE project_id = $1 ORDER BY name COLLATE "C"`, projectId);
  const bytes = rows.reduce((n, r) => n + r.size, 0);
  return { files: rows.map(view), usage: { files: rows.length, bytes, max_files: deps.config.projectFilesMax, max_bytes: deps.config.projectFilesMaxBytes } };
}

/**
 * Stores `body` as the project's file `name` (created, or replaced). The body is streamed to a
 * temporary file and refused as soon as it passes what the quota leaves.
 */
export async function saveProjectFile(deps: FileDeps, actor: AuditActor, projectId: string, rawName: unknown, body: Readable): Promise<{ file: ProjectFileView; created: boolean }> {
  const name = checkFileName(rawName);
  const { projectFilesMax: maxFiles, projectFilesMaxBytes: maxBytes } = deps.config;
  const before = await findRow(deps.db.sql, projectId, name);
  const used = await usage(deps.db.sql, projectId);
  if (!before && used.files >= maxFiles) throw quotaError('files', maxFiles, used.files);
  const room = maxBytes - (used.bytes - (before?.size ?? 0));
  // A file is at most the largest media (100 MB), and at most what the quota leaves.
  const [limit, reason] = room < MEDIA_MAX_BYTES ? [Math.max(0, room), 'budget' as const] : [MEDIA_MAX_BYTES, 'ceiling' as const];
  const sink = await TempFileSink.create(limit, reason, undefined, deps.config.uploadTmpDir);
  try {
    try {
      for await (const chunk of body) await sink.write(chunk as Buffer);
    } catch (e) {
      if (e instanceof LimitExceeded && e.reason === 'budget') throw quotaError('bytes', maxBytes, used.bytes - (before?.size ?? 0));
      if (e instanceof LimitExceeded) throw fileTooLarge(MEDIA_MAX_BYTES, 'a project file');
      throw e;
    }
    const file = await sink.finish();
    if (file.size === 0) throw new ApiError('empty_file', 'The file is empty (0 bytes).');
    const contentType = await verifyContent(file, undefined, PROJECT_FILE_TYPES, 'a project file');
    return await store(deps, actor, projectId, name, file, contentType);
  } finally {
    await sink.remove();
  }
}

async function store(deps: FileDeps, actor: AuditActor, projectId: string, name: string, file: TempFile, contentType: string): Promise<{ file: ProjectFileView; created: boolean }> {
  const id = newId('pf', 20);
  const storageKey = `${projectId}/${id}`;
  const blobs = blobStoreOf(deps);
  await blobs.putFile(storageKey, file.path, { size: file.size, contentType, sha256: file.sha256 });
  const now = deps.clock.now();
  let replaced: Row | undefined;
  try {
    const result = await inTransaction(deps.db.pool, async (tx) => {
      // One writer at a time per project: the quota holds under concurrent uploads.
      await lockForTransaction(tx, `project_files:${projectId}`);
      replaced = await findRow(tx, projectId, name);
      const used = await usage(tx, projectId);
      if (!replaced && used.files >= deps.config.projectFilesMax) throw quotaError('files', deps.config.projectFilesMax, used.files);
      const others = used.bytes - (replaced?.size ?? 0);
      if (others + file.size > deps.config.projectFilesMaxBytes) throw quotaError('bytes', deps.config.projectFilesMaxBytes, others);
      const saved = replaced
        ? (await queryRows<Row>(tx,
            `UPDATE project_files SET id = $3, content_type = $4, size = $5, sha256 = $6, storage_key = $7, media_slug = NULL, updated_at = $8
              WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
            projectId, name, id, contentType, file.size, file.sha256, storageKey, now,
          ))[0]
        : (await queryRows<Row>(tx,
            `INSERT INTO project_files (id, project_id, name, content_type, size, sha256, storage_key, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING ${COLUMNS}`,
            id, projectId, name, contentType, file.size, file.sha256, storageKey, now,
          ))[0];
      await recordAuditOn(tx, now, actor, {
        projectId,
        action: replaced ? 'file.replace' : 'file.upload',
        subject: name,
        before: replaced ? { content_type: replaced.content_type, size: replaced.size, sha256: replaced.sha256 } : undefined,
        after: { content_type: saved.content_type, size: saved.size, sha256: saved.sha256 },
      });
      return { file: view(saved), created: !replaced };
    });
    if (replaced) await blobs.delete(replaced.storage_key).catch(() => undefined);
    return result;
  } catch (e) {
    await blobs.delete(storageKey).catch(() => undefined);
    throw e;
  }
}

/** The file's row and its bytes as a stream; 404 when the project has no such file. */
export async function openProjectFile(deps: Pick<Deps, 'db' | 'config' | 'blobStore'>, projectId: string, rawName: unknown): Promise<{ file: ProjectFileView; stream: Readable }> {
  const name = checkFileName(rawName);
  const row = await findRow(deps.db.sql, projectId, name);
  if (!row) throw notFound(name);
  return { file: view(row), stream: await blobStoreOf(deps).open(row.storage_key) };
}

/** Deletes a file (404 when absent); the audit row is written with it. */
export async function deleteProjectFile(deps: FileDeps, actor: AuditActor, projectId: string, rawName: unknown): Promise<ProjectFileView> {
  const name = checkFileName(rawName);
  const now = deps.clock.now();
  const gone = await inTransaction(deps.db.pool, async (tx) => {
    const [row] = await queryRows<Row>(tx, `DELETE FROM project_files WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`, projectId, name);
    if (!row) throw notFound(name);
    await recordAuditOn(tx, now, actor, { projectId, action: 'file.delete', subject: name, before: { content_type: row.content_type, size: row.size, sha256: row.sha256 } });
    return row;
  });
  await blobStoreOf(deps).delete(gone.storage_key).catch(() => undefined);
  return view(gone);
}

/** What the bot's `files.get` answers: text for plain text, base64 for anything else. */
export type BotFileRead =
  | { ok: true; name: string; contentType: string; size: number; text: string }
  | { ok: true; name: string; contentType: string; size: number; base64: string }
  | { ok: false; error: { code: string; message: string } };

/** A file's content for the bot, at most `maxBytes` (a larger file is `file_too_large`, never a part of it). */
export async function readProjectFileForBot(deps: Pick<Deps, 'db' | 'config' | 'blobStore'>, projectId: string, name: string, maxBytes: number): Promise<BotFileRead> {
  if (!FILE_NAME.test(name) || name.includes('..')) return { ok: false, error: { code: 'invalid_request', message: `"${name.slice(0, 140)}" is not a file name (letters, digits, ".", "_", "-"; never a path).` } };
  const row = await findRow(deps.db.sql, projectId, name);
  if (!row) return { ok: false, error: { code: 'not_found', message: `No file "${name}" in this project.` } };
  if (row.size > maxBytes) return { ok: false, error: { code: 'file_too_large', message: `${name} is ${row.size} bytes; the bot reads files of at most ${maxBytes} bytes (BOT_FILE_READ_MAX_BYTES).` } };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of await blobStoreOf(deps).open(row.storage_key)) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) return { ok: false, error: { code: 'file_too_large', message: `${name} is larger than ${maxBytes} bytes.` } };
    chunks.push(chunk as Buffer);
  }
  const bytes = Buffer.concat(chunks);
  const base = { ok: true as const, name: row.name, contentType: row.content_type, size: bytes.length };
  return row.content_type === TEXT ? { ...base, text: bytes.toString('utf8').replace(/^\uFEFF/, '') } : { ...base, base64: bytes.toString('base64') };
}

/**
 * The media asset of a project file (made on first use and reused until it expires at the channel
 * or the file is replaced), for a send by slug. 404 for an unknown file.
 */
export async function projectFileAsMedia(deps: Deps, projectId: string, rawName: unknown): Promise<{ slug: string; mediaId: string | null; kind: MediaKind }> {
  const name = checkFileName(rawName);
  const row = await findRow(deps.db.sql, projectId, name);
  if (!row) throw notFound(name);
  const kind = kindOf(row.content_type) ?? 'document';
  if (row.media_slug) {
    const existing = await getMediaAsset(deps, projectId, row.media_slug).catch(() => undefined);
    if (existing && !existing.expired) return { slug: existing.slug, mediaId: existing.media_id, kind };
  }
  // The blob is copied to a temporary file, which createMediaAsset consumes (and removes).
  const sink = await TempFileSink.create(Number.MAX_SAFE_INTEGER, 'ceiling', undefined, deps.config.uploadTmpDir);
  try {
    for await (const chunk of await blobStoreOf(deps).open(row.storage_key)) await sink.write(chunk as Buffer);
    await sink.finish();
  } catch (e) {
    await sink.remove();
    throw e;
  }
  const project = await findProject(deps, projectId);
  const media = await createMediaAsset(deps, { id: project.id, name: project.name, status: project.status as 'active' }, { body: { filename: name }, file: sink, multipart: false }, undefined);
  // Remembered only if the file is still the one read (a replacement clears it).
  await execute(deps.db.sql, 'UPDATE project_files SET media_slug = $3 WHERE project_id = $1 AND id = $2', projectId, row.id, media.slug);
  return { slug: media.slug, mediaId: media.media_id, kind };
}
