/**
 * Downloads a user-given URL (header samples, media) without letting it reach inside our network
 * or exhaust us.
 *
 * Policy:
 * - http and https only, no credentials in the URL (lib/platform/net/public-address.ts `checkUrl`).
 * - Every hop's host is resolved and every address checked (`resolveTarget`); the socket connects
 *   to the checked address (`pinnedLookup`), so DNS cannot change the answer in between. Redirects
 *   (301, 302, 303, 307, 308) are followed by hand, at most `maxRedirects` (default 5), and each
 *   new location is checked exactly like the first.
 * - The body streams into the caller's sink (a temporary file with a byte limit): a Content-Length
 *   over the limit is refused before reading, and the transfer aborts mid-stream the moment the
 *   limit is passed. A body shorter or longer than its Content-Length fails.
 * - One total deadline (`timeoutMs`) covers every hop, connecting and reading: a slow or endless
 *   body is cut off.
 * - `allowPrivate` (DEV_ALLOW_PRIVATE_TARGETS) lifts only the address rule; redirects, size and time
 *   are never relaxed.
 * Errors: UnsafeTargetError-based refusals become DownloadError('forbidden'); the sink's
 * LimitExceeded is passed through unchanged.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { checkUrl, pinnedLookup, resolveTarget, UnsafeTargetError } from './public-address.js';
import { callDeadline } from './call-deadline.js';

export type DownloadFailure = 'forbidden' | 'unresolvable' | 'too_many_redirects' | 'http_status' | 'timeout' | 'network' | 'length_mismatch';

export class DownloadError extends Error {
  constructor(readonly reason: DownloadFailure, message: string, readonly status?: number) {
    super(message);
    this.name = 'DownloadError';
  }
}

export interface DownloadSink {
  /** Refuses a declared length before reading (throws). */
  precheck(declaredLength: number): void;
  write(chunk: Buffer): Promise<void>;
}

export interface DownloadOptions {
  sink: DownloadSink;
  allowPrivate: boolean;
  timeoutMs: number;
  maxRedirects?: number;
  /** Replaces the resolver (tests: make a name "public"); it must apply the same address policy. */
  resolve?: typeof resolveTarget;
  userAgent?: string;
  /** https only (a client metadata document); plain http is refused like any other scheme. */
  httpsOnly?: boolean;
  /** Certificates to trust beside the system's (development: a local document server's own). */
  ca?: string;
  /** The Accept header (default any). */
  accept?: string;
}

export interface DownloadResult {
  /** The URL the body came from (after redirects). */
  url: string;
  /** The declared Content-Type, if any. */
  contentType?: string;
  /** A file name from Content-Disposition or the URL's last path segment, if any. */
  filename?: string;
  size: number;
  /** The response's Cache-Control and Expires, for a caller that caches what it fetched. */
  cacheControl?: string;
  expires?: string;
}

export const DEFAULT_MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function filenameOf(res: IncomingMessage, url: URL): string | undefined {
  const cd = res.headers['content-disposition'];
  if (typeof cd === 'string') {
    const star = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(cd);
    if (star) {
      try {
        return decodeURIComponent(star[1].trim());
      } catch {
        /* fall through */
      }
    }
    const plain = /filename\s*=\s*"?([^";]+)"?/.exec(cd);
    if (plain) return plain[1].trim();
  }
  const last = url.pathname.split('/').pop();
  if (!last) return undefined;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}

