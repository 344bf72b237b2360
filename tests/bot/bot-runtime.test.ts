/**
 * The deployed bot answering the simulated channel (lib/bot/runtime.ts): replies through the send
 * path, states it introduces, custom events delivered to webhooks, its tables, previews, and the
 * containment of a bot that loops, exhausts memory, throws or never resolves while another
 * project's bot keeps answering.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { botSourceProject, deployBot, simSent } from '../support/bots.js';
import { Receiver } from '../support/receiver.js';
import { MAX_HANDOVERS } from '../../lib/bot/inbox.js';
import { timingBound } from '../support/retry-timing.js';

const LIMITS = { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 };

let t: TestApp;
let rx: Receiver;
beforeAll(async () => {
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    webhooks: true,
    bot: LIMITS,
    // Containment of each runaway here, not the CPU shaping (tests/bot/bot-cpu-budget, tests/proofs/bot-fairness):
    // a burst this file's loops do not reach, so a memory bomb after a loop is not slowed to a timeout.
    config: { devAllowPrivateTargets: true, botCpuBurstMs: 60_000 },
  });
  rx = await Receiver.start();
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });

const botProject = (botSource?: string, scopes: string[] = []) =>
  botSourceProject(t, ['code:read', 'code:write', 'conversations:read', 'conversations:write', 'webhooks:manage', 'tables:read', 'messages:send', ...scopes], botSource);
const deploy = (key: string) => deployBot(t, key);

const sentTo = async (phoneNumberId: string, to: string) => (await simSent(t, phoneNumberId)).filter((m) => JSON.stringify(m).includes(to));

/** Polls the simulator until `phone` got a message containing `text`; answers the milliseconds it took. */
async function waitForReply(phoneNumberId: string, phone: string, text: string, withinMs: number): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < withinMs) {
    if ((await sentTo(phoneNumberId, phone)).some((m) => JSON.stringify(m).includes(text))) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no reply containing "${text}" to ${phone} within ${withinMs} ms`);
}

async function conversationOf(key: string, phone: string) {
  const res = await request(t.app).get(`/v1/conversations?phone=%2B${phone}`).set(auth(key));
  expect(res.status).toBe(200);
  return res.body.data[0] ?? res.body.data.conversations?.[0];
}

async function botLogs(projectId: string) {
  const res = await request(t.app).get(`/admin/projects/${projectId}/bot/logs?limit=50`).set(admin());
  expect(res.status).toBe(200);
  return res.body.data.logs as Array<{ kind: string; level: string; message: string }>;
}

describe('the bot sends media of its own project only', () => {
  it('When a bot sends another project\'s media_id, then it gets not_found and the channel is not called', async () => {
    const other = await botProject(undefined, ['media:write']);
    const up = await request(t.app).post('/v1/media').set(auth(other.key)).send({ data: Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a4e0a5e00000000049454e44ae426082', 'hex').toString('base64'), filename: 'x.png', mime: 'image/png' });
    expect(up.status).toBe(201);
    const foreign = up.body.data.media.media_id as string;
    const source = `import { send, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(message: InboundMessage): Promise<void> {
  const r = await send({ type: 'image', phone: message.from, media: { media_id: (message.text ?? '').trim() } });
  await sendText(message.from, r.ok ? 'sent' : 'refused: ' + r.error.code);
}
`;
    const mine = await botProject(source, ['media:write']);
    await deploy(mine.key);
    const messagesCalls = async () => ((await request(t.sim!.url).get('/_sim/requests?limit=1000')).body.data as Array<{ method: string; path: string; body: any }>)
      .filter((r) => r.method === 'POST' && r.path === `/${mine.phoneNumberId}/messages` && r.body?.type === 'image').length;
    const before = await messagesCalls();
    await inbound(t, mine.phoneNumberId, '14155550350', foreign);
    await t.bot!.whenIdle();
    expect(JSON.stringify(await sentTo(mine.phoneNumberId, '14155550350'))).toContain('refused: not_found');
    expect(await messagesCalls()).toBe(before);
  });
});

describe('the deployed scaffold bot', () => {
  it('When a customer writes, then the deployed bot answers through the channel; before any deploy nothing answers', async () => {
    const { key, phoneNumberId } = await botProject();
    await inbound(t, phoneNumberId, '14155550301', 'hello before deploy');
    await t.bot!.whenIdle();
    expect(await sentTo(phoneNumberId, '14155550301')).toEqual([]);
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550301', 'hello');
    await t.bot!.whenIdle();
    const sent = await sentTo(phoneNumberId, '14155550301');
    expect(JSON.stringify(sent)).toContain('You said: hello');
    // The reply went the way of POST /v1/messages: stored as the conversation's outbound message.
    const conv = await conversationOf(key, '14155550301');
    const msgs = await request(t.app).get(`/v1/conversations/${conv.id}/messages`).set(auth(key));
    expect(JSON.stringify(msgs.body.data)).toContain('You said: hello');
  });

  it('When a username customer without a phone writes, then the deployed bot answers them by business-scoped user id (recipient)', async () => {
    const { key, phoneNumberId } = await botProject();
    await deploy(key);
    const user = (await request(t.sim!.url).post('/_sim/users').send({ phone_number_id: phoneNumberId, username: 'no.number' }).expect(201)).body;
    const res = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, user_id: user.user_id, text: 'hello' });
    expect(res.body.status_code).toBe(200);
    await t.bot!.whenIdle();
    const sent = await sentTo(phoneNumberId, user.user_id);
    expect(sent).toHaveLength(1);
    expect(sent[0].payload).toMatchObject({ recipient: user.user_id, text: { body: expect.stringContaining('You said: hello') } });
    expect(sent[0].payload.to).toBeUndefined();
  });

  it('When the project is paused, then its bot does not answer; resumed, it answers again', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    await deploy(key);
    await request(t.app).patch(`/admin/projects/${projectId}`).set(admin()).send({ status: 'paused' }).expect(200);
    await inbound(t, phoneNumberId, '14155550305', 'while paused');
    await t.bot!.whenIdle();
    expect(await sentTo(phoneNumberId, '14155550305')).toEqual([]);
    await request(t.app).patch(`/admin/projects/${projectId}`).set(admin()).send({ status: 'active' }).expect(200);
    await inbound(t, phoneNumberId, '14155550305', 'back');
    await t.bot!.whenIdle();
    expect(JSON.stringify(await sentTo(phoneNumberId, '14155550305'))).toContain('You said: back');
  });

  it('When the bot sets a state of its own, then PATCH accepts that state afterwards (and refused it before)', async () => {
    const { key, phoneNumberId } = await botProject();
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550311', 'hi');
    await t.bot!.whenIdle();
    const other = await conversationOf(key, '14155550311');
    const before = await request(t.app).patch(`/v1/conversations/${other.id}`).set(auth(key)).send({ state: 'menu_shown' });
    expect(before.status).toBe(400);
    expect(before.body.error.code).toBe('INVALID_STATE');

    await inbound(t, phoneNumberId, '14155550312', 'menu');
    await t.bot!.whenIdle();
    const menu = await conversationOf(key, '14155550312');
    expect(menu.state).toBe('menu_shown');
    expect(JSON.stringify(await sentTo(phoneNumberId, '14155550312'))).toContain('How can we help?');

    const after = await request(t.app).patch(`/v1/conversations/${other.id}`).set(auth(key)).send({ state: 'menu_shown' });
    expect(after.status).toBe(200);
    expect(after.body.data.conversation.state).toBe('menu_shown');
  });

  it('When the bot emits a custom event, then it is delivered to the webhook subscribed to that name', async () => {
    const { key, phoneNumberId } = await botProject();
    const hook = await request(t.app).post('/v1/webhooks').set(auth(key)).send({ url: `${rx.url}/bot-events`, events: ['bot.menu_shown'] });
    expect(hook.status).toBe(201);
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550321', 'menu');
    await t.bot!.whenIdle();
    const [got] = await rx.waitFor('/bot-events', 1);
    expect(got.headers['x-service-event']).toBe('bot.menu_shown');
    const conv = await conversationOf(key, '14155550321');
    expect(got.body).toMatchObject({ event: 'bot.menu_shown', data: { conversation_id: conv.id } });
  });

  it('When the bot writes and reads its project table, then the rows are in the public schema', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { sendText, tables, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await tables.insert('notes', { phone: m.from, body: m.text ?? '' });
  const mine = await tables.select('notes', { filters: [{ column: 'phone', op: 'eq', value: m.from }] });
  await sendText(m.from, 'notes: ' + mine.length);
}
`);
    const created = await request(t.app).post(`/admin/projects/${projectId}/tables`).set(admin())
      .send({ name: 'notes', columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'phone', type: 'text' }, { name: 'body', type: 'text' }] });
    expect(created.status).toBe(201);
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550331', 'first');
    await inbound(t, phoneNumberId, '14155550331', 'second');
    await t.bot!.whenIdle();
    expect(JSON.stringify(await sentTo(phoneNumberId, '14155550331'))).toContain('notes: 2');
    const rows = await request(t.app).get('/v1/tables/notes/rows').set(auth(key));
    expect(rows.body.data.rows.map((r: any) => r.body)).toEqual(['first', 'second']);
  });
});

