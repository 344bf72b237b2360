/**
 * Broadcasts: the approval queue with each campaign's pre-flight report and the message its first
 * recipient would get, a test to the approver's own number, approve (after a confirmation page,
 * which needs no script) or cancel (owners and admins; members only look), then a campaign's
 * progress: counts by recipient status, which hold keeps it waiting, waves and the next wave's
 * release, failures and cancellations by reason, retargeting. The live parts of a campaign's page
 * (its facts, progress, cost, waves, failures and cancellations) are rendered by the same functions
 * for the page and for its live stream (`/events`, live-stream.ts; `/progress` answers the same as JSON).
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { approveBroadcastAs, cancelBroadcastAs } from '../../lib/dashboard/actions.js';
import { broadcastDetail, broadcastsOf } from '../../lib/dashboard/reads.js';
import { canManage } from '../../lib/accounts/roles.js';
import type { BroadcastView } from '../../lib/broadcasts/store.js';
import { LIMIT_HOLD_PREFIX, QUOTA_HOLD_PREFIX, quotaSentence } from '../../lib/broadcasts/quota-hold.js';
import { testSendAs } from '../../lib/dashboard/test-send.js';
import type { RenderedTemplate } from '../../lib/templates/render.js';
import { duration, html, plural, when, type Html } from './html.js';
import { changeOnce, onceField } from './console-kit.js';
import { csrfField, layout, projectPath } from './layout.js';
import { field, send } from './request.js';
import { projectContext } from './context.js';
import { billingSection, preflightCostRows, throughputText } from './cost-facts.js';
import { refreshMessagingLimit } from '../../lib/pricing/messaging-limit.js';
import { campaignCursors } from '../../lib/broadcasts/live-changes.js';
import { changeCursors } from '../../lib/inbox/live-changes.js';
import { liveConnector, oobPart, streamLivePage, type ChangeSource } from './live-stream.js';
import { projectPages } from './page-routes.js';

const REASONS: Record<string, string> = {
  opted_out: 'Opted out', invalid_phone: 'Invalid phone', not_opted_in: 'Not opted in',
  recent_marketing_limit: 'Recent marketing limit', missing_variable: 'Missing variable', duplicate: 'Duplicate',
};

function preflightReport(b: BroadcastView, templateStatus: string): Html {
  const p = b.preflight;
  if (!p) return html`<p class="muted">No pre-flight report (the audience could not be resolved).</p>`;
  const excluded = Object.entries(p.excluded ?? {});
  return html`<dl class="facts">
  <dt>Audience</dt><dd><strong>${p.eligible}</strong> eligible ${p.eligible === 1 ? 'recipient' : 'recipients'}</dd>
  <dt>Excluded</dt><dd>${excluded.some(([, n]) => n > 0) ? html`<ul>${excluded.filter(([, n]) => n > 0).map(([r, n]) => html`<li>${REASONS[r] ?? r}: ${n}</li>`)}</ul>` : 'none'}</dd>
  <dt>Template</dt><dd>${b.template_name} (${b.template_language}, ${b.category}): <span class="status">${templateStatus}</span></dd>
  <dt>Daily quota</dt><dd${p.quota?.held ? html` class="warning" role="note"` : ''}>${p.quota ? quotaSentence(p.quota) : 'not shown for this campaign'}</dd>
  <dt>Estimated duration</dt><dd>${duration(p.estimated_duration_seconds)} at ${p.messages_per_second} messages/s</dd>
  ${preflightCostRows(p)}
  <dt>Waves</dt><dd>${b.wave_size ? `${b.wave_size} per wave` : 'one wave'}</dd>
  <dt>Scheduled</dt><dd>${b.scheduled_at ? when(b.scheduled_at) : 'on approval'}</dd>
</dl>`;
}

/** Cancel with its own reason box, in a box of its own, asking for confirmation (dashboard.js). */
function cancelForm(projectId: string, csrf: string, b: BroadcastView, label: string): Html {
  return html`<form method="post" action="${projectPath(projectId, `/broadcasts/${b.id}/cancel`)}" class="cancel-form" data-confirm="${label} “${b.name}”? Recipients not yet sent will not get it.">${csrfField(csrf)}
    <fieldset><legend>${label}</legend>
    <label for="reason-${b.id}">Reason for canceling (optional)</label>
    <input id="reason-${b.id}" name="reason" type="text" maxlength="500">
    <button type="submit" class="danger" aria-label="${label} ${b.name}">${label}</button></fieldset></form>`;
}

