/**
 * The console's files and media page (issue 47, item 4: the spec's "storage uploads"): the
 * project's files with the quota used (upload, download, delete, and turn one into a media asset),
 * its media assets (delete) and its template header samples. Everything goes through the domain
 * functions of the operator API and /v1 (lib/project-files/store.ts, lib/media/assets.ts,
 * lib/media/header-sample.ts), which verify the type from the bytes, hold the quota and write the
 * audit rows; owners and admins change, members read and download.
 *
 * The upload is a multipart form (it works without script; dashboard.js adds a progress bar). It
 * is routed before the dashboard's form parser and streamed: the session, the role and the CSRF
 * field (which the form puts before the file) are checked before a byte of the file is stored, then
 * the file part goes straight into saveProjectFile, which refuses as soon as it passes what the
 * quota leaves. A body that ends before the file part did, or a client that goes away, stops the
 * store with nothing kept (saveProjectFile writes a row only after the whole file was read).
 */
import busboy from 'busboy';
import { PassThrough, type Readable } from 'node:stream';
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { canManage } from '../../lib/accounts/roles.js';
import { csrfMatches } from '../../lib/accounts/csrf.js';
import { DashboardRefusal } from '../../lib/accounts/refusal.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { ApiError } from '../../lib/platform/errors.js';
import { cursorScope, cursorSecretOf } from '../../lib/platform/cursor.js';
import { keysetPage, positions } from '../../lib/platform/keyset-page.js';
import { deleteProjectFile, FILE_NAME, listProjectFiles, openProjectFile, projectFileAsMedia, saveProjectFile, type ProjectFileView } from '../../lib/project-files/store.js';
import { deleteMediaAsset, listMediaRows, mediaView } from '../../lib/media/assets.js';
import { createHeaderSample, listHeaderSampleRows } from '../../lib/media/header-sample.js';
import { HEADER_RULES, kindOf, MEDIA_MAX_BYTES, type HeaderFormat } from '../../lib/media/types.js';
import { fileTooLarge } from '../../lib/media/errors.js';
import { LimitExceeded, TempFileSink } from '../../lib/media/temp-file.js';
import { html, when, type Html } from './html.js';
import { csrfField, layout, projectPath } from './layout.js';
import { cookie, send, SESSION_COOKIE } from './request.js';
import { projectContext } from './context.js';
import { bytes, changeOnce, count, onceField, usage } from './console-kit.js';
import type { PageRoute } from './page-routes.js';

const MANAGERS = ['owner', 'admin'] as const;
/** Files a page shows (the operator API lists them all: at most PROJECT_FILES_MAX); by name, `?after=`. */
export const FILES_PAGE = 50;
/** Media assets and header samples a page shows (the bounds of /v1/media). */
const MEDIA_PAGE = 20;
/** Multipart overhead allowed above the largest file before the rest of a body is no longer read. */
export const FORM_OVERHEAD_BYTES = 64 * 1024;

const filesPath = (projectId: string, rest = '') => projectPath(projectId, `/files${rest}`);

interface Kept {
  error?: string;
  status?: number;
}

/** One keyset page of the project's files by name (names are unique), after `after`. */
function filesPage(all: ProjectFileView[], after: unknown): { page: ProjectFileView[]; next: string | null } {
  const from = typeof after === 'string' && FILE_NAME.test(after) ? all.findIndex((f) => f.name > after) : 0;
  const rest = from < 0 ? [] : all.slice(from);
  const page = rest.slice(0, FILES_PAGE);
  return { page, next: rest.length > FILES_PAGE ? page[page.length - 1].name : null };
}

/** One page of a newest-first list (media, header samples) by keyset, as /v1/media pages. */
function newestFirst<Row>(deps: AppDeps, projectId: string, list: string, cursor: unknown, read: (after: Position | undefined, take: number) => Promise<Row[]>, encode: (row: Row) => unknown[]) {
  return keysetPage({ cursor: typeof cursor === 'string' ? cursor : undefined }, {
    scope: cursorScope(list, projectId),
    secret: cursorSecretOf(deps),
    decode: positions.timeAndText,
    read,
    encode,
    bounds: { default: MEDIA_PAGE, max: MEDIA_PAGE },
  });
}
type Position = ReturnType<typeof positions.timeAndText>;