export async function safeDownload(rawUrl: string, opts: DownloadOptions): Promise<DownloadResult> {
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const resolve = opts.resolve ?? resolveTarget;
  const deadline = callDeadline(opts.timeoutMs);
  const fail = (e: unknown): never => {
    if (deadline.timedOut) throw new DownloadError('timeout', `The download did not complete within ${opts.timeoutMs} ms.`);
    throw e;
  };
  try {
    let current = rawUrl;
    for (let hop = 0; ; hop++) {
      let url: URL;
      let target: { address: string; family: 4 | 6 };
      try {
        url = checkUrl(current, { allowPrivate: opts.allowPrivate, allowHttp: !opts.httpsOnly });
        target = await resolve(url.hostname, { allowPrivate: opts.allowPrivate });
      } catch (e) {
        if (e instanceof UnsafeTargetError) {
          const where = hop === 0 ? 'source_url' : `redirect ${hop} (${current.slice(0, 200)})`;
          throw new DownloadError(e.reason === 'unresolvable' ? 'unresolvable' : 'forbidden', `${where}: ${e.message}`);
        }
        throw e;
      }
      if (deadline.timedOut) fail(new Error('aborted'));
      const res = await request(url, target, opts, deadline.signal).catch(fail);
      if (REDIRECTS.has(res.statusCode ?? 0)) {
        res.destroy();
        const location = res.headers.location;
        if (!location) throw new DownloadError('http_status', `The server answered ${res.statusCode} without a Location.`, res.statusCode);
        if (hop >= maxRedirects) throw new DownloadError('too_many_redirects', `More than ${maxRedirects} redirects.`);
        try {
          current = new URL(location, url).toString();
        } catch {
          throw new DownloadError('forbidden', `redirect ${hop + 1}: the Location is not a valid URL.`);
        }
        continue;
      }
      if (res.statusCode !== 200) {
        res.destroy();
        throw new DownloadError('http_status', `The server answered HTTP ${res.statusCode}.`, res.statusCode);
      }
      const declared = res.headers['content-length'] !== undefined ? Number(res.headers['content-length']) : undefined;
      try {
        if (declared !== undefined && Number.isFinite(declared)) opts.sink.precheck(declared);
        let size = 0;
        for await (const chunk of res) {
          size += (chunk as Buffer).length;
          await opts.sink.write(chunk as Buffer);
        }
        // Bytes beyond Content-Length surface as a parse error on the socket right after the body.
        await new Promise((r) => setImmediate(r));
        if (overflowed.has(res)) {
          throw new DownloadError('length_mismatch', 'The server sent more bytes than its Content-Length.');
        }
        if (declared !== undefined && size !== declared) {
          throw new DownloadError('length_mismatch', `The server declared ${declared} bytes and sent ${size}.`);
        }
        const type = res.headers['content-type'];
        const cacheControl = res.headers['cache-control'];
        const expires = res.headers.expires;
        return {
          url: url.toString(),
          contentType: typeof type === 'string' ? type : undefined,
          filename: filenameOf(res, url),
          size,
          ...(typeof cacheControl === 'string' ? { cacheControl } : {}),
          ...(typeof expires === 'string' ? { expires } : {}),
        };
      } catch (e) {
        res.destroy();
        if (e instanceof DownloadError || (e as Error)?.name === 'LimitExceeded') throw e;
        if (deadline.timedOut) fail(e);
        if (overflowed.has(res)) throw new DownloadError('length_mismatch', 'The server sent more bytes than its Content-Length.');
        throw new DownloadError('network', `The download broke off: ${(e as Error)?.message ?? String(e)}`);
      }
    }
  } finally {
    deadline.clear();
  }
}

/** Responses whose connection reported trailing garbage (more bytes than declared). */
const overflowed = new WeakSet<IncomingMessage>();

function request(url: URL, target: { address: string; family: 4 | 6 }, opts: DownloadOptions, signal: AbortSignal): Promise<IncomingMessage> {
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, {
      method: 'GET',
      agent: false,
      lookup: pinnedLookup(target.address, target.family),
      signal,
      headers: { 'User-Agent': opts.userAgent ?? 'messaging-service/1.0 (media fetch)', Accept: opts.accept ?? '*/*', 'Accept-Encoding': 'identity' },
      ...(opts.ca && url.protocol === 'https:' ? { ca: [...tls.rootCertificates, opts.ca] } : {}),
    });
    let response: IncomingMessage | undefined;
    req.on('response', (res) => {
      response = res;
      resolve(res);
    });
    req.on('error', (e) => {
      if (response) {
        // After the body: the server sent bytes past Content-Length (a parse error) or reset.
        overflowed.add(response);
        response.destroy(e);
      } else {
        reject(new DownloadError('network', `Could not fetch ${url.host}: ${(e as NodeJS.ErrnoException).code ?? e.message}`));
      }
    });
    req.end();
  });
}