/** Approve leads to the confirmation page (a link: it works without script); cancel asks in its own form. */
function decisionForms(projectId: string, csrf: string, b: BroadcastView): Html {
  const base = projectPath(projectId, `/broadcasts/${b.id}`);
  return html`<div class="actions">
  <a class="button" href="${base}/approve" aria-label="Approve ${b.name}…">Approve…</a>
  ${cancelForm(projectId, csrf, b, 'Cancel')}
</div>`;
}

/** The message as the phone shows it: every part text (escaped by the `html` tag). */
export function messagePreview(m: RenderedTemplate): Html {
  return html`<div class="message-preview">
  ${m.header ? ('text' in m.header ? html`<p class="message-header">${m.header.text}</p>` : html`<p class="muted">[${m.header.media.toLowerCase()} header]</p>`) : ''}
  <p class="message-body">${m.body || html`<span class="muted">(no body text)</span>`}</p>
  ${m.footer ? html`<p class="message-footer muted">${m.footer}</p>` : ''}
  ${m.buttons.length ? buttonList(m.buttons) : ''}
  ${m.offer ? html`<p class="message-offer"><strong>${m.offer.text}</strong>${m.offer.expires ? html` <span class="muted">(with the offer's countdown)</span>` : ''}</p>` : ''}
  ${m.callPermissionRequest ? html`<p class="muted">[asks permission to call the customer]</p>` : ''}
  ${m.cards.length ? html`<ol class="message-cards" aria-label="${m.cards.length} carousel cards">${m.cards.map((c) => html`<li>${c.header ? html`<span class="muted">[${c.header.media.toLowerCase()}]</span> ` : ''}${c.body ?? ''}${c.buttons.length ? buttonList(c.buttons) : ''}</li>`)}</ol>` : ''}
</div>`;
}

function buttonList(buttons: RenderedTemplate['buttons']): Html {
  return html`<ul class="message-buttons">${buttons.map((b) => html`<li>${b.text}${b.detail ? html` <span class="muted">(${b.type.toLowerCase().replace(/_/g, ' ')}: ${b.detail})</span>` : ''}</li>`)}</ul>`;
}

type Detail = Awaited<ReturnType<typeof broadcastDetail>>;

/** What goes out and a test of it: the first recipient's message and, for owners and admins, a test to their own number. */
function previewSection(projectId: string, csrf: string, b: BroadcastView, d: Detail, manage: boolean): Html {
  const pv = d.preview;
  const who = pv?.recipient ? `${pv.recipient.name ?? 'a contact without a name'}${pv.recipient.phone ? ` (+${pv.recipient.phone})` : ''}` : null;
  return html`<section aria-labelledby="preview-title" id="message-preview">
<h2 id="preview-title">The message that will go out</h2>
${pv ? html`<p class="muted">${who ? `As its first recipient, ${who}, would get it; each recipient gets their own values.` : 'No eligible recipient yet: the placeholders are shown unfilled.'}</p>${messagePreview(pv.message)}`
    : html`<p class="warning">Template ${b.template_name} (${b.template_language}) is not known to this project: nothing can be shown.</p>`}
${manage && pv?.recipient ? html`<form method="post" action="${projectPath(projectId, `/broadcasts/${b.id}/test-send`)}" class="inline-form test-send">${csrfField(csrf)}${onceField()}
  <label for="test-phone-${b.id}">Send a test to your own number</label>
  <input id="test-phone-${b.id}" name="phone" type="tel" autocomplete="tel" required placeholder="+1 415 555 0101">
  <button type="submit">Send the test</button>
</form>
<p class="muted">The test goes through the same send path as the campaign (it counts against the daily quota) and is in the audit trail.</p>` : ''}
</section>`;
}

/** What the progress shows, for the page and for its live updates (the same words). */
/** How long after completion the page keeps reading the channel's cost reports (they follow the last send). */
const SETTLING_MS = 24 * 3_600_000;

