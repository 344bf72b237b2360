/**
 * Status webhooks for sent messages: automatic sent → delivered → read (each step queued after the
 * previous one's first delivery attempt, so a receiver sees them in order), async failures, and
 * manual statuses from the control API. With a journal (simulator/owed-statuses.ts) what is owed
 * survives a restart: `resume()` delivers it again and carries on the progression.
 */
import type { Dispatcher, AttemptResult } from './callbacks.js';
import type { OwedStatuses } from './owed-statuses.js';
import { DelayQueue } from './structures.js';
import type { AutoStatusDelays, MessageMeta, SimState } from './state.js';
import { statusObject, statusesWebhook, type StatusError } from './webhooks.js';

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
    private readonly owed?: OwedStatuses,
  ) {
    if (owed) dispatcher.onStatusesSettled = (list) => owed.settled(list);
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
    const meta = this.state.index.get(wamid);
    if (asyncError) {
      if (meta) meta.stop = true;
      if (meta) this.owed?.begin(wamid, meta, { status: 'failed', errors: [asyncError] });
      this.push(this.failQ, { wamid, errors: [asyncError] });
      return;
    }
    if (!this.delays) return;
    if (meta) this.owed?.begin(wamid, meta, { status: 'sent' });
    this.push(this.sentQ, wamid);
  }

  /**
   * After a restart: what the journal holds as owed goes out again (the same status objects, as
   * Meta retries them), and automatic progression carries on from its next step. A receiver that is
   * not up yet gets them through the dispatcher's retries.
   */
  resume(): void {
    if (!this.owed) return;
    for (const [wamid, e] of [...this.owed.entries]) {
      const pn = this.state.phones.get(e.meta.pnid);
      if (!pn) continue;
      if (!this.state.index.has(wamid)) this.state.index.set(wamid, e.meta);
      for (const object of [...e.pending.values()].sort((a, b) => RANK[String(a.status)] - RANK[String(b.status)])) {
        this.dispatcher.enqueueStatus(pn, object);
      }
      const next = e.next;
      if (next?.status === 'failed') this.push(this.failQ, { wamid, errors: next.errors ?? [] });
      else if (next?.status === 'sent') this.push(this.sentQ, wamid);
      else if (next?.status === 'delivered') this.push(this.deliveredQ, wamid);
      else if (next?.status === 'read') this.push(this.readQ, wamid);
    }
  }

  private push<T>(q: DelayQueue<T>, item: T): void {
    if (!q.push(item)) this.state.stats.status_progressions_dropped++;
  }

  private step(wamid: string, status: 'sent' | 'delivered' | 'read'): void {
    const meta = this.state.index.get(wamid);
    if (!meta || meta.stop || !this.delays) {
      // Progression ended here (a manual status, automatic statuses turned off): nothing more owed by it.
      this.owed?.setNext(wamid, null);
      return;
    }
    this.emit(wamid, meta, status, undefined, () => {
      let next: 'delivered' | 'read' | null = null;
      if (meta.stop || !this.delays) next = null;
      else if (status === 'sent' && this.delays.delivered !== null) next = 'delivered';
      // No read receipts in groups (Meta's Groups API): a group message stops at delivered.
      else if (status === 'delivered' && this.delays.read !== null && !meta.groupId) next = 'read';
      this.owed?.setNext(wamid, next && { status: next });
      if (next) this.push(next === 'delivered' ? this.deliveredQ : this.readQ, wamid);
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
    const object = statusObject(this.state, wamid, meta, status, errors);
    this.owed?.emitted(wamid, meta, status, object, { chained: after !== undefined });
    this.dispatcher.enqueueStatus(pn, object, after ? () => after() : undefined);
  }

  /** Control API: send one status now (ends automatic progression for the message). */
  async manual(wamid: string, status: Status, errors?: StatusError[]): Promise<AttemptResult | null> {
    const meta = this.state.index.get(wamid);
    if (!meta) return null;
    const pn = this.state.phones.get(meta.pnid);
    if (!pn) return null;
    meta.stop = true;
    meta.status = status;
    const object = statusObject(this.state, wamid, meta, status, errors);
    // Owed like any status (written before the first attempt), and automatic progression is over.
    this.owed?.emitted(wamid, meta, status, object, { sync: true });
    const body = JSON.stringify(statusesWebhook(pn, [object], this.state));
    return this.dispatcher.deliverNow({ pnid: pn.phone_number_id, field: 'messages', kind: `status:${status}`, ref: wamid, body, attempt: 0, statuses: [{ wamid, status }] });
  }

  clear(): void {
    this.sentQ.clear();
    this.deliveredQ.clear();
    this.readQ.clear();
    this.failQ.clear();
  }
}
