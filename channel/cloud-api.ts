/**
 * WhatsApp Cloud API client: every upstream call the service makes goes through here (Meta's Graph
 * API in production, the simulator in development and tests).
 *
 * - One axios instance with keep-alive agents, bounded sockets, no redirects, bounded bodies, and
 *   `validateStatus: () => true`: statuses are mapped here, into ChannelError (./errors.ts).
 * - The access token travels only in the Authorization header (never in a URL), is never logged,
 *   and is scrubbed from any provider text copied into an error.
 * - Every call has a deadline (`timeoutMs`; uploads `uploadTimeoutMs`) covering connect, send and
 *   reading the answer.
 */
import axios, { type AxiosInstance, type AxiosResponse, type Method } from 'axios';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import type { Logger } from '../lib/logger.js';
import {
  ChannelError,
  channelErrorFromResponse,
  channelErrorFromTransport,
  scrub,
  type ChannelOperation,
} from './errors.js';

// ---------------------------------------------------------------------------------------------
// Credentials and options

export interface ChannelCredentials {
  phoneNumberId: string;
  wabaId: string;
  appId: string;
  accessToken: string;
}

export interface CloudApiClientOptions {
  /** e.g. http://127.0.0.1:4010 (simulator) or https://graph.facebook.com */
  baseUrl: string;
  /** Graph API version, e.g. 'v21.0' */
  version: string;
  /** Deadline of one JSON call (connect, send, answer). */
  timeoutMs: number;
  /** Deadline of one upload (media, resumable upload chunk). Default max(timeoutMs, 120 s). */
  uploadTimeoutMs?: number;
  logger?: Logger;
  /** Sockets per upstream host. Default 256. */
  maxSockets?: number;
  /** Largest response body accepted. Default 8 MB. */
  maxResponseBytes?: number;
  /** Largest request body sent (uploads). Default 110 MB (Meta's document limit is 100 MB, plus multipart framing). */
  maxRequestBytes?: number;
  /** Default 'messaging-service/1.0 (+whatsapp-cloud-api)'. */
  userAgent?: string;
}

// ---------------------------------------------------------------------------------------------
// Message payloads (POST /{phone-number-id}/messages), as Meta documents them

/** A media object: an uploaded media id or a public link, never both. */
export type GraphMediaRef = { id: string; link?: never } | { link: string; id?: never };
export type GraphCaptionedMedia = GraphMediaRef & { caption?: string };
export type GraphDocumentMedia = GraphMediaRef & { caption?: string; filename?: string };

/** Parameters of template `header` and `body` components. */
export type GraphTemplateParameter =
  | { type: 'text'; text: string; parameter_name?: string }
  | { type: 'currency'; currency: { fallback_value: string; code: string; amount_1000: number }; parameter_name?: string }
  | { type: 'date_time'; date_time: { fallback_value: string }; parameter_name?: string }
  | { type: 'image'; image: GraphMediaRef }
  | { type: 'video'; video: GraphMediaRef }
  | { type: 'document'; document: GraphMediaRef & { filename?: string } }
  | { type: 'location'; location: { latitude: number | string; longitude: number | string; name?: string; address?: string } };

/** Parameters of template `button` components. */
export type GraphTemplateButtonParameter =
  | { type: 'payload'; payload: string }
  | { type: 'text'; text: string }
  | { type: 'coupon_code'; coupon_code: string }
  | { type: 'action'; action: { flow_token?: string; flow_action_data?: Record<string, unknown> } };

export type GraphTemplateComponent =
  | { type: 'header'; parameters: GraphTemplateParameter[] }
  | { type: 'body'; parameters: GraphTemplateParameter[] }
  | {
      type: 'button';
      sub_type: 'quick_reply' | 'url' | 'copy_code' | 'flow' | 'catalog' | 'otp';
      /** Position of the button in the template, 0-based ("0".."9"). */
      index: number | string;
      parameters: GraphTemplateButtonParameter[];
    };