async function renderFiles(deps: AppDeps, req: Request, res: Response, kept: Kept = {}) {
  const ctx = await projectContext(deps, req, 'files');
  const projectId = ctx.project.id;
  const [listed, media, samples] = await Promise.all([
    listProjectFiles(deps, projectId),
    newestFirst(deps, projectId, 'consoleMedia', req.query.media, (after, take) => listMediaRows(deps, projectId, after, take), (r) => [r.createdAt.getTime(), r.id]),
    newestFirst(deps, projectId, 'consoleHeaderSamples', req.query.samples, (after, take) => listHeaderSampleRows(deps, projectId, after, take), (r) => [r.createdAt.getTime(), r.handle]),
  ]);
  const files = filesPage(listed.files, req.query.after);
  const manage = canManage(ctx.role);
  const path = filesPath(projectId);
  const now = deps.clock.now();
  const post = (action: string, label: Html, confirm?: string, cls = '') =>
    html`<form method="post" action="${action}" class="inline"${confirm ? html` data-confirm="${confirm}"` : ''}>${csrfField(ctx.csrf)}${onceField()}<button type="submit"${cls ? html` class="${cls}"` : ''}>${label}</button></form>`;
  const u = listed.usage;
  const body = html`<section class="card" aria-labelledby="quota-title"><h2 id="quota-title">Quota of the project's files</h2>
  ${usage('Files', u.files, u.max_files, count)}
  ${usage('Storage', u.bytes, u.max_bytes, bytes)}
</section>
${manage ? html`<section class="card" aria-labelledby="upload-title"><h2 id="upload-title">Upload a file</h2>
<p class="muted">Images, video, audio, PDF and Office documents, and plain UTF-8 text (JSON, CSV): the type is read from the file's bytes, whatever its name says. One file is at most ${bytes(MEDIA_MAX_BYTES)}. A name that exists is replaced.</p>
<form method="post" action="${path}/upload" enctype="multipart/form-data" data-upload>${csrfField(ctx.csrf)}${onceField()}
  <label for="upload-name">Name (empty: the file's own name)</label><input id="upload-name" name="name" type="text" pattern="${FILE_NAME.source.slice(1, -1)}" placeholder="menu.pdf" autocomplete="off">
  <label for="upload-file">File</label><input id="upload-file" name="file" type="file" required>
  <div class="actions"><button type="submit" class="primary">Upload</button></div>
  <p class="upload-progress" hidden><progress max="100" value="0" aria-label="Upload progress">0%</progress> <span class="upload-status" role="status"></span></p>
</form></section>` : html`<p class="muted">Your role (${ctx.role}) sees and downloads the files; owners and admins change them.</p>`}
<h2 id="files-title">Files</h2>
${files.page.length
    ? html`<div class="table-wrap"><table class="stack" id="files" aria-labelledby="files-title"><thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Size</th><th scope="col">SHA-256</th><th scope="col">Changed</th>${manage ? html`<th scope="col">Change</th>` : ''}</tr></thead><tbody>
${files.page.map((f) => html`<tr><td data-label="Name"><a href="${filesPath(projectId, `/${encodeURIComponent(f.name)}/download`)}" download>${f.name}</a></td><td data-label="Type">${f.content_type}</td><td data-label="Size">${bytes(f.size)}</td><td data-label="SHA-256"><code title="${f.sha256}">${f.sha256.slice(0, 12)}…</code></td><td data-label="Changed">${when(f.updated_at)}</td>
${manage ? html`<td data-label="Change">${post(filesPath(projectId, `/${encodeURIComponent(f.name)}/media`), html`Make media<span class="visually-hidden"> of ${f.name}</span>`)} ${kindOf(f.content_type) && kindOf(f.content_type) !== 'audio' ? post(filesPath(projectId, `/${encodeURIComponent(f.name)}/header-sample`), html`Header sample<span class="visually-hidden"> of ${f.name}</span>`) : ''} ${post(filesPath(projectId, `/${encodeURIComponent(f.name)}/delete`), html`Delete<span class="visually-hidden"> ${f.name}</span>`, `Delete the file ${f.name}? The bot's files.get reads not_found from then on.`, 'danger')}</td>` : ''}</tr>`)}
</tbody></table></div>${files.next ? html`<p><a href="${filesPath(projectId, `?after=${encodeURIComponent(files.next)}`)}">Next files</a></p>` : ''}`
    : html`<p class="muted">${req.query.after ? 'No more files.' : 'No files yet.'}</p>`}
<h2 id="media-title">Media assets</h2>
<p class="muted">Uploaded to the channel, sent by their slug; the channel keeps them 30 days, then upload again. Made by <code>POST /v1/media</code>, the bot, or <em>Make media</em> above.</p>
${media.page.length
    ? html`<div class="table-wrap"><table class="stack" id="media" aria-labelledby="media-title"><thead><tr><th scope="col">Slug</th><th scope="col">File name</th><th scope="col">Kind</th><th scope="col">Size</th><th scope="col">Uploaded</th><th scope="col">Channel keeps it until</th>${manage ? html`<th scope="col">Change</th>` : ''}</tr></thead><tbody>
${media.page.map((row) => {
  const m = mediaView(row, now);
  return html`<tr><td data-label="Slug"><code>${m.slug}</code></td><td data-label="File name">${m.filename}</td><td data-label="Kind">${m.kind} (${m.mime_type})</td><td data-label="Size">${bytes(m.size)}</td><td data-label="Uploaded">${when(m.created_at)}</td><td data-label="Channel keeps it until">${m.expired ? html`<span class="status">expired</span>` : when(m.expires_at)}</td>
${manage ? html`<td data-label="Change">${post(filesPath(projectId, `/media/${encodeURIComponent(m.slug)}/delete`), html`Delete<span class="visually-hidden"> ${m.slug}</span>`, `Delete the media asset ${m.slug}? Sends by this slug are refused from then on.`, 'danger')}</td>` : ''}</tr>`;
})}</tbody></table></div>${media.nextCursor ? html`<p><a href="${filesPath(projectId, `?media=${encodeURIComponent(media.nextCursor)}`)}">Older media</a></p>` : ''}`
    : html`<p class="muted">No media assets.</p>`}
<h2 id="samples-title">Template header samples</h2>
<p class="muted">Sample files for a template's media header (<code>POST /v1/templates/header-sample</code>, or <em>Header sample</em> of a file above): the channel's handle goes in the template's <code>example.header_handle</code>.</p>
${samples.page.length
    ? html`<div class="table-wrap"><table class="stack" id="samples" aria-labelledby="samples-title"><thead><tr><th scope="col">Handle</th><th scope="col">Format</th><th scope="col">File name</th><th scope="col">Type</th><th scope="col">Size</th><th scope="col">Uploaded</th></tr></thead><tbody>
${samples.page.map((s) => html`<tr><td data-label="Handle"><code>${s.handle}</code></td><td data-label="Format">${s.format}</td><td data-label="File name">${s.filename}</td><td data-label="Type">${s.mimeType}</td><td data-label="Size">${bytes(s.size)}</td><td data-label="Uploaded">${when(s.createdAt)}</td></tr>`)}
</tbody></table></div>${samples.nextCursor ? html`<p><a href="${filesPath(projectId, `?samples=${encodeURIComponent(samples.nextCursor)}`)}">Older samples</a></p>` : ''}`
    : html`<p class="muted">No header samples.</p>`}`;
  send(res, kept.status ?? 200, layout(ctx.shell('Files and media', { error: kept.error }), body));
}

export const showFiles = (deps: AppDeps) => (req: Request, res: Response) => renderFiles(deps, req, res);

/** A refusal of the domain (or of the upload itself) shown on the files page; anything else goes on to the error page. */
function refusalOf(e: unknown): Kept | undefined {
  if ((e instanceof ApiError || e instanceof DashboardRefusal) && e.status < 500) return { error: e.message, status: e.status };
  return undefined;
}

export const downloadFile = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { project } = await projectContext(deps, req, 'files');
  const { file, stream } = await openProjectFile(deps, project.id, String(req.params.name));
  // As the operator API: bytes, never rendered by the browser as a page (the name is one plain segment).
  res.status(200).set({
    'Content-Type': 'application/octet-stream',
    'Content-Length': String(file.size),
    'Content-Disposition': `attachment; filename="${file.name}"`,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'private, no-store',
  });
  stream.on('error', (e) => {
    deps.logger.error('dashboard: file download failed', { error: e instanceof Error ? e.message : String(e) });
    res.destroy();
  });
  stream.pipe(res);
};

