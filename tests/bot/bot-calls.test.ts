/**
 * The deployed bot receives call events (issue 61, item 1; docs/bot.md, docs/calls.md), through
 * HTTP against the simulated channel: a bot whose `onCall` rejects a call outside opening hours
 * (judged by the event's time, the service's clock: the test moves it) and sends the customer a
 * message, a text inside the 24-hour window and a template outside it; the call ends rejected and
 * the customer gets one message, even when the call notification arrives twice or the bot's run is
 * cut off after it acted (its journal answers the rerun); inside opening hours the same bot lets
 * the call ring; a bot without `onCall` changes nothing; a bot acting on an unknown or ended call
 * gets a clean refusal.
 */
import { describe, expect, it, jest } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { botWorld, type BotProject } from '../support/bots.js';
import { eventually } from '../support/eventually.js';
import { template } from '../support/broadcasts.js';

// A deployed bot's call events take 20 to 28 s on a loaded two-core machine: above jest's default
// 30 s is a hang, not a slow machine. Not a retry.
jest.setTimeout(90_000);

const LIMITS = { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 };

let t: TestApp;
let w: ReturnType<typeof botWorld>;
  // 2026-03-01T12:00Z, a Sunday: the shop below is closed.
useTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS }, (app) => {
  t = app;
  w = botWorld(t);
});

/** Open Monday to Friday, 9:00 to 17:00 UTC, judged at the event's time (ctx.received_at). */
const CLOSED_HOURS_BOT = `
import { calls, log, send, sendText, type CallEventContext, type InboundCall } from './platform/runtime/index.js';

function open(at: Date): boolean {
  const day = at.getUTCDay();
  const hour = at.getUTCHours();
  return day >= 1 && day <= 5 && hour >= 9 && hour < 17;
}

export async function onCall(call: InboundCall, ctx: CallEventContext): Promise<void> {
  log.info('call', call.status, JSON.stringify({ id: call.id, direction: call.direction, from: call.from, result: call.result, conversation: call.conversation.id, contact: call.contact.phone, duration: call.duration_seconds, at: ctx.received_at }));
  if (call.status !== 'ringing' || call.direction !== 'user_initiated' || open(new Date(ctx.received_at))) return;
  const rejected = await calls.reject(call.id);
  if (!rejected.ok) return void log.warn('not rejected', rejected.error.code);
  const text = await sendText(call.from, 'We are closed now: Monday to Friday, 9:00 to 17:00. We will call you back.');
  // A call does not open the 24-hour window: a customer who has not written gets the template.
  if (!text.ok && text.error.code === 'outside_24h_window') {
    const sent = await send({ type: 'template', phone: call.from, template: { name: 'closed_now', language: 'en_US' } });
    if (!sent.ok) log.warn('template not sent', sent.error.code, sent.error.message);
  } else if (!text.ok) log.warn('text not sent', text.error.code, text.error.message);
  LOOP
}
`;

const sim = () => request(t.sim!.url);

async function userCalls(p: BotProject, from: string, deliveries = 1): Promise<string> {
  const res = await sim().post('/_sim/calls').send({ phone_number_id: p.phoneNumberId, from, name: 'Ada', deliveries });
  expect(res.status).toBe(200);
  return res.body.call_id;
}

async function callOf(p: BotProject, callId: string) {
  const res = await request(t.app).get(`/v1/calls/${callId}`).set(w.auth(p.key));
  return res.status === 200 ? res.body.data : null;
}

/** What the simulator was asked to send to `to`: texts as their body, templates as `template:<name>`. */
async function sentTo(p: BotProject, to: string): Promise<string[]> {
  const res = await sim().get(`/_sim/messages?phone_number_id=${p.phoneNumberId}&to=${to}&limit=1000`);
  return (res.body.data as any[]).map((m) => m.payload?.text?.body ?? `template:${m.payload?.template?.name}`);
}

/** The call actions WhatsApp (the simulator) received for the number. */
async function callActions(p: BotProject, callId: string): Promise<string[]> {
  const res = await sim().get('/_sim/requests?limit=1000');
  return (res.body.data as Array<{ method: string; path: string; body: any }>)
    .filter((r) => r.method === 'POST' && r.path === `/${p.phoneNumberId}/calls` && r.body?.call_id === callId).map((r) => r.body.action);
}

