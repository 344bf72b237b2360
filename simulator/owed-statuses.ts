/**
 * The statuses the simulator owes, kept across its own restart (issue 44): Meta keeps retrying the
 * statuses of a message it accepted whatever happens to its own machines, so a restarted simulator
 * must still deliver them. Without this, a service and its bundled simulator killed together left
 * messages `sent` or `delivered` for good.
 *
 * What is owed, per message: the statuses handed to the dispatcher that the receiver has not taken
 * yet (kept with their exact object, timestamp included, so a redelivery is the same status), and
 * the next automatic step (sent → delivered → read, or an async failure). It lives in memory and in
 * an append-only journal (`owed-statuses.jsonl` in the data folder), replayed at start.
 *
 * Durability: a send's first line is written before the send is answered (synchronously, one
 * write), so a message the caller saw accepted always has its statuses owed, also after SIGKILL
 * (the kernel keeps what was written). Later lines (emitted, next step, taken) are written once per
 * event-loop turn: losing them to a kill only makes a status go out again, which a receiver must
 * accept anyway (Meta delivers at least once). The journal is rewritten from memory when it grows
 * well past what is still owed. Entries older than Meta's retry window (7 days) are forgotten.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { MessageMeta, SimState } from './state.js';
import { BoundedMap } from './structures.js';
import type { StatusError } from './webhooks.js';

export type OwedStatus = 'sent' | 'delivered' | 'read' | 'failed';

export interface OwedEntry {
  meta: MessageMeta;
  /** The next automatic step, if any (with its errors for a failure). */
  next: { status: OwedStatus; errors?: StatusError[] } | null;
  /** Status objects handed out and not yet taken by the receiver (nor given up), by status. */
  pending: Map<string, Record<string, unknown>>;
  /** An automatic status handed out whose successor is not decided yet (that waits for its first attempt). */
  chain?: string;
  /** When the message was accepted (simulator clock, ms). */
  at: number;
}

/** One journal line. `b` carries a whole entry (a send, or a compacted entry); the others are changes to one. */
type Line =
  | { b: string; m: MessageMeta; n: OwedEntry['next']; t: number; p?: Array<[string, Record<string, unknown>]> }
  | { x: string; s: string; o: Record<string, unknown>; m: MessageMeta; c?: 1 }
  | { n: string; s: OwedEntry['next'] }
  | { d: string; s: string };

const WINDOW_MS = 7 * 24 * 3600 * 1000;
const FILE = 'owed-statuses.jsonl';

export class OwedStatuses {
  readonly entries: BoundedMap<string, OwedEntry>;
  private fd: number;
  private buffer: string[] = [];
  private flushScheduled = false;
  private lines = 0;
  private closed = false;
  private readonly file: string;

  constructor(
    private readonly state: SimState,
    dir: string,
  ) {
    this.file = path.join(dir, FILE);
    // Bounded like the message index: beyond it the oldest owed statuses are given up, and counted.
    this.entries = new BoundedMap(state.limits.messageIndexSize, () => void state.stats.status_progressions_dropped++);
    this.load();
    // Start from a compact file: what is still owed, nothing else.
    this.fd = this.rewrite();
  }

  /** A send was accepted: its statuses are owed from now on (written before the send is answered). */
  begin(wamid: string, meta: MessageMeta, next: OwedEntry['next']): void {
    if (!next) return;
    this.entries.set(wamid, { meta, next, pending: new Map(), at: this.state.nowMs() });
    this.write({ b: wamid, m: meta, n: next, t: this.state.nowMs() }, true);
  }

  /**
   * A status was handed to the dispatcher: owed until the receiver takes it. `chained`: an
   * automatic step, whose successor `setNext` decides after its first attempt.
   */
  emitted(wamid: string, meta: MessageMeta, status: string, object: Record<string, unknown>, opts: { chained?: boolean; sync?: boolean } = {}): void {
    const e = this.entries.get(wamid) ?? this.adopt(wamid, meta);
    e.meta = meta;
    e.next = null;
    e.chain = opts.chained ? status : undefined;
    e.pending.set(status, object);
    this.write({ x: wamid, s: status, o: object, m: meta, ...(opts.chained ? { c: 1 as const } : {}) }, opts.sync);
  }

