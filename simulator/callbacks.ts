/**
 * Webhook delivery: signed POSTs (X-Hub-Signature-256 = HMAC-SHA256 of the exact body keyed by the app
 * secret) through a bounded queue with bounded concurrency, keep-alive agents, a timeout, and a few
 * retries with growing delays (Meta retries failed deliveries with backoff). Also the GET verification
 * handshake (hub.mode / hub.verify_token / hub.challenge).
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { hubChallenge } from './ids.js';
import type { PhoneNumber, SimLogger, SimState, Verification } from './state.js';
import { statusesNotification } from './webhooks.js';

export interface CallbackJob {
  pnid: string;
  field: string;
  kind: string;
  ref: string | null;
  body: string;
  attempt: number;
  /** Called once, after the first attempt (whatever its outcome), or when the job is dropped. */
  onFirstAttempt?: (ok: boolean) => void;
  /** The message statuses this job carries (reported to `onStatusesSettled`). */
  statuses?: Array<{ wamid: string; status: string }>;
}

export interface AttemptResult {
  delivered: boolean;
  status_code: number | null;
  error: string | null;
}

interface RawResponse {
  status: number | null;
  body: string;
  error: string | null;
}

export function signBody(appSecret: string, body: string): string {
  return 'sha256=' + createHmac('sha256', appSecret).update(body, 'utf8').digest('hex');
}

/** Statuses waiting to share a notification: those of the numbers that send to one callback URL with one app secret. */
interface StatusBatch {
  /** Per number, in the order they first joined. */
  groups: Map<string, { pn: PhoneNumber; statuses: Record<string, unknown>[] }>;
  count: number;
  after: Array<(ok: boolean) => void>;
  timer?: NodeJS.Timeout;
}

/** Numbers of one app (same callback URL and secret) share notifications, as Meta sends an app's webhooks. */
function batchKey(pn: PhoneNumber): string {
  return `${pn.callback_url}\n${pn.app_secret}`;
}

/** How long a callback socket stays open unused when the receiver announces no shorter keep-alive. */
const IDLE_SOCKET_MS = 30_000;

export class Dispatcher {
  private queue: CallbackJob[] = [];
  /** Automatic statuses waiting (up to `statusBatchMs`) to share a notification, per callback URL and app secret. */
  private batches = new Map<string, StatusBatch>();
  private batched = 0;
  private head = 0;
  private active = 0;
  private retryTimers = new Set<NodeJS.Timeout>();
  private inFlight = new Set<http.ClientRequest>();
  private closed = false;
  /**
   * Told when statuses leave the dispatcher for good: the receiver took them (2xx), or they were
   * given up (retries over, queue full, number gone). Not when the dispatcher closes: what is in
   * flight then stays owed for the next start (simulator/owed-statuses.ts).
   */
  onStatusesSettled?: (statuses: Array<{ wamid: string; status: string }>) => void;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(
    private readonly state: SimState,
    private readonly log: SimLogger,
  ) {
    const maxSockets = state.limits.callbackConcurrency;
    // `timeout` makes Node's agent honour the receiver's `Keep-Alive: timeout=N` (it closes an idle
    // socket a second before); without it an idle socket is reused just as the receiver closes it,
    // and the callback fails with ECONNRESET (issue 69: a whole pool of them after a quiet spell).
    const agentOptions = { keepAlive: true, maxSockets, maxFreeSockets: maxSockets, timeout: IDLE_SOCKET_MS };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
  }

  get pending(): number {
    return this.queue.length - this.head + this.active + this.retryTimers.size + this.batched;
  }

  /**
   * Queue an automatic status. Statuses raised within `statusBatchMs` for numbers of one app (one
   * callback URL and secret) go out in one notification, as Meta batches them under load: an entry
   * per WhatsApp Business Account, a change per number, several statuses in each (at most
   * `statusBatchMax` in all); with 0 each status is its own notification.
   */
  enqueueStatus(pn: PhoneNumber, status: Record<string, unknown>, onFirstAttempt?: (ok: boolean) => void): boolean {
    const { statusBatchMs, statusBatchMax } = this.state.limits;
    if (this.closed || this.pending >= this.state.limits.maxPendingCallbacks) {
      this.state.stats.callbacks_dropped++;
      onFirstAttempt?.(false);
      if (!this.closed) this.onStatusesSettled?.([{ wamid: String(status.id), status: String(status.status) }]);
      return false;
    }
    const key = batchKey(pn);
    let batch = this.batches.get(key);
    if (!batch) {
      batch = { groups: new Map(), count: 0, after: [] };
      if (statusBatchMs > 0) {
        batch.timer = setTimeout(() => this.flushStatuses(key), statusBatchMs);
        batch.timer.unref?.();
      }
      this.batches.set(key, batch);
    }
    let group = batch.groups.get(pn.phone_number_id);
    if (!group) batch.groups.set(pn.phone_number_id, (group = { pn, statuses: [] }));
    group.statuses.push(status);
    batch.count++;
    if (onFirstAttempt) batch.after.push(onFirstAttempt);
    this.batched++;
    if (statusBatchMs <= 0 || batch.count >= statusBatchMax) this.flushStatuses(key);
    return true;
  }