/** A form of the page that changes one thing: role, one effect, a refusal shown on the page. */
const change = (what: string, run: (deps: AppDeps, ctx: Awaited<ReturnType<typeof projectContext>>, req: Request) => Promise<string>) => (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'files', MANAGERS, what);
  try {
    await changeOnce(deps, req, res, ctx.project.id, () => run(deps, ctx, req));
  } catch (e) {
    const r = refusalOf(e);
    if (!r) throw e;
    await renderFiles(deps, req, res, { error: `Not done: ${r.error}`, status: r.status });
  }
};

export const submitDeleteFile = change('delete files', async (deps, ctx, req) => {
  await deleteProjectFile(deps, ctx.actor, ctx.project.id, String(req.params.name));
  return filesPath(ctx.project.id, '?done=file_deleted');
});

export const submitFileAsMedia = change('make media', async (deps, ctx, req) => {
  await projectFileAsMedia(deps, ctx.project.id, String(req.params.name));
  return filesPath(ctx.project.id, '?done=file_media');
});

const HEADER_FORMATS: Record<string, HeaderFormat> = { image: 'IMAGE', video: 'VIDEO', document: 'DOCUMENT' };

/** A file as a template header sample: its bytes go to createHeaderSample as POST /v1/templates/header-sample's inline file. */
export const submitFileAsHeaderSample = change('make header samples', async (deps, ctx, req) => {
  const { file, stream } = await openProjectFile(deps, ctx.project.id, String(req.params.name));
  const format = HEADER_FORMATS[kindOf(file.content_type) ?? ''];
  if (!format) {
    stream.destroy();
    throw new ApiError('invalid_request', `A template header sample is an image, a video or a document; ${file.name} is ${file.content_type}.`);
  }
  const { maxBytes } = HEADER_RULES[format];
  const sink = await TempFileSink.create(maxBytes, 'ceiling', undefined, deps.config.uploadTmpDir);
  try {
    for await (const chunk of stream) await sink.write(chunk as Buffer);
    await sink.finish();
  } catch (e) {
    stream.destroy();
    await sink.remove();
    throw e instanceof LimitExceeded ? fileTooLarge(maxBytes, `a header sample of format ${format}`) : e;
  }
  try {
    await createHeaderSample(deps, { id: ctx.project.id, name: ctx.project.name, status: ctx.project.status as 'active' }, { format, data: '', filename: file.name, mime: file.content_type }, sink, undefined);
  } finally {
    await sink.remove();
  }
  return filesPath(ctx.project.id, '?done=header_sample');
});

