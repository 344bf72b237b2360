/**
 * What the dashboard pages show, read through the capability rooms' own read functions where they
 * exist (broadcastView, listBroadcastRows, templateView, webhookView); the few summaries no API
 * needs (a campaign's waves and its failures by reason) are queried here.
 */
import type { Deps } from '../deps.js';
import { broadcastView, listBroadcastRows, RECIPIENT_STATUS_SQL, RECIPIENT_ERROR_CODE_SQL, ERROR_CATEGORY_SQL, findBroadcast } from '../broadcasts/store.js';
import { UUID } from '../platform/ids.js';
import { queryRows } from '../platform/db/tx.js';
import { templateView } from '../templates/templates.js';
import { webhookView } from '../webhooks/registrations.js';
import { listKeys } from '../access/keys.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { audienceFilter, sampleRecipient } from '../broadcasts/audience.js';
import { renderTemplate } from '../templates/render.js';

type ReadDeps = Pick<Deps, 'db' | 'clock'>;

export const keysOf = (deps: ReadDeps, projectId: string) => listKeys(deps, projectId);

export async function broadcastsOf(deps: ReadDeps, projectId: string) {
  const now = deps.clock.now();
  const pending = await listBroadcastRows(deps.db.sql, projectId, 'pending_approval', 50, 0);
  const recent = await listBroadcastRows(deps.db.sql, projectId, undefined, 50, 0);
  const templates = await deps.db.prisma.template.findMany({ where: { projectId }, select: { name: true, language: true, status: true } });
  const templateStatus = (name: string, language: string) => templates.find((t) => t.name === name && t.language === language)?.status ?? 'unknown here';
  return {
    // Pending ones with their live pre-flight report (it follows the contacts until approval).
    pending: await Promise.all(pending.rows.map(async (row) => ({ view: await broadcastView(deps.db.sql, row, now, true), templateStatus: templateStatus(row.template_name, row.template_language) }))),
    others: (await Promise.all(recent.rows.filter((r) => r.status !== 'pending_approval').map((row) => broadcastView(deps.db.sql, row, now, false)))),
  };
}

export async function broadcastDetail(deps: ReadDeps, projectId: string, id: string) {
  const row = UUID.test(id) ? await findBroadcast(deps.db.sql, id.toLowerCase(), projectId) : undefined;
  if (!row) throw new DashboardRefusal(404, 'No such broadcast in this project.');
  const view = await broadcastView(deps.db.sql, row, deps.clock.now(), true);
  const join = `FROM broadcast_recipients r JOIN broadcasts b ON b.id = r.broadcast_id
    LEFT JOIN messages m ON m.project_id = b.project_id AND m.send_ref = r.send_ref WHERE r.broadcast_id = $1`;
  const waves = await queryRows<{ wave: number; status: string; n: bigint }>(deps.db.sql,
    `SELECT r.wave, ${RECIPIENT_STATUS_SQL} AS status, count(*)::bigint AS n ${join} GROUP BY 1, 2 ORDER BY 1, 2`, row.id);
  const failures = await queryRows<{ code: number | null; category: string | null; title: string | null; n: bigint }>(deps.db.sql,
    `SELECT ${RECIPIENT_ERROR_CODE_SQL} AS code, ${ERROR_CATEGORY_SQL} AS category,
            min(COALESCE(r.error_title, m.error ->> 'title', m.error ->> 'message')) AS title, count(*)::bigint AS n
     ${join} AND (${RECIPIENT_STATUS_SQL}) = 'failed' GROUP BY 1, 2 ORDER BY 4 DESC`, row.id);
  // Recipients not sent to: opted out after approval (the engine's consent check), or left when the campaign stopped.
  const cancellations = await queryRows<{ reason: string | null; n: bigint }>(deps.db.sql,
    `SELECT r.error_title AS reason, count(*)::bigint AS n FROM broadcast_recipients r WHERE r.broadcast_id = $1 AND r.state = 'canceled' GROUP BY 1 ORDER BY 2 DESC`, row.id);
  const byWave = new Map<number, Record<string, number>>();
  for (const w of waves) byWave.set(w.wave, { ...byWave.get(w.wave), [w.status]: Number(w.n) });
  const template = await deps.db.prisma.template.findFirst({ where: { projectId, name: row.template_name, language: row.template_language }, select: { status: true, components: true } });
  const followUps = await queryRows<{ id: string; status: string; name: string }>(deps.db.sql,
    'SELECT id, status, name FROM broadcasts WHERE retarget_parent_id = $1 ORDER BY created_at', row.id);
  return {
    view,
    approvedBy: (row as unknown as { approved_by: string | null }).approved_by ?? null,
    approvedAt: row.approved_at,
    retargetDueAt: row.retarget_due_at,
    templateStatus: template?.status ?? 'unknown here',
    waves: [...byWave.entries()].map(([wave, counts]) => ({ wave, counts })),
    failures: failures.map((f) => ({ code: f.code, category: f.category, title: f.title, count: Number(f.n) })),
    cancellations: cancellations.map((c) => ({ reason: c.reason ?? (row.status_reason ? `campaign stopped: ${row.status_reason}` : 'campaign stopped before they were sent'), count: Number(c.n) })),
    preview: row.status === 'pending_approval' ? await approvalPreview(deps, row, template?.components) : null,
    followUps,
  };
}

export async function webhooksOf(deps: ReadDeps, projectId: string) {
  const rows = await deps.db.prisma.webhookEndpoint.findMany({ where: { projectId }, orderBy: { createdAt: 'asc' } });
  return Promise.all(rows.map(async (w) => ({
    webhook: webhookView(w),
    deliveries: await deps.db.prisma.webhookDelivery.findMany({
      where: { webhookId: w.id },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: 20,
      include: { attemptLog: { orderBy: { id: 'desc' }, take: 20 } },
    }),
  })));
}

export async function templatesOf(deps: ReadDeps, projectId: string) {
  const rows = await deps.db.prisma.template.findMany({ where: { projectId }, orderBy: [{ name: 'asc' }, { language: 'asc' }] });
  return rows.map(templateView);
}

export async function membersOf(deps: ReadDeps, projectId: string) {
  const rows = await deps.db.prisma.dashboardMembership.findMany({ where: { projectId }, include: { account: { select: { email: true, passwordHash: true } } }, orderBy: { createdAt: 'asc' } });
  return rows.map((m) => ({ email: m.account.email, role: m.role, setUp: m.account.passwordHash !== null }));
}

/**
 * The message approval would send to its first recipient: the template's text filled with that
 * recipient's variables, resolved by the audience's own SQL (lib/broadcasts/audience.ts), the
 * values the engine puts into the send. Null without an approved template here or a recipient.
 */
async function approvalPreview(deps: ReadDeps, row: NonNullable<Awaited<ReturnType<typeof findBroadcast>>>, components: unknown) {
  if (!components) return null;
  const filter = await audienceFilter(deps.db.sql, row.project_id, row.audience).catch(() => null);
  const sample = filter && await sampleRecipient(deps.db.sql, { projectId: row.project_id, filter, category: row.category, variables: row.template_variables, now: deps.clock.now() });
  if (!sample) return { recipient: null, message: renderTemplate(components), variables: null };
  return { recipient: { name: sample.name, phone: sample.phone }, message: renderTemplate(components, sample.variables), variables: sample.variables };
}
