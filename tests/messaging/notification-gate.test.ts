/**
 * The channel's notifications applied at once are bounded (handlers/channel-webhook.ts): a flood of
 * one project's notifications that wait on the database holds at most the notifications' slots less
 * the reserve, the rest wait unread, and another project's notification is applied meanwhile. Nothing is lost: once the
 * database answers, every one is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createHmac } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { notificationShares } from '../../handlers/channel-webhook.js';
import { reserveOf } from '../../lib/platform/fair-shares.js';
import { lockWaiters } from '../support/db.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

async function customer(name: string, phone: string) {
  const project = await t.admin.project(name);
  const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
  const notify = (wamid: string) => {
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: channel.phoneNumberId },
      contacts: [{ wa_id: phone, profile: { name: 'Ada' } }],
      messages: [{ id: wamid, from: phone, timestamp: String(Math.floor(t.clock.now().getTime() / 1000)), type: 'text', text: { body: 'hello' } }] } }] }] });
    return request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json')
      .set('X-Hub-Signature-256', 'sha256=' + createHmac('sha256', channel.appSecret).update(body).digest('hex')).send(body).then((r) => r);
  };
  return { project, notify };
}


describe('notifications applied at once', () => {
  it('When twelve notifications of one project wait on the database, then it holds at most the notifications\' slots less the reserve, and another project\'s goes through', async () => {
    const { total } = notificationShares(t.db.pool.options.max!);
    // Alone, it borrows what nobody else wants; the reserve stays for projects holding none.
    const held = Math.min(12, total - reserveOf(total));
    const a = await customer('gate a', '14157771001');
    const b = await customer('gate b', '14157771002');
    expect((await a.notify('wamid.gate-first')).status).toBe(200);
    // Another transaction holds project A's contact: A's notifications wait on it.
    const blocker = await t.db.pool.connect();
    const lockWaits = () => lockWaiters(blocker);
    let flood: Promise<request.Response>[] = [];
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM contacts WHERE project_id = $1 FOR UPDATE', [a.project.id]);
      flood = Array.from({ length: 12 }, (_, i) => a.notify(`wamid.gate-${i}`));
      let waiting = 0;
      // Waits for the condition, not a clock (up to 30 s on a loaded machine).
      for (let i = 0; i < 600 && waiting < held; i++) {
        await new Promise((r) => setTimeout(r, 50));
        waiting = await lockWaits();
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(await lockWaits()).toBe(held);
      expect((await b.notify('wamid.gate-other')).status).toBe(200);
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect((await Promise.all(flood)).map((r) => r.status)).toEqual(Array(12).fill(200));
    const stored = await t.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND wamid LIKE 'wamid.gate-%'`, [a.project.id]);
    expect(stored.rows[0].n).toBe(13);
    // The test's own limit is beyond the wait above.
  }, 60_000);
});
