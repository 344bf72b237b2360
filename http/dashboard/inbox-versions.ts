/**
 * No lost update in the inbox (issue 68, item 3): every form of a conversation carries, in hidden
 * fields, the value it was drawn from (the assignee, the bot's state, the thread's holder, the
 * resolution, the labels). A save whose drawn value is no longer the current one is refused in
 * words with the current value shown, rather than overwriting a colleague's change; labels are not
 * refused but merged (lib/dashboard/conversation-actions.ts labelDeltaAs).
 *
 * Why the values and not one version counter: a counter would move with every change of the
 * conversation (a customer's message, a colleague's label) and refuse an assignment nobody else
 * touched; comparing the one value the form changes refuses exactly the conflicting saves.
 */
import type { Request } from 'express';
import type { ConversationView } from '../../lib/conversations/views.js';
import { html, type Html } from './html.js';
import { field } from './request.js';

export type Drawn = 'assignee' | 'state' | 'thread' | 'resolution' | 'labels';

/** The value of `what` as a form is drawn from it (and as it is compared again on save). */
export function drawnValue(v: ConversationView, what: Drawn): string {
  switch (what) {
    case 'assignee': return v.assignee?.email ?? '';
    case 'state': return v.state;
    case 'thread': return v.thread?.held_by === 'other_app' ? v.thread.app_id ?? '' : '';
    case 'resolution': return `${v.resolution ?? 'open'}${v.snoozed_until ? `@${v.snoozed_until}` : ''}`;
    case 'labels': return (v.labels ?? []).join(',');
  }
}

/** The hidden field a form carries. */
export function drawnField(v: ConversationView, what: Drawn): Html {
  return html`<input type="hidden" name="drawn_${what}" value="${drawnValue(v, what)}">`;
}

/** What the form says it was drawn from; undefined when it carries no such field (nothing to compare). */
export function drawnOf(req: Request, what: Drawn): string | undefined {
  return field(req, `drawn_${what}`);
}

/** Whether the form was drawn from a value that has changed since. */
export function isStale(req: Request, v: ConversationView, what: Drawn): boolean {
  const drawn = drawnOf(req, what);
  return drawn !== undefined && drawn !== drawnValue(v, what);
}
