/**
 * A returning customer's message in one statement (lib/messaging/inbound-statement.ts) under
 * concurrency, against the real database: the provider's retries of one wamid at once store it
 * once with one `message.received`, and messages of one customer at once are all stored, each with
 * its event, none losing the conversation's update; with a bot runtime attached, the message
 * enters the bot's inbox as the runtime's enqueue puts it there.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import type { TestApp } from '../support/app.js';
import { type StatementCounter, useCountedTestApp } from '../support/statements.js';
import { openChannel } from '../../lib/channel-settings/settings.js';
import { applyWebhook } from '../../lib/messaging/inbound.js';
import { storeReturningCustomerMessage } from '../../lib/messaging/inbound-statement.js';
import { messageInboxSql } from '../../lib/bot/inbox.js';

let t: TestApp;
let counter: StatementCounter;
useCountedTestApp((app, c) => ([t, counter] = [app, c]));

let seq = 0;
/** A project whose customer wrote once (so is known), and a notification of that customer's message `wamid`. */
async function returningCustomer() {
  const project = await t.admin.project(`inbound statement ${++seq}`);
  const pnid = (await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } })).phoneNumberId;
  const phone = `1415666${String(1000 + seq)}`;
  await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, name: 'Ada', text: 'hi' }).expect(200);
  const { rows: [contact] } = await t.db.pool.query('SELECT phone, user_id, parent_user_id FROM contacts WHERE project_id = $1', [project.id]);
  const channel = (await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))!;
  const notification = (wamid: string, body: string) => ({
    object: 'whatsapp_business_account',
    entry: [{ id: channel.wabaId, changes: [{ field: 'messages', value: {
      messaging_product: 'whatsapp', metadata: { phone_number_id: pnid },
      contacts: [{ profile: { name: 'Ada' }, wa_id: contact.phone, user_id: contact.user_id, parent_user_id: contact.parent_user_id }],
      messages: [{ from: contact.phone, from_user_id: contact.user_id, id: wamid, timestamp: String(Math.floor(t.clock.now().getTime() / 1000)), type: 'text', text: { body } }],
    } }] }],
  });
  const apply = (payload: object) => applyWebhook(t.services.deps, channel, payload);
  const count = async (sql: string) => (await t.db.pool.query(sql, [project.id])).rows[0].n as number;
  const conversation = async () => (await t.db.pool.query('SELECT last_message_at, last_inbound_at FROM conversations WHERE project_id = $1', [project.id])).rows[0];
  return { project, contact, notification, apply, count, conversation };
}

describe('a returning customer\'s message in one statement', () => {
  it('When the provider delivers one message several times at once, then it is stored once with one message.received', async () => {
    const c = await returningCustomer();
    t.clock.advance(5_000);
    const payload = c.notification('wamid.concurrent-replay', 'once');
    let outcomes: Array<{ messages: number; retryLater: boolean }> = [];
    const seen = await counter.during(async () => (outcomes = await Promise.all(Array.from({ length: 6 }, () => c.apply(payload)))));
    expect(seen).toEqual(Array(6).fill('inbound-message'));
    expect(outcomes.map((o) => o.messages).sort()).toEqual([0, 0, 0, 0, 0, 1]);
    expect(outcomes.every((o) => !o.retryLater)).toBe(true);
    expect(await c.count(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND wamid = 'wamid.concurrent-replay'`)).toBe(1);
    expect(await c.count(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'message.received' AND data #>> '{message,wamid}' = 'wamid.concurrent-replay'`)).toBe(1);
    expect((await c.conversation()).last_inbound_at).toEqual(t.clock.now());
    // A later retry changes nothing, not even the window.
    t.clock.advance(5_000);
    expect((await c.apply(payload)).messages).toBe(0);
    expect((await c.conversation()).last_inbound_at).toEqual(new Date(t.clock.now().getTime() - 5_000));
  });

  it('When one customer sends several messages at once, then each is stored with its event and the conversation moves to the latest', async () => {
    const c = await returningCustomer();
    t.clock.advance(5_000);
    let outcomes: Array<{ messages: number }> = [];
    const seen = await counter.during(async () => (outcomes = await Promise.all(Array.from({ length: 5 }, (_, i) => c.apply(c.notification(`wamid.together-${i}`, `message ${i}`))))));
    expect(seen).toEqual(Array(5).fill('inbound-message'));
    expect(outcomes.map((o) => o.messages)).toEqual([1, 1, 1, 1, 1]);
    expect(await c.count(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND wamid LIKE 'wamid.together-%'`)).toBe(5);
    expect(await c.count(`SELECT count(DISTINCT data #>> '{message,wamid}')::int AS n FROM events WHERE project_id = $1 AND name = 'message.received' AND data #>> '{message,wamid}' LIKE 'wamid.together-%'`)).toBe(5);
    expect(await c.conversation()).toEqual({ last_message_at: t.clock.now(), last_inbound_at: t.clock.now() });
  });

  it('When a bot runtime is attached, then the statement puts the message in the bot\'s inbox as its enqueue does', async () => {
    const c = await returningCustomer();
    const now = t.clock.now();
    const timestamp = String(Math.floor(now.getTime() / 1000));
    const content = { timestamp, type: 'text', text: { body: 'hello bot' } };
    const message = { kind: 'message' as const, channelMessageId: 'wamid.for-the-bot', customer: { phone: c.contact.phone }, type: 'text', timestamp, content };
    const result = await storeReturningCustomerMessage(t.db.sql, {
      projectId: c.project.id, message, ids: { phone: c.contact.phone, userId: c.contact.user_id, profileName: 'Ada' },
      content, now, bot: { leaseMs: 60_000, enqueueSql: messageInboxSql },
    });
    expect(result).toMatchObject({ stored: { message: { type: 'text' }, contact: { phone: c.contact.phone, userId: c.contact.user_id, name: 'Ada' }, conversation: { state: 'unstructured' } } });
    const id = (result as { stored: { message: { id: bigint } } }).stored.message.id;
    const { rows } = await t.db.pool.query('SELECT key, kind, message_id, lease_until, attempts, abnormal_runs, created_at FROM bot_inbox WHERE project_id = $1', [c.project.id]);
    expect(rows).toEqual([{ key: `message:${id}`, kind: 'message', message_id: String(id), lease_until: new Date(now.getTime() + 60_000), attempts: 0, abnormal_runs: 0, created_at: now }]);
  });
});
