/**
 * The inbox pushed to the page (issue 68, item 4): one Server-Sent Events stream per open inbox page
 * (`…/conversations/events`), whose `update` events htmx's SSE extension swaps into the page: the
 * parts that changed among the list's rows (for the page's own search and filters), the open
 * conversation's messages and state line, and the counts (waiting and unread, for the tab's title
 * and the opt-in alert), each an out-of-band swap rendered and escaped by inbox-pages.ts
 * (liveParts), sent only when it differs from what that page was last sent.
 *
 * What wakes a page comes from the database, not this process: each instance reads the change
 * cursor (lib/inbox/live-changes.ts) of the projects it has pages open for, in one statement every
 * TICK_MS, so a message taken by another instance, by a webhook or by the API reaches every page.
 * Every HEARTBEAT_MS each page is drawn again anyway (wait times move, a snooze ends by the clock)
 * and its session checked again (a signed-out person's stream ends).
 *
 * Bounded: at most MAX_PER_PROJECT open streams per project (one busy team never takes another's
 * share) and MAX_TOTAL per instance; beyond, 429 and the browser's EventSource tries later. A closed
 * connection is dropped at once (its timer, its place in the hub), and so is one whose unread
 * backlog passes MAX_BACKLOG_BYTES.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { changeCursors } from '../../lib/inbox/live-changes.js';
import { resolveSession } from '../../lib/accounts/sessions.js';
import { customerQuery } from '../../lib/dashboard/customer-reads.js';
import { projectContext } from './context.js';
import { cookie, SESSION_COOKIE } from './request.js';
import { liveParts } from './inbox-pages.js';
import type { PageRoute } from './page-routes.js';

export const LIVE_LIMITS = { TICK_MS: 300, HEARTBEAT_MS: 30_000, MAX_PER_PROJECT: 25, MAX_TOTAL: 500, MAX_BACKLOG_BYTES: 1_000_000 };

interface Stream {
  refresh(): void;
  /** Ends the stream when its server stops listening (a shutdown does not wait for open pages). */
  endIfStopping(): void;
}

/** The open streams of this instance, by project, and the one loop that wakes them. */
class LiveHub {
  private readonly streams = new Map<string, Set<Stream>>();
  private readonly cursors = new Map<string, string>();
  private total = 0;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(private readonly deps: AppDeps) {}

  add(projectId: string, s: Stream): boolean {
    const set = this.streams.get(projectId) ?? new Set<Stream>();
    if (set.size >= LIVE_LIMITS.MAX_PER_PROJECT || this.total >= LIVE_LIMITS.MAX_TOTAL) return false;
    set.add(s);
    this.streams.set(projectId, set);
    this.total++;
    this.schedule();
    return true;
  }

  remove(projectId: string, s: Stream): void {
    const set = this.streams.get(projectId);
    if (!set?.delete(s)) return;
    this.total--;
    if (!set.size) {
      this.streams.delete(projectId);
      this.cursors.delete(projectId);
    }
    if (!this.total) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  /** Open streams of a project (tests read it to see a closed page let go). */
  count(projectId: string): number {
    return this.streams.get(projectId)?.size ?? 0;
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
      for (const set of [...this.streams.values()]) for (const s of [...set]) s.endIfStopping();
      if (!this.total) return;
      const now = await changeCursors(this.deps.db.pool, [...this.streams.keys()]);
      for (const [projectId, cursor] of now) {
        const before = this.cursors.get(projectId);
        this.cursors.set(projectId, cursor);
        // A project's first reading also wakes its pages: a change may have come between their drawing and it.
        if (before !== cursor) for (const s of this.streams.get(projectId) ?? []) s.refresh();
      }
    } catch (e) {
      this.deps.logger.warn('inbox live: the change cursor could not be read', { error: e instanceof Error ? e.message : String(e) });
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

/** How many live inbox pages of a project this process holds open (tests see a closed page let go). */
export function openLiveStreams(db: AppDeps['db'], projectId: string): number {
  return hubs.get(db)?.count(projectId) ?? 0;
}

/** One SSE event; a line break inside the HTML starts another `data:` line (the browser joins them). */
function sseEvent(name: string, data: string): string {
  return `event: ${name}\n${data.split(/\r?\n/).map((l) => `data: ${l}`).join('\n')}\n\n`;
}

export const inboxEvents = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const projectId = ctx.project.id;
  const q = customerQuery(req.query);
  const selected = typeof req.query.selected === 'string' && /^[0-9]{1,18}$/.test(req.query.selected) ? req.query.selected : undefined;
  const paged = req.query.paged === 'true';
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
    hub.remove(projectId, stream);
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
        const parts = await liveParts(deps, ctx, q, { selected, paged });
        let out = '';
        for (const [name, data] of Object.entries(parts)) {
          if (data === undefined || sent.get(name) === data) continue;
          sent.set(name, data);
          out += data;
        }
        if (out && !closed) res.write(sseEvent('update', out));
        // A reader that does not read (a stalled connection) is let go before its backlog grows: it reconnects.
        if (res.writableLength > LIVE_LIMITS.MAX_BACKLOG_BYTES) close();
      } while (again && !closed);
    } catch (e) {
      // A conversation deleted, or the database away: the page keeps what it shows; the browser reconnects.
      deps.logger.warn('inbox live: a page could not be drawn', { error: e instanceof Error ? e.message : String(e) });
      close();
    } finally {
      busy = false;
    }
  };
  // Node sets the accepting server on the socket; once it stops listening the page reconnects elsewhere.
  const server = (req.socket as unknown as { server?: { listening?: boolean } }).server;
  const stream: Stream = { refresh: () => void refresh(), endIfStopping: () => (server && server.listening === false ? close() : undefined) };

  if (!hub.add(projectId, stream)) {
    res.status(429).setHeader('Retry-After', '30');
    res.type('text/plain').send('Too many inbox pages of this project are open live; this one will try again shortly.');
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
        await projectContext(deps, req, 'conversations');
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
};

/** Before the conversation's id (router.ts mounts it ahead of inboxRoutes). */
export const inboxLiveRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/conversations/events', handler: inboxEvents },
];