describe('ordering', () => {
  it('When two customers write several messages in a row, then each one gets the answers in the order of their messages', async () => {
    const { key, phoneNumberId } = await botProject();
    await deploy(key);
    for (let i = 0; i < 5; i++) {
      await inbound(t, phoneNumberId, '14155550601', `a${i}`);
      await inbound(t, phoneNumberId, '14155550602', `b${i}`);
    }
    await t.bot!.whenIdle();
    for (const [phone, tag] of [['14155550601', 'a'], ['14155550602', 'b']]) {
      const texts = (await sentTo(phoneNumberId, phone)).map((m) => m.payload?.text?.body);
      expect(texts).toEqual([0, 1, 2, 3, 4].map((i) => `You said: ${tag}${i}. Write "menu" for options.`));
    }
  });
});

describe('the bot inbox', () => {
  const inbox = async (projectId: string) =>
    (await t.db.pool.query<{ message_id: string; attempts: number }>('SELECT message_id, attempts FROM bot_inbox WHERE project_id = $1', [projectId])).rows;
  /** The row a process that died while holding the message leaves behind: leased until `leaseUntil`. */
  async function leftByDeadProcess(projectId: string, phone: string, text: string, attempts = 0) {
    const { rows } = await t.db.pool.query<{ id: string }>(
      `SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN contacts k ON k.id = c.contact_id
        WHERE m.project_id = $1 AND k.phone = $2 AND m.direction = 'inbound' AND m.content->'text'->>'body' = $3`,
      [projectId, phone, text],
    );
    expect(rows).toHaveLength(1);
    const leaseUntil = new Date(t.clock.now().getTime() + t.config.botInboxLeaseMs);
    await t.db.pool.query(`INSERT INTO bot_inbox (key, kind, message_id, project_id, lease_until, attempts, created_at) VALUES ('message:' || $1, 'message', $1::bigint, $2, $3, $4, $5)`, [rows[0].id, projectId, leaseUntil, attempts, t.clock.now()]);
  }

  it('When the bot has handled a message, then it has left the inbox', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550701', 'settled');
    await t.bot!.whenIdle();
    expect(JSON.stringify(await sentTo(phoneNumberId, '14155550701'))).toContain('You said: settled');
    expect(await inbox(projectId)).toEqual([]);
  });

  it('When a process died holding a message, then no reclaim takes it before its lease runs out, and one after it answers it exactly once', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    // Stored before any deploy (nothing answered), then left in the inbox as a dead process leaves it.
    await inbound(t, phoneNumberId, '14155550702', 'orphaned');
    await t.bot!.whenIdle();
    await deploy(key);
    await leftByDeadProcess(projectId, '14155550702', 'orphaned');
    expect(await t.bot!.reclaim()).toBe(0);
    t.clock.advance(t.config.botInboxLeaseMs);
    expect(await t.bot!.reclaim()).toBe(1);
    await t.bot!.whenIdle();
    expect(await t.bot!.reclaim()).toBe(0);
    const replies = (await sentTo(phoneNumberId, '14155550702')).filter((m) => JSON.stringify(m).includes('You said: orphaned'));
    expect(replies).toHaveLength(1);
    expect(await inbox(projectId)).toEqual([]);
  });

  it('When a process died after the bot had replied and before the message left the inbox, then the hand-over runs the bot again and the reply is not sent twice', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550704', 'answered once');
    await t.bot!.whenIdle();
    const reply = (await sentTo(phoneNumberId, '14155550704')).filter((m) => JSON.stringify(m).includes('You said: answered once'));
    expect(reply).toHaveLength(1);
    await leftByDeadProcess(projectId, '14155550704', 'answered once');
    t.clock.advance(t.config.botInboxLeaseMs);
    expect(await t.bot!.reclaim()).toBe(1);
    await t.bot!.whenIdle();
    expect((await sentTo(phoneNumberId, '14155550704')).filter((m) => JSON.stringify(m).includes('You said: answered once'))).toHaveLength(1);
    expect(await inbox(projectId)).toEqual([]);
    // A new message of the same customer is answered as usual (its sends have references of their own).
    await inbound(t, phoneNumberId, '14155550704', 'and again');
    await t.bot!.whenIdle();
    expect(JSON.stringify(await sentTo(phoneNumberId, '14155550704'))).toContain('You said: and again');
  });

  it('When a process died after the bot had replied to a username customer (no phone), then the hand-over does not send the reply twice', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    await deploy(key);
    const user = (await request(t.sim!.url).post('/_sim/users').send({ phone_number_id: phoneNumberId, username: 'replayed.once' }).expect(201)).body;
    await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, user_id: user.user_id, text: 'answered once' }).expect(200);
    await t.bot!.whenIdle();
    const replies = async () => (await sentTo(phoneNumberId, user.user_id)).filter((m) => JSON.stringify(m).includes('You said: answered once'));
    expect(await replies()).toHaveLength(1);
    // The row a process that died after the reply and before settling leaves behind.
    const { rows } = await t.db.pool.query<{ id: string }>(
      `SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN contacts k ON k.id = c.contact_id
        WHERE m.project_id = $1 AND k.user_id = $2 AND m.direction = 'inbound'`,
      [projectId, user.user_id],
    );
    expect(rows).toHaveLength(1);
    await t.db.pool.query(`INSERT INTO bot_inbox (key, kind, message_id, project_id, lease_until, created_at) VALUES ('message:' || $1, 'message', $1::bigint, $2, $3, $3)`, [rows[0].id, projectId, t.clock.now()]);
    t.clock.advance(1000);
    expect(await t.bot!.reclaim()).toBe(1);
    await t.bot!.whenIdle();
    expect(await replies()).toHaveLength(1);
    expect(await inbox(projectId)).toEqual([]);
  });

  it('When a message has been handed over too many times already, then it is set aside with a bot log entry, not answered, and listed for the operator', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    await inbound(t, phoneNumberId, '14155550703', 'cursed');
    await t.bot!.whenIdle();
    await deploy(key);
    await leftByDeadProcess(projectId, '14155550703', 'cursed', MAX_HANDOVERS);
    t.clock.advance(t.config.botInboxLeaseMs);
    expect(await t.bot!.reclaim()).toBe(1);
    await t.bot!.whenIdle();
    expect(await sentTo(phoneNumberId, '14155550703')).toEqual([]);
    expect((await botLogs(projectId)).map((l) => l.message)).toContainEqual(expect.stringMatching(/set aside .*handed over 20 times/));
    const listed = await request(t.app).get(`/admin/projects/${projectId}/bot/set-aside`).set(admin());
    expect(listed.status).toBe(200);
    expect(listed.body.data.events).toEqual([expect.objectContaining({ reason: expect.stringMatching(/handed over/) })]);
    // Never handed over again, a later pass (or a restart) included.
    t.clock.advance(2 * t.config.botInboxLeaseMs);
    expect(await t.bot!.reclaim()).toBe(0);
  });
});

