/**
 * Deciding a template outside production: the simulator plays Meta's review. Its control API
 * (`POST /_sim/templates/:id/decision`) changes the template and sends the same
 * `message_template_status_update` callback Meta would, synchronously, so when this returns the
 * template row has been updated by the ordinary inbound path (lib/messaging/inbound.ts) and
 * `template.approved` / `template.rejected` raised. In production, or with a real Graph API
 * (no simulator), Meta decides and this is refused.
 */
import type { Deps } from '../deps.js';
import { ApiError } from '../platform/errors.js';
import { findTemplate } from './templates.js';

export interface TemplateDecision {
  decision: 'APPROVED' | 'REJECTED';
  language?: string;
  reason?: string;
}

export async function decideOnSimulator(deps: Deps, simulatorUrl: string | undefined, projectId: string, name: string, d: TemplateDecision) {
  if (deps.config.nodeEnv === 'production') {
    throw new ApiError('conflict', 'Templates are decided by Meta in production (WhatsApp Manager); the simulator decision is for development and tests.');
  }
  if (!simulatorUrl) {
    throw new ApiError('conflict', 'The channel is not the Cloud API simulator (GRAPH_BASE_URL is set): Meta decides templates, in WhatsApp Manager.');
  }
  if (d.reason !== undefined && d.decision !== 'REJECTED') throw new ApiError('invalid_request', 'reason goes with REJECTED only.', { fields: [{ field: 'reason', message: 'REJECTED only' }] });
  // The stored row (findTemplate's type leaves the channel's id out).
  const row = (await findTemplate(deps, projectId, name, d.language)) as Awaited<ReturnType<typeof findTemplate>> & { channelTemplateId: string | null };
  if (!row.channelTemplateId) throw new ApiError('conflict', `Template ${name} (${row.language}) was never submitted to the channel: nothing to decide.`);
  let res: Response;
  try {
    res = await fetch(`${simulatorUrl}/_sim/templates/${encodeURIComponent(row.channelTemplateId)}/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: d.decision, ...(d.reason ? { reason: d.reason } : {}) }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (e) {
    throw new ApiError('upstream_error', `The simulator at ${simulatorUrl} did not answer (${e instanceof Error ? e.message : String(e)}).`);
  }
  if (res.status === 404) throw new ApiError('conflict', `The simulator no longer knows template ${name} (${row.channelTemplateId}); it may have been restarted without its data.`);
  if (!res.ok) throw new ApiError('upstream_error', `The simulator refused the decision: ${res.status} ${(await res.text()).slice(0, 200)}`);
  const after = await deps.db.prisma.template.findUniqueOrThrow({ where: { id: row.id } });
  return { name: after.name, language: after.language, category: after.category, status: after.status, rejected_reason: after.rejectedReason };
}
