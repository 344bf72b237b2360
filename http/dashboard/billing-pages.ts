/**
 * The console's billing page (issue 47, item 7): what the project's messages cost, labelled an
 * estimate (lib/pricing/spend.ts: the pricing the channel reported on each message's statuses,
 * priced at the operator's rate card), by day of a month (a chart drawn here as SVG), by month,
 * by pricing category and type and by campaign; the portfolio's messaging limit and the daily send
 * quota in use (lib/pricing/messaging-limit.ts, lib/broadcasts/quota-hold.ts: what pre-flights
 * report); and a CSV export of the month. Members read it.
 */
import type { Request, Response } from 'express';
import type { AppDeps } from '../app-deps.js';
import { messagingLimitNow, spendReport, type SpendLine, type SpendReport } from '../../lib/pricing/spend.js';
import { quotaOutlook } from '../../lib/broadcasts/quota-hold.js';
import { csvLine } from '../../lib/tables/csv.js';
import { html, when } from './html.js';
import { layout, projectPath } from './layout.js';
import { send } from './request.js';
import { projectContext } from './context.js';
import { count, usage } from './console-kit.js';
import { barChart } from './svg-chart.js';
import type { PageRoute } from './page-routes.js';

const MONTHS_SHOWN = 12;

/** The month asked for (`YYYY-MM`, UTC), else the current one; its first instant and the next month's. */
function monthOf(v: unknown, now: Date): { month: string; from: Date; to: Date } {
  const m = typeof v === 'string' ? /^(\d{4})-(0[1-9]|1[0-2])$/.exec(v) : null;
  const year = m ? Number(m[1]) : now.getUTCFullYear();
  const index = m ? Number(m[2]) - 1 : now.getUTCMonth();
  const from = new Date(Date.UTC(year, index, 1));
  const to = new Date(Date.UTC(year, index + 1, 1));
  return { month: from.toISOString().slice(0, 7), from, to };
}

const monthName = (d: Date) => d.toISOString().slice(0, 7);

function amount(report: SpendReport, n: number): string {
  return report.currency ? `${n.toFixed(n >= 100 ? 2 : 4)} ${report.currency}` : '—';
}

function lineCells(report: SpendReport, l: SpendLine) {
  return html`<td data-label="Messages">${count(l.messages)}</td><td data-label="Charged">${count(l.billable)}</td><td data-label="Free">${count(l.free)}</td><td data-label="Not priced">${count(l.unpriced)}</td><td data-label="Estimate">${amount(report, l.amount)}</td>`;
}
const lineHeads = html`<th scope="col">Messages</th><th scope="col">Charged</th><th scope="col">Free</th><th scope="col">Not priced</th><th scope="col">Estimate</th>`;

/** Every day of the month, with its spend (zero where nothing was sent). */
function daysOf(report: SpendReport, from: Date, to: Date) {
  const byDay = new Map(report.byDay.map((d) => [d.day, d]));
  const out = [];
  for (let d = new Date(from); d < to; d = new Date(d.getTime() + 86_400_000)) {
    const day = d.toISOString().slice(0, 10);
    out.push(byDay.get(day) ?? { day, messages: 0, billable: 0, free: 0, unpriced: 0, amount: 0 });
  }
  return out;
}

