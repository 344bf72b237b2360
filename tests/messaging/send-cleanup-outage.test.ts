/**
 * Fault: the database drops out exactly when a send cleans up after itself. The app's pool refuses
 * chosen statements (by their prepared-statement name) as an outage would (ECONNREFUSED), so the
 * fault lands at one precise point of the send path:
 * - the intent and its quota unit are recorded but the answer is lost, and they cannot be withdrawn at once;
 * - the channel certainly refused the send and the intent cannot be abandoned at once.
 * In both the answer is an envelope, and once the database answers again the quota is exact and no
 * message is left pending (its Idempotency-Key is then free for a new attempt), without a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';

let t: TestApp;
/** Statement names the "outage" refuses, with how many more times each. */
const refuse = new Map<string, number>();
/** Statement names whose answer the "outage" loses after they ran, with how many more times each. */
const lose = new Map<string, number>();
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: null, read: null } as any, templateAutoDecisionMs: null } });
  const pool = t.db.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
  const query = pool.query.bind(pool);
  pool.query = (config: unknown, ...rest: unknown[]) => {
    const name = typeof config === 'object' && config !== null ? (config as { name?: string }).name : undefined;
    const left = name ? refuse.get(name) ?? 0 : 0;
    if (left > 0) {
      refuse.set(name!, left - 1);
      return Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    }
    const lost = name ? lose.get(name) ?? 0 : 0;
    if (lost > 0) {
      lose.set(name!, lost - 1);
      return (query(config, ...rest) as Promise<unknown>).then(() => Promise.reject(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })));
    }
    return query(config, ...rest);
  };
});
afterAll(async () => {
  await t.close();
});


let seq = 0;
async function setup() {
  const project = await t.admin.project(`cleanup ${++seq}`);
  const key = (await t.admin.key(project.id, ['messages:send'])).secret;
  const { phoneNumberId: pnid } = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415555${String(2000 + seq)}`;
  expect((await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, text: 'hi' })).body.status_code).toBe(200);
  const send = (idem: string) =>
    request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).set('Idempotency-Key', idem).send({ type: 'text', phone: `+${phone}`, content: 'hello' });
  const quota = async () => Number((await t.db.pool.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [project.id])).rows[0].n);
  const pending = async () => (await t.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND status = 'pending'`, [project.id])).rows[0].n as number;
  const simSends = async () => ((await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}&to=${phone}`)).body.data as unknown[]).length;
  return { pnid, send, quota, pending, simSends };
}

describe('clean-up of a send during an outage', () => {
  it('When the record (with its quota unit) commits but its answer is lost and the withdrawal cannot run at once, then the answer is 503 and the message and its unit go once the database answers', async () => {
    const { send, quota, pending, simSends } = await setup();
    lose.set('record-intent', 1);
    refuse.set('withdraw-send', 2); // the first withdrawal and its first retry fail too
    const res = await send('cleanup-1');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable' } });
    expect(res.headers['retry-after']).toBeDefined();
    expect(await simSends()).toBe(0);
    await eventually(async () => [await quota(), await pending()], ([q, p]) => q === 0 && p === 0, 10_000, 'the message and its quota unit withdrawn');
    // The key was released (5xx, no send behind it): a new attempt sends once.
    const again = await send('cleanup-1');
    expect(again.status).toBe(200);
    expect(await simSends()).toBe(1);
    expect(await quota()).toBe(1);
  }, 30_000);

  it('When the channel refuses the send and the intent cannot be abandoned at once, then the answer carries the channel\'s error, and the message and its unit go once the database answers', async () => {
    const { pnid, send, quota, pending, simSends } = await setup();
    await request(t.sim!.url).post('/_sim/faults').send({ phone_number_id: pnid, operation: 'messages', http_status: 503 }).expect(201);
    refuse.set('abandon-intent', 1);
    const res = await send('cleanup-2');
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(res.body.success).toBe(false);
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    await eventually(async () => [await quota(), await pending()], ([q, p]) => q === 0 && p === 0, 10_000, 'no pending message, unit back');
    const again = await eventually(() => send('cleanup-2'), (r) => r.status === 200, 10_000, 'the key free for a new attempt');
    expect(again.body.data.status).toBe('sent');
    expect(await simSends()).toBe(1);
    expect(await quota()).toBe(1);
  }, 30_000);
});