export interface GraphTemplateMessage {
  name: string;
  language: { code: string; policy?: 'deterministic' };
  components?: GraphTemplateComponent[];
}

export type GraphInteractiveHeader =
  | { type: 'text'; text: string }
  | { type: 'image'; image: GraphMediaRef }
  | { type: 'video'; video: GraphMediaRef }
  | { type: 'document'; document: GraphMediaRef & { filename?: string } };

interface GraphInteractiveCommon {
  header?: GraphInteractiveHeader;
  body: { text: string };
  footer?: { text: string };
}

export type GraphInteractive =
  | (GraphInteractiveCommon & {
      type: 'button';
      /** 1 to 3 reply buttons; titles up to 20 characters. */
      action: { buttons: { type: 'reply'; reply: { id: string; title: string } }[] };
    })
  | (GraphInteractiveCommon & {
      type: 'list';
      /** `button` is the menu's label; up to 10 sections and 10 rows overall. */
      action: { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] };
    })
  | (GraphInteractiveCommon & {
      type: 'cta_url';
      action: { name: 'cta_url'; parameters: { display_text: string; url: string } };
    });

interface GraphMessageBase {
  messaging_product: 'whatsapp';
  recipient_type: 'individual';
  /** Recipient phone number (international format) or WhatsApp id. */
  to: string;
  /** Reply to a message. */
  context?: { message_id: string };
  biz_opaque_callback_data?: string;
}

export type GraphMessagePayload = GraphMessageBase &
  (
    | { type: 'text'; text: { body: string; preview_url?: boolean } }
    | { type: 'template'; template: GraphTemplateMessage }
    | { type: 'image'; image: GraphCaptionedMedia }
    | { type: 'video'; video: GraphCaptionedMedia }
    | { type: 'document'; document: GraphDocumentMedia }
    | { type: 'audio'; audio: GraphMediaRef }
    | { type: 'sticker'; sticker: GraphMediaRef }
    | { type: 'interactive'; interactive: GraphInteractive }
  );

export interface SendResult {
  wamid: string;
  /** The recipient's WhatsApp id as Graph normalised it. */
  waId?: string;
  /** Template sends: 'accepted', 'held_for_quality_assessment', 'paused'. */
  messageStatus?: string;
}

// ---------------------------------------------------------------------------------------------
// Templates

/** Template components as created (upper-case types), e.g. { type: 'BODY', text, example }. */
export type GraphTemplateDefinitionComponent = Record<string, unknown> & { type: string };

export interface CreateTemplateInput {
  name: string;
  language: string;
  category: 'MARKETING' | 'UTILITY' | 'AUTHENTICATION' | string;
  components: GraphTemplateDefinitionComponent[];
  parameter_format?: 'POSITIONAL' | 'NAMED';
  allow_category_change?: boolean;
}

export interface CreateTemplateResult {
  id: string;
  status: string;
  category: string;
}

export interface GraphTemplate {
  id: string;
  name: string;
  language: string;
  status: string;
  category: string;
  components?: GraphTemplateDefinitionComponent[];
  rejected_reason?: string;
  parameter_format?: string;
  [key: string]: unknown;
}

export interface ListTemplatesInput {
  /** Graph matches names partially; filter exactly on the result when needed. */
  name?: string;
  status?: string;
  language?: string;
  /** Most templates returned (pages are followed). Default 100, at most 5000. */
  limit?: number;
}

const TEMPLATE_FIELDS = 'id,name,language,status,category,components,rejected_reason,parameter_format';

// ---------------------------------------------------------------------------------------------
// Media

export interface UploadMediaInput {
  data: Buffer | Readable;
  mimeType: string;
  filename: string;
  /** Byte length of a stream (gives a Content-Length; checked). Ignored for a Buffer. */
  size?: number;
}

export interface MediaInfo {
  id: string;
  /** Download URL; valid about 5 minutes and needs the same access token. */
  url: string;
  mime_type: string;
  sha256: string;
  file_size: number;
}

