/**
 * Webhook delivery end to end: real PostgreSQL, the real job runner (Agenda), real local receivers
 * on 127.0.0.1 (DEV_ALLOW_PRIVATE_TARGETS on), the Cloud API simulator for platform events, and
 * the retry schedule scaled by 0.02 (100, 200, 400, 800 ms: the spec's 5, 10, 20, 40 s ratios).
 * One webhook-enabled app per file: two runners on one database would take each other's work.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { createHmac } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app.js';
import { Receiver } from '../support/receiver.js';
import { CUT_AT_SHUTDOWN } from '../../lib/webhooks/claims.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { emit } from '../../bot-client/emit.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';
import { timingBound } from '../support/retry-timing.js';

const KEEP = 5;
let t: TestApp;
let rx: Receiver;
beforeAll(async () => {
  t = await startTestApp({
    config: { devAllowPrivateTargets: true },
    simulator: { autoStatusDelaysMs: { sent: 0, delivered: 50, read: 100 }, templateAutoDecisionMs: null },
    webhooks: { policy: { keepDeliveriesPerWebhook: KEEP } },
  });
  rx = await Receiver.start();
});
afterAll(async () => {
  // Leave nothing pending for the next file's runner.
  await t?.db.pool.query(`UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL WHERE status = 'pending'`);
  await t?.close();
  await rx?.close();
});



let seq = 0;
async function setup(scopes: string[] = ['webhooks:manage']) {
  const project = await t.admin.project(`wh ${++seq}`);
  const key = (await t.admin.key(project.id, scopes)).secret;
  const runtime = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret as string;
  return { project, key, runtime };
}

async function register(key: string, path: string, events: string[]) {
  const res = await request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url: rx.url + path, events });
  expect(res.status).toBe(201);
  return res.body.data as { webhook: { id: string }; secret: string };
}

async function emitEvent(runtime: string, name: string, payload: unknown = null) {
  const res = await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name, payload });
  expect(res.status).toBe(202);
  return res.body.data.event as { id: string; name: string; created_at: string };
}

const getWebhook = async (key: string, id: string) =>
  (await request(t.app).get(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`)).body.data.webhook;

const deliveriesOf = async (webhookId: string) => (await t.admin.call('get', `/admin/webhooks/${webhookId}/deliveries?limit=100`)).deliveries as any[];

function verify(raw: string, header: unknown, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header));
  return !!m && createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest('hex') === m[2];
}

describe('delivery format and matching', () => {
  it('When a custom event is emitted, then the subscribed receiver gets a signed POST { id, event, created_at, webhook_id, data }', async () => {
    const { key, runtime } = await setup();
    const { webhook, secret } = await register(key, '/basic', ['order.shipped']);
    const event = await emitEvent(runtime, 'order.shipped', { order: 42, items: ['a', 'b'] });
    const [got] = await rx.waitFor('/basic', 1);
    expect(got.body).toEqual({
      id: expect.stringMatching(/^dlv_/), event: 'order.shipped', created_at: event.created_at, webhook_id: webhook.id, data: { order: 42, items: ['a', 'b'] },
    });
    expect(verify(got.raw, got.headers['x-service-signature'], secret)).toBe(true);
    expect(verify(got.raw, got.headers['x-service-signature'], secret + 'x')).toBe(false);
    expect(got.headers['x-service-event']).toBe('order.shipped');
    expect(got.headers['user-agent']).toBe('Service-Webhooks/1.0');
    expect(got.headers['content-type']).toBe('application/json');
    // The signature timestamp is the service clock's unix seconds.
    expect(Number(/^t=(\d+)/.exec(String(got.headers['x-service-signature']))![1])).toBe(Math.floor(t.clock.now().getTime() / 1000));
  });

  it('When an event has no payload, then data is null', async () => {
    const { key, runtime } = await setup();
    await register(key, '/nullpayload', ['ping.empty']);
    await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'ping.empty' }).expect(202);
    const [got] = await rx.waitFor('/nullpayload', 1);
    expect(got.body.data).toBeNull();
  });

  it('When no active registration subscribes to an event, then it is stored already dispatched, and one made later does not receive it', async () => {
    const { key, runtime } = await setup();
    const { webhook: inactive } = await register(key, '/lonely-inactive', ['lonely.event']);
    await request(t.app).patch(`/v1/webhooks/${inactive.id}`).set('Authorization', `Bearer ${key}`).send({ is_active: false }).expect(200);
    const event = await emitEvent(runtime, 'lonely.event', { n: 1 });
    const row = await t.db.prisma.event.findUniqueOrThrow({ where: { id: event.id } });
    expect(row.dispatchedAt).not.toBeNull();
    const { webhook } = await register(key, '/lonely', ['lonely.event']);
    await t.webhooks!.sweep();
    await sleep(300);
    expect(rx.at('/lonely')).toHaveLength(0);
    expect(await t.db.prisma.webhookDelivery.count({ where: { eventId: event.id } })).toBe(0);
    // The next one is fanned out to the registration now subscribed.
    await emitEvent(runtime, 'lonely.event', { n: 2 });
    const [got] = await rx.waitFor('/lonely', 1);
    expect(JSON.parse(got.raw)).toMatchObject({ event: 'lonely.event', webhook_id: webhook.id, data: { n: 2 } });
  });

  it('When two registrations subscribe to one event, then each gets it with its own id; only exact names receive', async () => {
    const { key, runtime } = await setup();
    const a = await register(key, '/match-a', ['order.shipped', 'order.paid']);
    const b = await register(key, '/match-b', ['order.shipped']);
    await register(key, '/match-c', ['order.shipped.v2', 'order']);
    await emitEvent(runtime, 'order.shipped', { n: 1 });
    const [ga] = await rx.waitFor('/match-a', 1);
    const [gb] = await rx.waitFor('/match-b', 1);
    expect(ga.body.id).not.toBe(gb.body.id);
    expect(ga.body.webhook_id).toBe(a.webhook.id);
    expect(gb.body.webhook_id).toBe(b.webhook.id);
    await emitEvent(runtime, 'order.shipped.v2', { n: 2 });
    const gc = await rx.waitFor('/match-c', 1);
    await sleep(300);
    expect(rx.at('/match-c').map((r) => r.body.event)).toEqual(['order.shipped.v2']);
    expect(gc[0].body.data).toEqual({ n: 2 });
    expect(rx.at('/match-b')).toHaveLength(1);
  });

  it('When another project emits the same name, then this project\'s registration does not receive it', async () => {
    const mine = await setup();
    const other = await setup();
    await register(mine.key, '/isolated', ['order.shipped']);
    await emitEvent(other.runtime, 'order.shipped', { from: 'other' });
    await emitEvent(mine.runtime, 'order.shipped', { from: 'mine' });
    await rx.waitFor('/isolated', 1);
    await sleep(300);
    expect(rx.at('/isolated').map((r) => r.body.data.from)).toEqual(['mine']);
  });

  it('When a registration is inactive, then it receives nothing; deleting one stops its deliveries', async () => {
    const { key, runtime } = await setup();
    const off = await request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`)
      .send({ url: rx.url + '/inactive', events: ['x.y'], is_active: false });
    expect(off.status).toBe(201);
    const gone = await register(key, '/deleted', ['x.y']);
    await request(t.app).delete(`/v1/webhooks/${gone.webhook.id}`).set('Authorization', `Bearer ${key}`).expect(200);
    const live = await register(key, '/live', ['x.y']);
    await emitEvent(runtime, 'x.y');
    await rx.waitFor('/live', 1);
    await sleep(300);
    expect(rx.at('/inactive')).toHaveLength(0);
    expect(rx.at('/deleted')).toHaveLength(0);
    expect(live.webhook.id).toBeDefined();
  });
});

describe('platform events', () => {
  async function channelOf(projectId: string) {
    return t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId } });
  }

  it('When a customer writes (simulator inbound), then message.received reaches the subscribed receiver with conversation_id, message and conversation', async () => {
    const { project, key } = await setup(['webhooks:manage', 'events:message_received']);
    const { webhook, secret } = await register(key, '/inbound', ['message.received']);
    const { phoneNumberId } = await channelOf(project.id);
    const sim = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550170', name: 'Ada', text: 'hello there' });
    expect(sim.body.status_code).toBe(200);
    const [got] = await rx.waitFor('/inbound', 1);
    expect(verify(got.raw, got.headers['x-service-signature'], secret)).toBe(true);
    expect(got.headers['x-service-event']).toBe('message.received');
    expect(got.body).toMatchObject({ event: 'message.received', webhook_id: webhook.id });
    const { data } = got.body;
    expect(data.conversation_id).toEqual(expect.any(Number));
    expect(data.message).toMatchObject({ wamid: sim.body.wamid, direction: 'inbound', type: 'text', status: 'received', conversation_id: data.conversation_id });
    expect(data.conversation).toMatchObject({ id: data.conversation_id, contact: { phone: '+14155550170', name: 'Ada' }, window_open: true });
    expect(data.conversation.state).toBe(data.conversation.status);
  });

  it('When the project sends a message, then message.received is not raised for it (inbound only)', async () => {
    const { project, key } = await setup(['webhooks:manage', 'events:message_received', 'events:message_status', 'messages:send']);
    await register(key, '/inbound-only', ['message.received']);
    await register(key, '/inbound-only-status', ['message.status']);
    const { phoneNumberId } = await channelOf(project.id);
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550172', text: 'hi' });
    await rx.waitFor('/inbound-only', 1);
    const sent = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550172', content: 'Reply' });
    expect(sent.status).toBe(200);
    // Once its statuses have been delivered, the outbound message has had every chance to raise one.
    await rx.waitFor('/inbound-only-status', 2);
    expect(rx.at('/inbound-only').map((r) => r.body.data.message.direction)).toEqual(['inbound']);
  });

  it('When an outbound message is delivered and read, then message.status carries message_id and status', async () => {
    const { project, key } = await setup(['webhooks:manage', 'events:message_status', 'messages:send']);
    await register(key, '/status', ['message.status']);
    const { phoneNumberId } = await channelOf(project.id);
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550171', text: 'hi' });
    const sent = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550171', content: 'Your order shipped' });
    expect(sent.status).toBe(200);
    const got = await rx.waitFor('/status', 2);
    expect(got.map((g) => g.body.data.status)).toEqual(expect.arrayContaining(['delivered', 'read']));
    for (const g of got) expect(g.body.data.message_id).toBe(sent.body.data.id);
  });

  it('When a template is approved or rejected at the channel, then template.approved / template.rejected carry name, language, category, status', async () => {
    const { project, key } = await setup(['webhooks:manage', 'events:template_status']);
    await register(key, '/templates', ['template.approved', 'template.rejected']);
    const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
    for (const [name, decision] of [['welcome_one', 'APPROVED'], ['welcome_two', 'REJECTED']] as const) {
      const created = await request(t.sim!.url).post(`/v26.0/${channel.wabaId}/message_templates`).set('Authorization', `Bearer ${channel.accessToken}`)
        .send({ name, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Welcome' }] });
      expect(created.status).toBe(200);
      await t.db.prisma.template.create({
        data: { id: `tpl_${name}_${project.id}`, projectId: project.id, name, language: 'en_US', category: 'UTILITY', status: 'PENDING',
          components: [{ type: 'BODY', text: 'Welcome' }], channelTemplateId: String(created.body.id) },
      });
      await request(t.sim!.url).post(`/_sim/templates/${created.body.id}/decision`).send({ decision, reason: decision === 'REJECTED' ? 'INVALID_FORMAT' : undefined }).expect(200);
    }
    const got = await rx.waitFor('/templates', 2);
    const byEvent = Object.fromEntries(got.map((g) => [g.body.event, g.body.data]));
    expect(byEvent['template.approved']).toMatchObject({ name: 'welcome_one', language: 'en_US', category: 'UTILITY', status: 'APPROVED' });
    expect(byEvent['template.rejected']).toMatchObject({ name: 'welcome_two', language: 'en_US', category: 'UTILITY', status: 'REJECTED' });
  });
});

describe('retries and disable', () => {
  it('When a receiver fails 4 times, then attempts come about 100, 200, 400, 800 ms apart (5, 10, 20, 40 s scaled), reuse the id, and the 5th succeeds', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/flaky', ['retry.me']);
    rx.on('/flaky', { kind: 'status', status: 500 });
    await emitEvent(runtime, 'retry.me', { n: 1 });
    await rx.waitFor('/flaky', 4, 5000);
    rx.on('/flaky', { kind: 'status', status: 200 });
    const got = await rx.waitFor('/flaky', 5, 5000);
    const gaps = got.slice(1).map((g, i) => g.at - got[i].at);
    const nominal = [100, 200, 400, 800];
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(nominal[i] - 5);
      expect(gap).toBeLessThan(nominal[i] + 400);
    });
    expect(new Set(got.map((g) => g.body.id)).size).toBe(1);
    await sleep(1200);
    expect(rx.at('/flaky')).toHaveLength(5);
    const [delivery] = await eventually(() => deliveriesOf(webhook.id), (d) => d[0]?.status === 'succeeded');
    expect(delivery).toMatchObject({ id: got[0].body.id, event: 'retry.me', status: 'succeeded', attempts: 5, next_attempt_at: null });
    expect(delivery.attempt_log.map((a: any) => [a.attempt, a.status_code, a.error])).toEqual([
      [1, 500, null], [2, 500, null], [3, 500, null], [4, 500, null], [5, 200, null],
    ]);
    for (const a of delivery.attempt_log) expect(a.duration_ms).toBeGreaterThanOrEqual(0);
    const after = await getWebhook(key, webhook.id);
    expect(after.failure_count).toBe(0);
    expect(after.last_triggered_at).not.toBeNull();
  });

  it('When all 5 attempts fail, then the event is dropped (no 6th attempt) and failure_count is 1', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/down', ['drop.me']);
    rx.on('/down', { kind: 'status', status: 503 });
    await emitEvent(runtime, 'drop.me');
    await rx.waitFor('/down', 5, 5000);
    await sleep(1500);
    expect(rx.at('/down')).toHaveLength(5);
    const [delivery] = await eventually(() => deliveriesOf(webhook.id), (d) => d[0]?.status === 'failed');
    expect(delivery.attempts).toBe(5);
    expect(await getWebhook(key, webhook.id)).toMatchObject({ failure_count: 1, is_active: true });
  });

  it('When 10 consecutive events fail, then the registration is disabled and gets nothing until PATCH is_active true, which resets failure_count', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/dead', ['dead.event']);
    rx.on('/dead', { kind: 'status', status: 500 });
    for (let i = 0; i < 10; i++) await emitEvent(runtime, 'dead.event', { i });
    const disabled = await eventually(() => getWebhook(key, webhook.id), (w) => w.failure_count >= 10, 15_000);
    expect(disabled).toMatchObject({ failure_count: 10, is_active: false });
    expect(rx.at('/dead')).toHaveLength(50);
    await emitEvent(runtime, 'dead.event', { i: 10 });
    await sleep(800);
    expect(rx.at('/dead')).toHaveLength(50);

    rx.on('/dead', { kind: 'status', status: 200 });
    const reenabled = await request(t.app).patch(`/v1/webhooks/${webhook.id}`).set('Authorization', `Bearer ${key}`).send({ is_active: true });
    expect(reenabled.status).toBe(200);
    expect(reenabled.body.data.webhook).toMatchObject({ is_active: true, failure_count: 0 });
    await emitEvent(runtime, 'dead.event', { i: 11 });
    const got = await rx.waitFor('/dead', 51);
    expect(got[50].body.data).toEqual({ i: 11 }); // the event raised while disabled is never delivered
  });

  it('When a failing registration succeeds again, then failure_count resets to 0', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/recover', ['rec.event']);
    rx.on('/recover', { kind: 'status', status: 500 });
    await emitEvent(runtime, 'rec.event');
    await emitEvent(runtime, 'rec.event');
    await eventually(() => getWebhook(key, webhook.id), (w) => w.failure_count === 2, 10_000);
    rx.on('/recover', { kind: 'status', status: 204 });
    await emitEvent(runtime, 'rec.event');
    await eventually(() => getWebhook(key, webhook.id), (w) => w.failure_count === 0, 5000);
  });

  it('When the job runner restarts mid-retry, then the retry still happens after it, with the same delivery id', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/restart', ['restart.event']);
    rx.on('/restart', { kind: 'status', status: 500 });
    await emitEvent(runtime, 'restart.event', { survive: true });
    const [first] = await rx.waitFor('/restart', 1);
    await t.stopWebhooks(); // in-flight attempt completes and its retry is already a durable job
    rx.on('/restart', { kind: 'status', status: 200 });
    await sleep(400);
    expect(rx.at('/restart')).toHaveLength(1);
    await t.restartWebhooks();
    const got = await rx.waitFor('/restart', 2, 5000);
    expect(got[1].body.id).toBe(first.body.id);
    const [delivery] = await eventually(() => deliveriesOf(webhook.id), (d) => d[0]?.status === 'succeeded');
    expect(delivery.attempts).toBe(2);
  });

  it('When an event is accepted while delivery is down, then it is delivered once delivery is back', async () => {
    const { key, runtime } = await setup();
    await register(key, '/outage', ['outage.event']);
    await t.stopWebhooks();
    await emitEvent(runtime, 'outage.event', { during: 'outage' });
    await sleep(300);
    expect(rx.at('/outage')).toHaveLength(0);
    await t.restartWebhooks();
    const [got] = await rx.waitFor('/outage', 1, 5000);
    expect(got.body.data).toEqual({ during: 'outage' });
  });

  timingBound('stop returns within 1.5 s').it('When delivery stops while an attempt hangs, then stop returns after its grace and the next instance delivers the same id', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/stop-hang', ['stop.event']);
    rx.on('/stop-hang', { kind: 'hang' });
    await emitEvent(runtime, 'stop.event');
    const [first] = await rx.waitFor('/stop-hang', 1);
    const t0 = Date.now();
    await t.stopWebhooks();
    expect(Date.now() - t0).toBeLessThan(1500); // grace 500 ms, not the 2 s attempt deadline
    rx.on('/stop-hang', { kind: 'status', status: 200 });
    await t.restartWebhooks();
    const got = await rx.waitFor('/stop-hang', 2, 5000); // at the cut-off attempt's retry time, not after a lease
    expect(got[1].body.id).toBe(first.body.id);
    const [delivery] = await eventually(() => deliveriesOf(webhook.id), (d) => d[0]?.status === 'succeeded');
    // The cut-off attempt counts (the receiver had it) and is recorded as such.
    expect(delivery.attempt_log.map((a: any) => [a.attempt, a.status_code, a.error])).toEqual([
      [1, null, CUT_AT_SHUTDOWN], [2, 200, null],
    ]);
  });

  it('When a delivery was claimed by a worker that died, then it is retaken after its lease', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/orphan', ['orphan.event']);
    await t.stopWebhooks();
    await emitEvent(runtime, 'orphan.event');
    // Fan out by hand and leave the delivery as a crashed worker would: claimed, lease running.
    const { fanOutBatch } = await import('../../lib/webhooks/fanout.js');
    const { deliveries } = await fanOutBatch(t.db, 100, t.clock.now(), new Date());
    const mine = deliveries.find((d) => d.webhookId === webhook.id)!;
    await t.db.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = now() + interval '500 milliseconds' WHERE id = $1`, [mine.id]);
    await t.restartWebhooks();
    const [got] = await rx.waitFor('/orphan', 1, 8000);
    expect(got.body.id).toBe(mine.id);
  });
});

describe('a long queue behind a slow receiver', () => {
  it('When deliveries wait in the queue longer than a lease, then only a few seconds of them are claimed at a time, the rest parked and claimed in batches: each is attempted once, counted once', async () => {
    // 16 at a time, 1.5 s each: the last of 96 start after about 7.5 s, past the 5 s lease and its 1.5 s grace.
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/slow-lane', ['slow.event']);
    rx.on('/slow-lane', { kind: 'status', status: 200, delayMs: 1500 });
    for (let i = 0; i < 96; i++) await emitEvent(runtime, 'slow.event', { i });
    // Completed deliveries are pruned to the newest 5 here: the counts are watched while they wait.
    await rx.waitFor('/slow-lane', 1);
    let most = 0;
    let parked = 0;
    let pending = 96;
    while (pending > 0) {
      const { rows } = await t.db.pool.query(
        `SELECT count(*)::int AS n, COALESCE(max(attempts), 0) AS most, count(*) FILTER (WHERE attempts = 0)::int AS parked
           FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`,
        [webhook.id],
      );
      most = Math.max(most, rows[0].most);
      parked = Math.max(parked, rows[0].parked);
      pending = rows[0].n;
      await sleep(100);
    }
    expect(most).toBe(1);
    // The registration held claims for its concurrency and a few seconds of its throughput: the rest waited parked, uncounted.
    expect(parked).toBeGreaterThan(0);
    const got = rx.at('/slow-lane');
    expect(got).toHaveLength(96);
    expect(new Set(got.map((g) => g.body.id)).size).toBe(96);
  }, 40_000);
});

describe('hostile receivers', () => {
  timingBound('another registration\'s deliveries within 1.9 s').it('When one receiver hangs, then another registration\'s deliveries are not delayed', async () => {
    const { key, runtime } = await setup();
    const slow = await register(key, '/slow', ['tick']);
    rx.on('/slow', { kind: 'hang' });
    await register(key, '/fast', ['tick']);
    const started = Date.now();
    for (let i = 0; i < 40; i++) await emitEvent(runtime, 'tick', { i });
    const got = await rx.waitFor('/fast', 40, 5000);
    const lastAt = Math.max(...got.map((g) => g.at));
    expect(lastAt - started).toBeLessThan(1900); // before the slow receiver's first attempts even time out (2 s)
    expect(rx.at('/slow').length).toBeGreaterThan(0);
    await request(t.app).delete(`/v1/webhooks/${slow.webhook.id}`).set('Authorization', `Bearer ${key}`).expect(200);
  });

  it('When receivers hang, reset, redirect or stream a huge body, then each attempt ends cleanly with a recorded cause', async () => {
    const { key, runtime } = await setup();
    rx.on('/h-hang', { kind: 'hang' })
      .on('/h-reset', { kind: 'reset' })
      .on('/h-redirect', { kind: 'redirect', location: `${rx.url}/h-target` })
      .on('/h-huge', { kind: 'huge', bytes: 200 * 1024 * 1024 });
    const hooks: Record<string, string> = {};
    for (const name of ['hang', 'reset', 'redirect', 'huge']) hooks[name] = (await register(key, `/h-${name}`, [`hostile.${name}`])).webhook.id;
    for (const name of Object.keys(hooks)) await emitEvent(runtime, `hostile.${name}`);
    const first = async (name: string) =>
      (await eventually(() => deliveriesOf(hooks[name]), (d) => d[0]?.attempt_log?.length >= 1, 8000))[0];

    const huge = await first('huge');
    expect(huge.status).toBe('succeeded');
    expect(huge.attempt_log[0]).toMatchObject({ status_code: 200, error: null });
    expect(huge.attempt_log[0].duration_ms).toBeLessThan(2000);

    const redirect = await first('redirect');
    expect(redirect.attempt_log[0]).toMatchObject({ status_code: 302, error: null });
    expect(redirect.status).toBe('pending'); // a failure: retried, never followed
    expect(rx.at('/h-target')).toHaveLength(0);

    const reset = await first('reset');
    expect(reset.attempt_log[0]).toMatchObject({ status_code: null, error: 'connection reset' });

    const hang = await first('hang');
    expect(hang.attempt_log[0]).toMatchObject({ status_code: null, error: 'timeout after 2000 ms' });
    expect(hang.attempt_log[0].duration_ms).toBeGreaterThanOrEqual(1990);
    expect(hang.attempt_log[0].duration_ms).toBeLessThan(3000);

    for (const id of Object.values(hooks)) await request(t.app).delete(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`).expect(200);
  });
});

describe('changes to a registration with deliveries queued', () => {
  // 16 attempts run at once per registration (the policy's default): 20 events against a hanging
  // receiver leave 16 in flight and 4 queued, already claimed with the registration as it was.
  async function busy(path: string) {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, path, ['busy.event']);
    rx.on(path, { kind: 'hang' });
    // Emitted at once: one after another they took over 2 s on a loaded machine, and the first
    // attempts' 2 s deadline freed slots for the queued ones before the change under test.
    await Promise.all(Array.from({ length: 20 }, (_, i) => emitEvent(runtime, 'busy.event', { i })));
    await rx.waitFor(path, 16);
    await sleep(100);
    expect(rx.at(path)).toHaveLength(16);
    return { key, webhook };
  }

  it('When the URL changes, then queued deliveries and retries go to the new URL', async () => {
    const { key, webhook } = await busy('/old-url');
    const res = await request(t.app).patch(`/v1/webhooks/${webhook.id}`).set('Authorization', `Bearer ${key}`).send({ url: `${rx.url}/new-url` });
    expect(res.status).toBe(200);
    const got = await rx.waitFor('/new-url', 20, 10_000);
    expect(new Set(got.map((g) => g.body.data.i)).size).toBe(20);
    expect(rx.at('/old-url')).toHaveLength(16); // only the attempts already in flight
  });

  it('When the owner disables it, then queued deliveries are not sent and nothing is retried', async () => {
    const { key, webhook } = await busy('/disabled-busy');
    await request(t.app).patch(`/v1/webhooks/${webhook.id}`).set('Authorization', `Bearer ${key}`).send({ is_active: false }).expect(200);
    await sleep(3000); // past the in-flight attempts' 2 s deadline and the first retry times
    expect(rx.at('/disabled-busy')).toHaveLength(16);
    const deliveries = await deliveriesOf(webhook.id);
    expect(deliveries.filter((d) => d.status === 'pending')).toHaveLength(0);
  });
});

describe('operators\' view and bounded log', () => {
  it('When a registration has many deliveries, then the log keeps the most recent ones only', async () => {
    const { key, runtime } = await setup();
    const { webhook } = await register(key, '/many', ['many.event']);
    for (let i = 0; i < KEEP + 7; i++) await emitEvent(runtime, 'many.event', { i });
    await rx.waitFor('/many', KEEP + 7);
    await eventually(() => deliveriesOf(webhook.id), (d) => d.filter((x) => x.status === 'succeeded').length === KEEP + 7 || d.length <= KEEP);
    await t.webhooks!.sweep();
    const { rows } = await t.db.pool.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1', [webhook.id]);
    expect(rows[0].n).toBe(KEEP);
    const attempts = await t.db.pool.query('SELECT count(*)::int AS n FROM webhook_attempts WHERE webhook_id = $1', [webhook.id]);
    expect(attempts.rows[0].n).toBe(KEEP);
  });

  it('When events are older than the 7-day retention, then the sweep deletes them, except one a pending delivery needs', async () => {
    const { project, key } = await setup();
    const { webhook } = await register(key, '/retention', ['kept.event']);
    const now = t.clock.now().getTime();
    const day = 24 * 3600 * 1000;
    const insert = (id: string, ageDays: number) =>
      t.db.pool.query(`INSERT INTO events (id, project_id, name, data, created_at, dispatched_at) VALUES ($1, $2, 'kept.event', 'null', $3, $3)`,
        [id, project.id, new Date(now - ageDays * day)]);
    // The pending delivery first: the periodic sweep may run at any moment.
    await t.db.pool.query(
      `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at)
       VALUES ('dlv_retention_needed', $1, $2, 'evt_retention_needed', 'kept.event', 'pending', 1, now() + interval '1 day', now())`,
      [project.id, webhook.id],
    );
    await insert('evt_retention_needed', 9);
    await insert('evt_retention_old', 8);
    await insert('evt_retention_recent', 6);
    await t.webhooks!.sweep();
    const { rows } = await t.db.pool.query(`SELECT id FROM events WHERE id LIKE 'evt_retention_%' ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(['evt_retention_needed', 'evt_retention_recent']);
  });

  it('When the webhook is unknown, then the operators\' view is 404', async () => {
    const res = await request(t.app).get('/admin/webhooks/whk_nope/deliveries').set('Authorization', `Bearer ${t.adminToken}`);
    expect(res.status).toBe(404);
  });
});

describe('custom events: runtime endpoint and emit()', () => {
  it('When the bot emits a custom name in a platform namespace (message.custom), then it is delivered to its subscribers like any custom event', async () => {
    const { key, runtime } = await setup();
    await register(key, '/ns-custom', ['message.custom']);
    const event = await emitEvent(runtime, 'message.custom', { n: 1 });
    const [got] = await rx.waitFor('/ns-custom', 1);
    expect(JSON.parse(got.raw)).toMatchObject({ event: 'message.custom', data: { n: 1 } });
    expect(event.name).toBe('message.custom');
  });

  it.each([
    ['a platform event name', 400, 'reserved_event_name', { name: 'message.received', payload: {} }],
    ['another platform event name', 400, 'reserved_event_name', { name: 'template.approved' }],
    ['a name with a space', 400, 'invalid_event_name', { name: 'bad name!' }],
    ['a name of 101 characters', 400, 'invalid_event_name', { name: 'x'.repeat(101) }],
    ['an empty name', 400, 'invalid_event_name', { name: '' }],
    ['no name', 400, 'invalid_event_name', { payload: {} }],
    ['an unknown member', 400, 'invalid_request', { name: 'ok.name', extra: 1 }],
    ['a payload over 64 KiB', 413, 'payload_too_large', { name: 'ok.name', payload: 'x'.repeat(70 * 1024) }],
  ])('When the body has %s, then %i %s', async (_label, status, code, body) => {
    const { runtime } = await setup();
    const res = await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send(body);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ success: false, error: { code }, request_id: expect.any(String) });
  });

  it('When a token emits more than RUNTIME_EVENTS_PER_MINUTE, then 429 rate_limited with Retry-After; another token is unaffected', async () => {
    const { project, runtime } = await setup();
    const other = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret as string;
    const post = (token: string) => request(t.app).post('/runtime/events').set('Authorization', `Bearer ${token}`).send({ name: 'rate.test' });
    const saved = t.config.runtimeEventsPerMinute;
    t.config.runtimeEventsPerMinute = 3;
    try {
      for (let i = 0; i < 3; i++) expect((await post(runtime)).status).toBe(202);
      const limited = await post(runtime);
      expect(limited.status).toBe(429);
      expect(limited.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 3 } });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['ratelimit-limit']).toBe('3');
      expect((await post(other)).status).toBe(202);
    } finally {
      t.config.runtimeEventsPerMinute = saved;
    }
  });

  it('When the runtime token is missing, unknown, revoked, a /v1 key, or the project is paused, then 401 / 403', async () => {
    const { project, key, runtime } = await setup();
    const post = (auth?: string) => {
      const r = request(t.app).post('/runtime/events');
      return (auth ? r.set('Authorization', auth) : r).send({ name: 'a.b' });
    };
    expect((await post()).body.error.code).toBe('api_key_required');
    expect((await post('Bearer rt_unknownunknownunknown')).body.error.code).toBe('invalid_token');
    expect((await post(`Bearer ${key}`)).body.error.code).toBe('invalid_token');
    const tokens = (await t.admin.call('get', `/admin/projects/${project.id}/runtime-tokens`)).tokens;
    expect(tokens).toHaveLength(1);
    expect(JSON.stringify(tokens)).not.toContain(runtime);
    await t.admin.call('patch', `/admin/projects/${project.id}`, { status: 'paused' });
    expect((await post(`Bearer ${runtime}`)).status).toBe(403);
    await t.admin.call('patch', `/admin/projects/${project.id}`, { status: 'active' });
    expect((await post(`Bearer ${runtime}`)).status).toBe(202);
    await t.admin.call('post', `/admin/runtime-tokens/${tokens[0].id}/revoke`);
    const revoked = await post(`Bearer ${runtime}`);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe('invalid_token');
  });

  it('When emit() is called, then it returns true when accepted and false otherwise, never throwing', async () => {
    const { key, runtime } = await setup();
    await register(key, '/emitted', ['bot.done']);
    const opts = { url: t.baseUrl!, token: runtime };
    expect(await emit('bot.done', { ok: 1 }, opts)).toBe(true);
    const [got] = await rx.waitFor('/emitted', 1);
    expect(got.body.data).toEqual({ ok: 1 });
    expect(await emit('message.received', {}, opts)).toBe(false);
    expect(await emit('bad name', {}, opts)).toBe(false);
    expect(await emit('bot.done', { n: 10n }, opts)).toBe(false);
    const circular: any = {};
    circular.self = circular;
    expect(await emit('bot.done', circular, opts)).toBe(false);
    expect(await emit('bot.done', {}, { ...opts, token: 'rt_wrong' })).toBe(false);
    expect(await emit('bot.done', {}, { url: 'http://127.0.0.1:9', token: runtime })).toBe(false);
    rx.on('/hang-service/runtime/events', { kind: 'hang' });
    const t0 = Date.now();
    expect(await emit('bot.done', {}, { url: `${rx.url}/hang-service`, token: runtime, timeoutMs: 200 })).toBe(false);
    expect(Date.now() - t0).toBeLessThan(1500);
    const saved = { url: process.env.SERVICE_RUNTIME_URL, token: process.env.SERVICE_RUNTIME_TOKEN };
    delete process.env.SERVICE_RUNTIME_URL;
    expect(await emit('bot.done', {})).toBe(false);
    process.env.SERVICE_RUNTIME_URL = t.baseUrl!;
    process.env.SERVICE_RUNTIME_TOKEN = runtime;
    try {
      expect(await emit('bot.done', { via: 'env' })).toBe(true);
    } finally {
      if (saved.url === undefined) delete process.env.SERVICE_RUNTIME_URL; else process.env.SERVICE_RUNTIME_URL = saved.url;
      if (saved.token === undefined) delete process.env.SERVICE_RUNTIME_TOKEN; else process.env.SERVICE_RUNTIME_TOKEN = saved.token;
    }
  });
});