  /** Statuses waiting in a batch (tests hold the window open and flush when theirs are all in it). */
  batchedStatuses(): Array<{ wamid: string; status: string }> {
    return [...this.batches.values()].flatMap((b) => [...b.groups.values()].flatMap((g) => g.statuses.map((s) => ({ wamid: String(s.id), status: String(s.status) }))));
  }

  /** Send every waiting batch now, as its window closing would. */
  flushAllStatuses(): void {
    for (const key of [...this.batches.keys()]) this.flushStatuses(key);
  }

  private flushStatuses(key: string): void {
    const batch = this.batches.get(key);
    if (!batch) return;
    clearTimeout(batch.timer);
    this.batches.delete(key);
    this.batched -= batch.count;
    const groups = [...batch.groups.values()];
    const statuses = groups.flatMap((g) => g.statuses);
    const one = statuses.length === 1 ? statuses[0] : undefined;
    const after = batch.after;
    this.queue.push({
      // The number whose callback URL and secret the notification uses (all of the batch share them).
      pnid: groups[0].pn.phone_number_id,
      field: 'messages',
      kind: one ? `status:${one.status}` : 'status:batch',
      ref: one ? String(one.id) : null,
      body: JSON.stringify(statusesNotification(groups, this.state)),
      attempt: 0,
      onFirstAttempt: after.length ? (ok) => after.forEach((f) => f(ok)) : undefined,
      statuses: statuses.map((s) => ({ wamid: String(s.id), status: String(s.status) })),
    });
    this.pump();
  }

  /** Queue a delivery. Returns false (and counts a drop) when the bounded queue is full. */
  enqueue(job: CallbackJob): boolean {
    if (this.closed || this.pending >= this.state.limits.maxPendingCallbacks) {
      this.state.stats.callbacks_dropped++;
      this.log.warn?.('simulator: callback queue full, dropping', { kind: job.kind, ref: job.ref });
      job.onFirstAttempt?.(false);
      return false;
    }
    this.queue.push(job);
    this.pump();
    return true;
  }

  /** Deliver now (outside the queue) and report the first attempt; failures are retried in the background. */
  deliverNow(job: CallbackJob): Promise<AttemptResult> {
    return this.attempt(job);
  }

  private pump(): void {
    while (!this.closed && this.active < this.state.limits.callbackConcurrency && this.head < this.queue.length) {
      const job = this.queue[this.head];
      this.queue[this.head] = undefined as never;
      this.head++;
      this.active++;
      void this.attempt(job).finally(() => {
        this.active--;
        this.pump();
      });
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private async attempt(job: CallbackJob): Promise<AttemptResult> {
    const pn = this.state.phones.get(job.pnid);
    if (!pn || this.closed) {
      job.onFirstAttempt?.(false);
      if (!this.closed) this.settle(job);
      return { delivered: false, status_code: null, error: 'phone number no longer registered' };
    }
    await this.maybeVerify(pn);
    const started = Date.now();
    const sig = signBody(pn.app_secret, job.body);
    const res = await this.request(pn.callback_url, 'POST', job.body, {
      'content-type': 'application/json',
      'x-hub-signature-256': sig,
      'x-hub-signature': 'sha1=' + createHmac('sha1', pn.app_secret).update(job.body, 'utf8').digest('hex'),
      'user-agent': 'facebookexternalua',
    });
    const delivered = res.status !== null && res.status >= 200 && res.status < 300;
    const error = delivered ? null : (res.error ?? `HTTP ${res.status}`);
    this.state.callbackLog.push({
      at: this.state.clock.now().toISOString(),
      url: pn.callback_url,
      field: job.field,
      kind: job.kind,
      phone_number_id: pn.phone_number_id,
      ref: job.ref,
      attempt: job.attempt + 1,
      status_code: res.status,
      error,
      duration_ms: Date.now() - started,
    });
    if (delivered) this.state.stats.callbacks_ok++;
    else {
      this.state.stats.callbacks_failed++;
      this.log.debug?.('simulator: callback failed', { url: pn.callback_url, kind: job.kind, error, attempt: job.attempt + 1 });
      this.scheduleRetry(job);
    }
    const first = job.onFirstAttempt;
    job.onFirstAttempt = undefined;
    first?.(delivered);
    // After the first-attempt hook, which schedules a message's next automatic status: what is owed
    // for the message is then known before this one is struck off.
    if (delivered) this.settle(job);
    return { delivered, status_code: res.status, error };
  }

  private scheduleRetry(job: CallbackJob): void {
    const delays = this.state.limits.callbackRetryDelaysMs;
    if (this.closed) return;
    if (job.attempt >= delays.length) return this.settle(job);
    if (this.pending >= this.state.limits.maxPendingCallbacks) {
      this.state.stats.callbacks_dropped++;
      return this.settle(job);
    }
    const delay = delays[job.attempt];
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      this.state.stats.callbacks_retried++;
      this.queue.push({ ...job, attempt: job.attempt + 1, onFirstAttempt: undefined });
      this.pump();
    }, delay);
    t.unref?.();
    this.retryTimers.add(t);
  }

