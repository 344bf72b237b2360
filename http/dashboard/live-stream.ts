/**
 * The dashboard's live pages (issue 68, item 4): the inbox, a campaign's progress, the bot log. One
 * Server-Sent Events stream per open page, whose `update` events htmx's SSE extension applies: each
 * event carries the page's parts that changed, every one an out-of-band swap (`hx-swap-oob`)
 * rendered and escaped by the page's own module, sent only when it differs from what that page was
 * last sent.
 *
 * What wakes a page comes from the database, not this process: a page names its change source
 * (lib/inbox/live-changes.ts, lib/broadcasts/live-changes.ts, lib/bot/bot-log.ts), and each
 * instance reads the cursors of the keys it has pages open for, one statement per source, every
 * TICK_MS; so a change taken by another instance, a webhook or the API reaches every page. The hub
 * keeps only the last cursor it read (any instance reads the same rows); every HEARTBEAT_MS each page
 * is drawn again anyway (what moves with the clock) and its session and rights checked again.
 *
 * Bounded: at most MAX_PER_PROJECT open streams per project (one busy team never takes another's
 * share) and MAX_TOTAL per instance; beyond, 429 and the browser tries later. A closed connection is
 * dropped at once (its timer, its place in the hub), and so is one whose unread backlog passes
 * MAX_BACKLOG_BYTES.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { cookie, SESSION_COOKIE } from './request.js';
import { html, type Html } from './html.js';

export const LIVE_LIMITS = { TICK_MS: 300, HEARTBEAT_MS: 30_000, MAX_PER_PROJECT: 25, MAX_TOTAL: 500, MAX_BACKLOG_BYTES: 1_000_000 };

/** Where a kind of page learns that something changed: one reading for all the keys open on this instance. */
export interface ChangeSource {
  readonly name: string;
  /** Each key's cursor (a different string means something changed); a key not answered is gone. */
  read(deps: AppDeps, keys: string[]): Promise<Map<string, string>>;
}

/** What one drawing of a page sends: its parts by name, the event's id (a reconnect names it), and whether the page is over. */
export interface Drawing {
  parts: Record<string, string | undefined>;
  id?: string;
  /** Nothing more will change: the last parts go, then `end` (the page's `sse-close`), and the stream ends. */
  end?: boolean;
}

export interface LivePage {
  projectId: string;
  source: ChangeSource;
  /** What the source reads for this page (a project, a campaign). */
  key: string;
  draw(): Promise<Drawing>;
  /** The person's rights checked again at each heartbeat (after the session); a throw ends the stream. */
  recheck(): Promise<unknown>;
}

interface Stream {
  refresh(): void;
  /** Ends the stream when its server stops listening (a shutdown does not wait for open pages). */
  endIfStopping(): void;
}

interface Watched {
  source: ChangeSource;
  key: string;
  streams: Set<Stream>;
}

/** The open streams of this instance, by source and key, and the one loop that wakes them. */
class LiveHub {
  private readonly watched = new Map<string, Watched>();
  private readonly cursors = new Map<string, string>();
  private readonly perProject = new Map<string, number>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(private readonly deps: AppDeps) {}

  add(page: LivePage, s: Stream): boolean {
    const n = this.perProject.get(page.projectId) ?? 0;
    if (n >= LIVE_LIMITS.MAX_PER_PROJECT || this.total >= LIVE_LIMITS.MAX_TOTAL) return false;
    const id = `${page.source.name}:${page.key}`;
    const w = this.watched.get(id) ?? { source: page.source, key: page.key, streams: new Set<Stream>() };
    w.streams.add(s);
    this.watched.set(id, w);
    this.perProject.set(page.projectId, n + 1);
    this.total++;
    this.schedule();
    return true;
  }

  remove(page: LivePage, s: Stream): void {
    const id = `${page.source.name}:${page.key}`;
    const w = this.watched.get(id);
    if (!w?.streams.delete(s)) return;
    this.total--;
    const n = (this.perProject.get(page.projectId) ?? 1) - 1;
    if (n) this.perProject.set(page.projectId, n);
    else this.perProject.delete(page.projectId);
    if (!w.streams.size) {
      this.watched.delete(id);
      this.cursors.delete(id);
    }
    if (!this.total) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Open streams of a project (tests read it to see a closed page let go). */
  count(projectId: string): number {
    return this.perProject.get(projectId) ?? 0;
  }

  private schedule(): void {
    if (this.timer || !this.total) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.tick().finally(() => this.schedule());
    }, LIVE_LIMITS.TICK_MS);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      for (const w of [...this.watched.values()]) for (const s of [...w.streams]) s.endIfStopping();
      if (!this.total) return;
      const bySource = new Map<ChangeSource, string[]>();
      for (const w of this.watched.values()) bySource.set(w.source, [...(bySource.get(w.source) ?? []), w.key]);
      await Promise.all([...bySource].map(async ([source, keys]) => {
        try {
          const now = await source.read(this.deps, keys);
          for (const key of keys) {
            const id = `${source.name}:${key}`;
            const cursor = now.get(key) ?? 'gone';
            const before = this.cursors.get(id);
            this.cursors.set(id, cursor);
            // A key's first reading also wakes its pages: a change may have come between their drawing and it.
            if (before !== cursor) for (const s of this.watched.get(id)?.streams ?? []) s.refresh();
          }
        } catch (e) {
          this.deps.logger.warn('dashboard live: a change cursor could not be read', { source: source.name, error: e instanceof Error ? e.message : String(e) });
        }
      }));
    } finally {
      this.reading = false;
    }
  }
}

