/**
 * POST /v1/templates/header-sample: a sample file in, a handle for `example.header_handle` out.
 *
 * Policy (spec "POST /v1/templates/header-sample"):
 * - The file comes inline (already decoded into a temporary file by middleware/upload-body.ts,
 *   at most 5 MB) or from `source_url` (downloaded here, at most the format's ceiling and the
 *   remaining budget). Empty is 400 `empty_file`; over the format's ceiling 413 `file_too_large`.
 * - The declared type (`mime`, else the download's Content-Type) must be accepted for the format
 *   and agree with the bytes (./verify.ts); the verified type is what we report and send on.
 * - The handle comes from the channel's Resumable Upload API (the bytes are streamed from the
 *   temporary file) and is recorded in HeaderSample for this project, which is how template
 *   creation knows it as ours. Nothing is recorded unless the channel issued a handle; the
 *   temporary file is always removed.
 */
import { createReadStream } from 'node:fs';
import type { components } from '../../generated/api.js';
import type { Deps } from '../deps.js';
import type { ProjectRef } from '../access/credentials.js';
import { ApiError } from '../platform/errors.js';
import { requireChannel } from '../channel-settings/settings.js';
import { asApiError } from '../channel-port/api-errors.js';
import type { UploadBudget } from './budget.js';
import { fileTooLarge } from './errors.js';
import { fetchSource } from './source.js';
import type { TempFile } from './temp-file.js';
import { cleanFilename, extensionOf, HEADER_RULES, type HeaderFormat } from './types.js';
import { verifyContent } from './verify.js';
import { capability } from '../channel-port/capabilities.js';

type HeaderSampleRequest = components['schemas']['HeaderSampleRequest'];
type HeaderSample = components['schemas']['HeaderSample'];

export function emptyFile(): ApiError {
  return new ApiError('empty_file', 'The file is empty (0 bytes).');
}

export async function createHeaderSample(
  deps: Deps,
  project: ProjectRef,
  body: HeaderSampleRequest,
  inline: TempFile | undefined,
  budget: UploadBudget | undefined,
): Promise<HeaderSample> {
  const format = body.format as HeaderFormat;
  const rule = HEADER_RULES[format];
  const what = `a header sample of format ${format}`;
  const channel = await requireChannel(deps, project.id);

  let file: TempFile;
  let declared: string | undefined;
  let name: string | undefined;
  if ('data' in body) {
    if (!inline) throw new ApiError('invalid_request', 'data must be a base64 string.', { fields: [{ field: 'data', message: 'must be a base64 string' }] });
    file = inline;
    declared = body.mime;
    name = body.filename;
  } else {
    const fetched = await fetchSource(deps, body.source_url, { ceiling: rule.maxBytes, budget, what });
    file = fetched.file;
    declared = body.mime ?? fetched.contentType;
    name = body.filename ?? fetched.filename;
  }
  try {
    if (file.size === 0) throw emptyFile();
    if (file.size > rule.maxBytes) throw fileTooLarge(rule.maxBytes, what);
    const mime = await verifyContent(file, declared, rule.types, what);
    const filename = cleanFilename(name, `sample.${extensionOf(mime)}`);
    let handle: string;
    try {
      ({ handle } = await capability(deps, channel, 'templates').uploadHeaderSample(channel, {
        data: createReadStream(file.path),
        fileName: filename,
        fileType: mime,
        fileLength: file.size,
      }));
    } catch (e) {
      throw asApiError(e);
    }
    await deps.db.prisma.headerSample.create({
      data: { handle, projectId: project.id, format, filename, mimeType: mime, size: file.size, createdAt: deps.clock.now() },
    });
    return { handle, format, filename, mime_type: mime, size: file.size };
  } finally {
    await file.remove();
  }
}

/** The project's header samples, newest first (keyset on created_at, handle): the console's list. */
export function listHeaderSampleRows(deps: Pick<Deps, 'db'>, projectId: string, after: { at: Date; id: string } | undefined, take: number) {
  return deps.db.prisma.headerSample.findMany({
    where: { projectId, ...(after ? { OR: [{ createdAt: { lt: after.at } }, { createdAt: after.at, handle: { lt: after.id } }] } : {}) },
    orderBy: [{ createdAt: 'desc' }, { handle: 'desc' }],
    take,
  });
}
