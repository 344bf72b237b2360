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
import { ApiError } from '../platform/errors.js';
import { requireRole } from '../accounts/roles.js';
import { personAuthor } from '../conversations/authors.js';
import { templateShapeOf } from '../broadcasts/template-shape.js';

export async function testSendAs(deps: Deps, actor: Actor, projectId: string, broadcastId: string, phone: string | undefined, token: string): Promise<{ id: string }> {
  await requireRole(deps, actor.accountId, projectId, ['owner', 'admin'], 'send a test of a broadcast');
  const row = UUID.test(broadcastId) ? await findBroadcast(deps.db.sql, broadcastId.toLowerCase(), projectId) : undefined;
  if (!row) throw new DashboardRefusal(404, 'No such broadcast in this project.');
  if (row.status !== 'pending_approval') throw new DashboardRefusal(409, `This broadcast is ${row.status}: a test is sent before approval. Nothing was sent.`);
  if (!phone?.trim()) throw new DashboardRefusal(400, 'Type your own number in international form (e.g. +1 415 555 0101). Nothing was sent.');
  const filter = await audienceFilter(deps.db.sql, projectId, row.audience).catch(() => null);
  const sample = filter && await sampleRecipient(deps.db.sql, { projectId, filter, category: row.category, variables: row.template_variables, now: deps.clock.now() });
  if (!sample) throw new DashboardRefusal(409, 'The audience has no eligible recipient to take the variables from. Nothing was sent.');
  const project = await findProject(deps, projectId);
  const { body = [], header = [] } = sample.variables;
  const v = row.template_variables;
  // A carousel's cards (the campaign's header links, the sample's body variables), a limited-time
  // offer's expiry and the COPY_CODE button's coupon, as the campaign sends them
  // (lib/broadcasts/engine.ts): a test of a carousel without its cards is refused by the channel's
  // rules, and a copy-code button without its code shows an empty code.
  const cards = v.cards?.length
    ? v.cards.map((card, i) => ({ header: { media: { link: card.header?.link } }, variables: sample.variables.cards?.[i]?.body ?? [] }))
    : undefined;
  const copyCode = v.coupon_code ? (await templateShapeOf(deps.db.sql, projectId, row.template_name, row.template_language)).copyCodeIndex : -1;
  const sent = await sendMessage(deps, { id: project.id, name: project.name, status: project.status as 'active' }, {
    phone: phone.trim(),
    type: 'template',
    template: {
      name: row.template_name, language: row.template_language, variables: body, ...(header.length ? { header: { variables: header } } : {}),
      ...(cards ? { cards } : {}), ...(v.limited_time_offer ? { limited_time_offer: v.limited_time_offer } : {}),
      ...(copyCode >= 0 ? { buttons: [{ index: copyCode, sub_type: 'copy_code', payload: v.coupon_code }] } : {}),
    },
  } as Parameters<typeof sendMessage>[2], { ref: `snd_test_${token}`, author: personAuthor(actor) }).catch((e: unknown) => {
    // The send path's refusal in words, on the approval page (not a dead end).
    if (e instanceof ApiError && e.status < 500) throw new DashboardRefusal(e.status === 429 ? 429 : e.status === 400 || e.status === 422 ? 400 : 409, `The test was not sent: ${e.message} (${e.code}).`);
    throw e;
  });
  await recordAuditAfter(deps, actor, {
    projectId, action: 'broadcast.test_send', subject: row.id,
    after: { to: phone.trim(), template: row.template_name, language: row.template_language, variables: sample.variables, message_id: sent.id },
  });
  return sent;
}
