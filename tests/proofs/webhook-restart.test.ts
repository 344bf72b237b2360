/**
 * Webhook attempts across crashes and restarts (issue 23, item 6). An attempt is counted when its
 * delivery is claimed, before the POST, so a crash can never make a failing receiver get more than
 * the spec's 5 attempts; a graceful stop gives back the claims it has not posted; and deliveries
 * that fell due while delivery was down resume at once after a restart (the start-up retake and
 * the retry jobs race for the same rows and neither drops the other's).
 *
 * A crash is what the database sees of one: a claim (counted), maybe a POST, and no outcome. The
 * crashed worker here is the real attempt code with an outcome writer that never writes. Leases
 * and the sweep's grace are 30 s in this file, so a delivery that waited for either would miss
 * every bound below.
 *
 * @alone due retries must be redelivered within 3 s of a restart (timingBound).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { Receiver } from '../support/receiver.js';
import { attemptDelivery, type AttemptContext } from '../../lib/webhooks/attempt.js';
import { deliveryPolicy } from '../../lib/webhooks/policy.js';
import { AgentPool } from '../../lib/webhooks/http-post.js';
import { fanOutBatch } from '../../lib/webhooks/fanout.js';
import { INTERRUPTED } from '../../lib/webhooks/claims.js';
import { systemClock } from '../../lib/platform/clock.js';
import { createLogger } from '../../lib/platform/logger.js';
import type { OutcomeWriter } from '../../lib/webhooks/outcomes.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
let rx: Receiver;
const agents = new AgentPool();
beforeAll(async () => {
  t = await startTestApp({
    config: { devAllowPrivateTargets: true },
    webhooks: { policy: { leaseMs: 30_000, overdueGraceMs: 30_000, perWebhookConcurrency: 1 } },
  });
  rx = await Receiver.start();
});
afterAll(async () => {
  await t?.db.pool.query(`UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL WHERE status = 'pending'`);
  await t?.close();
  await rx?.close();
  agents.destroy();
});



let seq = 0;
async function setup(path: string, behaviour: Parameters<Receiver['on']>[1]) {
  const project = await t.admin.project(`restart ${++seq}`);
  const key = (await t.admin.key(project.id, ['webhooks:manage'])).secret;
  const runtime = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret as string;
  const res = await request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: rx.url + path, events: ['crash.test'] });
  expect(res.status).toBe(201);
  rx.on(path, behaviour);
  const emit = async (payload: unknown = null) =>
    expect((await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'crash.test', payload })).status).toBe(202);
  return { key, webhookId: res.body.data.webhook.id as string, emit };
}

const deliveriesOf = async (webhookId: string) => (await t.admin.call('get', `/admin/webhooks/${webhookId}/deliveries?limit=100`)).deliveries as any[];
const failureCount = async (webhookId: string) =>
  (await t.db.pool.query('SELECT failure_count FROM webhook_endpoints WHERE id = $1', [webhookId])).rows[0].failure_count as number;

/** A worker that dies after its POST, before its outcome is written: the real attempt code, an outcome writer that never writes. */
function crashingWorker(): AttemptContext {
  const lost = { room: async () => undefined, record: () => new Promise<never>(() => undefined) } as unknown as OutcomeWriter;
  return {
    sql: t.db.sql, clock: t.clock, timer: systemClock, secretBox: t.secretBox,
    policy: deliveryPolicy({ attemptTimeoutMs: 2000, leaseMs: 30_000 }),
    allowPrivate: true, agents, logger: createLogger({ silent: true }), outcomes: lost, changes: new Map(),
  };
}

/** Fans out (as the dead instance did: the first attempt claimed and counted) with no delivery running. */
async function fanOutByHand(webhookId: string) {
  const { deliveries } = await fanOutBatch(t.db, 100, t.clock.now(), new Date(Date.now() + 30_000));
  const mine = deliveries.find((d) => d.webhookId === webhookId)!;
  expect(mine.attempt).toBe(1);
  return mine;
}

