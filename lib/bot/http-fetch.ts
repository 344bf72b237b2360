/**
 * The host API's `http.fetch`: a bot calls the business's own systems, through the service, never
 * from its isolate (which has no network).
 *
 * Policy and why:
 * - Never throws into the bot: the answer is `{ ok: true, status, headers, body }` once an HTTP
 *   answer arrived (whatever its status), or `{ ok: false, error: { code, message } }`.
 * - Where it may go: https only, no credentials in the URL; every address the host resolves to must
 *   be public (lib/platform/net/public-address.ts: private, loopback, link-local, every
 *   IPv4-in-IPv6 form…), checked before any connection and pinned for the connection, so DNS
 *   cannot answer differently in between. DEV_ALLOW_PRIVATE_TARGETS (development and tests only)
 *   lets it reach loopback, over http too, and nothing else private. An operator may restrict a
 *   project to a list of hosts (lib/bot/http-allowlist.ts). A refusal is `forbidden_target`.
 * - Redirects (301, 302, 303, 307, 308) are followed at most MAX_REDIRECTS times, each hop checked
 *   like the first; 303 (and 301/302 after a POST) become a GET without body. A hop to another
 *   origin (scheme, host or port) keeps only Accept, Accept-Language and Accept-Encoding of the
 *   bot's headers (CROSS_ORIGIN_SAFE_HEADERS), so no credential, whatever its header, follows a
 *   redirect elsewhere, nor comes back on a later hop; a hop to another origin that would re-send
 *   the body (307, 308, or 301/302 after a method other than POST) is not followed: the bot gets
 *   `forbidden_target` saying so. Same-origin hops keep every header and the body.
 * - Time: `timeoutMs` (default BOT_HTTP_TIMEOUT_MS, 3 s of an event's 5; at most 15 s) covers
 *   connecting, every hop and the body, and ends FETCH_ANSWER_RESERVE_MS before the deadline of the
 *   event that called (the sandbox tells how long is left), so the bot has time to answer the
 *   customer: past it, `timeout`. A timed-out fetch is journaled like any answer (lib/bot/journal.ts):
 *   the event run again gets the same `timeout`, the backend is not called twice.
 * - Size: a request body over BOT_HTTP_MAX_BODY_BYTES (1 MiB) is `request_too_large`; an answer
 *   over it is `response_too_large` (refused on its Content-Length, or cut off the moment it
 *   passes): an error, never a truncated body. Bodies are UTF-8 text.
 * - Rate: per project, BOT_HTTP_PER_MINUTE calls a minute and BOT_HTTP_CONCURRENCY in progress at
 *   once, both in the shared counters (all instances agree); past either, `rate_limited` at once.
 *   When the counters cannot answer, the minute is not counted (fail open, as the API's limits)
 *   and the calls in progress are bounded in this process.
 * - No cookies are kept or answered (Set-Cookie is dropped); the User-Agent names the service.
 * - Each call is logged in the service log with the method, host, status and duration only (never
 *   headers, bodies, paths or query values) and counted per project in the metrics.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Deps } from '../deps.js';
import { checkUrl, pinnedLookup, resolveTarget, UnsafeTargetError } from '../platform/net/public-address.js';
import { callDeadline } from '../platform/net/call-deadline.js';
import { getAllowlist, hostAllowed } from './http-allowlist.js';
import { writeBotLog } from './bot-log.js';
import { addNote } from '../inbox/notes.js';
import { RATE_WINDOW_MS } from './rates.js';
import { ok, type Answer, type CallContext, type Invocation } from './host-types.js';

export const MAX_FETCH_TIMEOUT_MS = 15_000;
export const MAX_REDIRECTS = 3;
export const FETCH_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export const USER_AGENT = 'messaging-service-bot/1.0 (http.fetch of a bot hosted by the messaging service)';
/** Headers the bot may not set: the connection's own, and the service's User-Agent. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection', 'expect', 'user-agent']);
/**
 * The only headers of the bot's that follow a redirect to another origin (scheme, host or port):
 * any other may carry a credential (x-api-key, x-auth-token, a signature…), so all others are
 * dropped. Content-Type never goes along: a body never follows to another origin.
 */