export function progressOf(b: BroadcastView, now?: Date) {
  const counts = b.counts;
  const total = counts?.total ?? b.recipient_count ?? 0;
  const waiting = counts ? counts.queued + counts.held : total;
  const done = Math.max(0, total - waiting);
  const sending = ['scheduled', 'sending'].includes(b.status);
  // A completed campaign's cost still moves while the channel reports its sends' pricing: the page keeps up until it is all in.
  const settling = !sending && now !== undefined && b.status === 'completed' && (b.billing?.unreported ?? 0) > 0
    && b.completed_at !== null && now.getTime() - Date.parse(b.completed_at) < SETTLING_MS;
  const live = sending || settling;
  const held = b.status_reason && ['sending', 'failed', 'canceled'].includes(b.status) ? b.status_reason : null;
  // Sends whose outcome is unknown are their own reason, neither "sent" (issue 34) nor "queued":
  // on a completed campaign "queued" would read as still to send (issue 44).
  const unknown = counts?.unknown
    ? `${counts.unknown} send${counts.unknown === 1 ? '' : 's'} with an unknown outcome (the channel's answer was lost, or the service stopped before it came): never sent again; a status from the channel settles ${counts.unknown === 1 ? 'it' : 'them'}`
    : null;
  const reason = [held, unknown].filter(Boolean).join('. ') || null;
  return {
    hold: holdOf(b),
    status: b.status,
    status_line: `${b.status}${b.status_reason ? ` (${b.status_reason})` : ''}`,
    live,
    total,
    done,
    text: counts ? `${done} of ${total} recipients handed over or settled` : b.status === 'scheduled' ? `Scheduled for ${when(b.scheduled_at)}; ${total} recipients` : 'Sending has not started.',
    reason,
    counts,
    // The number's level now and which limit holds the pace (it follows an upgrade Meta makes mid-campaign).
    pace: sending && b.pacing ? `Pace: ${throughputText(b.pacing)}.` : null,
  };
}

/**
 * Which hold keeps recipients waiting, in words: the daily quota leaves them queued (the "held"
 * column counts only recipients kept for a later wave or by the messaging limit), the messaging
 * limit and later waves hold them.
 */
function holdOf(b: BroadcastView): string | null {
  const c = b.counts;
  if (b.status_reason?.startsWith(QUOTA_HOLD_PREFIX)) {
    return `Held by the daily send quota: ${c ? plural(c.queued, 'recipient') : 'the recipients'} ${c?.queued === 1 ? 'waits' : 'wait'} in the queue until it resets or is raised (counted as queued, not held).`;
  }
  if (b.status_reason?.startsWith(LIMIT_HOLD_PREFIX)) return `Held by the portfolio's messaging limit: ${c ? plural(c.held, 'recipient') : 'recipients'} held until the 24-hour window frees room.`;
  if (c?.held && b.wave_scheduled_at) return `${plural(c.held, 'recipient')} held for later waves; the next is released at ${when(b.wave_scheduled_at)}.`;
  return null;
}

/** A recipient status as the pages name it. */
const statusLabel = (k: string) => (k === 'unknown' ? 'outcome unknown' : k === 'held' ? 'held (wave or limit)' : k);

/** The progress section's content: a live part of its own (`#progress`). */
function progressPart(b: BroadcastView, now: Date): Html {
  const p = progressOf(b, now);
  const keys = ['total', 'queued', 'held', 'sent', 'delivered', 'read', 'failed', 'canceled', 'unknown'] as const;
  return html`<h2 id="progress-title">Progress</h2>
<p><progress id="progress-bar" max="${Math.max(1, p.total)}" value="${p.done}" aria-label="Progress of ${b.name}">${p.done} of ${p.total}</progress>
<span id="progress-text">${p.text}</span></p>
<p id="progress-reason" class="warning"${p.reason ? '' : html` hidden`}>${p.reason ?? ''}</p>
<p id="progress-hold"${p.hold ? '' : html` hidden`}>${p.hold ?? ''}</p>
<p id="progress-pace"${p.pace ? '' : html` hidden`}>${p.pace ?? ''}</p>
<div class="table-wrap"><table><thead><tr>${keys.map((k) => html`<th scope="col">${statusLabel(k)}</th>`)}</tr></thead>
<tbody><tr>${keys.map((k) => html`<td data-count="${k}">${p.counts ? p.counts[k] : '—'}</td>`)}</tr></tbody></table></div>
${p.live ? html`<p class="muted">Updates by itself while the campaign is scheduled or sending, and while the channel still reports its cost.</p>` : ''}`;
}

