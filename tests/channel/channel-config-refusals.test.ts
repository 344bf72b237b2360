/**
 * A channel refusal caused by the service's own configuration has one answer across operations
 * (issue 70, item 5): WhatsApp (the simulator, answering as Meta does) refusing the project's access
 * token (OAuthException 190) is 502 `upstream_auth_error` everywhere, and refusing a Graph API
 * version Meta has ended (OAuthException 2635) is 502 `upstream_error` everywhere: never a 400 that
 * blames the caller's template, and never a success that was not one (a template deleted here while
 * WhatsApp still has it). The bot's typing indicator answers with the same codes.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import request from 'supertest';
import { ManualClock } from '../../lib/platform/clock.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import * as S from '../support/samples.js';
import { showTyping } from '../../lib/bot/typing.js';
import { api as broadcastsApi, projectWithKey, runUntil, seedMany, template as approvedTemplate } from '../support/broadcasts.js';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { createLogger } from '../../lib/platform/logger.js';
import { startBroadcastEngine } from '../../jobs/broadcast-engine.js';

// Groups are confirmed by WhatsApp's notification: a loaded two-core machine takes seconds.
jest.setTimeout(90_000);

// The app runs on v21.0: served on its last day, refused by Meta (and the simulator) from the next.
const LAST_DAY = new Date('2027-01-21T12:00:00Z');
const RETIRED = new Date('2027-01-22T00:00:01Z');

let t: TestApp;
const clock = new ManualClock(LAST_DAY);
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, clock, config: { graphApiVersion: 'v21.0' } });
}, 60_000);
afterAll(async () => t?.close());

const sim = () => request(t.sim!.url);
const PHONE = '5511966660001';
const MEMBER = '5511966660002';

interface Fixture {
  api: (method: 'get' | 'post' | 'patch' | 'delete', path: string) => request.Test;
  template: string;
  group: { id: number; group_id: string };
  callId: number;
  conversationId: number;
  projectId: string;
  wamid: string;
}

let f: Fixture;

beforeAll(async () => {
  const project = await t.admin.project('Config refusals');
  const key = (await t.admin.key(project.id, ['messages:send', 'conversations:read', 'conversations:write', 'templates:manage', 'templates:read', 'media:write', 'media:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const api: Fixture['api'] = (method, path) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);

  // A customer wrote (the conversation), a template exists, a group is active, a call rings.
  expect((await sim().post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: PHONE, name: 'Ada', text: 'hi' })).status).toBe(200);
  const conversation = await eventually(() => api('get', '/v1/conversations'), (r) => r.body.data?.conversations?.length === 1, 10_000, 'the conversation');
  const template = 'order_ready';
  const created = await api('post', '/v1/templates').send({ name: template, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Your order is ready.' }] });
  expect(created.status).toBe(201);
  const g = await api('post', '/v1/groups').send({ subject: 'Order 42' });
  expect(g.status).toBe(201);
  const group = await eventually(() => api('get', `/v1/groups/${g.body.data.group.id}`), (r) => r.body.data?.group?.status === 'active', 20_000, 'the group confirmed');
  // A user joins by the invite link (so there is a participant to remove).
  expect((await api('get', `/v1/groups/${g.body.data.group.id}/invite-link`)).status).toBe(200);
  expect((await sim().post(`/_sim/groups/${encodeURIComponent(group.body.data.group.group_id)}/join`).send({ from: `+${MEMBER}` })).body.joined).toBe(true);
  await eventually(() => api('get', `/v1/groups/${g.body.data.group.id}/participants`), (r) => r.body.data?.participants?.length === 1, 10_000, 'the participant');
  const ring = await sim().post('/_sim/calls').send({ phone_number_id: channel.phoneNumberId, from: PHONE, name: 'Ada' });
  expect(ring.status).toBe(200);
  const call = await eventually(() => api('get', `/v1/calls/${ring.body.call_id}`), (r) => r.status === 200, 10_000, 'the call ringing');
  const inbound = await t.db.pool.query<{ wamid: string }>(`SELECT wamid FROM messages WHERE project_id = $1 AND direction = 'inbound'`, [project.id]);
  f = { api, template, group: group.body.data.group, callId: call.body.data.id, conversationId: conversation.body.data.conversations[0].id, projectId: project.id, wamid: inbound.rows[0].wamid };
}, 60_000);

/** Every operation that reaches the channel, as a caller makes it. */
const OPERATIONS: Array<[string, () => request.Test]> = [
  ['send a text', () => f.api('post', '/v1/messages').send({ type: 'text', phone: `+${PHONE}`, content: 'Your order' })],
  ['send a template', () => f.api('post', '/v1/messages').send({ type: 'template', phone: `+${PHONE}`, template: { name: f.template, language: 'en_US' } })],
  ['create a template', () => f.api('post', '/v1/templates').send({ name: 'welcome_back', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Welcome back.' }] })],
  ['delete a template', () => f.api('delete', `/v1/templates/${f.template}`)],
  ['upload a header sample', () => f.api('post', '/v1/templates/header-sample').send({ format: 'IMAGE', data: S.b64(S.png(3000)), filename: 'banner.png', mime: 'image/png' })],
  ['upload media', () => f.api('post', '/v1/media').send({ data: S.b64(S.pdf(3000)), filename: 'menu.pdf', mime: 'application/pdf' })],
  ['create a group', () => f.api('post', '/v1/groups').send({ subject: 'Order 43' })],
  ['change a group', () => f.api('patch', `/v1/groups/${f.group.id}`).send({ subject: 'Order 42, renamed' })],
  ['reset an invite link', () => f.api('post', `/v1/groups/${f.group.id}/invite-link`)],
  ['list join requests', () => f.api('get', `/v1/groups/${f.group.id}/join-requests`)],
  ['approve join requests', () => f.api('post', `/v1/groups/${f.group.id}/join-requests`).send({ join_request_ids: ['jr_1'] })],
  ['reject join requests', () => f.api('post', `/v1/groups/${f.group.id}/join-requests/rejections`).send({ join_request_ids: ['jr_1'] })],
  ['remove a participant', () => f.api('delete', `/v1/groups/${f.group.id}/participants/%2B${MEMBER}`)],
  ['delete a group', () => f.api('delete', `/v1/groups/${f.group.id}`)],
  ['reject a call', () => f.api('post', `/v1/calls/${f.callId}/actions`).send({ action: 'reject' })],
  ['control a thread', () => f.api('post', `/v1/conversations/${f.conversationId}/thread-control`).send({ action: 'release' })],
];

async function outcomes(): Promise<Array<[string, number, string | undefined]>> {
  const out: Array<[string, number, string | undefined]> = [];
  for (const [name, call] of OPERATIONS) {
    const res = await call();
    out.push([name, res.status, res.body?.error?.code]);
  }
  return out;
}

/** The bot's showTyping (only a deployed bot reaches it): an error answer with the API's code. */
async function typingCode(): Promise<string | undefined> {
  const answer = await showTyping(t.services.deps, f.projectId, { messageId: f.wamid }, false);
  return answer.ok ? undefined : answer.error.code;
}

describe('a refusal of the service\'s own configuration', () => {
  it('When WhatsApp refuses the access token (190), then every operation answers 502 upstream_auth_error', async () => {
    expect((await sim().post('/_sim/faults').send({ graph_error: { code: 190 }, count: 1000 })).status).toBe(201);
    try {
      const got = await outcomes();
      expect(got).toEqual(OPERATIONS.map(([name]) => [name, 502, 'upstream_auth_error']));
      expect(await typingCode()).toBe('upstream_auth_error');
    } finally {
      await sim().delete('/_sim/faults');
    }
    // Nothing was taken for done: the template, the group and the call are as they were.
    expect((await f.api('get', `/v1/templates/${f.template}`)).status).toBe(200);
    expect((await f.api('get', `/v1/groups/${f.group.id}`)).body.data.group.status).toBe('active');
    expect((await f.api('get', `/v1/calls/${f.callId}`)).body.data.status).toBe('ringing');
  });

  it('When the configured Graph API version has ended (2635), then every operation answers 502 upstream_error', async () => {
    clock.set(RETIRED);
    try {
      const got = await outcomes();
      expect(got).toEqual(OPERATIONS.map(([name]) => [name, 502, 'upstream_error']));
      expect(await typingCode()).toBe('upstream_error');
    } finally {
      clock.set(LAST_DAY);
    }
    expect((await f.api('get', `/v1/templates/${f.template}`)).status).toBe(200);
    expect((await f.api('get', `/v1/groups/${f.group.id}`)).body.data.group.status).toBe('active');
    expect((await f.api('get', `/v1/calls/${f.callId}`)).body.data.status).toBe('ringing');
  });
});

describe('a campaign meeting a refusal of the configuration', () => {
  /** A campaign of `n` recipients, approved, run by an engine on the app's Graph version until it ends. */
  async function run(n: number, refuse: () => Promise<void>, undo: () => Promise<void>) {
    const { project, key } = await projectWithKey(t);
    await approvedTemplate(t, project.id, 'promo', 'Hi there');
    await seedMany(t, project.id, n, 15560000000 + Math.floor(Math.random() * 1e6) * 1000);
    const call = broadcastsApi(t, key);
    const created = await call.post('/v1/broadcasts', { name: 'Spring', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } });
    expect(created.status).toBe(201);
    const id = created.body.data.broadcast.id as string;
    const channel = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v21.0', timeoutMs: 2000 });
    const engine = await startBroadcastEngine(
      { db: t.db, clock: t.clock, logger: createLogger({ silent: true }), secretBox: t.secretBox, channel },
      { schedule: false, leaseMs: 2000, idleMs: 50 },
    );
    await refuse();
    try {
      await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
      const status = await runUntil(t, engine, id, ['completed', 'failed']);
      const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
      const failed = (await call.get(`/v1/broadcasts/${id}/recipients?status=failed`)).body.data.recipients;
      return { status, b, failed };
    } finally {
      await undo();
      await engine.stop();
      channel.close();
    }
  }

  // The service's configuration is refused for every recipient alike: the campaign stops at the first
  // (as for a refused token), rather than failing each recipient for good one by one.
  it('When the Graph API version has ended, then the campaign stops as failed at the first send and the rest is canceled', async () => {
    const { status, b, failed } = await run(10, async () => clock.set(RETIRED), async () => clock.set(LAST_DAY));
    expect(status).toBe('failed');
    expect(b.status_reason).toMatch(/2635/);
    expect(b.counts.sent).toBe(0);
    expect(b.counts.failed + b.counts.canceled).toBe(10);
    expect(failed[0].error).toMatchObject({ code: 2635, category: 'campaign' });
  });

  it('When WhatsApp refuses the access token, then the campaign stops the same way', async () => {
    const { status, b, failed } = await run(10, async () => {
      expect((await sim().post('/_sim/faults').send({ graph_error: { code: 190 }, count: 1000 })).status).toBe(201);
    }, async () => {
      await sim().delete('/_sim/faults');
    });
    expect(status).toBe('failed');
    expect(b.counts.sent).toBe(0);
    expect(failed[0].error).toMatchObject({ code: 190, category: 'campaign' });
  });
});