  private settle(job: CallbackJob): void {
    if (job.statuses?.length) this.onStatusesSettled?.(job.statuses);
  }

  /** Re-run a failed or missing handshake lazily before a delivery (at most every 2 s). */
  private async maybeVerify(pn: PhoneNumber): Promise<void> {
    if (!pn.verify_token || pn.verification.ok) return;
    if (Date.now() - pn.lastVerifyAttemptMs < 2_000) return;
    await this.verify(pn);
  }

  /** Meta's GET handshake; success = HTTP 200 whose body is exactly the challenge. */
  async verify(pn: PhoneNumber, timeoutMs = 3_000): Promise<Verification> {
    pn.lastVerifyAttemptMs = Date.now();
    if (!pn.verify_token) return pn.verification;
    const challenge = hubChallenge();
    const u = new URL(pn.callback_url);
    u.searchParams.set('hub.mode', 'subscribe');
    u.searchParams.set('hub.challenge', challenge);
    u.searchParams.set('hub.verify_token', pn.verify_token);
    const res = await this.request(u.toString(), 'GET', null, { 'user-agent': 'facebookplatform/1.0 (+http://developers.facebook.com)' }, timeoutMs);
    const ok = res.status === 200 && res.body.trim() === challenge;
    pn.verification = {
      ok,
      at: this.state.clock.now().toISOString(),
      status_code: res.status,
      error: ok ? null : (res.error ?? (res.status === 200 ? 'response body is not the hub.challenge' : `HTTP ${res.status}`)),
    };
    this.log.info?.('simulator: webhook verification', { phone_number_id: pn.phone_number_id, ok, status: res.status });
    return pn.verification;
  }

  private request(url: string, method: string, body: string | null, headers: Record<string, string>, timeoutMs?: number): Promise<RawResponse> {
    return new Promise((resolve) => {
      let u: URL;
      try {
        u = new URL(url);
      } catch {
        resolve({ status: null, body: '', error: 'invalid callback URL' });
        return;
      }
      const isHttps = u.protocol === 'https:';
      const lib = isHttps ? https : http;
      const payload = body === null ? null : Buffer.from(body, 'utf8');
      const req = lib.request(u, {
        method,
        agent: isHttps ? this.httpsAgent : this.httpAgent,
        headers: payload ? { ...headers, 'content-length': String(payload.length) } : headers,
        timeout: timeoutMs ?? this.state.limits.callbackTimeoutMs,
      });
      this.inFlight.add(req);
      let settled = false;
      const done = (r: RawResponse) => {
        if (settled) return;
        settled = true;
        this.inFlight.delete(req);
        resolve(r);
      };
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < 64 * 1024) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => done({ status: res.statusCode ?? null, body: Buffer.concat(chunks).toString('utf8'), error: null }));
        res.on('error', (e) => done({ status: res.statusCode ?? null, body: '', error: e.message }));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e: NodeJS.ErrnoException) => done({ status: null, body: '', error: e.code ?? e.message }));
      req.end(payload ?? undefined);
    });
  }

  /** Drop queued work (e.g. on reset) without closing. */
  clear(): void {
    for (const b of this.batches.values()) clearTimeout(b.timer);
    this.batches.clear();
    this.batched = 0;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    this.queue = [];
    this.head = 0;
  }

  close(): void {
    this.closed = true;
    this.clear();
    for (const r of this.inFlight) r.destroy(new Error('simulator closed'));
    this.inFlight.clear();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
