/**
 * The transport of every WhatsApp Cloud API call (Meta's Graph API in production, the simulator in
 * development and tests); the calls themselves live by Graph area in messages.ts, templates.ts and
 * media.ts, and CloudApiClient (cloud-api.ts) puts them together.
 *
 * - One axios instance with keep-alive agents, bounded sockets, no redirects, bounded bodies, and
 *   `validateStatus: () => true`: statuses are mapped here, into ChannelError (./errors.ts).
 * - The access token travels only in the Authorization header (never in a URL), is never logged,
 *   and is scrubbed from any provider text copied into an error.
 * - Every call has a deadline (`timeoutMs`; uploads `uploadTimeoutMs`) covering connect, send and
 *   reading the answer.
 */
import axios, { type AxiosInstance, type Method } from 'axios';
import zlib from 'node:zlib';
import http from 'node:http';
import https, { request as httpsRequest } from 'node:https';
import type { Duplex } from 'node:stream';
import { Readable } from 'node:stream';
import type { Logger } from '../lib/platform/logger.js';
import { callDeadline } from '../lib/platform/net/call-deadline.js';
import { withSpan } from '../lib/platform/tracing/spans.js';
import {
  ChannelError,
  channelErrorFromResponse,
  channelErrorFromTransport,
  scrub,
  type ChannelOperation,
} from './errors.js';

// ---------------------------------------------------------------------------------------------
// Credentials and options

/** A project's account at the channel (the port's type). */
export type { ChannelCredentials } from '../lib/channel-port/port.js';
import type { ChannelCredentials } from '../lib/channel-port/port.js';

export interface CloudApiClientOptions {
  /** e.g. http://127.0.0.1:4010 (simulator) or https://graph.facebook.com */
  baseUrl: string;
  /** Graph API version, e.g. 'v26.0' */
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
  /** Observes every call: its operation, outcome (`ok`, the Graph error code or the transport cause) and duration. */
  onCall?: (op: string, outcome: string, ms: number) => void;
}

// ---------------------------------------------------------------------------------------------

