/**
 * The MCP answer compressed when the client accepts it (`Accept-Encoding: br` or `gzip`): the SDK's
 * transport writes a whole JSON answer (this server answers `application/json`, never a stream), so
 * it is kept as written and compressed once at its end. Bodies under 1 KiB, and answers the transport
 * already encoded, are sent as they are.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const MIN_BYTES = 1024;

/** The encoding to use: br over gzip, neither when refused (`q=0`) or not named. */
export function acceptedEncoding(header: string | string[] | undefined): 'br' | 'gzip' | undefined {
  const offered = new Map<string, number>();
  for (const part of (Array.isArray(header) ? header.join(',') : header ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    offered.set(name, q === undefined ? 1 : Number(q));
  }
  const ok = (e: string) => (offered.get(e) ?? offered.get('*') ?? 0) > 0;
  return ok('br') ? 'br' : ok('gzip') ? 'gzip' : undefined;
}

export function compressAnswer(req: IncomingMessage, res: ServerResponse): void {
  const encoding = acceptedEncoding(req.headers['accept-encoding']);
  if (!encoding) return;
  const chunks: Buffer[] = [];
  const keep = (chunk: unknown, enc?: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof enc === 'string' ? (enc as BufferEncoding) : 'utf8'));
  };
  const { writeHead, write } = res;
  const end = res.end as (this: ServerResponse, chunk?: unknown, cb?: () => void) => ServerResponse;
  let head: unknown[] | undefined;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    head = args;
    return this;
  } as ServerResponse['writeHead'];
  res.write = function (chunk: unknown, enc?: unknown, cb?: unknown) {
    keep(chunk, enc);
    const callback = typeof enc === 'function' ? enc : cb;
    if (typeof callback === 'function') process.nextTick(callback as () => void);
    return true;
  } as ServerResponse['write'];
  res.end = function (this: ServerResponse, chunk?: unknown, enc?: unknown, cb?: unknown) {
    keep(chunk, enc);
    res.writeHead = writeHead;
    res.write = write;
    res.end = end as ServerResponse['end'];
    if (head) {
      const [status, ...rest] = head as [number, ...unknown[]];
      res.statusCode = status;
      const headers = rest.find((x) => x && typeof x === 'object');
      if (Array.isArray(headers)) for (let i = 0; i + 1 < headers.length; i += 2) res.setHeader(String(headers[i]), headers[i + 1] as string);
      else if (headers) for (const [k, v] of Object.entries(headers as Record<string, string>)) res.setHeader(k, v);
    }
    let body = Buffer.concat(chunks);
    if (body.length >= MIN_BYTES && !res.getHeader('content-encoding')) {
      body = encoding === 'br' ? brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } }) : gzipSync(body);
      res.setHeader('Content-Encoding', encoding);
      res.setHeader('Content-Length', String(body.length));
    }
    res.appendHeader?.('Vary', 'Accept-Encoding');
    const callback = [chunk, enc, cb].find((x) => typeof x === 'function') as (() => void) | undefined;
    return end.call(this, body, callback);
  } as ServerResponse['end'];
}