  /** The next automatic step was scheduled (or, with null, progression ended). */
  setNext(wamid: string, next: OwedEntry['next']): void {
    const e = this.entries.get(wamid);
    if (!e || (e.next === null && next === null && e.chain === undefined)) return;
    e.next = next;
    e.chain = undefined;
    this.write({ n: wamid, s: next });
    this.forgetIfDone(wamid, e);
  }

  /** The receiver took these statuses (2xx), or the dispatcher gave them up. */
  settled(list: Array<{ wamid: string; status: string }>): void {
    for (const { wamid, status } of list) {
      const e = this.entries.get(wamid);
      if (!e || !e.pending.delete(status)) continue;
      this.write({ d: wamid, s: status });
      this.forgetIfDone(wamid, e);
    }
  }

  /** Everything forgotten (the control API's reset). */
  reset(): void {
    this.entries.clear();
    this.buffer = [];
    closeSync(this.fd);
    this.fd = this.rewrite();
  }

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    closeSync(this.fd);
  }

  private adopt(wamid: string, meta: MessageMeta): OwedEntry {
    // A message accepted before the journal knew it (none today): owed from here on.
    const e: OwedEntry = { meta, next: null, pending: new Map(), at: this.state.nowMs() };
    this.entries.set(wamid, e);
    this.write({ b: wamid, m: meta, n: null, t: e.at });
    return e;
  }

  private forgetIfDone(wamid: string, e: OwedEntry): void {
    if (e.next === null && e.chain === undefined && e.pending.size === 0) this.entries.delete(wamid);
  }

  private write(line: Line, sync = false): void {
    if (this.closed) return;
    this.buffer.push(JSON.stringify(line));
    this.lines++;
    if (sync) return this.flush();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || !this.buffer.length) return;
    const text = this.buffer.join('\n') + '\n';
    this.buffer = [];
    try {
      writeSync(this.fd, text);
    } catch {
      // A full or read-only disk must not stop the simulator: the statuses stay owed in memory.
    }
    if (this.lines > 10_000 && this.lines > 4 * this.entries.size) {
      closeSync(this.fd);
      this.fd = this.rewrite();
    }
  }

  /** Writes what is owed to a fresh file (atomically) and opens it for appending. */
  private rewrite(): number {
    const lines: string[] = [];
    for (const [wamid, e] of this.entries) {
      lines.push(JSON.stringify({ b: wamid, m: e.meta, n: e.next ?? successor(e.chain), t: e.at, p: [...e.pending] } satisfies Line));
    }
    const tmp = this.file + '.tmp';
    const fd = openSync(tmp, 'w', 0o600);
    try {
      if (lines.length) writeSync(fd, lines.join('\n') + '\n');
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    this.lines = lines.length;
    return openSync(this.file, 'a', 0o600);
  }

  private load(): void {
    if (!existsSync(this.file)) return;
    const horizon = this.state.nowMs() - WINDOW_MS;
    for (const text of readFileSync(this.file, 'utf8').split('\n')) {
      if (!text) continue;
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        continue; // a line cut short by a machine crash: the ones before it stand
      }
      if ('b' in line) {
        if (line.t < horizon) continue;
        this.entries.set(line.b, { meta: line.m, next: line.n, pending: new Map(line.p ?? []), at: line.t });
      } else if ('x' in line) {
        const e = this.entries.get(line.x);
        if (!e) continue;
        e.meta = line.m;
        e.next = null;
        e.chain = line.c ? line.s : undefined;
        e.pending.set(line.s, line.o);
      } else if ('d' in line) {
        const e = this.entries.get(line.d);
        if (e) e.pending.delete(line.s);
      } else if ('n' in line) {
        const e = this.entries.get(line.n);
        if (e) {
          e.next = line.s;
          e.chain = undefined;
        }
      }
    }
    for (const [wamid, e] of this.entries) {
      // A step whose successor was not written yet: the progression goes on from it.
      if (e.chain !== undefined) e.next = successor(e.chain);
      e.chain = undefined;
      if (e.next === null && e.pending.size === 0) this.entries.delete(wamid);
    }
  }
}

/** The automatic step after `status` (the new run's delays decide whether it is sent). */
function successor(status: string | undefined): OwedEntry['next'] {
  return status === 'sent' ? { status: 'delivered' } : status === 'delivered' ? { status: 'read' } : null;
}

/** The journal in `dir`, with what a previous run left owed loaded. */
export function openOwedStatuses(state: SimState, dir: string): OwedStatuses {
  return new OwedStatuses(state, dir);
}