/** Time passes while the crashed worker is gone: its claim's lease runs out. */
const leaseRunsOut = (id: string) => t.db.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = $1`, [id]);

describe('attempts counted across crashes', () => {
  it('When a worker crashes after the POST and before recording it, twice, then the failing receiver gets exactly 5 attempts in total and the event is dropped', async () => {
    const { webhookId, emit } = await setup('/crash-after-post', { kind: 'status', status: 500 });
    await t.stopWebhooks();
    await emit({ n: 1 });
    const claim = await fanOutByHand(webhookId);
    await attemptDelivery(crashingWorker(), { id: claim.id, webhookId, claim }); // attempt 1 posted, then the crash
    await rx.waitFor('/crash-after-post', 1);
    await leaseRunsOut(claim.id);
    await attemptDelivery(crashingWorker(), { id: claim.id, webhookId }); // attempt 2: claimed, posted, crash
    await rx.waitFor('/crash-after-post', 2);
    await leaseRunsOut(claim.id);
    const { rows } = await t.db.pool.query('SELECT attempts, status FROM webhook_deliveries WHERE id = $1', [claim.id]);
    expect(rows[0]).toEqual({ attempts: 2, status: 'pending' });

    await t.restartWebhooks();
    await rx.waitFor('/crash-after-post', 5, 8000);
    const [delivery] = await eventually(() => deliveriesOf(webhookId), (d) => d[0]?.status === 'failed');
    await sleep(1500); // past every retry time of the scaled schedule
    expect(rx.at('/crash-after-post')).toHaveLength(5);
    expect(new Set(rx.at('/crash-after-post').map((r) => r.body.id))).toEqual(new Set([claim.id]));
    expect(delivery).toMatchObject({ id: claim.id, attempts: 5, next_attempt_at: null });
    expect(delivery.attempt_log.map((a: any) => [a.attempt, a.status_code])).toEqual([[3, 500], [4, 500], [5, 500]]); // 1 and 2 died with their worker
    expect(await failureCount(webhookId)).toBe(1);
  }, 30_000);

  it('When a worker crashes between the claim and the POST, then that attempt still counts: 4 reach the receiver, 5 in all, never a sixth', async () => {
    const { webhookId, emit } = await setup('/crash-before-post', { kind: 'status', status: 503 });
    await t.stopWebhooks();
    await emit();
    const claim = await fanOutByHand(webhookId); // claimed (attempt 1 counted), never posted
    await leaseRunsOut(claim.id);
    await t.restartWebhooks();
    await rx.waitFor('/crash-before-post', 4, 8000);
    const [delivery] = await eventually(() => deliveriesOf(webhookId), (d) => d[0]?.status === 'failed');
    await sleep(1500);
    expect(rx.at('/crash-before-post')).toHaveLength(4);
    expect(delivery.attempts).toBe(5);
    expect(delivery.attempt_log.map((a: any) => a.attempt)).toEqual([2, 3, 4, 5]);
    expect(await failureCount(webhookId)).toBe(1);
  }, 30_000);

  it('When the fifth attempt is interrupted by a crash, then the restart drops the event (logged as interrupted, one failed event) and posts no sixth', async () => {
    const { webhookId, emit } = await setup('/crash-fifth', { kind: 'status', status: 500 });
    await t.stopWebhooks();
    await emit();
    const claim = await fanOutByHand(webhookId);
    await attemptDelivery(crashingWorker(), { id: claim.id, webhookId, claim });
    for (let n = 2; n <= 5; n++) {
      await leaseRunsOut(claim.id);
      await attemptDelivery(crashingWorker(), { id: claim.id, webhookId });
      await rx.waitFor('/crash-fifth', n);
    }
    // A sixth claim is refused even by hand.
    await leaseRunsOut(claim.id);
    expect(await attemptDelivery(crashingWorker(), { id: claim.id, webhookId })).toBeUndefined();
    expect(rx.at('/crash-fifth')).toHaveLength(5);

    await t.restartWebhooks();
    const [delivery] = await eventually(() => deliveriesOf(webhookId), (d) => d[0]?.status === 'failed', 5000);
    await sleep(1000);
    expect(rx.at('/crash-fifth')).toHaveLength(5);
    expect(delivery.attempts).toBe(5);
    expect(delivery.attempt_log.map((a: any) => [a.attempt, a.status_code, a.error])).toEqual([[5, null, INTERRUPTED]]);
    expect(await failureCount(webhookId)).toBe(1);
  }, 30_000);
});

describe('restarts', () => {
  it('When delivery stops gracefully with claimed deliveries still queued, then their claims are given back uncounted and the next instance delivers them at once', async () => {
    // One attempt at a time for this registration and a slow receiver: the rest wait in the queue, claimed.
    const { webhookId, emit } = await setup('/queued-at-stop', { kind: 'status', status: 200, delayMs: 300 });
    for (let i = 0; i < 6; i++) await emit({ i });
    await rx.waitFor('/queued-at-stop', 1);
    await t.stopWebhooks(); // the one in flight finishes within the grace
    const { rows } = await t.db.pool.query(
      `SELECT attempts, next_attempt_at <= now() AS due FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`,
      [webhookId],
    );
    expect(rows.length).toBeGreaterThanOrEqual(4);
    for (const r of rows) expect(r).toEqual({ attempts: 0, due: true });

    const t0 = Date.now();
    await t.restartWebhooks();
    const got = await rx.waitFor('/queued-at-stop', 6, 8000);
    expect(Date.now() - t0).toBeLessThan(6 * 300 + 2000); // not the 30 s lease of a claim left behind
    expect(new Set(got.map((g) => g.body.data.i)).size).toBe(6);
    const deliveries = await eventually(() => deliveriesOf(webhookId), (d) => d.length === 6 && d.every((x) => x.status === 'succeeded'));
    for (const d of deliveries) expect(d.attempt_log.map((a: any) => [a.attempt, a.status_code])).toEqual([[1, 200]]);
  }, 30_000);

  timingBound('redelivered within 3 s of a restart').it('When retries fall due while delivery is down, then after a restart every one is delivered at once (the start-up retake and the retry jobs drop none of each other\'s)', async () => {
    const { webhookId, emit } = await setup('/overdue', { kind: 'status', status: 500 });
    const n = 20;
    for (let i = 0; i < n; i++) await emit({ i });
    await eventually(
      async () => (await t.db.pool.query(`SELECT count(*)::int AS n FROM webhook_attempts WHERE webhook_id = $1`, [webhookId])).rows[0].n as number,
      (c) => c >= n,
    );
    await t.stopWebhooks();
    rx.on('/overdue', { kind: 'status', status: 200 });
    await sleep(1200); // every retry of the scaled schedule (100 to 800 ms) falls due meanwhile
    const before = rx.at('/overdue').length;

    const t0 = Date.now();
    await t.restartWebhooks();
    const deliveries = await eventually(
      () => deliveriesOf(webhookId),
      (d) => d.length === n && d.every((x) => x.status === 'succeeded'),
      20_000,
    );
    expect(Date.now() - t0).toBeLessThan(3000); // a dropped claim would wait its 30 s lease, a missed row the 30 s grace
    expect(rx.at('/overdue').length - before).toBe(n); // each once after the restart
    for (const d of deliveries) {
      expect(d.attempt_log.at(-1).status_code).toBe(200);
      expect(d.attempts).toBe(d.attempt_log.length);
    }
  }, 40_000);
});

describe('a claim kept alive while its attempt starts', () => {
  it('When the sweep has just extended a queued claim as its attempt starts, then the attempt waits for the extension and posts once, counted once', async () => {
    const { webhookId, emit } = await setup('/extend-race', { kind: 'status', status: 200 });
    await t.stopWebhooks();
    await emit();
    // A claim about to lapse (under the attempt timeout plus 2 s): the attempt must renew it.
    const { deliveries } = await fanOutBatch(t.db, 100, t.clock.now(), new Date(Date.now() + 3000));
    const claim = deliveries.find((d) => d.webhookId === webhookId)!;
    // The sweep's extension is committed, but the in-memory claim learns of it a moment later.
    const { extendClaims } = await import('../../lib/webhooks/store.js');
    const leaseUntil = new Date(Date.now() + 30_000);
    expect(await extendClaims(t.db.sql, [{ id: claim.id, leaseUntil: claim.leaseUntil }], leaseUntil)).toEqual([claim.id]);
    claim.extending = sleep(100).then(() => {
      claim.leaseUntil = leaseUntil;
      claim.extended = true;
    });
    const attempted = await attemptDelivery(crashingWorker(), { id: claim.id, webhookId, claim });
    expect(attempted).toBeDefined();
    await rx.waitFor('/extend-race', 1);
    const { rows } = await t.db.pool.query('SELECT attempts FROM webhook_deliveries WHERE id = $1', [claim.id]);
    expect(rows[0].attempts).toBe(1);
    await t.restartWebhooks();
  });
});