export const showBilling = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'billing');
  const projectId = ctx.project.id;
  const now = deps.clock.now();
  const { month, from, to } = monthOf(req.query.month, now);
  const firstMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (MONTHS_SHOWN - 1), 1));
  const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const [report, months, limit, quota] = await Promise.all([
    spendReport(deps.db.sql, projectId, from, to, { by: 'day' }),
    spendReport(deps.db.sql, projectId, firstMonth, nextMonth, { by: 'month' }),
    messagingLimitNow(deps.db.sql, projectId, now),
    quotaOutlook(deps.db.sql, projectId, 0, now, now),
  ]);
  const days = daysOf(report, from, to);
  const path = projectPath(projectId, '/billing');
  const prev = monthName(new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() - 1, 1)));
  const next = to <= nextMonth ? monthName(to) : undefined;
  const measure = report.currency ? (l: SpendLine) => l.amount : (l: SpendLine) => l.billable;
  const axis = report.currency ? (v: number) => `${Number(v.toPrecision(3))}` : (v: number) => count(Math.round(v));
  const body = html`<p class="notice estimate" role="note"><strong>Estimate.</strong> Counted from the pricing the channel reported on each message (category and type; only <code>regular</code> is charged) and priced at the operator's rate card as it is today${report.rateCardUpdatedAt ? ` (updated ${when(report.rateCardUpdatedAt)})` : ''}. Meta's invoice is what counts. All days are UTC.</p>
${report.currency ? '' : html`<p class="warning">No rate card is set, so there are counts but no amounts: an operator sets one (PUT /admin/rate-card or <code>ops broadcasts rate-card-set</code>).</p>`}
<section class="card" aria-labelledby="limits-title"><h2 id="limits-title">Limits in use</h2>
  ${usage(`Daily send quota on ${quota.day}`, quota.used, quota.daily_limit, count)}
  <p>Messaging limit (the portfolio's unique users in a moving 24 hours): ${limit.state === 'unknown' ? html`not known yet${limit.read_at ? ` (last read ${when(limit.read_at)})` : ''}; ${count(limit.reached_24h)} reached in the last 24 hours` : limit.unlimited ? html`unlimited (${limit.tier}); ${count(limit.reached_24h)} reached in the last 24 hours` : html`${count(limit.reached_24h)} of ${count(limit.limit ?? 0)} reached (${limit.tier}), ${count(limit.remaining ?? 0)} left${limit.next_release_at ? `, room frees from ${when(limit.next_release_at)}` : ''}`}.</p>
</section>
<nav class="paging" aria-label="Month"><a href="${`${path}?month=${prev}`}">← ${prev}</a> <strong>${month}</strong>${next ? html` <a href="${`${path}?month=${next}`}">${next} →</a>` : ''} · <a href="${`${path}/csv?month=${month}`}" download>Export ${month} as CSV</a></nav>
<section class="card" aria-labelledby="month-title"><h2 id="month-title">${month}: ${amount(report, report.total.amount)} estimated, ${count(report.total.messages)} priced messages</h2>
${barChart(days.map((d) => ({ label: d.day.slice(8), value: measure(d), text: report.currency ? amount(report, d.amount) : `${count(d.billable)} charged messages` })), { id: 'spend-by-day', title: `${report.currency ? `Estimated spend (${report.currency})` : 'Charged messages'} per day of ${month} (UTC)`, axis })}
${report.unreported ? html`<p class="muted">${count(report.unreported)} messages sent this month have no pricing reported yet; they are not counted.</p>` : ''}
<details><summary>By day</summary><div class="table-wrap"><table class="stack" id="by-day"><thead><tr><th scope="col">Day</th>${lineHeads}</tr></thead><tbody>
${days.filter((d) => d.messages > 0).map((d) => html`<tr><td data-label="Day">${d.day}</td>${lineCells(report, d)}</tr>`)}
</tbody></table></div></details>
<h3>By pricing category and type</h3>
${report.byCategory.length ? html`<div class="table-wrap"><table class="stack" id="by-category"><thead><tr><th scope="col">Category</th><th scope="col">Type</th>${lineHeads}</tr></thead><tbody>
${report.byCategory.map((c) => html`<tr><td data-label="Category">${c.category}</td><td data-label="Type">${c.type}</td>${lineCells(report, c)}</tr>`)}</tbody></table></div>` : html`<p class="muted">No priced messages this month.</p>`}
<h3>By campaign</h3>
${report.byCampaign.length ? html`<div class="table-wrap"><table class="stack" id="by-campaign"><thead><tr><th scope="col">Campaign</th>${lineHeads}</tr></thead><tbody>
${report.byCampaign.map((c) => html`<tr><td data-label="Campaign">${c.broadcastId ? html`<a href="${projectPath(projectId, `/broadcasts/${c.broadcastId}`)}">${c.name ?? c.broadcastId}</a>` : html`<span class="muted">not a campaign</span>`}</td>${lineCells(report, c)}</tr>`)}</tbody></table></div>` : html`<p class="muted">No campaign messages this month.</p>`}
</section>
<section class="card" aria-labelledby="months-title"><h2 id="months-title">By month</h2>
<div class="table-wrap"><table class="stack" id="by-month"><thead><tr><th scope="col">Month</th>${lineHeads}</tr></thead><tbody>
${months.byDay.slice().reverse().map((m) => html`<tr><td data-label="Month"><a href="${`${path}?month=${m.day}`}">${m.day}</a></td>${lineCells(months, m)}</tr>`)}
</tbody></table></div>${months.byDay.length ? '' : html`<p class="muted">Nothing priced in the last ${MONTHS_SHOWN} months.</p>`}</section>`;
  send(res, 200, layout(ctx.shell('Billing (estimate)'), body));
};

/** The month as CSV: one line per day, category, type and campaign, with the estimate's currency. */
export const exportBilling = (deps: AppDeps) => async (req: Request, res: Response) => {
  const ctx = await projectContext(deps, req, 'billing');
  const { month, from, to } = monthOf(req.query.month, deps.clock.now());
  const report = await spendReport(deps.db.sql, ctx.project.id, from, to, { by: 'day' });
  let out = csvLine(['section', 'key', 'type', 'messages', 'charged', 'free', 'not_priced', 'estimate', 'currency']);
  const line = (section: string, key: string, type: string, l: SpendLine) => csvLine([section, key, type, l.messages, l.billable, l.free, l.unpriced, report.currency ? l.amount : '', report.currency ?? '']);
  for (const d of report.byDay) out += line('day', d.day, '', d);
  for (const c of report.byCategory) out += line('category', c.category, c.type, c);
  for (const c of report.byCampaign) out += line('campaign', c.name ?? (c.broadcastId ? c.broadcastId : 'not a campaign'), c.broadcastId ?? '', c);
  out += line('total', month, '', report.total);
  res.status(200).type('text/csv; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="billing-${ctx.project.id}-${month}.csv"`);
  res.setHeader('Cache-Control', 'no-store');
  res.send(out);
};

/** This module's pages under /dashboard (router.ts mounts them). */
export const billingRoutes: PageRoute[] = [
  { method: 'get', path: '/projects/:projectId/billing', handler: showBilling },
  { method: 'get', path: '/projects/:projectId/billing/csv', handler: exportBilling },
];
