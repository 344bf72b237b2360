/**
 * Thread control (issue 61, item 4), over HTTP against the simulated channel and the deployed bot:
 * the API passes a customer's thread to another app (e.g. Meta's Business Agent), takes it back or
 * releases it; while another app holds it, sends are refused before the channel (409
 * `thread_held_elsewhere`) and the customer's messages arrive as Meta's `standby`, stored without
 * waking the bot; Meta's `messaging_handovers` notifications (delivered twice, or racing) move the
 * holder once; the conversation shows who holds it.
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
const AGENT = '7700112233';

async function shop(bot = false) {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'conversations:read', 'conversations:write', 'messages:send'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  if (bot) expect((await request(t.app).post('/v1/deployments').set(auth(key)).send({})).status).toBeLessThan(300);
  return { projectId: project.id, key, pnid: channel.phoneNumberId, appId: channel.appId };
}

async function sentTo(pnid: string, to: string): Promise<string[]> {
  const res = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${pnid}&to=${to}`);
  return (res.body.data as Array<{ payload: any }>).map((m) => m.payload.text?.body);
}

async function conversationOf(key: string, phone: string) {
  const res = await request(t.app).get(`/v1/conversations?phone=%2B${phone}`).set(auth(key));
  return res.body.data.conversations[0];
}

const control = (key: string, id: number, body: object) => request(t.app).post(`/v1/conversations/${id}/thread-control`).set(auth(key)).send(body);
const send = (key: string, phone: string, content: string) => request(t.app).post('/v1/messages').set(auth(key)).send({ type: 'text', phone: `+${phone}`, content });
const holders = async (pnid: string) => (await request(t.sim!.url).get(`/_sim/phone-numbers/${pnid}/thread-holders`)).body.data;
const threadEvents = async (projectId: string) =>
  (await t.db.pool.query('SELECT data FROM events WHERE project_id = $1 AND name = $2 ORDER BY created_at, id', [projectId, 'conversation.thread_control'])).rows.map((r) => r.data);

describe('thread control', () => {
  it('When the thread is passed to another app, then sends are refused before the channel, the customer’s messages are stored as standby without the bot, and taking it back restores both', async () => {
    const s = await shop(true);
    const phone = '14155550801';
    await inbound(t, s.pnid, phone, 'hello');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello')]);
    const conv = await conversationOf(s.key, phone);
    expect(conv.thread).toEqual({ held_by: 'us', app_id: null, since: null });

    const passed = await control(s.key, conv.id, { action: 'pass', target_app_id: AGENT, metadata: 'order #1042' });
    expect(passed.status).toBe(200);
    expect(passed.body.data).toMatchObject({ conversation_id: conv.id, action: 'pass', thread: { held_by: 'other_app', app_id: AGENT }, previous_holder_app_id: null });
    expect(await holders(s.pnid)).toEqual([{ wa_id: phone, app_id: AGENT }]);
    expect((await conversationOf(s.key, phone)).thread).toMatchObject({ held_by: 'other_app', app_id: AGENT });

    // Held elsewhere: a send, a second pass and a release are refused before Graph.
    const refused = await send(s.key, phone, 'Are you still there?');
    expect([refused.status, refused.body.error?.code, refused.body.error?.details?.holder_app_id]).toEqual([409, 'thread_held_elsewhere', AGENT]);
    for (const body of [{ action: 'pass', target_app_id: '555' }, { action: 'release' }]) {
      const again = await control(s.key, conv.id, body);
      expect([again.status, again.body.error?.code]).toEqual([409, 'thread_held_elsewhere']);
    }
    expect(await holders(s.pnid)).toEqual([{ wa_id: phone, app_id: AGENT }]);

    // The customer writes to the agent: Meta sends it to us as standby; stored, the bot not woken.
    await inbound(t, s.pnid, phone, 'I need a refund');
    await t.bot!.whenIdle();
    const messages = (await request(t.app).get(`/v1/conversations/${conv.id}/messages`).set(auth(s.key))).body.data.messages;
    expect(messages[0]).toMatchObject({ direction: 'inbound', content: { text: { body: 'I need a refund' } } });
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello')]);

    t.clock.advance(1000); // the events' order is their time
    const taken = await control(s.key, conv.id, { action: 'take' });
    expect([taken.status, taken.body.data.thread.held_by, taken.body.data.previous_holder_app_id]).toEqual([200, 'us', AGENT]);
    expect(await holders(s.pnid)).toEqual([]);
    expect((await send(s.key, phone, 'Refund on its way.')).status).toBe(200);
    await inbound(t, s.pnid, phone, 'thanks');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello'), 'Refund on its way.', said('thanks')]);
    expect((await threadEvents(s.projectId)).map((e) => [e.action, e.by, e.holder.held_by])).toEqual([['pass', 'api', 'other_app'], ['take', 'api', 'us']]);
  });

  it('When the request is wrong, then 400 with the field, 404 for another conversation, and nothing reaches the channel', async () => {
    const s = await shop();
    const phone = '14155550811';
    await inbound(t, s.pnid, phone, 'hi');
    const conv = await conversationOf(s.key, phone);
    for (const body of [{}, { action: 'steal' }, { action: 'pass' }, { action: 'take', target_app_id: AGENT }, { action: 'pass', target_app_id: AGENT, metadata: 'x'.repeat(2001) }]) {
      const res = await control(s.key, conv.id, body);
      expect([res.status, res.body.error?.code]).toEqual([400, 'invalid_request']);
    }
    const missing = await control(s.key, 999999999, { action: 'take' });
    expect([missing.status, missing.body.error?.code]).toEqual([404, 'not_found']);
    const readOnly = (await t.admin.key(s.projectId, ['conversations:read'])).secret;
    expect((await control(readOnly, conv.id, { action: 'take' })).status).toBe(403);
    expect(await holders(s.pnid)).toEqual([]);
    // Releasing a thread we hold is allowed; it stays ours.
    const released = await control(s.key, conv.id, { action: 'release' });
    expect([released.status, released.body.data.thread.held_by]).toEqual([200, 'us']);
  });

  it('When another app takes and releases the thread (Meta’s handover notifications, each delivered twice and racing), then the conversation shows the holder once per change and standby messages never wake the bot', async () => {
    const s = await shop(true);
    const phone = '14155550821';
    await inbound(t, s.pnid, phone, 'hello');
    await t.bot!.whenIdle();
    const conv = await conversationOf(s.key, phone);
    const handover = (body: object) => request(t.sim!.url).post(`/_sim/phone-numbers/${s.pnid}/handovers`).send({ wa_id: phone, ...body });
    const take = { action: 'take', previous_owner_app_id: s.appId, new_owner_app_id: AGENT };
    const answers = await Promise.all([handover(take), handover(take)]);
    expect(answers.map((r) => [r.status, r.body.delivered])).toEqual([[200, true], [200, true]]);
    expect((await conversationOf(s.key, phone)).thread).toMatchObject({ held_by: 'other_app', app_id: AGENT });

    await inbound(t, s.pnid, phone, 'talking to the agent');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello')]);
    expect((await send(s.key, phone, 'hi')).status).toBe(409);

    t.clock.advance(1000); // the events' order is their time
    const release = { action: 'release', previous_owner_app_id: AGENT };
    await handover(release);
    await handover(release);
    expect((await conversationOf(s.key, phone)).thread).toMatchObject({ held_by: 'us', app_id: null });
    expect((await threadEvents(s.projectId)).map((e) => [e.action, e.by, e.holder.app_id])).toEqual([['take', 'channel', AGENT], ['release', 'channel', null]]);
    await inbound(t, s.pnid, phone, 'back');
    await t.bot!.whenIdle();
    expect(await sentTo(s.pnid, phone)).toEqual([said('hello'), said('back')]);
  });
});