export const submitDeleteMedia = change('delete media', async (deps, ctx, req) => {
  await deleteMediaAsset(deps, { id: ctx.project.id, name: ctx.project.name, status: ctx.project.status as 'active' }, String(req.params.slug));
  return filesPath(ctx.project.id, '?done=media_deleted');
});

const interrupted = () => new DashboardRefusal(400, 'The upload was interrupted before the whole file arrived; nothing was stored. Send it again.');

/**
 * Reads the multipart body: its text fields, then hands the one file part (`file`) to `onFile`
 * as a stream. Settles when the whole body was read (the rest of a refused file is read and
 * dropped, so the answer reaches the browser), or at once when the body passes `maxBytes` or the
 * client goes away.
 */
export function streamUpload(req: Request, maxBytes: number, onFile: (fields: Record<string, string>, file: Readable, filename: string) => Promise<void>): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers, limits: { files: 1, fields: 10, fieldSize: 1024, parts: 12, fieldNameSize: 100 } });
    } catch {
      reject(new DashboardRefusal(400, 'The upload could not be read (send it with the page’s form).'));
      return;
    }
    const fields: Record<string, string> = {};
    let work: Promise<void> | undefined;
    let file: PassThrough | undefined;
    let settled = false;
    const finish = (e?: unknown) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('close', onClose);
      void (work ?? Promise.resolve()).then(
        () => (e ? reject(e) : resolve(fields)),
        (failure) => reject(failure),
      );
    };
    const stop = (e: unknown) => {
      file?.destroy(e as Error);
      req.unpipe(bb);
      finish(e);
    };
    let total = 0;
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > maxBytes) stop(new DashboardRefusal(413, `The upload is larger than ${bytes(maxBytes)}; nothing was stored.`));
    };
    const onClose = () => {
      if (!req.complete) stop(interrupted());
    };
    req.on('data', onData);
    req.on('close', onClose);
    bb.on('field', (name, value, info) => {
      if (!info.valueTruncated) fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || work) {
        stream.resume();
        return;
      }
      const pass = new PassThrough();
      // Its reader (saveProjectFile) sees a cut as the error of its read; before or after it reads, nobody else must.
      pass.on('error', () => undefined);
      file = pass;
      stream.on('error', () => pass.destroy(interrupted()));
      stream.pipe(pass);
      work = onFile(fields, pass, info.filename ?? '').finally(() => {
        // Whatever was not read of a refused file is dropped, so busboy reads on to the end.
        stream.unpipe(pass);
        stream.resume();
      });
      work.catch(() => undefined);
    });
    bb.on('error', () => stop(interrupted()));
    bb.on('close', () => finish());
    req.pipe(bb);
  });
}