export interface UploadSessionInput {
  fileName: string;
  fileLength: number;
  /** application/pdf, image/jpeg, image/jpg, image/png or video/mp4 */
  fileType: string;
}

export type UploadChunkResult =
  /** The upload is complete; `handle` serves as a template header example (`header_handle`). */
  | { handle: string; fileOffset?: undefined }
  /** More bytes are expected from `fileOffset`. */
  | { handle?: undefined; fileOffset: number };

export interface HeaderSampleInput {
  data: Buffer | Readable;
  fileName: string;
  fileType: string;
  /** Required for a stream; a Buffer's length otherwise. */
  fileLength?: number;
}

// ---------------------------------------------------------------------------------------------

interface CallSpec {
  op: ChannelOperation;
  method: Method;
  /** Path segments after the version; each is validated and encoded. */
  segments: string[];
  params?: Record<string, string | number | undefined>;
  data?: unknown;
  headers?: Record<string, string>;
  /** Authorization scheme; Graph takes Bearer, the resumable upload endpoint documents OAuth. */
  scheme?: 'Bearer' | 'OAuth';
  upload?: boolean;
  messageType?: string;
  /** A raw session id ("upload:<id>?sig=…") used as the node. */
  rawNode?: string;
}

const MIME_RE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

/** A Graph node id as one path segment: no empty, dot segments or separators. */
function segment(value: string, what: string): string {
  if (typeof value !== 'string' || !value || value === '.' || value === '..' || value.length > 512 || /[/\\?#\s]/.test(value)) {
    throw new TypeError(`CloudApiClient: invalid ${what}`);
  }
  return encodeURIComponent(value);
}

function checkCreds(c: ChannelCredentials): void {
  if (!c || typeof c.accessToken !== 'string' || !c.accessToken || /[\s]/.test(c.accessToken)) {
    throw new TypeError('CloudApiClient: credentials need a non-empty accessToken');
  }
}

/** Content-Disposition filename parameters (ASCII fallback plus RFC 5987 form when needed). */
function dispositionFilename(name: string): string {
  const clean = name.replace(/[\r\n"\\]/g, '_').slice(0, 255) || 'file';
  const ascii = clean.replace(/[^\x20-\x7e]/g, '_');
  return ascii === clean ? `filename="${ascii}"` : `filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(clean)}`;
}

/** Counts the bytes of a source stream and insists on an exact length when one is declared. */
class LengthGuard {
  bytes = 0;
  mismatch = false;
  sourceError: unknown = null;

  constructor(private readonly expected: number | undefined) {}

  async *pass(src: Readable): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of src) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        this.bytes += buf.length;
        if (this.expected !== undefined && this.bytes > this.expected) {
          this.mismatch = true;
          throw new Error('stream longer than its declared length');
        }
        yield buf;
      }
    } catch (e) {
      if (!this.mismatch) this.sourceError = e;
      throw e;
    }
    if (this.expected !== undefined && this.bytes !== this.expected) {
      this.mismatch = true;
      throw new Error('stream shorter than its declared length');
    }
  }
}

export class CloudApiClient {
  private readonly http: AxiosInstance;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly version: string;
  private readonly timeoutMs: number;
  private readonly uploadTimeoutMs: number;
  private readonly maxRequestBytes: number;
  private readonly logger?: Logger;

