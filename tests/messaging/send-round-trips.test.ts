/**
 * A send costs two statements on the database once the caches are warm: the record, with the
 * window check and the quota unit (which reads the project's quota itself), and the confirm;
 * concurrent sends of a project share their record and confirm statements (issue 69).
 * Folding the window check and the quota into the record must keep their rules: a session send
 * outside the window stores nothing and takes no unit, whatever the quota.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { REPLICATION_SQL } from '../../lib/platform/db/replication-state.js';
import { until } from '../support/bots.js';

let t: TestApp;
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } }, (app) => {
  t = app;
});

let seq = 0;
async function setup(quota?: number) {
  const project = await t.admin.project(`round trips ${++seq}`);
  if (quota !== undefined) await t.admin.call('patch', `/admin/projects/${project.id}`, { daily_send_quota: quota });
  const key = (await t.admin.key(project.id, ['messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415888${String(1000 + seq)}`;
  await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text: 'hi' }).expect(200);
  const send = (to: string, headers: Record<string, string> = {}) =>
    request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).set(headers).send({ type: 'text', phone: `+${to}`, content: 'hello' });
  return { project, phone, send };
}
const quotaUsed = async (projectId: string) =>
  Number((await t.db.pool.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [projectId])).rows[0].n);

/**
 * Counts the statements the service's pool runs while `run` does (not the health watch's periodic
 * read of replication, which runs on its own clock). `hold` may make a statement wait before it goes.
 */
async function statementsDuring(run: () => Promise<unknown>, hold?: (name: string) => Promise<void> | undefined): Promise<string[]> {
  const pool = t.db.pool as unknown as { query: (...args: unknown[]) => unknown };
  const original = pool.query;
  const seen: string[] = [];
  pool.query = function (this: unknown, ...args: unknown[]) {
    const q = args[0] as string | { name?: string; text: string };
    if (q === REPLICATION_SQL) return original.apply(this, args);
    const name = typeof q === 'string' ? q.slice(0, 40) : q.name ?? q.text.slice(0, 40);
    seen.push(name);
    const held = hold?.(name);
    return held ? held.then(() => original.apply(this, args)) : original.apply(this, args);
  };
  try {
    await run();
  } finally {
    pool.query = original;
  }
  return seen;
}

describe('round trips of a send', () => {
  it('When caches are warm, then a text send runs two statements: record (with the window check and the quota unit), confirm', async () => {
    const { phone, send } = await setup();
    expect((await send(phone)).status).toBe(200);
    const seen = await statementsDuring(async () => expect((await send(phone)).status).toBe(200));
    expect(seen).toEqual(['record-intent', 'confirm-sent-many']);
  });

  it('When a send carries an Idempotency-Key, then it runs three statements (claim, record, confirm storing the key\'s answer) and a retry with the key replays that answer', async () => {
    const { phone, send } = await setup();
    expect((await send(phone)).status).toBe(200);
    let first: request.Response | undefined;
    const seen = await statementsDuring(async () => (first = await send(phone, { 'Idempotency-Key': 'rt-1' })));
    expect(first!.status).toBe(200);
    expect(seen).toEqual(['idempotency-claim-many', 'record-intent', 'confirm-sent-many']);
    const again = await send(phone, { 'Idempotency-Key': 'rt-1' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first!.body);
  });

  it('When sends of one project finish while a confirm is in flight, then they wait and share the next confirm statement, and every message is confirmed with its own wamid', async () => {
    const { project, phone, send } = await setup();
    expect((await send(phone)).status).toBe(200);
    // The first confirm is held until the channel has answered all 20 sends, so the overlap the
    // batcher serves happens on any machine (a loaded one may otherwise finish each send alone).
    const channel = t.services.deps.channel;
    const sendMessage = channel.sendMessage;
    let answered = 0;
    channel.sendMessage = async (...args) => {
      const r = await sendMessage.apply(channel, args);
      answered++;
      return r;
    };
    let firstConfirm = true;
    const hold = (name: string) => {
      if (name !== 'confirm-sent-many' || !firstConfirm) return undefined;
      firstConfirm = false;
      return until('the channel to answer every send', async () => answered === 20).then(() => undefined);
    };
    let answers: request.Response[] = [];
    try {
      const seen = await statementsDuring(async () => {
        answers = await Promise.all(Array.from({ length: 20 }, () => send(phone)));
      }, hold);
      expect(answers.every((r) => r.status === 200)).toBe(true);
      expect(seen.filter((s) => s === 'confirm-sent-many')).toHaveLength(2);
    } finally {
      channel.sendMessage = sendMessage;
    }
    const rows = (await t.db.pool.query(`SELECT wamid, status FROM messages WHERE project_id = $1 AND direction = 'outbound'`, [project.id])).rows;
    expect(rows).toHaveLength(21);
    expect(new Set(answers.map((r) => r.body.data.id)).size).toBe(20);
    for (const a of answers) expect(rows.find((r) => r.wamid === a.body.data.id)?.status).toBe('sent');
  });

  it('When a session send is outside the window, then 409 outside_24h_window, no contact or message is stored and no quota unit is taken', async () => {
    const { project, phone, send } = await setup();
    expect((await send(phone)).status).toBe(200);
    expect(await quotaUsed(project.id)).toBe(1);
    const res = await send('14158880999');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('outside_24h_window');
    expect(await quotaUsed(project.id)).toBe(1);
    expect(await t.db.prisma.contact.count({ where: { projectId: project.id, phone: '14158880999' } })).toBe(0);
    expect(await t.db.prisma.message.count({ where: { projectId: project.id } })).toBe(2);
    // The window closes after 24 hours: that (next) day's send takes no unit either.
    t.clock.advance(24 * 3600_000 + 1000);
    expect((await send(phone)).body.error.code).toBe('outside_24h_window');
    expect(await quotaUsed(project.id)).toBe(1);
  });

  it('When the quota is used up, then 429 quota_exceeded names the project\'s limit read in the recording statement, and nothing is recorded', async () => {
    const { project, phone, send } = await setup(1);
    expect((await send(phone)).status).toBe(200);
    const res = await send(phone);
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('quota_exceeded');
    expect(res.body.error.details.limit).toBe(1);
    expect(await t.db.prisma.message.count({ where: { projectId: project.id, direction: 'outbound' } })).toBe(1);
  });

  it('When the quota is used up and the window is closed too, then 409 outside_24h_window (waiting for the reset would not help), nothing recorded', async () => {
    const { project, phone, send } = await setup(1);
    expect((await send(phone)).status).toBe(200);
    const res = await send('14158880998');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('outside_24h_window');
    // Inside the window, the same exhausted quota is 429.
    expect((await send(phone)).body.error.code).toBe('quota_exceeded');
    expect(await quotaUsed(project.id)).toBe(1);
    expect(await t.db.prisma.message.count({ where: { projectId: project.id, direction: 'outbound' } })).toBe(1);
  });
});