/**
 * POST files/upload (routed before the form parser and the session middleware: this handler reads
 * the session and checks the CSRF field itself, before any of the file is stored).
 */
export const submitUpload = (deps: AppDeps) => async (req: Request, res: Response) => {
  try {
    req.dashboardSession = (await resolveSession(deps, cookie(req, SESSION_COOKIE))) ?? undefined;
    if (!req.dashboardSession) throw new DashboardRefusal(401, 'Your session has ended. Sign in again; nothing was stored.');
    const ctx = await projectContext(deps, req, 'files', MANAGERS, 'upload files');
    if (!req.is('multipart/form-data')) throw new DashboardRefusal(400, 'Send the file with the page’s upload form (multipart/form-data); nothing was stored.');
    const session = req.dashboardSession;
    let stored = false;
    const fields = await streamUpload(req, MEDIA_MAX_BYTES + FORM_OVERHEAD_BYTES, async (form, file, filename) => {
      if (!csrfMatches(session, form._csrf)) throw new DashboardRefusal(403, 'This form could not be verified (its security token is missing or out of date). Reload the page and try again; nothing was stored.');
      const name = (form.name ?? '').trim() || filename;
      req.body = { ...form, name };
      await changeOnce(deps, req, res, ctx.project.id, async () => {
        const { created } = await saveProjectFile(deps, ctx.actor, ctx.project.id, name, file);
        return filesPath(ctx.project.id, `?done=${created ? 'file_uploaded' : 'file_replaced'}`);
      });
      stored = true;
    });
    if (!stored) {
      if (!csrfMatches(session, fields._csrf)) throw new DashboardRefusal(403, 'This form could not be verified (its security token is missing or out of date). Reload the page and try again; nothing was stored.');
      throw new ApiError('invalid_request', 'Choose a file to upload.');
    }
  } catch (e) {
    if (!req.readableEnded) {
      // Refused before the whole body was read: the answer goes out and the connection closes after it.
      res.setHeader('Connection', 'close');
      req.resume();
    }
    if (res.headersSent) return;
    // The reason on the files page (a wrong type, the quota, an interrupted body, a refused role or
    // form); without a session, or for anything unexpected, the error page.
    const r = refusalOf(e);
    if (!r || !req.dashboardSession || r.status === 401) throw e;
    await renderFiles(deps, req, res, { error: `Not uploaded: ${r.error}`, status: r.status });
  }
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const fileRoutes: PageRoute[] = [
  // Multipart and streamed: mounted before the form parser; the page reads the session and checks the CSRF field itself.
  { method: 'post', path: '/projects/:projectId/files/upload', handler: submitUpload, stage: 'stream' },
  { method: 'get', path: '/projects/:projectId/files', handler: showFiles },
  { method: 'get', path: '/projects/:projectId/files/:name/download', handler: downloadFile },
  { method: 'post', path: '/projects/:projectId/files/:name/delete', handler: submitDeleteFile },
  { method: 'post', path: '/projects/:projectId/files/:name/media', handler: submitFileAsMedia },
  { method: 'post', path: '/projects/:projectId/files/:name/header-sample', handler: submitFileAsHeaderSample },
  { method: 'post', path: '/projects/:projectId/files/media/:slug/delete', handler: submitDeleteMedia },
];