export const showBroadcasts = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'broadcasts');
  await refreshMessagingLimit(deps, ctx.project.id);
  const { pending, others } = await broadcastsOf(deps, ctx.project.id);
  const manage = canManage(ctx.role);
  const body = html`<section aria-labelledby="pending-title">
  <h2 id="pending-title">Waiting for approval (${pending.length})</h2>
  ${manage ? '' : html`<p class="muted">Your role (${ctx.role}) can look; owners and admins approve.</p>`}
  ${pending.length ? pending.map(({ view, templateStatus }) => html`<article class="card" id="b-${view.id}">
    <h3><a href="${projectPath(ctx.project.id, `/broadcasts/${view.id}`)}">${view.name}</a></h3>
    <p class="muted">Created ${when(view.created_at)} by ${view.creator_name ?? view.created_by}</p>
    ${preflightReport(view, templateStatus)}
    ${manage ? decisionForms(ctx.project.id, ctx.csrf, view) : ''}
  </article>`) : html`<p class="muted">Nothing is waiting.</p>`}
</section>
<section aria-labelledby="recent-title">
  <h2 id="recent-title">Other broadcasts</h2>
  ${others.length ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Scheduled</th><th scope="col">Completed</th></tr></thead><tbody>
  ${others.map((b) => html`<tr><td data-label="Name"><a href="${projectPath(ctx.project.id, `/broadcasts/${b.id}`)}">${b.name}</a></td><td data-label="Status">${b.status}${b.status === 'sending' && b.status_reason ? ` (${b.status_reason})` : ''}</td><td data-label="Scheduled">${when(b.scheduled_at)}</td><td data-label="Completed">${when(b.completed_at)}</td></tr>`)}
  </tbody></table></div>` : html`<p class="muted">None yet.</p>`}
</section>`;
  send(res, 200, layout(ctx.shell('Broadcasts'), body));
};

/** The campaign's facts at the top of its page (live: started, completed and the count move). */
function factsPart(b: BroadcastView, d: Detail): Html {
  return html`<dl class="facts">
  <dt>Status</dt><dd class="status" id="broadcast-status">${b.status}${b.status_reason ? ` (${b.status_reason})` : ''}</dd>
  <dt>Approved</dt><dd>${d.approvedAt ? `${when(d.approvedAt)} by ${d.approvedBy ?? 'the operator'}` : 'not yet'}</dd>
  <dt>Started</dt><dd id="broadcast-started">${b.started_at ? when(b.started_at) : 'not yet'}</dd>
  <dt>Completed</dt><dd id="broadcast-completed">${b.completed_at ? when(b.completed_at) : 'not yet'}</dd>
  <dt>Recipients</dt><dd>${b.recipient_count ?? '—'}</dd>
  ${b.status !== 'pending_approval' && b.preflight?.quota ? html`<dt>Daily quota at approval</dt><dd${b.preflight.quota.held ? html` class="warning"` : ''}>${quotaSentence(b.preflight.quota)}</dd>` : ''}
</dl>`;
}

function wavesPart(b: BroadcastView, d: Detail): Html {
  return html`<p>${b.wave_size ? `${plural(b.wave_size, 'recipient')} per wave.` : 'One wave.'} Next wave: ${b.wave_scheduled_at ? `${plural(b.wave_scheduled_count ?? 0, 'recipient')} at ${when(b.wave_scheduled_at)}` : 'none scheduled'}.</p>
${d.waves.length ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Wave</th><th scope="col">Recipients by status</th></tr></thead><tbody>
${d.waves.map((w) => html`<tr><td data-label="Wave">${w.wave}</td><td data-label="Recipients">${Object.entries(w.counts).map(([s, n]) => `${statusLabel(s)} ${n}`).join(', ')}</td></tr>`)}</tbody></table></div>` : ''}`;
}