const CROSS_ORIGIN_SAFE_HEADERS = new Set(['accept', 'accept-language', 'accept-encoding']);
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface FetchArgs {
  url: string;
  method?: (typeof FETCH_METHODS)[number];
  headers?: Record<string, string>;
  body?: string | null;
  timeoutMs?: number;
}

type FetchDeps = Pick<Deps, 'db' | 'config' | 'counters' | 'clock' | 'logger' | 'metrics'>;

class FetchError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

/** Time kept before the event's deadline for the bot to answer after a fetch (a slow backend still gets a reply out). */
export const FETCH_ANSWER_RESERVE_MS = 1000;

const refused = (code: string, message: string): Answer => ok({ ok: false, error: { code, message } });

/** Calls in progress per project in this process: the bound when the shared counters cannot answer. */
const localInProgress = new Map<string, number>();

async function takeSlot(deps: FetchDeps, projectId: string, holdMs: number): Promise<(() => void) | undefined> {
  const key = `bot:http:inflight:${projectId}`;
  const limit = deps.config.botHttpConcurrency;
  if (deps.counters.acquire && deps.counters.release) {
    try {
      const token = await deps.counters.acquire(key, limit, holdMs, deps.clock.now());
      if (token === null) return undefined;
      return () => void deps.counters.release!(key, token).catch(() => undefined);
    } catch {
      // The counters cannot answer: bounded in this process below.
    }
  }
  const n = localInProgress.get(projectId) ?? 0;
  if (n >= limit) return undefined;
  localInProgress.set(projectId, n + 1);
  return () => {
    const left = (localInProgress.get(projectId) ?? 1) - 1;
    if (left <= 0) localInProgress.delete(projectId);
    else localInProgress.set(projectId, left);
  };
}

async function withinRate(deps: FetchDeps, projectId: string): Promise<boolean> {
  try {
    const { count } = await deps.counters.hit(`bot:http:${projectId}`, RATE_WINDOW_MS, deps.clock.now());
    return count <= deps.config.botHttpPerMinute;
  } catch {
    return true;
  }
}

function checkHeaders(raw: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw ?? {})) {
    const lower = name.toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(lower)) throw new FetchError('invalid_request', `"${name.slice(0, 64)}" is not a header name.`);
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('proxy-')) throw new FetchError('invalid_request', `The ${lower} header is set by the service.`);
    if (/[\r\n\0]/.test(value)) throw new FetchError('invalid_request', `The ${lower} header's value holds a line break or NUL.`);
    out[lower] = value;
  }
  return out;
}

/**
 * A fetch that failed the bot: the backend's 5xx, a time-out, a network error or a refused size
 * (not the bot's own mistakes, a bad header or URL, nor its rate: those are its to fix and log).
 */
function fetchFailed(a: { status?: number; code?: string }): boolean {
  if (a.code) return ['timeout', 'network_error', 'response_too_large', 'too_many_redirects'].includes(a.code);
  return (a.status ?? 0) >= 500;
}

/** The outcome label of a call: the status class, or the error code. */
const outcomeOf = (a: { status?: number; code?: string }) => (a.code ?? `${Math.floor((a.status ?? 0) / 100)}xx`);