/** One hub per database handle: every router of an app built on it shares the loop. */
const hubs = new WeakMap<AppDeps['db'], LiveHub>();
function liveHub(deps: AppDeps): LiveHub {
  let hub = hubs.get(deps.db);
  if (!hub) hubs.set(deps.db, (hub = new LiveHub(deps)));
  return hub;
}

/** How many live pages of a project this process holds open (tests see a closed page let go). */
export function openLiveStreams(db: AppDeps['db'], projectId: string): number {
  return hubs.get(db)?.count(projectId) ?? 0;
}

/** One SSE event; a line break inside the HTML starts another `data:` line (the browser joins them). */
function sseEvent(name: string, data: string, id?: string): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${name}\n${data.split(/\r?\n/).map((l) => `data: ${l}`).join('\n')}\n\n`;
}

/** A part of a live page: `content` into the element `target` names (a CSS selector), by `swap` (htmx's innerHTML, afterbegin…). */
export function oobPart(target: string, content: Html, opts: { tag?: string; swap?: string } = {}): string {
  const tag = opts.tag ?? 'div';
  return `<${tag} hx-swap-oob="${html`${opts.swap ?? 'innerHTML'}:${target}`}">${content.value}</${tag}>`;
}

/** A page's connection to its stream (a hidden element): its `update` events are swapped, `end` closes it. */
export function liveConnector(url: string): Html {
  return html`<div hidden hx-ext="sse" sse-connect="${url}" sse-close="end"><div id="live-sink" sse-swap="update" hx-swap="none"></div></div>`;
}

/** Serves one live page's stream until the browser leaves, the page ends, or the person may no longer see it. */
export async function streamLivePage(deps: AppDeps, req: Request, res: Response, page: LivePage): Promise<void> {
  const hub = liveHub(deps);
  const sent = new Map<string, string>();
  let closed = false;
  let busy = false;
  let again = false;
  let heartbeat: NodeJS.Timeout | undefined;

  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    hub.remove(page, stream);
    if (!res.writableEnded) res.end();
  };
  // Draws the page's parts and sends those that changed; one drawing at a time per page, the last wake-up kept.
  const refresh = async (): Promise<void> => {
    if (closed) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        const drawing = await page.draw();
        let out = '';
        for (const [name, data] of Object.entries(drawing.parts)) {
          if (data === undefined || sent.get(name) === data) continue;
          sent.set(name, data);
          out += data;
        }
        if (out && !closed) res.write(sseEvent('update', out, drawing.id));
        if (drawing.end) {
          if (!closed) res.write(sseEvent('end', 'over'));
          close();
        }
        // A reader that does not read (a stalled connection) is let go before its backlog grows: it reconnects.
        if (res.writableLength > LIVE_LIMITS.MAX_BACKLOG_BYTES) close();
      } while (again && !closed);
    } catch (e) {
      // A page's subject deleted, or the database away: the page keeps what it shows; the browser reconnects.
      deps.logger.warn('dashboard live: a page could not be drawn', { source: page.source.name, error: e instanceof Error ? e.message : String(e) });
      close();
    } finally {
      busy = false;
    }
  };
  // Node sets the accepting server on the socket; once it stops listening the page reconnects elsewhere.
  const server = (req.socket as unknown as { server?: { listening?: boolean } }).server;
  const stream: Stream = { refresh: () => void refresh(), endIfStopping: () => (server && server.listening === false ? close() : undefined) };

  if (!hub.add(page, stream)) {
    res.status(429).setHeader('Retry-After', '30');
    res.type('text/plain').send('Too many pages of this project are open live; this one will try again shortly.');
    return;
  }
  // The response's 'close' is the connection's end (the browser closed or left the page).
  res.on('close', close);
  res.on('error', close);
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', 'X-Accel-Buffering': 'no', Connection: 'keep-alive' });
  // A reconnect after a cut waits 2 s; the first drawing brings the page up to date.
  res.write('retry: 2000\n\n');
  heartbeat = setInterval(() => {
    void (async () => {
      try {
        req.dashboardSession = await resolveSession(deps, cookie(req, SESSION_COOKIE));
        if (!req.dashboardSession) return close();
        await page.recheck();
      } catch {
        return close();
      }
      // A comment line keeps proxies from closing a quiet stream (and finds a dead connection).
      if (!closed) res.write(': keep-alive\n\n');
      await refresh();
    })();
  }, LIVE_LIMITS.HEARTBEAT_MS);
  heartbeat.unref();
  await refresh();
}
