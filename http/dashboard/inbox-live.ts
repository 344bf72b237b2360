/**
 * The inbox pushed to the page (issue 68, item 4): one live stream per open inbox page
 * (`…/conversations/events`, live-stream.ts), whose `update` events carry the parts that changed
 * among the list's rows (for the page's own search and filters), the open conversation's messages
 * and state line, and the counts (waiting and unread, for the tab's title and the opt-in alert),
 * each rendered by inbox-pages.ts (liveParts). The page wakes when its project's change cursor
 * (lib/inbox/live-changes.ts) moves.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { changeCursors } from '../../lib/inbox/live-changes.js';
import { customerQuery } from '../../lib/dashboard/customer-reads.js';
import { projectContext } from './context.js';
import { liveParts } from './inbox-pages.js';
import { streamLivePage, type ChangeSource } from './live-stream.js';
import type { PageRoute } from './page-routes.js';

/** A project's inbox changes, read for every project with an inbox page open. */
export const INBOX_CHANGES: ChangeSource = { name: 'inbox', read: (deps, projectIds) => changeCursors(deps.db.sql, projectIds) };

export const inboxEvents = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'conversations');
  const q = customerQuery(req.query);
  const selected = typeof req.query.selected === 'string' && /^[0-9]{1,18}$/.test(req.query.selected) ? req.query.selected : undefined;
  const paged = req.query.paged === 'true';
  await streamLivePage(deps, req, res, {
    projectId: ctx.project.id,
    source: INBOX_CHANGES,
    key: ctx.project.id,
    draw: async () => ({ parts: await liveParts(deps, ctx, q, { selected, paged }) }),
    recheck: () => projectContext(deps, req, 'conversations'),
  });
};

/** Before the conversation's id (router.ts mounts it ahead of inboxRoutes). */
export const inboxLiveRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/conversations/events', handler: inboxEvents },
];
