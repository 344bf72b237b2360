/**
 * What an operator and a load balancer probe: /healthz, /readyz (with its checks; 503 when the
 * jobs do not run and from the start of a shutdown; its 503 through a PostgreSQL outage is proved in
 * database-outage.test.ts) and /metrics (the operator token; names; a send moves the counters; no personal data).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { createCounterStore } from '../../lib/platform/counters.js';

describe('health, readiness and metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ simulator: true, webhooks: true });
  }, 60_000);
  afterAll(async () => t?.close());

  it('GET /healthz answers 200 with no credential, whatever the query string', async () => {
    const res = await request(t.app).get('/healthz?probe=1&x=%00').expect(200);
    expect(res.body).toEqual({ success: true, data: { status: 'ok' } });
  });

  it('GET /readyz lists its checks: database, replication, migrations, jobs, redis', async () => {
    const res = await request(t.app).get('/readyz?verbose=yes').expect(200);
    expect(res.body.data).toEqual({
      ready: true,
      checks: { database: 'ok', replication: 'not configured', migrations: 'ok', jobs: 'ok', redis: 'not configured' },
      graph_api: { version: 'v26.0', status: 'supported', ends: null, days_left: null, latest: 'v26.0', warning: null },
      ha: expect.objectContaining({ missing: [], redis: null }),
    });
  });

  it('When Redis is configured but unreachable, then /readyz still answers 200 and says so: requests are served with the rate limits open, so the balancer must keep the instance', async () => {
    // Port 1 refuses at once: a Redis that is gone (an outage, a Sentinel failover under way).
    const counters = createCounterStore({ redisUrl: 'redis://127.0.0.1:1', timeoutMs: 200 });
    const noRedis = await startTestApp({ webhooks: true, counters, config: { redisUrl: 'redis://127.0.0.1:1', redisTimeoutMs: 200 } });
    try {
      const res = await request(noRedis.app).get('/readyz');
      expect([res.status, res.body.data ?? res.body.error]).toMatchObject([200, { ready: true, checks: { database: 'ok', jobs: 'ok', redis: 'unreachable (rate limits fail open)' } }]);
    } finally {
      await noRedis.close();
      await counters.close?.();
    }
  });

  it('GET /readyz is 503 naming the failed check when the jobs do not run, and 200 again when they do', async () => {
    await t.stopWebhooks();
    const res = await request(t.app).get('/readyz').expect(503);
    expect(res.body).toMatchObject({ success: false, error: { code: 'service_unavailable', details: { checks: { jobs: 'not running' } } } });
    expect(res.body.error.message).toMatch(/jobs not running/);
    expect(res.headers['retry-after']).toBe('2');
    await t.restartWebhooks();
    await request(t.app).get('/readyz').expect(200);
  });

  it('GET /metrics needs the operator token, in the envelope', async () => {
    const none = await request(t.app).get('/metrics').expect(401);
    expect(none.body).toMatchObject({ success: false, error: { code: 'api_key_required' }, request_id: expect.any(String) });
    const wrong = await request(t.app).get('/metrics').set('Authorization', 'Bearer nope').expect(401);
    expect(wrong.body.error.code).toBe('invalid_token');
  });

  it('GET /metrics has the request, send, Graph, delivery and depth series; a send moves them; no phone or key in any label', async () => {
    const project = await t.admin.project('Metrics');
    const key = (await t.admin.key(project.id, ['messages:send'])).secret;
    const phone = '15550001234';
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text: 'hi' }).expect(200);
    const send = await request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone, content: 'hello' });
    const scrape = async () => (await request(t.app).get('/metrics').set('Authorization', `Bearer ${t.adminToken}`).expect(200)).text;
    const text = await scrape();
    for (const name of ['http_requests_total', 'http_request_duration_seconds', 'messages_sent_total', 'graph_calls_total', 'graph_call_duration_seconds', 'webhook_deliveries_total', 'webhook_delivery_lag_seconds', 'rate_limit_rejections_total', 'service_ready', 'event_outbox_pending', 'jobs_due', 'ha_missing']) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(send.status).toBe(200);
    const outcome = 'sent';
    expect(text).toMatch(new RegExp(`messages_sent_total\\{type="text",outcome="${outcome}"\\} 1`));
    expect(text).toMatch(/http_requests_total\{operation="sendMessage",status="\d+"\} 1/);
    expect(text).toMatch(/service_ready 1/);
    expect(text).toMatch(/ha_missing 0/);
    expect(text).toMatch(/graph_calls_total\{op="sendMessage",outcome="ok"\} 1/);
    expect(text).not.toContain(phone);
    expect(text).not.toContain(key);
    expect(text).not.toContain('/v1/messages');
  });

  it('a shutdown turns /readyz to 503 first (draining), while /healthz still answers', async () => {
    t.services.drain();
    const res = await request(t.app).get('/readyz').expect(503);
    expect(res.body.error.details.checks.shutdown).toBe('draining');
    await request(t.app).get('/healthz').expect(200);
  });
});