function failuresPart(d: Detail): Html {
  return d.failures.length ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Code</th><th scope="col">Reason</th><th scope="col">Category</th><th scope="col">Recipients</th></tr></thead><tbody>
${d.failures.map((f) => html`<tr><td data-label="Code">${f.code ?? '—'}</td><td data-label="Reason">${f.title ?? '—'}</td><td data-label="Category">${f.category ?? '—'}</td><td data-label="Recipients">${f.count}</td></tr>`)}</tbody></table></div>` : html`<p class="muted">No failures.</p>`;
}

/** Recipients not sent to and why: opted out after approval, or left when the campaign stopped. */
function cancellationsPart(d: Detail): Html {
  return d.cancellations.length ? html`<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Reason</th><th scope="col">Recipients</th></tr></thead><tbody>
${d.cancellations.map((c) => html`<tr><td data-label="Reason">${c.reason}</td><td data-label="Recipients">${c.count}</td></tr>`)}</tbody></table></div>` : html`<p class="muted">No cancellations.</p>`;
}

/** The parts a live page replaces as the campaign moves (by element id): the same functions as the page. */
function liveParts(b: BroadcastView, d: Detail): Record<string, Html> {
  const parts: Record<string, Html> = { 'broadcast-facts': factsPart(b, d), 'broadcast-billing': billingSection(b), 'broadcast-waves': wavesPart(b, d), 'broadcast-failures': failuresPart(d), 'broadcast-cancellations': cancellationsPart(d) };
  // A campaign that is over offers no action: "Cancel the rest" goes when it completes, without a reload.
  if (!isOpen(b)) parts['broadcast-actions'] = html``;
  return parts;
}

/** A campaign that can still be approved, rejected or canceled. */
function isOpen(b: BroadcastView): boolean {
  return ['pending_approval', 'scheduled', 'sending'].includes(b.status);
}

export const showBroadcast = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'broadcasts');
  await refreshMessagingLimit(deps, ctx.project.id);
  const d = await broadcastDetail(deps, ctx.project.id, String(req.params.broadcastId));
  const b = d.view;
  const open = isOpen(b);
  const manage = canManage(ctx.role);
  const parts = liveParts(b, d);
  const now = deps.clock.now();
  // Pushed while it moves (its sends, then the channel's cost reports): the stream ends when nothing more will change.
  const live = b.status !== 'pending_approval' && progressOf(b, now).live;
  const body = html`${live ? liveConnector(projectPath(ctx.project.id, `/broadcasts/${b.id}/events`)) : ''}<div id="broadcast-facts">${parts['broadcast-facts']}</div>
${b.status === 'pending_approval' ? html`<h2>Pre-flight report</h2>${preflightReport(b, d.templateStatus)}${previewSection(ctx.project.id, ctx.csrf, b, d, manage)}` : ''}
<div id="broadcast-actions">${manage && open ? (b.status === 'pending_approval' ? decisionForms(ctx.project.id, ctx.csrf, b) : cancelForm(ctx.project.id, ctx.csrf, b, 'Cancel the rest')) : ''}</div>
<div id="broadcast-billing">${parts['broadcast-billing']}</div>
${b.status === 'pending_approval' ? '' : html`<section id="progress" aria-labelledby="progress-title" aria-live="polite">${progressPart(b, now)}</section>`}
<h2>Waves</h2>
<div id="broadcast-waves">${parts['broadcast-waves']}</div>
<h2>Failures by reason</h2>
<div id="broadcast-failures">${parts['broadcast-failures']}</div>
<h2>Cancellations by reason</h2>
<div id="broadcast-cancellations">${parts['broadcast-cancellations']}</div>
<h2>Retargeting</h2>
<p>${b.auto_retarget_quality ? 'Recipients refused for quality reasons are retargeted automatically' : 'No automatic retargeting'}${d.retargetDueAt ? `; next retarget at ${when(d.retargetDueAt)}` : ''}.
${b.retarget_parent_id ? html` This is a follow-up of <a href="${projectPath(ctx.project.id, `/broadcasts/${b.retarget_parent_id}`)}">an earlier broadcast</a>.` : ''}</p>
${d.followUps.length ? html`<ul>${d.followUps.map((f) => html`<li><a href="${projectPath(ctx.project.id, `/broadcasts/${f.id}`)}">${f.name}</a>: ${f.status}</li>`)}</ul>` : ''}`;
  send(res, 200, layout(ctx.shell(`Broadcast: ${b.name}`), body));
};

/** The progress as JSON (the live page's words, for a script); same roles as the page. */
export const broadcastProgress = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'broadcasts');
  const d = await broadcastDetail(deps, ctx.project.id, String(req.params.broadcastId));
  const parts = Object.fromEntries(Object.entries(liveParts(d.view, d)).map(([id, h]) => [id, h.value]));
  res.status(200).setHeader('Cache-Control', 'no-store').json({ ...progressOf(d.view, deps.clock.now()), parts });
};

/**
 * A campaign's changes, read for every campaign with a page open: its own cursor
 * (lib/broadcasts/live-changes.ts) and its project's inbox cursor, which its sends and their
 * statuses (a delivery, the channel's price) move.
 */
export const CAMPAIGN_CHANGES: ChangeSource = {
  name: 'campaign',
  read: async (deps, broadcastIds) => {
    const own = await campaignCursors(deps.db.sql, broadcastIds);
    const projects = await changeCursors(deps.db.sql, [...new Set([...own.values()].map((c) => c.projectId))]);
    return new Map([...own].map(([id, c]) => [id, `${c.cursor}|${projects.get(c.projectId) ?? ''}`]));
  },
};

/** A campaign's page pushed live: its parts as they change, until it is over and its cost all reported. */
export const broadcastEvents = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'broadcasts');
  const id = String(req.params.broadcastId).toLowerCase();
  // Another project's campaign, or none: the page's refusal, before the stream opens.
  await broadcastDetail(deps, ctx.project.id, id);
  await streamLivePage(deps, req, res, {
    projectId: ctx.project.id,
    source: CAMPAIGN_CHANGES,
    key: id,
    draw: async () => {
      const d = await broadcastDetail(deps, ctx.project.id, id);
      const now = deps.clock.now();
      const parts: Record<string, string> = {};
      for (const [part, h] of Object.entries(liveParts(d.view, d))) parts[part] = oobPart(`#${part}`, h);
      if (d.view.status !== 'pending_approval') parts.progress = oobPart('#progress', progressPart(d.view, now));
      return { parts, end: !progressOf(d.view, now).live };
    },
    recheck: () => projectContext(deps, req, 'broadcasts'),
  });
};

