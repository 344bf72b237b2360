/**
 * Runs one HTTP request through a request listener (the Express app) in process: a real
 * IncomingMessage carrying the request, a real ServerResponse whose output is kept instead of
 * written to a socket. Real node objects, because Express re-parents the request and response
 * prototypes to its own (which chain to node's), so a fake class's methods would be lost; the
 * response's output methods are replaced on the instance, which no prototype change touches.
 * (light-my-request re-parents Express's prototypes to its own classes instead, which changes
 * every real response of the same app.)
 */
import { IncomingMessage, ServerResponse, type RequestListener } from 'node:http';
import { Duplex } from 'node:stream';

export interface InjectRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  remoteAddress?: string;
}

export interface InjectResponse {
  statusCode: number;
  headers: Record<string, number | string | string[] | undefined>;
  payload: string;
}

/** A socket that is never read or written: the request is pushed in and the response kept. */
class NullSocket extends Duplex {
  constructor(readonly remoteAddress: string) {
    super();
  }
  override _read(): void {}
  override _write(_chunk: unknown, _enc: BufferEncoding, cb: (e?: Error | null) => void): void {
    cb();
  }
}

export function inject(listener: RequestListener, r: InjectRequest): Promise<InjectResponse> {
  return new Promise((resolve, reject) => {
    const socket = new NullSocket(r.remoteAddress ?? '127.0.0.1');
    const req = new IncomingMessage(socket as never);
    req.method = r.method;
    req.url = r.url;
    const body = r.payload === undefined ? undefined : Buffer.from(r.payload);
    const headers: Record<string, string> = { ...r.headers };
    if (body) headers['content-length'] = String(body.length);
    req.headers = headers;
    req.rawHeaders = Object.entries(headers).flat();
    req.httpVersion = '1.1';
    req.httpVersionMajor = 1;
    req.httpVersionMinor = 1;
    if (body) req.push(body);
    req.push(null);
    // What the HTTP parser sets once a message is read: without it, node takes the request's end
    // for an abort, destroys the socket and builds an ERR_STREAM_PREMATURE_CLOSE (with its stack
    // trace) on every call, about 30 µs of each tool call (issue 67 item 5).
    req.complete = true;

    const res = new ServerResponse(req);
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    };
    const out = res as unknown as Record<string, unknown>;
    let done = false;
    out.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
      this.statusCode = status;
      const hdrs = rest.find((x) => x && typeof x === 'object') as Record<string, string> | undefined;
      if (hdrs) for (const [k, v] of Object.entries(hdrs)) this.setHeader(k, v);
      return this;
    };
    out.write = (chunk: unknown, encoding?: unknown, cb?: unknown) => {
      keep(chunk, encoding);
      (out as { _header?: unknown })._header ||= 'injected';
      const callback = typeof encoding === 'function' ? encoding : cb;
      if (typeof callback === 'function') process.nextTick(callback as () => void);
      return true;
    };
    out.end = (chunk?: unknown, encoding?: unknown, cb?: unknown) => {
      if (done) return res;
      done = true;
      keep(chunk, encoding);
      (out as { _header?: unknown })._header ||= 'injected';
      (out as { finished?: boolean }).finished = true;
      const callback = [chunk, encoding, cb].find((x) => typeof x === 'function');
      process.nextTick(() => {
        res.emit('finish');
        res.emit('close');
        if (typeof callback === 'function') (callback as () => void)();
        resolve({ statusCode: res.statusCode, headers: res.getHeaders() as InjectResponse['headers'], payload: Buffer.concat(chunks).toString('utf8') });
      });
      return res;
    };
    try {
      listener(req, res);
    } catch (e) {
      reject(e);
    }
  });
}
