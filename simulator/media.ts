/**
 * Media (POST /:phoneNumberId/media multipart, GET/DELETE /:mediaId, download URLs) and the Resumable
 * Upload API (POST /:appId/uploads, POST/GET /upload:<session>) whose handles serve as template examples.
 */
import busboy from 'busboy';
import { recordForm } from './request-log.js';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { baseUrl, postedNode, requireAnyToken, requireToken, tokenOf, type SimContext } from './context.js';
import { GraphError, paramError, unsupportedRequest, waError } from './errors.js';
import { fileHandle, numericId, uploadSessionId } from './ids.js';
import type { Media, SimState, UploadSession } from './state.js';

const MB = 1024 * 1024;
const AUDIO = { kind: 'audio', max: 16 * MB };
const DOC = { kind: 'document', max: 100 * MB };
export const MEDIA_MIME: Record<string, { kind: string; max: number }> = {
  'audio/aac': AUDIO, 'audio/amr': AUDIO, 'audio/mpeg': AUDIO, 'audio/mp4': AUDIO, 'audio/ogg': AUDIO,
  'text/plain': DOC, 'application/pdf': DOC, 'application/vnd.ms-powerpoint': DOC, 'application/msword': DOC,
  'application/vnd.ms-excel': DOC,
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': DOC,
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': DOC,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': DOC,
  'image/jpeg': { kind: 'image', max: 5 * MB }, 'image/png': { kind: 'image', max: 5 * MB },
  'image/webp': { kind: 'sticker', max: 500 * 1024 },
  'video/3gpp': { kind: 'video', max: 16 * MB }, 'video/mp4': { kind: 'video', max: 16 * MB },
};
const UPLOAD_TYPES = ['application/pdf', 'image/jpeg', 'image/jpg', 'image/png', 'video/mp4'];
const URL_TTL_SEC = 300;
const HANDLE_TTL_MS = 30 * 24 * 3600 * 1000;
const URL_KEY = randomBytes(32);

const baseMime = (m: string) => m.split(';')[0].trim().toLowerCase();
const tooLarge = (limit: number) => new GraphError(413, paramError('Request body too large', `The request body exceeds ${Math.round(limit / MB)} MB.`).body);

/** Store bytes as a media object owned by a phone number. */
export function storeMedia(state: SimState, pnid: string, mime: string, data: Buffer, filename: string | null): Media {
  const m: Media = {
    id: numericId(16),
    pnid,
    mime_type: mime,
    sha256: createHash('sha256').update(data).digest('hex'),
    size: data.length,
    data,
    filename,
    createdMs: state.nowMs(),
  };
  state.addMedia(m);
  return m;
}

