/**
 * A number shared with the WhatsApp Business app (issue 61, item 3), over HTTP against the
 * simulated channel and the deployed bot: Meta's `smb_message_echoes`, `history` and
 * `smb_app_state_sync` notifications, each stored once when delivered twice (and when two
 * deliveries race, as two instances would take them); an echo is the business's outbound message
 * by `business_app` and silences the bot for the conversation, leaving the customer's window as it
 * was; history is marked, never wakes the bot and never opens the window; the app's address book
 * names contacts and never deletes one.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { QUICK_BOT_APP } from '../support/bots.js';
import { inbound } from '../support/inbound.js';

let t: TestApp;
useTestApp(QUICK_BOT_APP, (app) => (t = app));

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const said = (text: string) => `You said: ${text}. Write "menu" for options.`;
let seq = 0;
const wamid = (what: string) => `wamid.${what}${Date.now()}${++seq}`;

async function shop(bot = false) {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'conversations:read', 'messages:send', 'contacts:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  if (bot) expect((await request(t.app).post('/v1/deployments').set(auth(key)).send({})).status).toBeLessThan(300);
  return { projectId: project.id, key, pnid: channel.phoneNumberId };
}

async function sim(path: string, body: object) {
  const res = await request(t.sim!.url).post(path).send(body);
  expect([res.status, res.body.delivered ?? true]).toEqual([200, true]);
  return res.body;
}

async function sentTo(pnid: string, to: string): Promise<string[]> {
  const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}&to=${to}`);
  return (res.body.data as Array<{ payload: any }>).map((m) => m.payload.text?.body ?? `template ${m.payload.template?.name}`);
}

async function conversationOf(key: string, phone: string) {
  const res = await request(t.app).get(`/v1/conversations?phone=%2B${phone}`).set(auth(key));
  expect(res.status).toBe(200);
  return res.body.data.conversations[0];
}

async function messagesOf(key: string, id: number) {
  const res = await request(t.app).get(`/v1/conversations/${id}/messages`).set(auth(key));
  expect(res.status).toBe(200);
  return res.body.data.messages as any[];
}

const eventCount = async (projectId: string, name: string) =>
  (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = $2', [projectId, name])).rows[0].n;

describe('coexistence with the WhatsApp Business app', () => {
  it('When a person replies from the Business app (the echo delivered twice), then one outbound message by business_app is stored, the window is unchanged, and the bot stays quiet for the conversation', async () => {
    const s = await shop(true);
    const phone = '14155550701';
    await inbound(t, s.pnid, phone, 'hello');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello')]);
    const before = await conversationOf(s.key, phone);

    const id = wamid('ECHO');
    await sim(`/_sim/phone-numbers/${s.pnid}/echoes`, { to: phone, text: 'Hi, Sam from the shop here.', id });
    await sim(`/_sim/phone-numbers/${s.pnid}/echoes`, { to: phone, text: 'Hi, Sam from the shop here.', id });

    const messages = await messagesOf(s.key, before.id);
    const echoes = messages.filter((m) => m.wamid === id);
    expect(echoes).toHaveLength(1);
    expect(echoes[0]).toMatchObject({ direction: 'outbound', type: 'text', status: 'sent', content: { text: { body: 'Hi, Sam from the shop here.' } }, author: { kind: 'business_app' } });
    expect(echoes[0].history).toBeUndefined();
    const after = await conversationOf(s.key, phone);
    expect(after.state).toBe('handover');
    // The window is the customer's: an echo neither opens nor moves it.
    expect([after.last_inbound_at, after.window_expires_at]).toEqual([before.last_inbound_at, before.window_expires_at]);
    expect(await eventCount(s.projectId, 'message.echo')).toBe(1);
    const single = await request(t.app).get(`/v1/messages/${encodeURIComponent(id)}`).set(auth(s.key));
    expect([single.status, single.body.data?.author?.kind]).toEqual([200, 'business_app']);

    // The customer's next message is stored, and the bot does not answer it.
    await inbound(t, s.pnid, phone, 'thanks Sam');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello')]);
    expect((await messagesOf(s.key, before.id)).map((m) => m.content.text?.body)).toContain('thanks Sam');
  });

  it('When two deliveries of one echo race (two instances), then it is stored once and raised once', async () => {
    const s = await shop();
    const phone = '14155550711';
    await inbound(t, s.pnid, phone, 'hi');
    const id = wamid('RACE');
    await Promise.all([1, 2, 3].map(() => sim(`/_sim/phone-numbers/${s.pnid}/echoes`, { to: phone, text: 'On it.', id })));
    const conv = await conversationOf(s.key, phone);
    expect((await messagesOf(s.key, conv.id)).filter((m) => m.wamid === id)).toHaveLength(1);
    expect(await eventCount(s.projectId, 'message.echo')).toBe(1);
  });

  it('When the history sync arrives (twice), then past messages are stored once, marked history, either way, without waking the bot or opening the window; a declined history stores nothing', async () => {
    const s = await shop(true);
    const phone = '14155550721';
    const [a, b, c] = [wamid('HIN'), wamid('HOUT'), wamid('HIN2')];
    const now = Math.floor(t.clock.now().getTime() / 1000);
    const chunk = {
      phase: 0, chunk_order: 1, progress: 100,
      threads: [{ id: phone, messages: [
        { id: a, text: 'Do you have it in blue?', timestamp: now - 7200 },
        { id: b, from_business: true, text: 'Yes, size M and L.', timestamp: now - 7100, status: 'READ' },
        { id: c, text: 'Great, thanks', timestamp: now - 7000 },
      ] }],
    };
    await sim(`/_sim/phone-numbers/${s.pnid}/history`, chunk);
    await sim(`/_sim/phone-numbers/${s.pnid}/history`, chunk);
    await sim(`/_sim/phone-numbers/${s.pnid}/history`, { declined: true });
    await t.bot!.whenIdle();

    const conv = await conversationOf(s.key, phone);
    expect([conv.last_inbound_at, conv.window_open, conv.state]).toEqual([null, false, 'unstructured']);
    const messages = await messagesOf(s.key, conv.id);
    expect(messages.map((m) => [m.wamid, m.direction, m.status, m.history, m.author?.kind])).toEqual([
      [c, 'inbound', 'received', true, 'customer'],
      [b, 'outbound', 'read', true, 'business_app'],
      [a, 'inbound', 'received', true, 'customer'],
    ]);
    expect(messages[2].created_at).toBe(new Date((now - 7200) * 1000).toISOString());
    // The bot was handed none of it.
    expect(await sentTo(s.pnid, phone)).toEqual([]);
    expect(await eventCount(s.projectId, 'message.received')).toBe(0);

    // The customer writing now is a new message: the bot answers it, and the window opens.
    await inbound(t, s.pnid, phone, 'is it still there?');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('is it still there?')]);
    const live = await conversationOf(s.key, phone);
    expect(live.window_open).toBe(true);
    const latest = (await messagesOf(s.key, conv.id))[0];
    expect(latest.history).toBeUndefined();
  });

  it('When the Business app’s address book changes (twice), then a known contact takes the name, and a removal there deletes nothing', async () => {
    const s = await shop();
    const phone = '14155550731';
    await inbound(t, s.pnid, phone, 'hi');
    const sync = { contacts: [{ phone_number: phone, full_name: 'Ada Lovelace', first_name: 'Ada' }, { phone_number: '14155550739', full_name: 'Nobody Here' }] };
    await sim(`/_sim/phone-numbers/${s.pnid}/state-sync`, sync);
    await sim(`/_sim/phone-numbers/${s.pnid}/state-sync`, sync);
    const conv = await conversationOf(s.key, phone);
    expect(conv.contact.name).toBe('Ada Lovelace');
    await sim(`/_sim/phone-numbers/${s.pnid}/state-sync`, { contacts: [{ phone_number: phone, full_name: 'Ada Lovelace', action: 'remove' }] });
    const still = await request(t.app).get(`/v1/conversations/${conv.id}`).set(auth(s.key));
    expect([still.status, still.body.data.conversation.contact.name]).toEqual([200, 'Ada Lovelace']);
    // An address-book entry that never wrote is not made a contact.
    expect((await request(t.app).get('/v1/conversations?phone=%2B14155550739').set(auth(s.key))).body.data.conversations).toEqual([]);
  });
});