/** The bot log lines of the project's call events (`call <status> {…}`), oldest first. */
async function callLines(p: BotProject): Promise<Array<{ status: string; call: any }>> {
  const logs = await w.botLogs(p.projectId);
  return logs.filter((l) => l.message.startsWith('call ')).reverse().map((l) => {
    const [, status, json] = /^call (\S+) (.*)$/.exec(l.message)!;
    return { status, call: JSON.parse(json) };
  });
}

const SCOPES = ['code:read', 'code:write', 'tables:read', 'messages:send', 'conversations:read'];

describe('a deployed bot with onCall', () => {
  it('When a customer who wrote calls outside opening hours, notified twice, then the bot rejects the call once and texts them once; the call ends rejected and the bot hears of the ringing and the end once each', async () => {
    const p = await w.botProject(CLOSED_HOURS_BOT.replace('LOOP', ''), { scopes: SCOPES });
    await w.inbound(p.phoneNumberId, '5511977770001', 'hello');
    const callId = await userCalls(p, '5511977770001', 2);

    const ended = await eventually(() => callOf(p, callId), (c) => c?.ended_at != null, 15_000, 'the rejected call ended');
    expect(ended).toMatchObject({ status: 'rejected', duration_seconds: null });
    await eventually(() => callLines(p), (l) => l.length >= 2, 15_000, 'the bot heard of the end');
    await t.bot!.whenIdle();

    expect(await callActions(p, callId)).toEqual(['reject']);
    expect(await sentTo(p, '5511977770001')).toEqual(['We are closed now: Monday to Friday, 9:00 to 17:00. We will call you back.']);
    const lines = await callLines(p);
    expect(lines.map((l) => l.status)).toEqual(['ringing', 'ended']);
    expect(lines[0].call).toEqual({ id: callId, direction: 'user_initiated', from: '5511977770001', result: null, conversation: ended.conversation_id, contact: '5511977770001', duration: null, at: t.clock.now().toISOString() });
    expect(lines[1].call).toMatchObject({ id: callId, result: 'rejected' });
    // Handled: nothing left in the bot's inbox, nothing in its log but its own lines.
    expect(await w.inboxRows(p.projectId)).toEqual([]);
    expect((await w.botLogs(p.projectId)).filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
  });

  it('When a customer who never wrote calls outside opening hours, then the text is refused outside the 24-hour window and the bot sends the template instead', async () => {
    const p = await w.botProject(CLOSED_HOURS_BOT.replace('LOOP', ''), { scopes: SCOPES });
    await template(t, p.projectId, 'closed_now', 'We are closed now. We will call you back.', 'UTILITY');
    const callId = await userCalls(p, '5511977770002');
    await eventually(() => callOf(p, callId), (c) => c?.status === 'rejected', 15_000, 'the call rejected');
    await eventually(() => sentTo(p, '5511977770002'), (s) => s.length > 0, 15_000, 'the template sent');
    await t.bot!.whenIdle();
    expect(await sentTo(p, '5511977770002')).toEqual(['template:closed_now']);
  });

  it('When the bot\'s run is cut off after it rejected the call and texted, then the reruns are answered from its journal: one reject reaches WhatsApp, one text the customer', async () => {
    // Every run loops past the event's time limit after acting: run again by reclaims, then set aside.
    const p = await w.botProject(CLOSED_HOURS_BOT.replace('LOOP', 'for (;;) {}'), { scopes: SCOPES, force: true });
    await w.inbound(p.phoneNumberId, '5511977770003', 'hello');
    const callId = await userCalls(p, '5511977770003');
    await eventually(() => callOf(p, callId), (c) => c?.status === 'rejected', 15_000, 'the call rejected');
    const rows = await w.settleAll(p.projectId);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.set_aside)).toBe(true);
    const logs = await w.botLogs(p.projectId);
    expect(logs.filter((l) => l.kind === 'timeout' || l.kind === 'set_aside').length).toBeGreaterThanOrEqual(2);
    // Each rerun's reject was answered from the journal as it was the first time (not refused as a second reject).
    expect(logs.filter((l) => l.message.startsWith('not rejected'))).toEqual([]);
    expect(logs.filter((l) => l.message.startsWith('call ringing')).length).toBeGreaterThanOrEqual(2);
    expect(await callActions(p, callId)).toEqual(['reject']);
    expect(await sentTo(p, '5511977770003')).toEqual(['We are closed now: Monday to Friday, 9:00 to 17:00. We will call you back.']);
  });

  it('When a customer calls inside opening hours, then the same bot lets the call ring: no action, no message', async () => {
    const p = await w.botProject(CLOSED_HOURS_BOT.replace('LOOP', ''), { scopes: SCOPES });
    // Monday 2026-03-02, 10:00 UTC.
    t.clock.set(Math.max(t.clock.now().getTime(), Date.parse('2026-03-02T10:00:00Z')));
    expect(t.clock.now().toISOString()).toBe('2026-03-02T10:00:00.000Z');
    const callId = await userCalls(p, '5511977770004');
    await eventually(() => callLines(p), (l) => l.length === 1, 15_000, 'the bot heard of the call');
    await t.bot!.whenIdle();
    expect((await callOf(p, callId)).status).toBe('ringing');
    expect(await callActions(p, callId)).toEqual([]);
    expect(await sentTo(p, '5511977770004')).toEqual([]);
  });
});

