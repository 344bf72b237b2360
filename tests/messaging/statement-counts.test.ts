/**
 * Issue 49, item 2: how many statements each step of the messaging path runs on the database,
 * counted by a wrapper on the service's pool (tests/support/statements.ts: every statement,
 * Prisma's and a transaction's BEGIN and COMMIT included), so that a change cannot add one unseen.
 * With warm caches a send is at most three (reserve, record with the window check, confirm; none
 * for the credential or the rate limit), a notification of statuses one (the moves, their events
 * with the contact's ids, and the check that the statuses bring nothing new about the contact);
 * a returning customer's inbound message one (the message, its conversation, the bot's inbox row, its
 * event); a new customer, a possible consent keyword and the other rarer cases run the transaction.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { type StatementCounter, useCountedTestApp } from '../support/statements.js';

let t: TestApp;
let counter: StatementCounter;
useCountedTestApp((app, c) => ([t, counter] = [app, c]));

let seq = 0;
async function setup() {
  const project = await t.admin.project(`statement counts ${++seq}`);
  const key = (await t.admin.key(project.id, ['messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phone = `1415777${String(1000 + seq)}`;
  const write = (from: string, text: string) => request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from, name: 'Ada', text }).expect(200);
  const inbound = (text: string) => write(phone, text);
  await inbound('hi');
  const send = () => request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phone}`, content: 'hello' });
  const status = (wamid: string, s: string) => request(t.sim!.url).post('/_sim/status').send({ wamid, status: s }).expect(200);
  const events = async () => (await t.db.prisma.event.findMany({ where: { projectId: project.id, name: 'message.status' }, orderBy: { createdAt: 'asc' } })).map((e) => e.data as Record<string, unknown>);
  return { project, key, phone, inbound, write, send, status, events };
}

describe('statements per step', () => {
  it('When caches are warm, then a send runs two statements (record with its quota unit, confirm) and none for the credential or the rate limit', async () => {
    const { send } = await setup();
    expect((await send()).status).toBe(200);
    let res: request.Response | undefined;
    const seen = await counter.during(async () => (res = await send()));
    expect(res!.status).toBe(200);
    expect(seen).toEqual(['record-intent', 'confirm-sent-many']);
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

  // The goal: a returning customer's message is one statement (lib/messaging/inbound-statement.ts),
  // with what the transaction wrote, and `message.received` as the API shows the message and conversation.
  it('When a customer writes again, then the inbound message is one statement, and message.received shows the message and conversation as the API does', async () => {
    const { project, inbound } = await setup();
    const reader = (await t.admin.key(project.id, ['conversations:read'])).secret;
    await inbound('first');
    // A minute later (the channel's settings read again, once), so the window's times differ from the conversation's creation.
    t.clock.advance(60_000);
    await inbound('warm');
    const seen = await counter.during(() => inbound('second'));
    expect(seen).toEqual(['inbound-message']);
    const { rows: [event] } = await t.db.pool.query(
      `SELECT data, created_at FROM events WHERE project_id = $1 AND name = 'message.received' AND data #>> '{message,content,text,body}' = 'second'`, [project.id]);
    const data = event.data as { conversation_id: number; message: { id: number } };
    const get = async (path: string) => (await request(t.app).get(path).set('Authorization', `Bearer ${reader}`).expect(200)).body.data;
    expect(data).toEqual({
      conversation_id: data.conversation_id,
      message: await get(`/v1/messages/${data.message.id}`),
      conversation: (await get(`/v1/conversations/${data.conversation_id}`)).conversation,
    });
    expect(event.created_at).toEqual(t.clock.now());
  });

  it('When the customer is new, or the message may be a consent keyword, then the transaction stores it as before', async () => {
    const { project, phone, inbound, write } = await setup();
    const consent = async () => (await t.db.pool.query('SELECT consent_source FROM contacts WHERE project_id = $1 AND phone = $2', [project.id, phone])).rows[0];
    const received = async () => (await t.db.pool.query(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'message.received'`, [project.id])).rows[0].n;
    // The one statement tries first and writes nothing; then the transaction.
    const fresh = await counter.during(() => write('14155559999', 'first words'));
    expect([...fresh.slice(0, 2), fresh.at(-1)]).toEqual(['inbound-message', 'BEGIN', 'COMMIT']);
    const stop = await counter.during(() => inbound(' Stop! '));
    expect([...stop.slice(0, 2), stop.at(-1)]).toEqual(['inbound-message', 'BEGIN', 'COMMIT']);
    expect(await consent()).toEqual({ consent_source: 'keyword' });
    // Letters like a keyword's: the transaction judges it (no keyword here, so no change).
    expect((await counter.during(() => inbound('s-t-o-p?')))[1]).toBe('BEGIN');
    expect(await counter.during(() => inbound('hello there'))).toEqual(['inbound-message']);
    expect(await received()).toBe(5);
  });
});