export function uploadMedia(ctx: SimContext) {
  return async (req: Request, res: Response): Promise<void> => {
    const { state } = ctx;
    const pn = postedNode(state, req);
    const limit = state.limits.uploadLimitBytes;
    const form = await new Promise<{ fields: Record<string, string>; file: { data: Buffer; mime: string; name: string } | null; truncated: boolean }>((resolve, reject) => {
      let bb: busboy.Busboy;
      try {
        bb = busboy({ headers: req.headers, limits: { fileSize: limit, files: 1, fields: 20 } });
      } catch {
        reject(paramError('The parameter file is required.', 'Send multipart/form-data with messaging_product, type and file.'));
        return;
      }
      const fields: Record<string, string> = {};
      let file: { data: Buffer; mime: string; name: string } | null = null;
      let truncated = false;
      bb.on('field', (k, v) => (fields[k] = v));
      bb.on('file', (field, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('limit', () => (truncated = true));
        stream.on('end', () => {
          if (field === 'file') file = { data: Buffer.concat(chunks), mime: info.mimeType, name: info.filename ?? '' };
        });
      });
      bb.on('close', () => resolve({ fields, file, truncated }));
      bb.on('error', (e) => reject(paramError('Invalid parameter', `Malformed multipart body: ${(e as Error).message}`)));
      req.pipe(bb);
    });
    recordForm(res, form.fields, form.file ? { bytes: form.file.data.length, mime: form.file.mime, name: form.file.name } : null);
    if (form.truncated) throw tooLarge(limit);
    if (form.fields.messaging_product === undefined) throw paramError('The parameter messaging_product is required.');
    if (form.fields.messaging_product !== 'whatsapp') throw paramError(`Param messaging_product must be one of {WHATSAPP} - got "${form.fields.messaging_product}".`);
    if (!form.file) throw paramError('The parameter file is required.');
    const mime = baseMime(form.fields.type ?? form.file.mime);
    const spec = MEDIA_MIME[mime];
    if (!spec) {
      throw paramError(`Param file must be a file with one of the following types: ${Object.keys(MEDIA_MIME).join(', ')}. Received file of type '${mime}'.`);
    }
    if (form.file.data.length === 0) throw waError(131053, 'The uploaded file is empty.');
    if (form.file.data.length > spec.max) {
      throw waError(131053, `Media file size too big. Max file size we currently support: ${Math.round(spec.max / 1024)}KB. Please upload a smaller file.`);
    }
    const m = storeMedia(state, pn.phone_number_id, mime, form.file.data, form.file.name || null);
    res.json({ id: m.id });
  };
}

function urlHash(id: string, ext: number): string {
  return createHmac('sha256', URL_KEY).update(`${id}:${ext}`).digest('base64url').slice(0, 22);
}

/** GET /:version/:mediaId */
export function getMedia(ctx: SimContext, req: Request, res: Response, m: Media): void {
  const pn = ctx.state.phones.get(m.pnid);
  if (!pn) throw unsupportedRequest('get', m.id);
  requireToken(req, pn);
  if (typeof req.query.phone_number_id === 'string' && req.query.phone_number_id !== m.pnid) throw unsupportedRequest('get', m.id);
  if (!ctx.state.liveMedia(m.id)) throw unsupportedRequest('get', m.id);
  const ext = ctx.state.nowSec() + URL_TTL_SEC;
  res.json({
    messaging_product: 'whatsapp',
    url: `${baseUrl(ctx, req)}/whatsapp_business/attachments/?mid=${m.id}&ext=${ext}&hash=${urlHash(m.id, ext)}`,
    mime_type: m.mime_type,
    sha256: m.sha256,
    file_size: String(m.size),
    id: m.id,
  });
}

/** DELETE /:version/:mediaId */
export function deleteMedia(ctx: SimContext, req: Request, res: Response, m: Media): void {
  const pn = ctx.state.phones.get(m.pnid);
  if (!pn) throw unsupportedRequest('delete', m.id);
  requireToken(req, pn);
  if (!ctx.state.liveMedia(m.id)) throw unsupportedRequest('delete', m.id);
  ctx.state.dropMedia(m);
  ctx.state.media.delete(m.id);
  res.json({ success: true });
}

/** GET /whatsapp_business/attachments/?mid=&ext=&hash= — needs the owner's Bearer token, valid 5 minutes. */
export function downloadMedia(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const { mid, ext, hash } = req.query as Record<string, string | undefined>;
    const m = mid ? ctx.state.media.get(mid) : undefined;
    const extN = Number(ext);
    if (!m || !hash || hash !== urlHash(m.id, extN)) {
      res.status(404).type('text/plain').send('Not Found');
      return;
    }
    const pn = ctx.state.phones.get(m.pnid);
    if (!pn || tokenOf(req) !== pn.access_token) {
      res.status(401).type('text/plain').send('Unauthorized');
      return;
    }
    const live = ctx.state.liveMedia(m.id);
    if (!live || !live.data || extN < ctx.state.nowSec()) {
      res.status(404).type('text/plain').send('URL signature expired');
      return;
    }
    res.status(200).set('content-type', live.mime_type).set('content-length', String(live.size));
    if (live.filename) res.set('content-disposition', `attachment; filename="${live.filename.replace(/["\\\r\n]/g, '_')}"`);
    res.end(live.data);
  };
}

