/**
 * A test of a broadcast waiting for approval, sent to the approver's own number: the campaign's
 * template with its first recipient's variables (the values the approval page shows), through the
 * one send path (lib/messaging/send-message.ts: the quota, consent and channel rules of every send,
 * recorded in the ledger under a reference made from the form's one-time token, so the same form
 * posted again is answered from that record and the channel is not called twice). Owners and
 * admins only; audited as `broadcast.test_send`.
 */
import type { Deps } from '../deps.js';
import { findBroadcast } from '../broadcasts/store.js';
import { audienceFilter, sampleRecipient } from '../broadcasts/audience.js';
import { sendMessage } from '../messaging/send-message.js';
import { findProject } from '../access/projects.js';
import { UUID } from '../platform/ids.js';
import { recordAuditAfter, type Actor } from '../accounts/audit.js';
import { DashboardRefusal } from '../accounts/refusal.js';
import { requireRole } from '../accounts/roles.js';
import { personAuthor } from '../conversations/authors.js';

export async function testSendAs(deps: Deps, actor: Actor, projectId: string, broadcastId: string, phone: string | undefined, token: string): Promise<{ id: string }> {
  await requireRole(deps, actor.accountId, projectId, ['owner', 'admin'], 'send a test of a broadcast');
  const row = UUID.test(broadcastId) ? await findBroadcast(deps.db.pool, broadcastId.toLowerCase(), projectId) : undefined;
  if (!row) throw new DashboardRefusal(404, 'No such broadcast in this project.');
  if (row.status !== 'pending_approval') throw new DashboardRefusal(409, `This broadcast is ${row.status}: a test is sent before approval. Nothing was sent.`);
  if (!phone?.trim()) throw new DashboardRefusal(400, 'Type your own number in international form (e.g. +1 415 555 0101). Nothing was sent.');
  const filter = await audienceFilter(deps.db.pool, projectId, row.audience).catch(() => null);
  const sample = filter && await sampleRecipient(deps.db.pool, { projectId, filter, category: row.category, variables: row.template_variables, now: deps.clock.now() });
  if (!sample) throw new DashboardRefusal(409, 'The audience has no eligible recipient to take the variables from. Nothing was sent.');
  const project = await findProject(deps, projectId);
  const { body = [], header = [] } = sample.variables;
  const sent = await sendMessage(deps, { id: project.id, name: project.name, status: project.status as 'active' }, {
    phone: phone.trim(),
    type: 'template',
    template: { name: row.template_name, language: row.template_language, variables: body, ...(header.length ? { header: { variables: header } } : {}) },
  } as Parameters<typeof sendMessage>[2], { ref: `snd_test_${token}`, author: personAuthor(actor) });
  await recordAuditAfter(deps, actor, {
    projectId, action: 'broadcast.test_send', subject: row.id,
    after: { to: phone.trim(), template: row.template_name, language: row.template_language, variables: sample.variables, message_id: sent.id },
  });
  return sent;
}
