/**
 * Issue 49, item 2: how many statements each step of the messaging path runs on the database,
 * counted by a wrapper on the service's pool (tests/support/statements.ts: every statement,
 * Prisma's and a transaction's BEGIN and COMMIT included), so that a change cannot add one unseen.
 * With warm caches a send is at most three (reserve, record with the window check, confirm; none
 * for the credential or the rate limit), a notification of statuses one (the moves, their events
 * with the contact's ids, and the check that the statuses bring nothing new about the contact);
 * an inbound message is bounded at today's twelve (the goal of one is open: docs/benchmarks.md).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from './support/app.js';
import { countStatements, type StatementCounter } from './support/statements.js';

let t: TestApp;
let counter: StatementCounter;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
  counter = countStatements(t.db.pool, t.db.plansOnce);
});
afterAll(async () => {
  await t.close();
});

let seq = 0;
async function setup() {
  const project = await t.admin.project(`statement counts ${++seq}`);
  const key = (await t.admin.key(project.id, ['messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415777${String(1000 + seq)}`;
  const inbound = (text: string) => request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text }).expect(200);
  await inbound('hi');
  const send = () => request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phone}`, content: 'hello' });
  const status = (wamid: string, s: string) => request(t.sim!.url).post('/_sim/status').send({ wamid, status: s }).expect(200);
  const events = async () => (await t.db.prisma.event.findMany({ where: { projectId: project.id, name: 'message.status' }, orderBy: { createdAt: 'asc' } })).map((e) => e.data as Record<string, unknown>);
  return { project, key, phone, inbound, send, status, events };
}

describe('statements per step', () => {
  it('When caches are warm, then a send runs at most three statements and none for the credential or the rate limit', async () => {
    const { send } = await setup();
    expect((await send()).status).toBe(200);
    let res: request.Response | undefined;
    const seen = await counter.during(async () => (res = await send()));
    expect(res!.status).toBe(200);
    expect(seen).toEqual(['quota-reserve', 'record-intent', 'confirm-sent-many']);
  });

  it('When the credential cache entry expires under concurrent requests with one key, then they share one lookup', async () => {
    const { key } = await setup();
    const ping = () => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}`);
    expect((await ping()).status).toBe(200);
    t.clock.advance(t.config.credentialCacheTtlMs + 1000);
    let answers: request.Response[] = [];
    const seen = await counter.during(async () => {
      answers = await Promise.all(Array.from({ length: 20 }, () => ping()));
    });
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(seen.filter((s) => s === 'credential-key')).toEqual(['credential-key']);
    // A wrong key is refused to each request that sends it.
    const wrong = await Promise.all(Array.from({ length: 3 }, () => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key}x`)));
    expect(wrong.map((r) => [r.status, r.body.error.code])).toEqual(Array(3).fill([401, 'invalid_api_key']));
  });

  it('When the channel reports statuses, then each notification is one statement, and its event carries the contact\'s ids', async () => {
    const { send, status, events, phone } = await setup();
    const wamid = (await send()).body.data.id as string;
    // The first status may tell the contact something new (its BSUID): that one may write the contact.
    await status(wamid, 'sent');
    for (const s of ['delivered', 'read']) {
      const seen = await counter.during(() => status(wamid, s));
      expect(seen).toEqual(['apply-statuses']);
    }
    const last = (await events()).filter((e) => e.message_id === wamid).at(-1)!;
    expect(last).toMatchObject({ status: 'read', phone: `+${phone}` });
    expect(typeof last.user_id).toBe('string');
  });

  // The goal is one statement; today it is one transaction of twelve (BEGIN, the seen check,
  // the contact by phone and by BSUID, the conversation read, moved and read again, the contact,
  // the message, the consent keywords, the event, COMMIT): this bounds it until it is one.
  it('When a customer writes again, then the inbound message runs in one transaction of at most twelve statements', async () => {
    const { inbound } = await setup();
    await inbound('first');
    const seen = await counter.during(() => inbound('second'));
    expect(seen[0]).toBe('BEGIN');
    expect(seen.at(-1)).toBe('COMMIT');
    expect(seen.length).toBeLessThanOrEqual(12);
  });
});