/**
 * The confirmation before approval, a page of its own (no script needed): what will be sent, to
 * how many, at what estimated cost, the message, the test; then "Approve and send".
 */
export const showApprove = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'broadcasts', ['owner', 'admin'], 'approve broadcasts');
  await refreshMessagingLimit(deps, ctx.project.id);
  const d = await broadcastDetail(deps, ctx.project.id, String(req.params.broadcastId));
  const b = d.view;
  const base = projectPath(ctx.project.id, `/broadcasts/${b.id}`);
  if (b.status !== 'pending_approval') return res.redirect(303, base);
  const n = b.preflight?.eligible ?? b.recipient_count ?? 0;
  const body = html`<p>Approving schedules <strong>${b.name}</strong> for <strong>${plural(n, 'recipient')}</strong>${b.scheduled_at ? html` at ${when(b.scheduled_at)}` : ' now'}. It cannot be undone, only canceled for the recipients not yet sent.</p>
${preflightReport(b, d.templateStatus)}
${previewSection(ctx.project.id, ctx.csrf, b, d, true)}
<div class="actions">
  <form method="post" action="${base}/approve" class="inline">${csrfField(ctx.csrf)}<button type="submit" class="primary">Approve and send to ${plural(n, 'recipient')}</button></form>
  <a href="${base}">Back without approving</a>
</div>`;
  send(res, 200, layout(ctx.shell(`Approve: ${b.name}`), body));
};

export const approve = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'broadcasts');
  await approveBroadcastAs(deps, actor, project.id, String(req.params.broadcastId));
  res.redirect(303, projectPath(project.id, `/broadcasts/${String(req.params.broadcastId).toLowerCase()}?done=approved`));
};

/** A test of the campaign's message to the approver's number (lib/dashboard/test-send.ts), once per form. */
export const testSend = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'broadcasts', ['owner', 'admin'], 'send a test of a broadcast');
  const id = String(req.params.broadcastId).toLowerCase();
  await changeOnce(deps, req, res, project.id, async () => {
    await testSendAs(deps, actor, project.id, id, field(req, 'phone'), String((req.body as Record<string, unknown>)._once));
    return projectPath(project.id, `/broadcasts/${id}/approve?done=test_sent`);
  });
};

export const cancel = (deps: AppDeps) => async (req: Request, res: Response) => {
  const { actor, project } = await projectContext(deps, req, 'broadcasts');
  await cancelBroadcastAs(deps, actor, project.id, String(req.params.broadcastId), field(req, 'reason'));
  res.redirect(303, projectPath(project.id, `/broadcasts/${String(req.params.broadcastId).toLowerCase()}?done=canceled`));
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const broadcastRoutes = projectPages('broadcasts', {
  '': { get: showBroadcasts },
  '/:broadcastId': { get: showBroadcast },
  '/:broadcastId/progress': { get: broadcastProgress },
  '/:broadcastId/events': { get: broadcastEvents },
  '/:broadcastId/approve': { get: showApprove, post: approve },
  '/:broadcastId/test-send': { post: testSend },
  '/:broadcastId/cancel': { post: cancel },
});