export interface CallSpec {
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

export const MIME_RE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

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
export function dispositionFilename(name: string): string {
  const clean = name.replace(/[\r\n"\\]/g, '_').slice(0, 255) || 'file';
  const ascii = clean.replace(/[^\x20-\x7e]/g, '_');
  return ascii === clean ? `filename="${ascii}"` : `filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(clean)}`;
}

/** Counts the bytes of a source stream and insists on an exact length when one is declared. */
export class LengthGuard {
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

/**
 * Keep-alive agents whose sockets set their TCP options once, when they connect. Node's agent
 * sets keep-alive again each time a socket returns to the pool, and axios on each request that
 * takes a socket (`setKeepAlive(true, 60 s)`): 8 `setsockopt` system calls per send, on a machine
 * where a system call is dear. Later calls that enable keep-alive again change nothing here;
 * turning it off still works.
 */
function keepAliveOnce<S extends Duplex | undefined>(socket: S, delayMs: number): S {
  const tcp = socket as unknown as { setKeepAlive?: (enable?: boolean, delay?: number) => unknown } | undefined;
  if (typeof tcp?.setKeepAlive !== 'function') return socket;
  const setKeepAlive = tcp.setKeepAlive;
  setKeepAlive.call(tcp, true, delayMs);
  tcp.setKeepAlive = function (enable?: boolean, delay?: number) {
    return enable ? this : setKeepAlive.call(this, enable, delay);
  };
  return socket;
}

type CreateConnection = (options: object, callback: (err: Error | null, socket: Duplex) => void) => Duplex | undefined;

class GraphHttpAgent extends http.Agent {
  constructor(private readonly keepAliveDelayMs: number, opts: http.AgentOptions) {
    super(opts);
  }
  createConnection(options: object, callback: (err: Error | null, socket: Duplex) => void): Duplex | undefined {
    return keepAliveOnce((http.Agent.prototype as unknown as { createConnection: CreateConnection }).createConnection.call(this, options, callback), this.keepAliveDelayMs);
  }
}

class GraphHttpsAgent extends https.Agent {
  constructor(private readonly keepAliveDelayMs: number, opts: https.AgentOptions) {
    super(opts);
  }
  createConnection(options: object, callback: (err: Error | null, socket: Duplex) => void): Duplex | undefined {
    return keepAliveOnce((https.Agent.prototype as unknown as { createConnection: CreateConnection }).createConnection.call(this, options, callback), this.keepAliveDelayMs);
  }
}

export class GraphTransport {
  protected readonly http: AxiosInstance;
  protected readonly httpAgent: http.Agent;
  protected readonly httpsAgent: https.Agent;
  protected readonly version: string;
  protected readonly timeoutMs: number;
  protected readonly uploadTimeoutMs: number;
  /** Largest request body sent (the media area checks uploads against it). */
  readonly maxRequestBytes: number;
  private readonly logger?: Logger;
  private readonly onCall?: (op: string, outcome: string, ms: number) => void;
  private readonly base: URL;
  private readonly basePath: string;
  private readonly userAgent: string;
  private readonly maxResponseBytes: number;

  constructor(opts: CloudApiClientOptions) {
    const base = new URL(opts.baseUrl);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError('CloudApiClient: baseUrl must be http(s)');
    if (base.username || base.password) throw new TypeError('CloudApiClient: baseUrl must not carry credentials');
    if (!/^v\d{1,2}\.\d$/.test(opts.version)) throw new TypeError(`CloudApiClient: version must look like v26.0, got ${opts.version}`);
    if (!(opts.timeoutMs > 0)) throw new TypeError('CloudApiClient: timeoutMs must be positive');
    this.version = opts.version;
    this.timeoutMs = opts.timeoutMs;
    this.uploadTimeoutMs = opts.uploadTimeoutMs ?? Math.max(opts.timeoutMs, 120_000);
    this.maxRequestBytes = opts.maxRequestBytes ?? 110 * 1024 * 1024;
    this.logger = opts.logger;
    this.onCall = opts.onCall;
    this.base = base;
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.userAgent = opts.userAgent ?? 'messaging-service/1.0 (+whatsapp-cloud-api)';
    this.maxResponseBytes = opts.maxResponseBytes ?? 8 * 1024 * 1024;
    const agentOpts = { keepAlive: true, keepAliveMsecs: 1_000, maxSockets: opts.maxSockets ?? 256, maxFreeSockets: 64, timeout: 60_000 };
    this.httpAgent = new GraphHttpAgent(agentOpts.keepAliveMsecs, agentOpts);
    this.httpsAgent = new GraphHttpsAgent(agentOpts.keepAliveMsecs, agentOpts);
    this.http = axios.create({
      baseURL: base.origin + base.pathname.replace(/\/+$/, ''),
      httpAgent: this.httpAgent,
      httpsAgent: this.httpsAgent,
      maxRedirects: 0,
      maxContentLength: this.maxResponseBytes,
      maxBodyLength: this.maxRequestBytes,
      validateStatus: () => true,
      // Bodies are parsed here, so that garbage is told apart from JSON.
      responseType: 'text',
      transformResponse: [(d: unknown) => d],
      // Env proxies (HTTP_PROXY …) are not applied implicitly: the upstream is configured explicitly.
      proxy: false,
      decompress: true,
      headers: { 'User-Agent': this.userAgent, Accept: 'application/json' },
    });
  }

  /** Whether a call takes the direct JSON path: no upload, no query, no headers of its own, a JSON body or none. */
  private direct(spec: CallSpec): boolean {
    if (spec.upload || spec.rawNode || spec.headers || spec.params) return false;
    const d = spec.data;
    return d === undefined || (typeof d === 'object' && d !== null && (Object.getPrototypeOf(d) === Object.prototype || Array.isArray(d)));
  }

  /**
   * One JSON call on Node's HTTP client through the transport's keep-alive agents (issue 62): what
   * axios did for such a call (the same request line and headers: User-Agent, Accept, JSON
   * Content-Type and Content-Length, Authorization; no redirect followed, no proxy; the answer
   * read as text up to maxResponseBytes and decompressed when the server compressed it anyway;
   * the caller's abort signal as the deadline), without its per-request configuration merging,
   * header objects, transforms and stream plumbing, which cost more than a send's own steps. The
   * body is serialised once, as one string, and leaves with the headers in one write.
   */
  private jsonCall(method: string, path: string, data: unknown, authorization: string, signal: AbortSignal): Promise<{ status: number; headers: Record<string, unknown>; data: string }> {
    return new Promise((resolve, reject) => {
      const body = data === undefined ? undefined : JSON.stringify(data);
      const headers: Record<string, string | number> = { 'User-Agent': this.userAgent, Accept: 'application/json', Authorization: authorization };
      if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        headers['Content-Length'] = Buffer.byteLength(body);
      }
      const https = this.base.protocol === 'https:';
      const req = (https ? httpsRequest : http.request)({
        protocol: this.base.protocol,
        hostname: this.base.hostname,
        port: this.base.port || undefined,
        method: method.toUpperCase(),
        path: this.basePath + path,
        headers,
        agent: https ? this.httpsAgent : this.httpAgent,
        signal,
      }, (res) => {
        const encoding = String(res.headers['content-encoding'] ?? '').toLowerCase();
        const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? zlib.createGunzip() : encoding === 'deflate' ? zlib.createInflate() : encoding === 'br' ? zlib.createBrotliDecompress() : null;
        const stream = decoder ? res.pipe(decoder) : res;
        if (decoder) res.on('error', (e) => decoder.destroy(e));
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.maxResponseBytes) {
            const e = Object.assign(new Error(`maxContentLength size of ${this.maxResponseBytes} exceeded`), { code: 'ERR_FR_MAX_CONTENT_LENGTH_EXCEEDED' });
            req.destroy(e);
            stream.destroy();
            reject(e);
            return;
          }
          chunks.push(chunk);
        });
        stream.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, data: chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8') }));
        stream.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Close idle keep-alive sockets (graceful shutdown, end of tests). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  // -------------------------------------------------------------------------------------------
  // For the Graph area modules (messages.ts, templates.ts, media.ts, …): not for callers

  /** "upload:<id>?sig=…" → the path and query exactly as Graph issued them (checked, not re-encoded). */
  sessionNode(sessionId: string): string {
    if (typeof sessionId !== 'string' || !/^upload:[A-Za-z0-9_\-=+%:.]{1,1024}(\?[A-Za-z0-9_\-=+%&.~]{0,1024})?$/.test(sessionId)) {
      throw new TypeError('CloudApiClient: invalid upload session id');
    }
    return sessionId;
  }

  /** Runs an upload; a caller's stream that was not read to its end is destroyed when it fails. */
  async withSource<T>(src: Readable | null, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      if (src && !src.readableEnded && !src.destroyed) src.destroy();
      throw e;
    }
  }

  /**
   * A media download (media.ts downloadMedia): the token in the Authorization header only, no
   * redirect, the transport's deadline until the answer's head, then `maxBytes` counted while the
   * caller reads. A non-2xx answer is a ChannelError (404 and 410: rejected, the media is gone).
   */
  download(creds: ChannelCredentials, target: URL, maxBytes: number): Promise<{ data: Readable; mimeType: string; size: number | null }> {
    checkCreds(creds);
    const secrets = [creds.accessToken];
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const client = target.protocol === 'https:' ? httpsRequest : http.request;
      const req = client(target, {
        method: 'GET',
        agent: target.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
        headers: { 'User-Agent': this.userAgent, Authorization: `Bearer ${creds.accessToken}` },
        timeout: this.timeoutMs,
      }, (res) => {
        const status = res.statusCode ?? 0;
        const declared = Number(res.headers['content-length']);
        const size = Number.isFinite(declared) && res.headers['content-length'] !== undefined ? declared : null;
        if (status < 200 || status >= 300 || (size !== null && size > maxBytes)) {
          res.resume();
          this.onCall?.('downloadMedia', `http_${status}`, Date.now() - started);
          const gone = status === 404 || status === 410 || status === 401;
          reject(new ChannelError({
            kind: gone ? 'rejected' : 'unavailable', retryable: !gone, operation: 'downloadMedia', httpStatus: status,
            message: size !== null && size > maxBytes ? `The media is larger than ${maxBytes} bytes.` : scrub(`The media download answered ${status}.`, secrets),
          }));
          return;
        }
        this.onCall?.('downloadMedia', 'ok', Date.now() - started);
        let seen = 0;
        const counted = new Readable({ read() { res.resume(); } });
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > maxBytes) {
            res.destroy();
            counted.destroy(new Error(`media larger than ${maxBytes} bytes`));
            return;
          }
          if (!counted.push(chunk)) res.pause();
        });
        res.on('end', () => counted.push(null));
        res.on('error', (e) => counted.destroy(e));
        counted.on('close', () => { if (!res.complete) res.destroy(); });
        const type = typeof res.headers['content-type'] === 'string' ? res.headers['content-type'].split(';')[0].trim().toLowerCase() : 'application/octet-stream';
        resolve({ data: counted, mimeType: type, size });
      });
      req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
      req.on('error', (err) => reject(channelErrorFromTransport(err, { operation: 'downloadMedia', secrets, timedOut: (err as { code?: string }).code === 'ETIMEDOUT', timeoutMs: this.timeoutMs })));
      req.end();
    });
  }

  unexpected(op: ChannelOperation, why: string, messageType?: string): ChannelError {
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

  /** One Graph call, as a span of its own (`graph <operation>`) when tracing is on. */
  call(creds: ChannelCredentials, spec: CallSpec, guard: LengthGuard | null = null): Promise<unknown> {
    return withSpan(`graph ${spec.op}`, { 'graph.operation': spec.op }, () => this.callOnce(creds, spec, guard));
  }

  private async callOnce(creds: ChannelCredentials, spec: CallSpec, guard: LengthGuard | null): Promise<unknown> {
    checkCreds(creds);
    const path = spec.rawNode
      ? `/${this.version}/${spec.rawNode}`
      : `/${this.version}/${spec.segments.map((s, i) => (i === 0 ? segment(s, 'node id') : encodeURIComponent(s))).join('/')}`;
    const logPath = spec.rawNode ? `/${this.version}/upload:…` : path;
    // No query (a send has none): no params for axios to serialise.
    let params: Record<string, string | number> | undefined;
    for (const [k, v] of Object.entries(spec.params ?? {})) if (v !== undefined && v !== '') (params ??= {})[k] = v;
    const secrets = [creds.accessToken];
    const deadlineMs = spec.upload ? this.uploadTimeoutMs : this.timeoutMs;
    const deadline = callDeadline(deadlineMs);
    const started = Date.now();
    let res: { status: number; headers: Record<string, unknown>; data: unknown };
    try {
      // A JSON call (no upload, no query, no headers of its own: a send among them) goes straight
      // onto Node's HTTP client with the same keep-alive agents (jsonCall); the others through axios.
      res = this.direct(spec)
        ? await this.jsonCall(spec.method, path, spec.data, `${spec.scheme ?? 'Bearer'} ${creds.accessToken}`, deadline.signal)
        : await this.http.request<string>({
            method: spec.method,
            url: path,
            params,
            data: spec.data,
            headers: { ...spec.headers, Authorization: `${spec.scheme ?? 'Bearer'} ${creds.accessToken}` },
            timeout: deadlineMs,
            signal: deadline.signal,
          });
    } catch (err) {
      deadline.clear();
      if (guard?.mismatch) throw new TypeError(`CloudApiClient: ${spec.op} data length differs from the declared size`);
      if (guard?.sourceError) throw guard.sourceError;
      const e = channelErrorFromTransport(err, { operation: spec.op, messageType: spec.messageType, secrets, timedOut: deadline.timedOut, timeoutMs: deadlineMs });
      this.onCall?.(spec.op, e.networkCode ?? e.kind, Date.now() - started);
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
    deadline.clear();
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
      this.onCall?.(spec.op, 'ok', ms);
      return body;
    }
    const e = channelErrorFromResponse(res.status, parsed ? body : undefined, {
      operation: spec.op,
      messageType: spec.messageType,
      secrets,
      fbtraceHeader: fbtrace,
      rawText: parsed ? undefined : text.slice(0, 2000),
    });
    this.onCall?.(spec.op, e.code !== undefined ? String(e.code) : `http_${res.status}`, ms);
    this.logger?.warn('cloud api call failed', {
      op: spec.op,
      method: spec.method,
      path: logPath,
      status: res.status,
      ms,
      kind: e.kind,
      graph_code: e.code,
      graph_subcode: e.subcode,
      fbtrace_id: e.traceId,
    });
    throw e;
  }
}