  constructor(opts: CloudApiClientOptions) {
    const base = new URL(opts.baseUrl);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError('CloudApiClient: baseUrl must be http(s)');
    if (base.username || base.password) throw new TypeError('CloudApiClient: baseUrl must not carry credentials');
    if (!/^v\d{1,2}\.\d$/.test(opts.version)) throw new TypeError(`CloudApiClient: version must look like v21.0, got ${opts.version}`);
    if (!(opts.timeoutMs > 0)) throw new TypeError('CloudApiClient: timeoutMs must be positive');
    this.version = opts.version;
    this.timeoutMs = opts.timeoutMs;
    this.uploadTimeoutMs = opts.uploadTimeoutMs ?? Math.max(opts.timeoutMs, 120_000);
    this.maxRequestBytes = opts.maxRequestBytes ?? 110 * 1024 * 1024;
    this.logger = opts.logger;
    const agentOpts = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: opts.maxSockets ?? 256, maxFreeSockets: 64, timeout: 60_000 };
    this.httpAgent = new http.Agent(agentOpts);
    this.httpsAgent = new https.Agent(agentOpts);
    this.http = axios.create({
      baseURL: base.origin + base.pathname.replace(/\/+$/, ''),
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      maxRedirects: 0,
      maxContentLength: opts.maxResponseBytes ?? 8 * 1024 * 1024,
      maxBodyLength: this.maxRequestBytes,
      validateStatus: () => true,
      // Bodies are parsed here, so that garbage is told apart from JSON.
      responseType: 'text',
      transformResponse: [(d: unknown) => d],
      // Env proxies (HTTP_PROXY …) are not applied implicitly: the upstream is configured explicitly.
      proxy: false,
      decompress: true,
      headers: { 'User-Agent': opts.userAgent ?? 'messaging-service/1.0 (+whatsapp-cloud-api)', Accept: 'application/json' },
    });
  }

  /** Close idle keep-alive sockets (graceful shutdown, end of tests). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  // -------------------------------------------------------------------------------------------
  // Messages

  /** POST /{version}/{phoneNumberId}/messages with the payload as built by the caller. */
  async sendMessage(creds: ChannelCredentials, payload: GraphMessagePayload): Promise<SendResult> {
    const body = await this.call(creds, {
      op: 'sendMessage',
      method: 'POST',
      segments: [creds.phoneNumberId, 'messages'],
      data: payload,
      messageType: typeof payload?.type === 'string' ? payload.type : undefined,
    });
    const b = body as { messages?: { id?: unknown; message_status?: unknown }[]; contacts?: { wa_id?: unknown }[] };
    const m = Array.isArray(b?.messages) ? b.messages[0] : undefined;
    if (!m || typeof m.id !== 'string' || !m.id) throw this.unexpected('sendMessage', 'no message id in the answer', payload?.type);
    const waId = Array.isArray(b.contacts) && typeof b.contacts[0]?.wa_id === 'string' ? b.contacts[0].wa_id : undefined;
    const out: SendResult = { wamid: m.id };
    if (waId) out.waId = waId;
    if (typeof m.message_status === 'string') out.messageStatus = m.message_status;
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // Templates

  /** POST /{version}/{wabaId}/message_templates */
  async createTemplate(creds: ChannelCredentials, input: CreateTemplateInput): Promise<CreateTemplateResult> {
    const data: Record<string, unknown> = { name: input.name, language: input.language, category: input.category, components: input.components };
    if (input.parameter_format !== undefined) data.parameter_format = input.parameter_format;
    if (input.allow_category_change !== undefined) data.allow_category_change = input.allow_category_change;
    const b = (await this.call(creds, { op: 'createTemplate', method: 'POST', segments: [creds.wabaId, 'message_templates'], data })) as Record<string, unknown>;
    const id = typeof b?.id === 'string' ? b.id : typeof b?.id === 'number' ? String(b.id) : undefined;
    if (!id) throw this.unexpected('createTemplate', 'no template id in the answer');
    return { id, status: typeof b.status === 'string' ? b.status : 'PENDING', category: typeof b.category === 'string' ? b.category : String(input.category) };
  }

  /** GET /{version}/{wabaId}/message_templates, following pages up to `limit` templates. */
  async listTemplates(creds: ChannelCredentials, input: ListTemplatesInput = {}): Promise<GraphTemplate[]> {
    const limit = Math.min(Math.max(Math.floor(input.limit ?? 100), 1), 5000);
    const out: GraphTemplate[] = [];
    let after: string | undefined;
    for (let page = 0; page < 100 && out.length < limit; page++) {
      const b = (await this.call(creds, {
        op: 'listTemplates',
        method: 'GET',
        segments: [creds.wabaId, 'message_templates'],
        params: { fields: TEMPLATE_FIELDS, limit: Math.min(limit - out.length, 100), name: input.name, status: input.status, language: input.language, after },
      })) as { data?: unknown; paging?: { next?: unknown; cursors?: { after?: unknown } } };
      if (!Array.isArray(b?.data)) throw this.unexpected('listTemplates', 'no data array in the answer');
      for (const t of b.data as Record<string, unknown>[]) {
        if (t && typeof t === 'object' && (typeof t.id === 'string' || typeof t.id === 'number')) out.push({ ...t, id: String(t.id) } as GraphTemplate);
      }
      const next = b.paging?.cursors?.after;
      if (!b.paging?.next || typeof next !== 'string' || !next || b.data.length === 0) break;
      after = next;
    }
    return out.slice(0, limit);
  }

  /** DELETE /{version}/{wabaId}/message_templates?name=…[&hsm_id=…] (all languages, or the one id). */
  async deleteTemplate(creds: ChannelCredentials, input: { name: string; hsmId?: string }): Promise<void> {
    if (typeof input?.name !== 'string' || !input.name) throw new TypeError('CloudApiClient: deleteTemplate needs a name');
    await this.call(creds, {
      op: 'deleteTemplate',
      method: 'DELETE',
      segments: [creds.wabaId, 'message_templates'],
      params: { name: input.name, hsm_id: input.hsmId },
    });
  }

  // -------------------------------------------------------------------------------------------
  // Media

  /** POST /{version}/{phoneNumberId}/media as multipart (messaging_product, type, file), streamed. */
  async uploadMedia(creds: ChannelCredentials, input: UploadMediaInput): Promise<{ id: string }> {
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
  async getMedia(creds: ChannelCredentials, mediaId: string): Promise<MediaInfo> {
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

  /** DELETE /{version}/{mediaId}?phone_number_id=… */
  async deleteMedia(creds: ChannelCredentials, mediaId: string): Promise<void> {
    await this.call(creds, { op: 'deleteMedia', method: 'DELETE', segments: [mediaId], params: { phone_number_id: creds.phoneNumberId } });
  }

  // -------------------------------------------------------------------------------------------
  // Resumable Upload API (template header examples)

  /** POST /{version}/{appId}/uploads?file_name=&file_length=&file_type= → "upload:<id>?sig=…" */
  async createUploadSession(creds: ChannelCredentials, input: UploadSessionInput): Promise<{ sessionId: string }> {
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
  async uploadToSession(creds: ChannelCredentials, sessionId: string, data: Buffer | Readable, offset = 0, length?: number): Promise<UploadChunkResult> {
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
  async uploadHeaderSample(creds: ChannelCredentials, input: HeaderSampleInput): Promise<{ handle: string }> {
    const length = Buffer.isBuffer(input.data) ? input.data.length : input.fileLength;
    if (length === undefined) throw new TypeError('CloudApiClient: uploadHeaderSample needs fileLength for a stream');
    const { sessionId } = await this.createUploadSession(creds, { fileName: input.fileName, fileLength: length, fileType: input.fileType });
    const r = await this.uploadToSession(creds, sessionId, input.data, 0, Buffer.isBuffer(input.data) ? undefined : length);
    if (!r.handle) throw this.unexpected('uploadToSession', `the upload stopped at offset ${r.fileOffset} of ${length}`);
    return { handle: r.handle };
  }

  // -------------------------------------------------------------------------------------------
  // Internals

  /** "upload:<id>?sig=…" → the path and query exactly as Graph issued them (checked, not re-encoded). */
  private sessionNode(sessionId: string): string {
    if (typeof sessionId !== 'string' || !/^upload:[A-Za-z0-9_\-=+%:.]{1,1024}(\?[A-Za-z0-9_\-=+%&.~]{0,1024})?$/.test(sessionId)) {
      throw new TypeError('CloudApiClient: invalid upload session id');
    }
    return sessionId;
  }

  /** Runs an upload; a caller's stream that was not read to its end is destroyed when it fails. */
  private async withSource<T>(src: Readable | null, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      if (src && !src.readableEnded && !src.destroyed) src.destroy();
      throw e;
    }
  }

  private unexpected(op: ChannelOperation, why: string, messageType?: string): ChannelError {
    return new ChannelError({
      kind: 'unavailable',
      retryable: true,
      operation: op,
      messageType,
      httpStatus: 200,
      networkCode: 'EBADRESPONSE',
      outcomeUnknown: op !== 'getMedia' && op !== 'listTemplates',
      message: `WhatsApp Cloud API answered with an unexpected response: ${why}`,
    });
  }

  private async call(creds: ChannelCredentials, spec: CallSpec, guard: LengthGuard | null = null): Promise<unknown> {
    checkCreds(creds);
    const path = spec.rawNode
      ? `/${this.version}/${spec.rawNode}`
      : `/${this.version}/${spec.segments.map((s, i) => (i === 0 ? segment(s, 'node id') : encodeURIComponent(s))).join('/')}`;
    const logPath = spec.rawNode ? `/${this.version}/upload:…` : path;
    const params: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(spec.params ?? {})) if (v !== undefined && v !== '') params[k] = v;
    const secrets = [creds.accessToken];
    const deadlineMs = spec.upload ? this.uploadTimeoutMs : this.timeoutMs;
    const ac = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ac.abort();
    }, deadlineMs);
    const started = Date.now();
    let res: AxiosResponse<string>;
    try {
      res = await this.http.request<string>({
        method: spec.method,
        url: path,
        params,
        data: spec.data,
        headers: { ...spec.headers, Authorization: `${spec.scheme ?? 'Bearer'} ${creds.accessToken}` },
        timeout: deadlineMs,
        signal: ac.signal,
      });
    } catch (err) {
      clearTimeout(timer);
      if (guard?.mismatch) throw new TypeError(`CloudApiClient: ${spec.op} data length differs from the declared size`);
      if (guard?.sourceError) throw guard.sourceError;
      const e = channelErrorFromTransport(err, { operation: spec.op, messageType: spec.messageType, secrets, timedOut, timeoutMs: deadlineMs });
      this.logger?.warn('cloud api call failed', {
        op: spec.op,
        method: spec.method,
        path: logPath,
        ms: Date.now() - started,
        kind: e.kind,
        network_code: e.networkCode,
        reason: typeof (err as { message?: unknown })?.message === 'string' ? scrub((err as { message: string }).message, secrets) : undefined,
      });
      throw e;
    }
    clearTimeout(timer);
    const ms = Date.now() - started;
    const text = typeof res.data === 'string' ? res.data : res.data === undefined || res.data === null ? '' : String(res.data);
    let body: unknown;
    let parsed = false;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
        parsed = true;
      } catch {
        parsed = false;
      }
    }
    const traceHeader = res.headers['x-fb-trace-id'];
    const fbtrace = typeof traceHeader === 'string' ? traceHeader : undefined;
    if (res.status >= 200 && res.status < 300 && parsed && typeof body === 'object' && body !== null && !('error' in body)) {
      this.logger?.debug('cloud api call', { op: spec.op, method: spec.method, path: logPath, status: res.status, ms, fbtrace_id: fbtrace });
      return body;
    }
    const e = channelErrorFromResponse(res.status, parsed ? body : undefined, {
      operation: spec.op,
      messageType: spec.messageType,
      secrets,
      fbtraceHeader: fbtrace,
      rawText: parsed ? undefined : text.slice(0, 2000),
    });
    this.logger?.warn('cloud api call failed', {
      op: spec.op,
      method: spec.method,
      path: logPath,
      status: res.status,
      ms,
      kind: e.kind,
      graph_code: e.graphCode,
      graph_subcode: e.subcode,
      fbtrace_id: e.fbtraceId,
    });
    throw e;
  }
}
