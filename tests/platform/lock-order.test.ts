/**
 * A send's confirm and a notification of statuses write the same message rows at the same time,
 * each for many messages. They lock them in one order (by id), so they never deadlock: a deadlock
 * costs its victim PostgreSQL's deadlock_timeout, a second, before it is broken (issue 49's
 * one-second tail).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createHmac } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { confirmIntents } from '../../lib/messaging/ledger.js';
import { lockWaiters } from '../support/db.js';
import { openChannel } from '../../lib/channel-settings/settings.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const deadlocks = async () => Number((await t.db.pool.query<{ n: string }>('SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()')).rows[0].n);

describe('lock order of the message writers', () => {
  it('When statuses for many messages arrive while their sends are confirmed, in the opposite order, then each waits on the lowest row first and neither deadlocks', async () => {
    const project = await t.admin.project('lock order');
    const key = (await t.admin.key(project.id, ['messages:send'])).secret;
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    const phone = '14157770999';
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text: 'hi' }).expect(200);
    const sends = await Promise.all(Array.from({ length: 30 }, () => request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phone}`, content: 'hello' })));
    expect(sends.map((s) => s.status)).toEqual(Array(30).fill(200));
    const { rows } = await t.db.pool.query<{ id: string; send_ref: string; wamid: string }>(
      'SELECT id, send_ref, wamid FROM messages WHERE project_id = $1 AND wamid = ANY($2::text[]) ORDER BY id', [project.id, sends.map((s) => s.body.data.id)]);
    // As if the channel's answers were still on their way: both writers then move every row.
    await t.db.pool.query(`UPDATE messages SET status = 'pending' WHERE project_id = $1 AND send_ref = ANY($2::text[])`, [project.id, rows.map((r) => r.send_ref)]);
    const before = await deadlocks();

    // Another transaction holds the lowest row: each writer must wait there holding no other row.
    const blocker = await t.db.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM messages WHERE id = $1 FOR UPDATE', [rows[0].id]);
    const confirm = confirmIntents(t.db.sql, project.id, rows.map((r) => ({ ref: r.send_ref, wamid: r.wamid, at: t.clock.now() })));
    const ts = String(Math.floor(t.clock.now().getTime() / 1000));
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: channel.phoneNumberId },
      statuses: [...rows].reverse().map((r) => ({ id: r.wamid, status: 'delivered', timestamp: ts, recipient_id: phone })) } }] }] });
    const notify = request(t.app).post(`/channel/${project.id}/webhook`).set('Content-Type', 'application/json')
      .set('X-Hub-Signature-256', 'sha256=' + createHmac('sha256', channel.appSecret).update(body).digest('hex')).send(body).then((r) => r);
    let waiting = 0;
    for (let i = 0; i < 100 && waiting < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
      waiting = await lockWaiters(blocker);
    }
    expect(waiting).toBe(2);
    const probe = await t.db.pool.connect();
    try {
      await probe.query('BEGIN');
      const free = await probe.query('SELECT id FROM messages WHERE id = ANY($1::bigint[]) FOR UPDATE NOWAIT', [rows.slice(1).map((r) => r.id)]);
      expect(free.rowCount).toBe(rows.length - 1);
    } finally {
      await probe.query('ROLLBACK');
      probe.release();
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    await confirm;
    expect((await notify).status).toBe(200);
    expect(await deadlocks()).toBe(before);
    const moved = await t.db.pool.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM messages WHERE id = ANY($1::bigint[]) GROUP BY status', [rows.map((r) => r.id)]);
    expect(moved.rows).toEqual([{ status: 'delivered', n: '30' }]);
  });
});
