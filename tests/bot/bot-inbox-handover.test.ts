/**
 * Bot events are held by generation across instances (lib/bot/inbox.ts): an instance whose lease on a
 * waiting event ran out (a stall, an outage) loses it to the instance that reclaimed it, and does not
 * run it as well when its turn comes. Two apps on one database and one manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { botWorld, until } from '../support/bots.js';

const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 3000 };
// One event a minute: a second customer's message waits in the instance that received it until the
// minute turns on the manual clock.
const CONFIG = { botEventsPerMinute: 1 };

let t: TestApp;
let u: TestApp;
let w: ReturnType<typeof botWorld>;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS, config: CONFIG });
  t.clock.set(new Date('2026-03-01T12:00:10Z'));
  u = await startTestApp({ simulator: true, bot: LIMITS, config: CONFIG, clock: t.clock });
  w = botWorld(t);
});
afterAll(async () => {
  await u?.close();
  await t?.close();
});

// Logs run again when an event runs again (they are not journaled): one line per run. (No send:
// each test app seals channel tokens with a key of its own.)
const LOGGING = `import { log, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await log.info('ran ' + m.text);
  // Held a while, so the other instance's turn comes while this run still holds the event.
  const until = Date.now() + 1000;
  while (m.text === 'second' && Date.now() < until) { /* busy */ }
}
`;
const ran = async (projectId: string) => (await w.botLogs(projectId)).filter((l) => l.message.startsWith('ran ')).map((l) => l.message).sort();

describe('an event held by two instances in turn', () => {
  it('When another instance reclaims an event whose lease ran out while it waited here, then it runs there, and not here when its turn comes', async () => {
    const p = await w.botProject(LOGGING);
    await w.inbound(p.phoneNumberId, '15550001001', 'first');
    await until('the first handled', async () => (await ran(p.projectId)).length === 1);
    // The second customer's message waits here for the next minute (BOT_EVENTS_PER_MINUTE 1).
    await w.inbound(p.phoneNumberId, '15550001002', 'second');
    await until('the second waiting', async () => (await w.botLogs(p.projectId)).some((l) => l.message.includes('wait')));
    const waiting = (await t.db.pool.query(`SELECT key, attempts FROM bot_inbox WHERE project_id = $1`, [p.projectId])).rows;
    expect(waiting).toEqual([expect.objectContaining({ attempts: 0 })]);

    // This instance stalls past its lease (its renewals did not land): the other reclaims the event.
    await t.db.pool.query(`UPDATE bot_inbox SET lease_until = $2 WHERE project_id = $1`, [p.projectId, new Date(t.clock.now().getTime() - 1)]);
    expect(await u.bot!.reclaim()).toBe(1);
    // The minute turns: both instances' gates open; the event runs on the reclaiming instance only.
    t.clock.set(new Date('2026-03-01T12:01:05Z'));
    await Promise.all([u.bot!.whenIdle(), t.bot!.whenIdle()]);
    expect(await ran(p.projectId)).toEqual(['ran first', 'ran second']);
    expect((await t.db.pool.query(`SELECT count(*)::int AS n FROM bot_inbox WHERE project_id = $1`, [p.projectId])).rows[0].n).toBe(0);
  }, 60_000);

  it('When an instance shuts down with events waiting, then it gives them back at once and another instance runs each once', async () => {
    t.clock.set(new Date('2026-03-01T12:05:10Z'));
    const p = await w.botProject(LOGGING);
    await w.inbound(p.phoneNumberId, '15550002001', 'one');
    await until('the first handled', async () => (await ran(p.projectId)).length === 1);
    await w.inbound(p.phoneNumberId, '15550002002', 'two');
    await w.inbound(p.phoneNumberId, '15550002003', 'three');
    await until('two waiting', async () => Number((await t.db.pool.query(`SELECT count(*) AS n FROM bot_inbox WHERE project_id = $1`, [p.projectId])).rows[0].n) === 2);
    // The shutdown: no clock moved, no lease ran out; the waiting events are the other's at once.
    await t.bot!.close();
    const leases = (await t.db.pool.query(`SELECT lease_until <= $2 AS free FROM bot_inbox WHERE project_id = $1`, [p.projectId, t.clock.now()])).rows;
    expect(leases).toEqual([{ free: true }, { free: true }]);
    expect(await u.bot!.reclaim()).toBe(2);
    // One event a minute there too: the minutes turn until both have run.
    for (let minute = 6; minute <= 8; minute++) {
      t.clock.set(new Date(`2026-03-01T12:0${minute}:05Z`));
      await until(`a run in minute ${minute}`, async () => (await ran(p.projectId)).length >= Math.min(3, minute - 4));
    }
    await u.bot!.whenIdle();
    expect(await ran(p.projectId)).toEqual(['ran one', 'ran three', 'ran two']);
    expect((await t.db.pool.query(`SELECT count(*)::int AS n FROM bot_inbox WHERE project_id = $1`, [p.projectId])).rows[0].n).toBe(0);
  }, 60_000);
});