export async function runHttpFetch(deps: FetchDeps, inv: Invocation, args: FetchArgs, call: CallContext = {}): Promise<Answer> {
  const started = performance.now();
  const method = args.method ?? 'GET';
  let host = '-';
  try {
    host = new URL(args.url).host;
  } catch {
    /* refused below */
  }
  const finish = async (answer: { status?: number; code?: string; message?: string; value?: unknown }): Promise<Answer> => {
    const seconds = (performance.now() - started) / 1000;
    const outcome = outcomeOf(answer);
    deps.metrics?.botFetch(inv.projectId, outcome, seconds);
    // Method, host, status and duration only: never headers, bodies, paths or query values.
    const line = { project_id: inv.projectId, method, host: host.slice(0, 255), status: answer.status ?? null, outcome, duration_ms: Math.round(seconds * 1000), mode: inv.mode };
    const failed = fetchFailed(answer);
    if (failed) deps.logger.warn('bot http.fetch failed', line);
    else deps.logger.info('bot http.fetch', line);
    // The project's bot log says it too (a production run's), so the team sees it without the bot logging it.
    if (failed && inv.mode === 'production') {
      await writeBotLog(deps, inv.projectId, {
        level: 'warn', kind: 'error', deploymentId: inv.deploymentId ?? null,
        message: `http.fetch ${method} ${host.slice(0, 255)} failed: ${answer.code ?? `status ${answer.status}`} after ${Math.round(seconds * 1000)} ms`,
      }).catch((e: unknown) => deps.logger.warn('bot log not written', { project_id: inv.projectId, error: e instanceof Error ? e.message : String(e) }));
      // And on the conversation, as the bot's private note: the person reading it sees why the bot's answer may be missing.
      if (inv.conversationId !== undefined) {
        await addNote(deps.db, inv.projectId, BigInt(inv.conversationId), `The bot's http.fetch (${method} ${host.slice(0, 255)}) failed: ${answer.code ?? `status ${answer.status}`}. Its answer to the customer may be missing or partial.`, { kind: 'bot', id: null, name: null }, deps.clock.now())
          .catch((e: unknown) => deps.logger.warn('bot fetch note not written', { project_id: inv.projectId, error: e instanceof Error ? e.message : String(e) }));
      }
    }
    return answer.code ? refused(answer.code, answer.message ?? answer.code) : ok(answer.value);
  };
  let headers: Record<string, string>;
  try {
    headers = checkHeaders(args.headers);
  } catch (e) {
    return finish({ code: (e as FetchError).code, message: (e as FetchError).message });
  }
  const body = args.body ?? null;
  const maxBody = deps.config.botHttpMaxBodyBytes;
  if (body !== null) {
    const size = Buffer.byteLength(body, 'utf8');
    if (size > maxBody) return finish({ code: 'request_too_large', message: `A request body is at most ${maxBody} bytes; this one is ${size}.` });
  }
  if (body !== null && (method === 'GET' || method === 'HEAD')) return finish({ code: 'invalid_request', message: `A ${method} request has no body.` });
  let timeoutMs = Math.min(args.timeoutMs ?? deps.config.botHttpTimeoutMs, MAX_FETCH_TIMEOUT_MS);
  if (call.remainingMs !== undefined) timeoutMs = Math.min(timeoutMs, Math.floor(call.remainingMs) - FETCH_ANSWER_RESERVE_MS);
  if (timeoutMs < 1) return finish({ code: 'timeout', message: "The event's deadline has passed: no time is left for the call." });
  if (!(await withinRate(deps, inv.projectId))) {
    return finish({ code: 'rate_limited', message: `A project's bot may start ${deps.config.botHttpPerMinute} http.fetch calls a minute (BOT_HTTP_PER_MINUTE); try again in the next minute.` });
  }
  const release = await takeSlot(deps, inv.projectId, timeoutMs + 5_000);
  if (!release) {
    return finish({ code: 'rate_limited', message: `A project's bot may have ${deps.config.botHttpConcurrency} http.fetch calls in progress at once (BOT_HTTP_CONCURRENCY); await some before starting more.` });
  }
  try {
    const answer = await fetchWithRedirects(deps, inv.projectId, { url: args.url, method, headers, body }, timeoutMs, maxBody, (h) => (host = h));
    return finish({ status: answer.status, value: { ok: true, ...answer } });
  } catch (e) {
    if (e instanceof FetchError) return finish({ code: e.code, message: e.message });
    return finish({ code: 'network_error', message: 'The call failed.' });
  } finally {
    release();
  }
}