const UNRULY = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const text = m.text ?? '';
  if (text === 'loop') { for (;;) {} }
  if (text === 'bomb') { const hoard: string[] = []; for (;;) hoard.push('x'.repeat(4096) + hoard.length); }
  if (text === 'throw') { throw new Error('the bot broke'); }
  if (text === 'never') { await new Promise<void>(() => undefined); }
  await sendText(m.from, 'unruly alive: ' + text);
}
`;

describe('containment', () => {
  timingBound('each bad bot stopped within the event timeout').it('When a bot loops, exhausts memory, throws or never resolves, then it is stopped and logged, and another project\'s bot keeps answering meanwhile', async () => {
    const bad = await botProject(UNRULY);
    const good = await botProject();
    await deploy(bad.key);
    await deploy(good.key);
    for (const [i, trouble] of ['loop', 'bomb', 'throw', 'never'].entries()) {
      const phone = `1415555034${i}`;
      await inbound(t, bad.phoneNumberId, phone, trouble);
      // The other project is answered while the bad bot is still stuck (well within its time limit).
      const goodPhone = `1415555035${i}`;
      await inbound(t, good.phoneNumberId, goodPhone, `ping ${trouble}`);
      const tookMs = await waitForReply(good.phoneNumberId, goodPhone, `You said: ping ${trouble}`, LIMITS.eventTimeoutMs);
      expect(tookMs).toBeLessThan(LIMITS.eventTimeoutMs);
      await t.bot!.whenIdle();
      // The bad bot gets a fresh sandbox and answers its next message.
      await inbound(t, bad.phoneNumberId, phone, 'hi');
      await t.bot!.whenIdle();
      expect(JSON.stringify(await sentTo(bad.phoneNumberId, phone))).toContain('unruly alive: hi');
    }
    const logs = await botLogs(bad.projectId);
    const kinds = logs.map((l) => l.kind);
    expect(kinds).toEqual(expect.arrayContaining(['timeout', 'memory_limit', 'error']));
    // Each timed-out event ('loop', 'never') is logged once a run; a reclaim pass may run it again
    // meanwhile (the job runner's sweep), up to BOT_MAX_ABNORMAL_RUNS runs each, never more.
    const timeouts = kinds.filter((k) => k === 'timeout').length;
    if (timeouts < 2) console.log(JSON.stringify(logs.map((l) => [l.kind, l.message.slice(0, 120)])));
    // Under load a stuck event may be ended another way (its sandbox process replaced: crash; work
    // left running: interrupted); each of the three runaways is stopped and logged all the same.
    const stopped = kinds.filter((k) => ['timeout', 'memory_limit', 'crash', 'interrupted'].includes(k)).length;
    expect(timeouts).toBeGreaterThanOrEqual(1);
    expect(stopped).toBeGreaterThanOrEqual(3);
    expect(timeouts).toBeLessThanOrEqual(2 * t.config.botMaxAbnormalRuns);
    expect(logs.find((l) => l.kind === 'error')!.message).toMatch(/the bot broke at src\/bot\.ts:6:/);
    // A loop past the CPU burst moves the project to a sandbox process of its own: said once, as a warning.
    expect(logs.filter((l) => l.kind !== 'moved').every((l) => l.level === 'error')).toBe(true);
    expect(logs.filter((l) => l.kind === 'moved').every((l) => l.level === 'warn')).toBe(true);
    expect(await botLogs(good.projectId)).toEqual([]);
    const ping = await request(t.app).get('/v1/ping').set(auth(good.key));
    expect(ping.status).toBe(200);
  }, 60_000);
});

describe('previewBot', () => {
  it('When the development tree is previewed, then what the bot would do is returned and nothing is sent or changed', async () => {
    const { key, phoneNumberId } = await botProject();
    const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'menu', from: '14155550399' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      outcome: { status: 'ok', message: null },
      state: 'menu_shown',
      events: [{ name: 'bot.menu_shown', payload: { conversation_id: 1 } }],
    });
    expect(res.body.data.sends[0]).toMatchObject({ type: 'interactive', phone: '14155550399' });
    expect(await sentTo(phoneNumberId, '14155550399')).toEqual([]);
  });

  it('When the previewed bot writes its table, then the row is in the preview schema, never in public', async () => {
    const { projectId, key } = await botProject(`import { sendText, tables, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const row = await tables.insert('visits', { phone: m.from });
  await sendText(m.from, 'visit ' + String(row.id));
}
`);
    for (const schema of ['public', 'preview']) {
      const created = await request(t.app).post(`/admin/projects/${projectId}/tables`).set(admin())
        .send({ schema, name: 'visits', columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'phone', type: 'text' }] });
      expect(created.status).toBe(201);
    }
    const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'hi', from: '14155550398' });
    expect(res.status).toBe(200);
    expect(res.body.data.sends).toEqual([{ type: 'text', phone: '14155550398', content: 'visit 1' }]);
    const preview = await request(t.app).get('/v1/tables/visits/rows?schema=preview').set(auth(key));
    const pub = await request(t.app).get('/v1/tables/visits/rows').set(auth(key));
    expect(preview.body.data.rows).toEqual([{ id: '1', phone: '14155550398' }]);
    expect(pub.body.data.rows).toEqual([]);
  });

  it('When the previewed bot loops or the tree does not build, then the outcome says timeout, or 502 build_failed', async () => {
    const { key } = await botProject(UNRULY);
    const looped = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'loop' });
    expect(looped.status).toBe(200);
    expect(looped.body.data.outcome.status).toBe('timeout');
    const put = await request(t.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: 'export const x: number = "no";\n' });
    expect(put.status).toBe(200);
    const broken = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'hi' });
    expect(broken.status).toBe(502);
    expect(broken.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 1 });
    const bad = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: '' });
    expect(bad.status).toBe(400);
  });
});