describe('bots and calls otherwise', () => {
  it('When the deployed bot has no onCall, then a call changes nothing: it rings, ends missed, nothing is sent, the inbox empties', async () => {
    const p = await w.botProject(`export async function onMessage(): Promise<void> {}`, { scopes: SCOPES });
    const callId = await userCalls(p, '5511977770005');
    expect((await callOf(p, callId)).status).toBe('ringing');
    expect((await sim().post(`/_sim/calls/${callId}/hangup`).send({})).status).toBe(200);
    await eventually(() => callOf(p, callId), (c) => c?.status === 'missed', 15_000, 'the call missed');
    await eventually(() => w.inboxRows(p.projectId), (r) => r.length === 0, 15_000, 'the inbox emptied');
    expect(await callActions(p, callId)).toEqual([]);
    expect(await sentTo(p, '5511977770005')).toEqual([]);
    expect(await w.botLogs(p.projectId)).toEqual([]);
  });

  it('When a project has no deployed bot, then its calls put nothing into the bot inbox', async () => {
    const project = await t.admin.project();
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const res = await sim().post('/_sim/calls').send({ phone_number_id: channel.phoneNumberId, from: '5511977770006' });
    expect(res.status).toBe(200);
    expect(await t.db.prisma.call.count({ where: { projectId: project.id } })).toBe(1);
    expect(await w.inboxRows(project.id)).toEqual([]);
  });

  it('When the bot acts on an unknown call, or on a call that already ended, then it gets a clean refusal (not_found, conflict) and nothing reaches WhatsApp', async () => {
    const p = await w.botProject(`
import { calls, sendText, type InboundCall, type InboundMessage } from './platform/runtime/index.js';

export async function onMessage(m: InboundMessage): Promise<void> {
  const r = await calls.reject((m.text ?? '').trim());
  await sendText(m.from, r.ok ? 'rejected ' + r.call.status : 'refused ' + r.error.code);
}
export async function onCall(call: InboundCall): Promise<void> {
  if (call.status !== 'missed') return;
  const r = await calls.reject(call.id);
  const t = await calls.terminate(call.id);
  await sendText(call.from, [r, t].map((x) => (x.ok ? 'done' : x.error.code)).join(' '));
}
`, { scopes: SCOPES });
    await w.inbound(p.phoneNumberId, '5511977770007', 'wacid.nothing-here');
    await eventually(() => sentTo(p, '5511977770007'), (s) => s.length === 1, 15_000, 'the bot answered');
    expect(await sentTo(p, '5511977770007')).toEqual(['refused not_found']);

    const callId = await userCalls(p, '5511977770007');
    expect((await sim().post(`/_sim/calls/${callId}/hangup`).send({})).status).toBe(200);
    await eventually(() => sentTo(p, '5511977770007'), (s) => s.length === 2, 15_000, 'the bot answered the missed call');
    await t.bot!.whenIdle();
    expect((await sentTo(p, '5511977770007'))[1]).toBe('conflict conflict');
    expect(await callActions(p, callId)).toEqual([]);
    expect((await w.botLogs(p.projectId)).filter((l) => l.level === 'error')).toEqual([]);
  });
});
