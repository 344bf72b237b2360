/** Media (/{phone-number-id}/media, /{media-id}) and the Resumable Upload API (template header samples). */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { dispositionFilename, LengthGuard, MIME_RE, type ChannelCredentials, type GraphTransport } from './graph-transport.js';
import type { HeaderSampleInput, MediaDownload, MediaInfo, UploadChunkResult, UploadMediaInput, UploadSessionInput } from '../lib/channel-port/port.js';

// ---------------------------------------------------------------------------------------------
// Media

export type { HeaderSampleInput, MediaInfo, UploadChunkResult, UploadMediaInput, UploadSessionInput };

/** POST /{version}/{phoneNumberId}/media as multipart (messaging_product, type, file), streamed. */
export async function uploadMedia(this: GraphTransport, creds: ChannelCredentials, input: UploadMediaInput): Promise<{ id: string }> {
  if (typeof input?.mimeType !== 'string' || !MIME_RE.test(input.mimeType)) throw new TypeError('CloudApiClient: uploadMedia needs a valid mimeType');
  const boundary = `----service${randomBytes(16).toString('hex')}`;
  const field = (name: string, value: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('messaging_product', 'whatsapp') +
      field('type', input.mimeType) +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; ${dispositionFilename(input.filename ?? 'file')}\r\n` +
      `Content-Type: ${input.mimeType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const isBuf = Buffer.isBuffer(input.data);
  const size = isBuf ? (input.data as Buffer).length : input.size;
  if (size !== undefined && (!Number.isInteger(size) || size < 0)) throw new TypeError('CloudApiClient: uploadMedia size must be a byte count');
  const headers: Record<string, string> = { 'Content-Type': `multipart/form-data; boundary=${boundary}` };
  let data: Buffer | Readable;
  let guard: LengthGuard | null = null;
  if (isBuf) {
    data = Buffer.concat([head, input.data as Buffer, tail]);
  } else {
    const g = new LengthGuard(size);
    guard = g;
    const src = input.data as Readable;
    data = Readable.from(
      (async function* () {
        yield head;
        yield* g.pass(src);
        yield tail;
      })(),
      { objectMode: false },
    );
    if (size !== undefined) headers['Content-Length'] = String(head.length + size + tail.length);
  }
  if (size !== undefined && head.length + size + tail.length > this.maxRequestBytes) {
    if (!isBuf) (input.data as Readable).destroy();
    throw new TypeError(`CloudApiClient: upload of ${size} bytes exceeds the ${this.maxRequestBytes}-byte limit`);
  }
  const b = (await this.withSource(isBuf ? null : (input.data as Readable), () =>
    this.call(creds, { op: 'uploadMedia', method: 'POST', segments: [creds.phoneNumberId, 'media'], data, headers, upload: true }, guard),
  )) as { id?: unknown };
  if (typeof b?.id !== 'string' || !b.id) throw this.unexpected('uploadMedia', 'no media id in the answer');
  return { id: b.id };
}

/** GET /{version}/{mediaId}?phone_number_id=… */
export async function getMedia(this: GraphTransport, creds: ChannelCredentials, mediaId: string): Promise<MediaInfo> {
  const b = (await this.call(creds, { op: 'getMedia', method: 'GET', segments: [mediaId], params: { phone_number_id: creds.phoneNumberId } })) as Record<
    string,
    unknown
  >;
  if (typeof b?.url !== 'string' || typeof b.id !== 'string') throw this.unexpected('getMedia', 'no url or id in the answer');
  const size = Number(b.file_size);
  return {
    id: b.id,
    url: b.url,
    mime_type: typeof b.mime_type === 'string' ? b.mime_type : 'application/octet-stream',
    sha256: typeof b.sha256 === 'string' ? b.sha256 : '',
    file_size: Number.isFinite(size) ? size : 0,
  };
}

/**
 * GET of getMedia's download URL with the project's token (Meta's `lookaside` host, the simulator's
 * attachments route): streamed, bounded by `maxBytes` (declared and counted) and the call deadline.
 * The URL must be http(s) without credentials: it came from the channel, but the token goes nowhere else.
 */
export async function downloadMedia(this: GraphTransport, creds: ChannelCredentials, url: string, maxBytes: number): Promise<MediaDownload> {
  const target = new URL(url);
  if ((target.protocol !== 'https:' && target.protocol !== 'http:') || target.username || target.password) {
    throw this.unexpected('downloadMedia', 'the download URL is not http(s)');
  }
  return this.download(creds, target, maxBytes);
}

/** DELETE /{version}/{mediaId}?phone_number_id=… */
export async function deleteMedia(this: GraphTransport, creds: ChannelCredentials, mediaId: string): Promise<void> {
  await this.call(creds, { op: 'deleteMedia', method: 'DELETE', segments: [mediaId], params: { phone_number_id: creds.phoneNumberId } });
}

/** POST /{version}/{appId}/uploads?file_name=&file_length=&file_type= → "upload:<id>?sig=…" */
export async function createUploadSession(this: GraphTransport, creds: ChannelCredentials, input: UploadSessionInput): Promise<{ sessionId: string }> {
  if (!Number.isInteger(input?.fileLength) || input.fileLength < 1) throw new TypeError('CloudApiClient: fileLength must be a positive byte count');
  if (typeof input.fileType !== 'string' || !MIME_RE.test(input.fileType)) throw new TypeError('CloudApiClient: fileType must be a MIME type');
  const b = (await this.call(creds, {
    op: 'createUploadSession',
    method: 'POST',
    segments: [creds.appId, 'uploads'],
    params: { file_name: input.fileName, file_length: input.fileLength, file_type: input.fileType },
  })) as { id?: unknown };
  if (typeof b?.id !== 'string' || !b.id.startsWith('upload:')) throw this.unexpected('createUploadSession', 'no upload session id in the answer');
  return { sessionId: b.id };
}

/**
 * POST /{version}/upload:<id>?sig=… with `Authorization: OAuth <token>`, `file_offset` and the raw
 * bytes. Returns the file handle once the whole file is in, else the offset to continue from.
 * `length` (bytes of `data`) gives a stream a Content-Length; it is checked.
 */
export async function uploadToSession(this: GraphTransport, creds: ChannelCredentials, sessionId: string, data: Buffer | Readable, offset = 0, length?: number): Promise<UploadChunkResult> {
  if (!Number.isInteger(offset) || offset < 0) throw new TypeError('CloudApiClient: offset must be a byte offset');
  const rawNode = this.sessionNode(sessionId);
  const headers: Record<string, string> = { 'Content-Type': 'application/octet-stream', file_offset: String(offset) };
  let body: Buffer | Readable = data;
  let guard: LengthGuard | null = null;
  if (!Buffer.isBuffer(data)) {
    if (length !== undefined && (!Number.isInteger(length) || length < 0)) throw new TypeError('CloudApiClient: length must be a byte count');
    const g = new LengthGuard(length);
    guard = g;
    body = Readable.from(g.pass(data), { objectMode: false });
    if (length !== undefined) headers['Content-Length'] = String(length);
  }
  const b = (await this.withSource(Buffer.isBuffer(data) ? null : data, () =>
    this.call(creds, { op: 'uploadToSession', method: 'POST', segments: [], rawNode, data: body, headers, scheme: 'OAuth', upload: true }, guard),
  )) as { h?: unknown; file_offset?: unknown };
  if (typeof b?.h === 'string' && b.h) return { handle: b.h };
  const next = Number(b?.file_offset);
  if (Number.isInteger(next) && next >= 0) return { fileOffset: next };
  throw this.unexpected('uploadToSession', 'neither a handle nor a file offset in the answer');
}

/** Session + one upload: the handle for a template's media header example. */
export async function uploadHeaderSample(this: GraphTransport, creds: ChannelCredentials, input: HeaderSampleInput): Promise<{ handle: string }> {
  const length = Buffer.isBuffer(input.data) ? input.data.length : input.fileLength;
  if (length === undefined) throw new TypeError('CloudApiClient: uploadHeaderSample needs fileLength for a stream');
  const { sessionId } = await createUploadSession.call(this, creds, { fileName: input.fileName, fileLength: length, fileType: input.fileType });
  const r = await uploadToSession.call(this, creds, sessionId, input.data, 0, Buffer.isBuffer(input.data) ? undefined : length);
  if (!r.handle) throw this.unexpected('uploadToSession', `the upload stopped at offset ${r.fileOffset} of ${length}`);
  return { handle: r.handle };
}
