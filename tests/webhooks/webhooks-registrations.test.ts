/**
 * Webhook registrations: the resource, the secret shown once, scopes per event, every bad input
 * with its code, and the outbound-address policy at registration and at delivery time (here with
 * DEV_ALLOW_PRIVATE_TARGETS off, as in production).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { webhookSecretPlace } from '../../lib/webhooks/secret-place.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { Receiver } from '../support/receiver.js';

const PUBLIC_URL = 'https://93.184.216.34/hooks/service';
const ALL_EVENT_SCOPES = ['webhooks:manage', 'events:message_received', 'events:message_status', 'events:template_status'];

let t: TestApp;
let rx: Receiver;
beforeAll(async () => {
  t = await startTestApp({ config: { devAllowPrivateTargets: false }, webhooks: true });
  rx = await Receiver.start();
});
afterAll(async () => {
  await t?.db.pool.query(`UPDATE webhook_deliveries SET status = 'canceled', next_attempt_at = NULL WHERE status = 'pending'`);
  await t?.close();
  await rx?.close();
});

async function keyFor(scopes: string[] = ALL_EVENT_SCOPES) {
  const project = await t.admin.project('webhooks');
  return { project, key: (await t.admin.key(project.id, scopes)).secret };
}

const api = (key: string) => ({
  create: (body: object) => request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send(body),
  list: () => request(t.app).get('/v1/webhooks').set('Authorization', `Bearer ${key}`),
  get: (id: string) => request(t.app).get(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`),
  patch: (id: string, body: object) => request(t.app).patch(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`).send(body),
  delete: (id: string) => request(t.app).delete(`/v1/webhooks/${id}`).set('Authorization', `Bearer ${key}`),
});

const tooLong = 'https://93.184.216.34/' + 'a'.repeat(512 - 'https://93.184.216.34/'.length + 1);

describe('createWebhook', () => {
  it('When a project has 100 registrations, then the next is 409 webhook_limit_reached; concurrent creations never pass the limit', async () => {
    const { project, key } = await keyFor();
    const fill = (n: number) =>
      t.db.pool.query(
        `INSERT INTO webhook_endpoints (id, project_id, url, events, is_active, secret_enc, created_at, updated_at)
         SELECT 'whk_fill_' || $1 || '_' || g, $1, $2, ARRAY['order.shipped'], false, 'x', now(), now() FROM generate_series(1, $3) g`,
        [project.id, PUBLIC_URL, n],
      );
    await fill(97);
    const results = await Promise.all(Array.from({ length: 6 }, () => api(key).create({ url: PUBLIC_URL, events: ['order.shipped'] })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    for (const r of results.filter((r) => r.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: 'webhook_limit_reached', details: { limit: 100 } });
    }
    expect(await t.db.prisma.webhookEndpoint.count({ where: { projectId: project.id } })).toBe(100);
    const one = results.find((r) => r.status === 201)!.body.data.webhook.id;
    expect((await api(key).delete(one)).status).toBe(200);
    expect((await api(key).create({ url: PUBLIC_URL, events: ['order.shipped'] })).status).toBe(201);
  });

  it('When a registration is created, then 201 returns the resource and a whsec_ secret, shown only here', async () => {
    const { project, key } = await keyFor();
    const res = await api(key).create({ url: PUBLIC_URL, events: ['message.received', 'order.shipped'] });
    expect(res.status).toBe(201);
    const { webhook, secret } = res.body.data;
    expect(secret).toMatch(/^whsec_[a-z0-9]{40}$/);
    expect(webhook).toEqual({
      id: expect.stringMatching(/^whk_/), project_id: project.id, url: PUBLIC_URL, events: ['message.received', 'order.shipped'],
      is_active: true, last_triggered_at: null, failure_count: 0, created_at: expect.any(String), updated_at: expect.any(String),
    });
    const reads = [await api(key).get(webhook.id), await api(key).list(), await api(key).patch(webhook.id, { events: ['order.shipped'] })];
    for (const r of reads) {
      expect(r.status).toBe(200);
      expect(JSON.stringify(r.body)).not.toContain(secret);
      expect(JSON.stringify(r.body)).not.toContain('secret');
    }
    expect((await api(key).list()).body.data.webhooks.map((w: any) => w.id)).toEqual([webhook.id]);
    // Sealed at rest, and PATCH never rotates it.
    const row = await t.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: webhook.id } });
    expect(row.secretEnc).not.toContain(secret);
    expect(t.secretBox.open(row.secretEnc, webhookSecretPlace(webhook.id))).toBe(secret);
    await api(key).patch(webhook.id, { url: 'https://93.184.216.35/other', is_active: false });
    expect(t.secretBox.open((await t.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: webhook.id } })).secretEnc, webhookSecretPlace(webhook.id))).toBe(secret);
  });

  it('When is_active is false at creation, then the registration starts inactive', async () => {
    const { key } = await keyFor();
    const res = await api(key).create({ url: PUBLIC_URL, events: ['a.b'], is_active: false });
    expect(res.body.data.webhook.is_active).toBe(false);
  });

  it.each([
    ['message.received', 'events:message_received'],
    ['message.status', 'events:message_status'],
    ['template.approved', 'events:template_status'],
    ['template.rejected', 'events:template_status'],
  ])('When the key lacks the scope of %s, then 403 insufficient_scope naming %s; with it, 201', async (event, scope) => {
    const without = await keyFor(ALL_EVENT_SCOPES.filter((s) => s !== scope));
    const refused = await api(without.key).create({ url: PUBLIC_URL, events: ['custom.one', event] });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', details: { missing: [scope] } });
    const withScope = await keyFor(['webhooks:manage', scope]);
    expect((await api(withScope.key).create({ url: PUBLIC_URL, events: [event] })).status).toBe(201);
  });

  it('When only custom events are subscribed, then webhooks:manage alone is enough; without it, 403', async () => {
    const { key } = await keyFor(['webhooks:manage']);
    expect((await api(key).create({ url: PUBLIC_URL, events: ['order.shipped', 'bot_done', 'A-1'] })).status).toBe(201);
    const none = await keyFor(['events:message_received']);
    const res = await api(none.key).create({ url: PUBLIC_URL, events: ['order.shipped'] });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('insufficient_scope');
    expect((await api(none.key).list()).status).toBe(403);
  });
  it.each([
    ['plain http', 'invalid_webhook_url', { url: 'http://93.184.216.34/hook' }],
    ['another scheme', 'invalid_webhook_url', { url: 'ftp://93.184.216.34/hook' }],
    ['513 characters', 'invalid_webhook_url', { url: tooLong }],
    ['credentials', 'invalid_webhook_url', { url: 'https://user:pass@93.184.216.34/hook' }],
    ['a user name only', 'invalid_webhook_url', { url: 'https://user@93.184.216.34/hook' }],
    ['not a URL', 'invalid_webhook_url', { url: 'not a url' }],
    ['a relative URL', 'invalid_webhook_url', { url: '/hooks' }],
    ['an empty URL', 'invalid_webhook_url', { url: '' }],
    ['loopback', 'webhook_target_forbidden', { url: 'https://127.0.0.1/hook' }],
    ['localhost', 'webhook_target_forbidden', { url: 'https://localhost/hook' }],
    ['IPv6 loopback', 'webhook_target_forbidden', { url: 'https://[::1]/hook' }],
    ['private 10/8', 'webhook_target_forbidden', { url: 'https://10.1.2.3/hook' }],
    ['private 192.168/16', 'webhook_target_forbidden', { url: 'https://192.168.0.10/hook' }],
    ['private 172.16/12', 'webhook_target_forbidden', { url: 'https://172.20.0.1/hook' }],
    ['link-local (cloud metadata)', 'webhook_target_forbidden', { url: 'https://169.254.169.254/latest/meta-data' }],
    ['IPv6 link-local', 'webhook_target_forbidden', { url: 'https://[fe80::1]/hook' }],
    ['IPv6 unique-local', 'webhook_target_forbidden', { url: 'https://[fd12:3456::1]/hook' }],
    ['IPv4-mapped IPv6 loopback', 'webhook_target_forbidden', { url: 'https://[::ffff:127.0.0.1]/hook' }],
    ['IPv4-compatible IPv6 loopback', 'webhook_target_forbidden', { url: 'https://[::127.0.0.1]:4999/h' }],
    ['IPv4-compatible IPv6 loopback, in hex', 'webhook_target_forbidden', { url: 'https://[::7f00:1]/hook' }],
    ['IPv4-translated IPv6 loopback', 'webhook_target_forbidden', { url: 'https://[::ffff:0:127.0.0.1]/hook' }],
    ['IPv4-mapped IPv6 private 10/8', 'webhook_target_forbidden', { url: 'https://[::ffff:10.0.0.1]/hook' }],
    ['NAT64 cloud metadata', 'webhook_target_forbidden', { url: 'https://[64:ff9b::169.254.169.254]/hook' }],
    ['NAT64 loopback, in hex', 'webhook_target_forbidden', { url: 'https://[64:ff9b::7f00:1]/hook' }],
    ['6to4 of loopback', 'webhook_target_forbidden', { url: 'https://[2002:7f00:1::1]/hook' }],
    ['the unspecified address', 'webhook_target_forbidden', { url: 'https://0.0.0.0/hook' }],
    ['a name that does not resolve', 'webhook_target_forbidden', { url: 'https://no-such-host.invalid/hook' }],
    ['plain http to loopback (allowed only for local development)', 'invalid_webhook_url', { url: 'http://127.0.0.1:8080/hook' }],
  ])('When the URL is %s, then 400 %s', async (_label, code, body) => {
    const { key } = await keyFor();
    const res = await api(key).create({ events: ['order.shipped'], ...body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });
});

describe('createWebhook', () => {
  it.each([
    ['no events', 'invalid_event_list', { events: [] }],
    ['51 events', 'invalid_event_list', { events: Array.from({ length: 51 }, (_, i) => `custom.e${i}`) }],
    ['a malformed name', 'invalid_event_name', { events: ['order shipped'] }],
    ['a name of 101 characters', 'invalid_event_name', { events: ['x'.repeat(101)] }],
    ['an empty name', 'invalid_event_name', { events: [''] }],
    ['a duplicate name', 'duplicate_event', { events: ['order.shipped', 'order.paid', 'order.shipped'] }],
    ['a duplicate platform event', 'duplicate_event', { events: ['message.status', 'message.status'] }],
    ['events that are not a list', 'invalid_request', { events: 'order.shipped' }],
    ['a non-string name', 'invalid_request', { events: [42] }],
    ['no events member', 'invalid_request', { events: undefined }],
    ['an unknown member', 'invalid_request', { events: ['a.b'], secret: 'whsec_mine' }],
  ])('When the body has %s, then 400 %s', async (_label, code, body) => {
    const { key } = await keyFor();
    const res = await api(key).create({ url: PUBLIC_URL, ...body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
  });

  it('When custom names share a platform namespace (message.custom, template.pending), then they are custom events needing only webhooks:manage', async () => {
    const { key } = await keyFor(['webhooks:manage']);
    const res = await api(key).create({ url: PUBLIC_URL, events: ['message.custom', 'template.pending', 'Message.Received'] });
    expect(res.status).toBe(201);
    expect(res.body.data.webhook.events).toEqual(['message.custom', 'template.pending', 'Message.Received']);
  });

  it('When 50 distinct events are listed, then they are accepted', async () => {
    const { key } = await keyFor();
    const events = Array.from({ length: 50 }, (_, i) => `custom.e${i}`);
    const res = await api(key).create({ url: PUBLIC_URL, events });
    expect(res.status).toBe(201);
    expect(res.body.data.webhook.events).toEqual(events);
  });

  it('When the URL is a public IPv4 or IPv6 address (with a port and query), then it is accepted', async () => {
    const { key } = await keyFor();
    for (const url of ['https://8.8.8.8:8443/hook?x=1', 'https://[2606:4700:4700::1111]/hook']) {
      const res = await api(key).create({ url, events: ['a.b'] });
      expect(res.status).toBe(201);
      expect(res.body.data.webhook.url).toBe(url);
    }
  });

  it('When the URL is exactly 512 characters, then it is accepted', async () => {
    const { key } = await keyFor();
    const url = 'https://93.184.216.34/' + 'a'.repeat(512 - 'https://93.184.216.34/'.length);
    expect((await api(key).create({ url, events: ['a.b'] })).status).toBe(201);
  });
});

describe('updateWebhook, getWebhook, deleteWebhook', () => {
  it('When PATCH changes url, events or is_active, then the registration changes and keeps its id and secret', async () => {
    const { key } = await keyFor();
    const { webhook } = (await api(key).create({ url: PUBLIC_URL, events: ['a.b'] })).body.data;
    const res = await api(key).patch(webhook.id, { url: 'https://93.184.216.35/v2', events: ['c.d', 'message.status'] });
    expect(res.status).toBe(200);
    expect(res.body.data.webhook).toMatchObject({ id: webhook.id, url: 'https://93.184.216.35/v2', events: ['c.d', 'message.status'], is_active: true });
  });

  it.each([
    ['an empty body', 'invalid_request', {}],
    ['plain http', 'invalid_webhook_url', { url: 'http://93.184.216.34/' }],
    ['a private target', 'webhook_target_forbidden', { url: 'https://10.0.0.1/' }],
    ['no events', 'invalid_event_list', { events: [] }],
    ['a duplicate', 'duplicate_event', { events: ['a.b', 'a.b'] }],
    ['a malformed name', 'invalid_event_name', { events: ['message read'] }],
  ])('When PATCH has %s, then 400 %s and nothing changes', async (_label, code, body) => {
    const { key } = await keyFor();
    const { webhook } = (await api(key).create({ url: PUBLIC_URL, events: ['a.b'] })).body.data;
    const res = await api(key).patch(webhook.id, body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
    expect((await api(key).get(webhook.id)).body.data.webhook).toMatchObject({ url: PUBLIC_URL, events: ['a.b'] });
  });

  it('When a key without an event\'s scope PATCHes a registration subscribed to it, then 403 (a new URL would redirect those events)', async () => {
    const full = await keyFor();
    const { webhook } = (await api(full.key).create({ url: PUBLIC_URL, events: ['message.received'] })).body.data;
    const lesser = (await t.admin.key(full.project.id, ['webhooks:manage'])).secret;
    const res = await api(lesser).patch(webhook.id, { url: 'https://93.184.216.35/steal' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'insufficient_scope', details: { missing: ['events:message_received'] } });
    const adding = await api(lesser).patch(webhook.id, { events: ['message.received', 'message.status'] });
    expect(adding.status).toBe(403);
    expect((await api(lesser).patch(webhook.id, { events: ['order.shipped'] })).status).toBe(200);
  });

  it('When an inactive registration is re-enabled, then failure_count resets to 0; disabling cancels its pending deliveries', async () => {
    const { project, key } = await keyFor();
    const { webhook } = (await api(key).create({ url: PUBLIC_URL, events: ['a.b'] })).body.data;
    await t.db.prisma.webhookEndpoint.update({ where: { id: webhook.id }, data: { isActive: false, failureCount: 10 } });
    const res = await api(key).patch(webhook.id, { is_active: true });
    expect(res.body.data.webhook).toMatchObject({ is_active: true, failure_count: 0 });
    // Already active: is_active true changes nothing.
    await t.db.prisma.webhookEndpoint.update({ where: { id: webhook.id }, data: { failureCount: 3 } });
    expect((await api(key).patch(webhook.id, { is_active: true })).body.data.webhook.failure_count).toBe(3);
    await t.db.prisma.webhookDelivery.create({
      data: { id: `dlv_test_${webhook.id}`, projectId: project.id, webhookId: webhook.id, eventId: 'evt_none', event: 'a.b', nextAttemptAt: new Date(Date.now() + 3600_000) },
    });
    await api(key).patch(webhook.id, { is_active: false });
    expect((await t.db.prisma.webhookDelivery.findUniqueOrThrow({ where: { id: `dlv_test_${webhook.id}` } })).status).toBe('canceled');
  });

  it('When a registration is deleted, then it is gone from GET and list; another project cannot see or touch it', async () => {
    const mine = await keyFor();
    const other = await keyFor();
    const { webhook } = (await api(mine.key).create({ url: PUBLIC_URL, events: ['a.b'] })).body.data;
    for (const r of [await api(other.key).get(webhook.id), await api(other.key).patch(webhook.id, { is_active: false }), await api(other.key).delete(webhook.id)]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe('not_found');
    }
    const deleted = await api(mine.key).delete(webhook.id);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data.webhook.id).toBe(webhook.id);
    expect((await api(mine.key).get(webhook.id)).status).toBe(404);
    expect((await api(mine.key).list()).body.data.webhooks).toEqual([]);
  });

  it('When the id is malformed, then 400 invalid_id', async () => {
    const { key } = await keyFor();
    expect((await api(key).get('not%20an%20id')).body.error.code).toBe('invalid_id');
  });
});

describe('outbound-address policy at delivery time', () => {
  it('When a registered name now resolves to a private address (DNS rebinding), then the attempt is refused and nothing is sent', async () => {
    const { project, key } = await keyFor(['webhooks:manage']);
    const runtime = (await t.admin.call('post', `/admin/projects/${project.id}/runtime-tokens`)).secret;
    // As if https://localhost:… had resolved to a public address when it was registered.
    const port = new URL(rx.url).port;
    const row = await t.db.prisma.webhookEndpoint.create({
      data: { id: 'whk_rebind' + project.id.slice(-6), projectId: project.id, url: `https://localhost:${port}/rebind`, events: ['x.y'], secretEnc: t.secretBox.seal('whsec_test', webhookSecretPlace('whk_rebind' + project.id.slice(-6))) },
    });
    await request(t.app).post('/runtime/events').set('Authorization', `Bearer ${runtime}`).send({ name: 'x.y' }).expect(202);
    let deliveries: any[] = [];
    for (let i = 0; i < 100 && !deliveries[0]?.attempt_log?.length; i++) {
      await new Promise((r) => setTimeout(r, 50));
      deliveries = (await t.admin.call('get', `/admin/webhooks/${row.id}/deliveries`)).deliveries;
    }
    expect(deliveries[0].attempt_log[0]).toMatchObject({ attempt: 1, status_code: null, error: expect.stringMatching(/^refused: .*private, loopback/) });
    expect(rx.received).toHaveLength(0);
  });
});

describe('contract', () => {
  it('When the description is read, then it describes every event payload, the delivery envelope and the signature header', async () => {
    const doc = (await request(t.app).get('/v1/openapi.json')).body;
    expect(Object.keys(doc.webhooks)).toEqual(expect.arrayContaining(['message.received', 'message.status', 'template.approved', 'template.rejected']));
    expect(doc.components.schemas.WebhookDelivery.required).toEqual(['id', 'event', 'created_at', 'webhook_id', 'data']);
    expect(doc.components.schemas.MessageReceivedData.properties.message.$ref).toBe('#/components/schemas/Message');
    expect(doc.components.schemas.MessageReceivedData.properties.conversation.$ref).toBe('#/components/schemas/Conversation');
    expect(doc.components.parameters.WebhookSignatureHeader.name).toBe('X-Service-Signature');
    for (const op of ['createWebhook', 'listWebhooks', 'getWebhook', 'updateWebhook', 'deleteWebhook']) {
      const found = Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item)).find((o) => o?.operationId === op);
      expect(found['x-required-scopes']).toEqual(['webhooks:manage']);
    }
  });
});
