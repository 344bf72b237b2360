/**
 * Status webhooks for sent messages: automatic sent → delivered → read (each step queued after the
 * previous one's first delivery attempt, so a receiver sees them in order), async failures, and
 * manual statuses from the control API.
 */
import type { Dispatcher, AttemptResult } from './callbacks.js';
import { DelayQueue } from './structures.js';
import type { AutoStatusDelays, MessageMeta, SimState } from './state.js';
import { statusObject, statusWebhook, type StatusError } from './webhooks.js';

const MAX_SCHEDULED = 200_000;
type Status = 'sent' | 'delivered' | 'read' | 'failed';
const RANK: Record<string, number> = { accepted: 0, sent: 1, delivered: 2, read: 3, failed: 4 };

export class StatusEngine {
  private sentQ: DelayQueue<string>;
  private deliveredQ: DelayQueue<string>;
  private readQ: DelayQueue<string>;
  private failQ: DelayQueue<{ wamid: string; errors: StatusError[] }>;

  constructor(
    private readonly state: SimState,
    private readonly dispatcher: Dispatcher,
    private delays: AutoStatusDelays | null,
  ) {
    this.sentQ = new DelayQueue(delays?.sent ?? 0, (w) => this.step(w, 'sent'), MAX_SCHEDULED);
    this.deliveredQ = new DelayQueue(delays?.delivered ?? 0, (w) => this.step(w, 'delivered'), MAX_SCHEDULED);
    this.readQ = new DelayQueue(delays?.read ?? 0, (w) => this.step(w, 'read'), MAX_SCHEDULED);
    this.failQ = new DelayQueue(delays?.sent ?? 0, (f) => this.fail(f.wamid, f.errors), MAX_SCHEDULED);
  }

  get autoDelays(): AutoStatusDelays | null {
    return this.delays;
  }

  setDelays(d: AutoStatusDelays | null): void {
    this.delays = d;
    this.sentQ.delayMs = d?.sent ?? 0;
    this.failQ.delayMs = d?.sent ?? 0;
    this.deliveredQ.delayMs = d?.delivered ?? 0;
    this.readQ.delayMs = d?.read ?? 0;
  }

  /** After an accepted send: start automatic progression, or report an async failure. */
  start(wamid: string, asyncError: StatusError | null): void {
    if (asyncError) {
      const meta = this.state.index.get(wamid);
      if (meta) meta.stop = true;
      this.push(this.failQ, { wamid, errors: [asyncError] });
      return;
    }
    if (!this.delays) return;
    this.push(this.sentQ, wamid);
  }

  private push<T>(q: DelayQueue<T>, item: T): void {
    if (!q.push(item)) this.state.stats.status_progressions_dropped++;
  }

  private step(wamid: string, status: 'sent' | 'delivered' | 'read'): void {
    const meta = this.state.index.get(wamid);
    if (!meta || meta.stop || !this.delays) return;
    this.emit(wamid, meta, status, undefined, () => {
      if (meta.stop || !this.delays) return;
      if (status === 'sent' && this.delays.delivered !== null) this.push(this.deliveredQ, wamid);
      else if (status === 'delivered' && this.delays.read !== null) this.push(this.readQ, wamid);
    });
  }

  private fail(wamid: string, errors: StatusError[]): void {
    const meta = this.state.index.get(wamid);
    if (meta) this.emit(wamid, meta, 'failed', errors);
  }

  private emit(wamid: string, meta: MessageMeta, status: Status, errors?: StatusError[], after?: () => void): void {
    const pn = this.state.phones.get(meta.pnid);
    if (!pn) return;
    if (RANK[status] > RANK[meta.status]) meta.status = status;
    this.dispatcher.enqueueStatus(pn, statusObject(this.state, wamid, meta, status, errors), after ? () => after() : undefined);
  }

  /** Control API: send one status now (ends automatic progression for the message). */
  async manual(wamid: string, status: Status, errors?: StatusError[]): Promise<AttemptResult | null> {
    const meta = this.state.index.get(wamid);
    if (!meta) return null;
    const pn = this.state.phones.get(meta.pnid);
    if (!pn) return null;
    meta.stop = true;
    meta.status = status;
    const body = JSON.stringify(statusWebhook(this.state, pn, wamid, meta, status, errors));
    return this.dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'messages', kind: `status:${status}`, ref: wamid, body, attempt: 0 });
  }

  clear(): void {
    this.sentQ.clear();
    this.deliveredQ.clear();
    this.readQ.clear();
    this.failQ.clear();
  }
}