interface Hop {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

async function fetchWithRedirects(deps: FetchDeps, projectId: string, first: Hop, timeoutMs: number, maxBody: number, onHost: (host: string) => void) {
  const deadline = callDeadline(timeoutMs);
  const allowlist = await getAllowlist(deps, projectId);
  const dev = deps.config.devAllowPrivateTargets;
  try {
    let hop = first;
    for (let n = 0; ; n++) {
      const where = n === 0 ? '' : ` (redirect ${n})`;
      let url: URL;
      let target: { address: string; family: 4 | 6 };
      try {
        url = checkUrl(hop.url, { allowPrivate: dev, allowHttp: false });
        onHost(url.host);
        if (!hostAllowed(allowlist, url.hostname)) throw new FetchError('forbidden_target', `${url.hostname.slice(0, 255)}${where} is not on this project's list of allowed hosts (set by the operator).`);
        target = await resolveTarget(url.hostname, { allowPrivate: false, allowLoopback: dev });
      } catch (e) {
        if (e instanceof FetchError) throw e;
        if (e instanceof UnsafeTargetError) {
          if (e.reason === 'unresolvable') throw new FetchError('network_error', `${e.message}${where}`);
          throw new FetchError('forbidden_target', `${e.message}${where} Bots reach public https hosts only.`);
        }
        throw e;
      }
      const res = await send(url, target, hop, deadline.signal).catch((e) => {
        if (deadline.timedOut) throw new FetchError('timeout', `No answer within ${timeoutMs} ms.`);
        throw new FetchError('network_error', `Could not reach ${url.host}${where}: ${(e as NodeJS.ErrnoException).code ?? 'the connection failed'}.`);
      });
      const status = res.statusCode ?? 0;
      if (REDIRECTS.has(status) && res.headers.location) {
        res.destroy();
        if (n >= MAX_REDIRECTS) throw new FetchError('too_many_redirects', `More than ${MAX_REDIRECTS} redirects.`);
        let next: URL;
        try {
          next = new URL(res.headers.location, url);
        } catch {
          throw new FetchError('forbidden_target', `Redirect ${n + 1} names no valid URL.`);
        }
        const toGet = status === 303 || ((status === 301 || status === 302) && hop.method === 'POST');
        const crossOrigin = next.origin !== url.origin;
        if (crossOrigin && !toGet && hop.body !== null) {
          // A 307/308 (or a 301/302 after a method other than POST) would send the body again, to a
          // server the bot did not name: stop instead of re-sending it (or silently changing the method).
          throw new FetchError('forbidden_target', `Redirect ${n + 1} (${status}) leads to another origin (${next.origin.slice(0, 255)}) and would re-send the request body there; a body is never sent to another origin. Call that URL yourself if you trust it.`);
        }
        let headers = { ...hop.headers };
        if (crossOrigin) headers = Object.fromEntries(Object.entries(headers).filter(([h]) => CROSS_ORIGIN_SAFE_HEADERS.has(h)));
        if (toGet) delete headers['content-type'];
        hop = { url: next.toString(), method: toGet ? 'GET' : hop.method, headers, body: toGet ? null : hop.body };
        continue;
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBody) {
        res.destroy();
        throw new FetchError('response_too_large', `The answer is ${declared} bytes; at most ${maxBody} are accepted.`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res) {
          size += (chunk as Buffer).length;
          if (size > maxBody) {
            res.destroy();
            throw new FetchError('response_too_large', `The answer is over ${maxBody} bytes; at most ${maxBody} are accepted.`);
          }
          chunks.push(chunk as Buffer);
        }
      } catch (e) {
        if (e instanceof FetchError) throw e;
        if (deadline.timedOut) throw new FetchError('timeout', `The answer did not arrive within ${timeoutMs} ms.`);
        throw new FetchError('network_error', `The answer from ${url.host} broke off.`);
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (name === 'set-cookie' || value === undefined) continue;
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      return { status, headers, body: Buffer.concat(chunks).toString('utf8') };
    }
  } finally {
    deadline.clear();
  }
}

function send(url: URL, target: { address: string; family: 4 | 6 }, hop: Hop, signal: AbortSignal): Promise<IncomingMessage> {
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(url, {
      method: hop.method,
      agent: false,
      lookup: pinnedLookup(target.address, target.family),
      signal,
      headers: {
        ...hop.headers,
        'user-agent': USER_AGENT,
        'accept-encoding': 'identity',
        ...(hop.body !== null ? { 'content-length': String(Buffer.byteLength(hop.body, 'utf8')) } : {}),
      },
    });
    req.on('response', resolve);
    req.on('error', reject);
    req.end(hop.body ?? undefined);
  });
}
