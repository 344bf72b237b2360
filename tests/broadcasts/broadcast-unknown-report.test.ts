/**
 * What a crash leaves unknown is reported as unknown (issue 44, item 10). A campaign whose engine
 * died mid-send leaves recipients whose message was recorded (`pending`) before the channel's
 * answer came: after recovery their rows are `unknown` and the campaign completes. They were
 * reported `queued` (with no message id) on a completed campaign, which reads as "still to send".
 * Here the dead engine's work is set up as a crash leaves it (claims with a lapsed lease, intents
 * recorded, one call made at the channel and one not), a live engine completes the campaign, and
 * the API's recipients and counts, `ops broadcasts show` and the dashboard's campaign page report
 * them `unknown` until a status from the channel settles one.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, engineFor, projectWithKey, runUntil, seedMany, template } from '../support/broadcasts.js';
import { person } from '../support/dashboard.js';
import { eventually } from '../support/eventually.js';
import { recordIntents } from '../../lib/messaging/ledger.js';
import { claimBatch } from '../../lib/broadcasts/recipients.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { main } from '../../scripts/ops/main.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, config: { graphTimeoutMs: 1500 } });
});
afterAll(async () => {
  await t.close();
});

async function ops(args: string[]) {
  let stdout = '';
  const code = await main(args, { SERVICE_URL: t.baseUrl!, ADMIN_TOKEN: t.adminToken }, { out: (s) => void (stdout += s + '\n'), err: () => undefined });
  return { code, stdout };
}

describe('a campaign killed mid-send', () => {
  it('When a crash left recipients recorded with no answer, then the completed campaign reports them unknown (not queued) in recipients, counts, the CLI and the dashboard, until a status settles one', async () => {
    const { project, key } = await projectWithKey(t);
    await template(t, project.id, 'notice', 'Your order shipped', 'UTILITY');
    const base = 15571000000 + Math.floor(Math.random() * 1e5) * 10;
    await seedMany(t, project.id, 4, base);
    const call = api(t, key);
    const created = await call.post('/v1/broadcasts', { name: 'Killed', template_name: 'notice', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } });
    expect(created.status).toBe(201);
    const id = created.body.data.broadcast.id as string;
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});

    // The dead engine's work: two claims whose lease ran out, their messages recorded; the first
    // call reached the channel (it holds the message), the second never left.
    const past = new Date(Date.now() - 60_000);
    const dead = await claimBatch(t.db.sql, id, 'dead-engine', 2, past, past, past);
    expect(dead).toHaveLength(2);
    await recordIntents(t.db.sql, project.id, dead.map((r) => ({ to: { phone: r.phone }, ref: r.send_ref, type: 'template', content: { type: 'template' } })), t.clock.now());
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const reached = await request(t.sim!.url).post(`/v26.0/${channel.phoneNumberId}/messages`).set('Authorization', `Bearer ${channel.accessToken}`)
      .send({ messaging_product: 'whatsapp', recipient_type: 'individual', to: dead[0].phone, type: 'template', template: { name: 'notice', language: { policy: 'deterministic', code: 'en_US' } }, biz_opaque_callback_data: dead[0].send_ref });
    expect(reached.status === 200 ? 200 : JSON.stringify(reached.body)).toBe(200);
    const wamid = reached.body.messages[0].id as string;

    const engine = await engineFor(t);
    try {
      expect(await runUntil(t, engine, id, ['completed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    // As the finding saw them: rows `unknown`, messages `pending`.
    const rows = (await t.db.pool.query(
      `SELECT r.state, m.status FROM broadcast_recipients r JOIN messages m ON m.project_id = $2 AND m.send_ref = r.send_ref WHERE r.id = ANY($1::bigint[]) ORDER BY r.id`,
      [dead.map((r) => r.id), project.id])).rows;
    expect(rows).toEqual([{ state: 'unknown', status: 'pending' }, { state: 'unknown', status: 'pending' }]);

    // The API: counts, the status filter, the list.
    const view = (await call.get(`/v1/broadcasts/${id}`).expect(200)).body.data.broadcast;
    expect(view).toMatchObject({ status: 'completed', counts: { total: 4, sent: 2, queued: 0, unknown: 2 } });
    const unknown = (await call.get(`/v1/broadcasts/${id}/recipients?status=unknown`).expect(200)).body.data;
    expect(unknown.total).toBe(2);
    expect(unknown.recipients.map((r: any) => [r.phone, r.status, r.message_id]).sort()).toEqual(dead.map((r) => [`+${r.phone}`, 'unknown', null]).sort());
    const queued = (await call.get(`/v1/broadcasts/${id}/recipients?status=queued`).expect(200)).body.data;
    expect(queued).toMatchObject({ total: 0, recipients: [] });

    // The CLI.
    const shown = await ops(['broadcasts', 'show', id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/counts:\s+total 4, queued 0, sent 2, .*unknown 2/);
    expect(shown.stdout).toMatch(/outcome unknown:\s+2 sends with an unknown outcome .*never sent again/);
    expect((await ops(['broadcasts', 'show', id, '--json'])).stdout).toContain('"unknown": 2');

    // The dashboard's campaign page, its waves and its live progress.
    const owner = await person(t, project.id, `owner-${id.slice(0, 8)}@example.com`, 'owner');
    const page = (await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}`).expect(200)).text;
    expect(page).toContain('<td data-count="unknown">2</td>');
    expect(page).toContain('<td data-count="queued">0</td>');
    expect(page).toMatch(/sent 2, outcome unknown 2/);
    expect(page).toContain('2 sends with an unknown outcome');
    const progress = (await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}/progress`).expect(200)).body;
    expect(progress.counts).toMatchObject({ queued: 0, unknown: 2 });

    // A status for the send that reached the channel settles it, with the channel's message id.
    expect((await request(t.sim!.url).post('/_sim/status').send({ wamid, status: 'delivered' })).body.status_code).toBe(200);
    await eventually(async () => (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts, (c) => c.delivered === 1, 10_000, 'the late status counted');
    expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts).toMatchObject({ total: 4, sent: 2, delivered: 1, queued: 0, unknown: 1 });
    const settled = (await call.get(`/v1/broadcasts/${id}/recipients?status=delivered`).expect(200)).body.data;
    expect(settled.recipients).toEqual([expect.objectContaining({ phone: `+${dead[0].phone}`, status: 'delivered', message_id: wamid })]);
    const still = (await call.get(`/v1/broadcasts/${id}/recipients?status=unknown`).expect(200)).body.data;
    expect(still.recipients).toEqual([expect.objectContaining({ phone: `+${dead[1].phone}`, status: 'unknown', message_id: null })]);
    // Nobody was sent twice: the channel holds one message per recipient.
    const atChannel = (await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${channel.phoneNumberId}&limit=100`)).body.data as Array<{ to: string }>;
    expect(atChannel.map((m) => m.to).sort()).toEqual([base, base + 1, base + 2, base + 3].map(String).filter((p) => p !== dead[1].phone).sort());
  }, 60_000);
});
