/**
 * One delivery attempt over HTTP, hardened against the receiver:
 * - the URL is re-checked and its host resolved and checked on every attempt, and the connection
 *   goes to the address that was checked (no DNS-rebinding window);
 * - redirects are never followed (a 3xx is a failure), and only a 2xx is a success;
 * - one hard deadline covers DNS, connect, TLS, request and response (a hanging or dripping
 *   receiver is cut off at it);
 * - the response body is never read past a cap (a huge body cannot use memory); only its first
 *   RESPONSE_EXCERPT_BYTES are kept, as one line of text, for the delivery log (why an endpoint fails).
 * Connections are kept alive per checked address, so a busy receiver is not reconnected each time.
 */
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { UnsafeTargetError, pinnedLookup } from '../platform/net/public-address.js';
import { resolveWebhookTarget } from './target.js';

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  /** Why the attempt failed without a status (or was refused before sending); null otherwise. */
  error: string | null;
  durationMs: number;
  /** The first bytes of the receiver's answer as one line of text (null without an answer or body). */
  excerpt?: string | null;
}

/** How much of a receiver's answer the delivery log keeps. */
export const RESPONSE_EXCERPT_BYTES = 300;

/** The kept bytes as one line: UTF-8 (a cut character dropped), control characters as spaces. */
export function excerptOf(bytes: Buffer): string | null {
  const text = bytes.toString('utf8').replace(/\uFFFD+$/, '').replace(/[\u0000-\u001F\u007F]+/g, ' ').trim();
  return text.length ? text : null;
}

export interface PostOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  bodyCap: number;
  agents: AgentPool;
  /** Cuts the attempt short (shutdown); the result is then an error nobody records. */
  signal?: AbortSignal;
}

/** Keep-alive agents, one per (scheme, host, port, checked address); least recently used evicted. */
export class AgentPool {
  private readonly agents = new Map<string, http.Agent>();
  constructor(private readonly max = 256, private readonly socketsPerAgent = 64) {}

  get(protocol: string, host: string, port: string, address: string, family: 4 | 6): http.Agent {
    const key = `${protocol}//${host}:${port}@${address}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      // `timeout` makes the agent honour the receiver's `Keep-Alive: timeout=N` (an idle socket is
      // closed a second before the receiver would close it); without it, the first delivery after a
      // quiet spell may reuse a socket just as the receiver closes it (ECONNRESET, a wasted attempt).
      const opts = { keepAlive: true, timeout: 30_000, maxSockets: this.socketsPerAgent, maxFreeSockets: this.socketsPerAgent, scheduling: 'lifo' as const, lookup: pinnedLookup(address, family) };
      agent = protocol === 'https:' ? new https.Agent(opts) : new http.Agent(opts);
      if (this.agents.size >= this.max) {
        const [oldest, old] = this.agents.entries().next().value as [string, http.Agent];
        this.agents.delete(oldest);
        old.destroy();
      }
    }
    this.agents.set(key, agent);
    return agent;
  }

  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

function describe(e: unknown): string {
  const err = e as { code?: string; message?: string };
  if (err?.code === 'ECONNREFUSED') return 'connection refused';
  if (err?.code === 'ECONNRESET' || err?.code === 'EPIPE') return 'connection reset';
  if (err?.code === 'ENOTFOUND' || err?.code === 'EAI_AGAIN') return 'host not found';
  return String(err?.message ?? err?.code ?? e).slice(0, 300);
}

export async function postWebhook(rawUrl: string, body: string, headers: Record<string, string>, opts: PostOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  let onDeadline: (() => void) | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      onDeadline?.();
      resolve('timeout');
    }, opts.timeoutMs);
    onAbort = () => {
      onDeadline?.();
      resolve('timeout');
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
  const timeoutResult = (): AttemptResult => ({ ok: false, statusCode: null, error: `timeout after ${opts.timeoutMs} ms`, durationMs: elapsed() });
  try {
    let target;
    try {
      const resolved = await Promise.race([resolveWebhookTarget(rawUrl, opts.allowPrivate, opts.timeoutMs), deadline]);
      if (resolved === 'timeout') return timeoutResult();
      target = resolved;
    } catch (e) {
      const reason = e instanceof UnsafeTargetError ? `refused: ${e.message}` : describe(e);
      return { ok: false, statusCode: null, error: reason, durationMs: elapsed() };
    }
    const { url, address, family } = target;
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    const agent = opts.agents.get(url.protocol, url.hostname, port, address, family);
    const payload = Buffer.from(body, 'utf8');
    const outcome = new Promise<AttemptResult>((resolve) => {
      let statusCode: number | null = null;
      let settled = false;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      const settle = (r: Omit<AttemptResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        resolve({ ...r, durationMs: elapsed(), excerpt: keptBytes ? excerptOf(Buffer.concat(kept).subarray(0, RESPONSE_EXCERPT_BYTES)) : null });
      };
      const req = (url.protocol === 'https:' ? https : http).request({
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ''),
        port,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        agent,
        lookup: pinnedLookup(address, family),
        headers: { ...headers, 'Content-Length': String(payload.length) },
      });
      onDeadline = () => {
        req.destroy(new Error('deadline'));
        settle({ ok: false, statusCode, error: `timeout after ${opts.timeoutMs} ms` });
      };
      req.on('error', (e) => settle({ ok: statusCode !== null && statusCode >= 200 && statusCode < 300, statusCode, error: statusCode === null ? describe(e) : null }));
      req.on('response', (res) => {
        statusCode = res.statusCode ?? null;
        const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (keptBytes < RESPONSE_EXCERPT_BYTES) {
            kept.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - keptBytes));
            keptBytes += Math.min(chunk.length, RESPONSE_EXCERPT_BYTES - keptBytes);
          }
          if (read > opts.bodyCap) {
            // Enough: the status is all we need; the connection is not reused.
            res.destroy();
            settle({ ok, statusCode, error: null });
          }
        });
        res.on('end', () => settle({ ok, statusCode, error: null }));
        res.on('error', () => settle({ ok, statusCode, error: null }));
        res.on('close', () => settle({ ok, statusCode, error: null }));
      });
      req.end(payload);
    });
    const result = await Promise.race([outcome, deadline]);
    return result === 'timeout' ? timeoutResult() : result;
  } finally {
    clearTimeout(timer);
    if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
  }
}
