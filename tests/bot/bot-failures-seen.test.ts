/**
 * Failures a person sees (issue 60, item 2): a slow backend leaves the bot time to answer and is
 * called once, even when the event runs again; a send the service refuses is in the bot log with
 * its code though the bot ignored the result. Against the real sandbox, PostgreSQL and the simulator.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { botWorld } from '../support/bots.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
let shop: http.Server;
let shopUrl: string;
let shopCalls = 0;
beforeAll(async () => {
  // The production limits: 5 s an event.
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 5000 }, config: { devAllowPrivateTargets: true } });
  // A shop whose order API takes 10 s.
  shop = http.createServer((_req, res) => {
    shopCalls++;
    const timer = setTimeout(() => res.end('{"status":"shipped"}'), 10_000);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  w = botWorld(t);
});
afterAll(async () => {
  shop.closeAllConnections();
  await new Promise((r) => shop.close(r));
  await t.close();
});

let w: ReturnType<typeof botWorld>;
const botProject = (source: string, force = false) => w.botProject(source, { force, scopes: ['code:read', 'code:write', 'messages:send'] });
const inbound = (phoneNumberId: string, from: string, text: string) => w.inbound(phoneNumberId, from, text);
const sentTexts = (phoneNumberId: string) => w.sentTexts(phoneNumberId);
const botLogs = (projectId: string) => w.botLogs(projectId);

const ORDER_BOT = (after: string) => `import { http, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const r = await http.fetch(${JSON.stringify('SHOP')} + '/orders/42');
  await sendText(m.from, r.ok ? 'order 42: ' + r.body : 'The shop is slow right now (' + r.error.code + '); we will write again.');
  ${after}
}
`;

describe('a slow shop', () => {
  timingBound('the customer answered within 5 s').it('When the shop takes 10 s, then the customer is answered within the event and the shop is called once', async () => {
    const a = await botProject(ORDER_BOT('').replace('"SHOP"', JSON.stringify(shopUrl)));
    shopCalls = 0;
    const started = performance.now();
    await inbound(a.phoneNumberId, '14155556001', 'order 42');
    await t.bot!.whenIdle();
    const took = performance.now() - started;
    expect(await sentTexts(a.phoneNumberId)).toEqual(['The shop is slow right now (timeout); we will write again.']);
    expect(shopCalls).toBe(1);
    // Answered by the fetch's default timeout (3 s), inside the event's 5 s: no timeout, no retry.
    expect(took).toBeLessThan(5000);
    expect((await botLogs(a.projectId)).filter((l) => l.kind === 'timeout')).toEqual([]);
  });

  it('When an event that fetched then overruns is run again, then the timed-out fetch is answered from its journal: the shop is called once in three runs', async () => {
    // Forced: its sample run loops too.
    const a = await botProject(ORDER_BOT('for (;;) {}').replace('"SHOP"', JSON.stringify(shopUrl)), true);
    shopCalls = 0;
    await inbound(a.phoneNumberId, '14155556002', 'order 42');
    for (let run = 0; run < 4; run++) {
      await t.bot!.whenIdle();
      t.clock.advance(120_000);
      await t.bot!.reclaim();
    }
    await t.bot!.whenIdle();
    const { rows } = await t.db.pool.query('SELECT abnormal_runs, set_aside_at IS NOT NULL AS set_aside FROM bot_inbox WHERE project_id = $1', [a.projectId]);
    expect(rows).toEqual([{ abnormal_runs: 3, set_aside: true }]);
    expect(shopCalls).toBe(1);
    // The reply was a send: journaled too, so the customer got it once.
    expect(await sentTexts(a.phoneNumberId)).toEqual(['The shop is slow right now (timeout); we will write again.']);
  }, 60_000);
});

describe('a refused send', () => {
  it('When the service refuses a send the bot does not check, then the bot log says so with its code', async () => {
    const a = await botProject(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  // To a number that never wrote: outside any 24-hour window. The result is ignored.
  await sendText('14155556999', 'hello stranger');
  await sendText(m.from, 'done');
}
`);
    await inbound(a.phoneNumberId, '14155556003', 'hi');
    await t.bot!.whenIdle();
    expect(await sentTexts(a.phoneNumberId)).toEqual(['done']);
    const refused = (await botLogs(a.projectId)).filter((l) => /^A send to 14155556999 was refused \(/.test(l.message));
    expect(refused).toHaveLength(1);
    expect(refused[0].message).toMatch(/was refused \([a-z0-9_]+\): \S/);
  });
});