// ---- Resumable Upload API ----

export function createUploadSession(ctx: SimContext) {
  return (req: Request, res: Response): void => {
    const { state } = ctx;
    const pn = postedNode(state, req, state.byApp);
    const q = { ...(req.query as Record<string, unknown>), ...(typeof req.body === 'object' && req.body ? req.body : {}) };
    const length = Number(q.file_length);
    if (q.file_length === undefined) throw paramError('The parameter file_length is required.');
    if (!Number.isInteger(length) || length < 1) throw paramError('Invalid parameter', 'Param file_length must be a positive integer.');
    if (length > state.limits.uploadLimitBytes) throw paramError('Invalid parameter', `Param file_length must be at most ${state.limits.uploadLimitBytes} bytes.`);
    const type = typeof q.file_type === 'string' ? q.file_type.toLowerCase() : undefined;
    if (!type) throw paramError('The parameter file_type is required.');
    if (!UPLOAD_TYPES.includes(type)) throw paramError(`Param file_type must be one of {${UPLOAD_TYPES.join(', ')}} - got "${type}".`);
    const { id, key } = uploadSessionId();
    const s: UploadSession = {
      id, key, app_id: pn.app_id, pnid: pn.phone_number_id,
      file_name: typeof q.file_name === 'string' ? q.file_name : 'file',
      file_length: length, file_type: type === 'image/jpg' ? 'image/jpeg' : type, offset: 0, chunks: [], handle: null,
    };
    state.uploads.set(key, s);
    res.json({ id });
  };
}

function sessionOf(ctx: SimContext, req: Request): UploadSession {
  const node = String(req.params.node);
  const key = node.slice('upload:'.length).split('?')[0];
  const s = ctx.state.uploads.get(key);
  if (!s) {
    requireAnyToken(ctx.state, req);
    throw unsupportedRequest(req.method, node);
  }
  const pn = ctx.state.phones.get(s.pnid);
  if (!pn) throw unsupportedRequest(req.method, node);
  requireToken(req, pn);
  return s;
}

/** POST /:version/upload:<session> with header file_offset and the raw bytes. */
export function uploadChunk(ctx: SimContext, req: Request, res: Response): void {
  const s = sessionOf(ctx, req);
  if (s.handle) {
    res.json({ h: s.handle });
    return;
  }
  const rawOffset = req.get('file_offset');
  if (rawOffset === undefined) throw paramError('The parameter file_offset is required.', 'Send file_offset as an HTTP header.');
  const offset = Number(rawOffset);
  if (!Number.isInteger(offset) || offset !== s.offset) {
    throw paramError('Invalid parameter', `file_offset ${rawOffset} does not match the session's current offset ${s.offset}.`);
  }
  const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (body.length === 0) throw paramError('Invalid parameter', 'The request body (file bytes) is empty.');
  if (s.offset + body.length > s.file_length) throw paramError('Invalid parameter', `The upload exceeds file_length (${s.file_length}).`);
  s.chunks.push(body);
  s.offset += body.length;
  if (s.offset < s.file_length) {
    res.json({ id: s.id, file_offset: s.offset });
    return;
  }
  const expiresMs = ctx.state.nowMs() + HANDLE_TTL_MS;
  s.handle = fileHandle(s.file_type, Math.floor(expiresMs / 1000));
  s.chunks = [];
  ctx.state.handles.set(s.handle, { pnid: s.pnid, mime: s.file_type, size: s.file_length, expiresMs, used: false });
  res.json({ h: s.handle });
}

/** GET /:version/upload:<session> */
export function uploadStatus(ctx: SimContext, req: Request, res: Response): void {
  const s = sessionOf(ctx, req);
  res.json({ id: s.id, file_offset: s.offset });
}
