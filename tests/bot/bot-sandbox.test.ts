/**
 * The sandbox itself (lib/sandbox/sandbox.ts) and the bot log: no way out of the isolate except the
 * helpers, limits, and the log's retention per project.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { scaffoldFiles } from '../../lib/code/scaffold.js';
import { buildTree } from '../../lib/deploy/build.js';
import { Sandbox } from '../../lib/sandbox/sandbox.js';
import { writeBotLog } from '../../lib/bot/helpers.js';
import { startTestApp, type TestApp } from '../support/app.js';

async function sandboxOf(bot: string, calls: Array<[string, unknown]>) {
  const files = scaffoldFiles();
  files.set('src/bot.ts', bot);
  const built = await buildTree(files);
  if (!built.ok) throw new Error(JSON.stringify(built.diagnostics));
  return Sandbox.create(built.bundle, built.sourceMap, async (op, args) => {
    calls.push([op, JSON.parse(args)]);
    return JSON.stringify({ ok: true, value: op === 'send' ? { ok: true, id: 'wamid.1' } : true });
  }, { memoryMb: 16, startupTimeoutMs: 500, eventTimeoutMs: 1000 });
}

const EVENT = JSON.stringify({ type: 'message', message: { id: 'w1', from: '15550001', type: 'text', text: 'hi', raw: {}, conversation: { id: 7, state: 'unstructured' }, contact: { phone: '15550001', name: null }, received_at: '2026-03-01T12:00:00Z' } });

describe('Sandbox', () => {
  it('When the bot looks for Node, the network, timers or the file system, then none is there; only the helpers reach the host', async () => {
    const calls: Array<[string, unknown]> = [];
    const sandbox = await sandboxOf(`import { log } from './platform/runtime/index.js';
export async function onMessage(): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const found = ['process', 'require', 'module', 'fetch', 'XMLHttpRequest', 'WebSocket', 'setTimeout', 'setInterval', 'Buffer', '__dirname']
    .filter((name) => typeof g[name] !== 'undefined');
  let imported = 'refused';
  try {
    await (new Function('return import("node:fs")'))();
    imported = 'loaded';
  } catch {
    imported = 'refused';
  }
  log.info(JSON.stringify({ found, imported }));
}
`, calls);
    const outcome = await sandbox.dispatch(EVENT);
    sandbox.dispose();
    expect(outcome.status).toBe('ok');
    expect(calls).toEqual([['log', { level: 'info', message: JSON.stringify({ found: [], imported: 'refused' }) }]]);
  });

  it('When the sandbox was stopped by its time limit, then it reports unusable, and a new one works', async () => {
    const calls: Array<[string, unknown]> = [];
    const looping = await sandboxOf('export function onMessage(): void { for (;;) {} }\n', calls);
    const outcome = await looping.dispatch(EVENT);
    expect(outcome.status).toBe('timeout');
    expect(outcome.durationMs).toBeGreaterThanOrEqual(900);
    expect(looping.usable).toBe(false);
    const fresh = await sandboxOf(`import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> { await sendText(m.from, 'ok'); }
`, calls);
    expect((await fresh.dispatch(EVENT)).status).toBe('ok');
    fresh.dispose();
    expect(calls).toEqual([['send', { type: 'text', phone: '15550001', content: 'ok' }]]);
  });
});

describe('Sandbox deadline', () => {
  it('When a helper call (the service) is slow past the deadline, then the event is not stopped; a bot that never resolves is', async () => {
    const files = scaffoldFiles();
    files.set('src/bot.ts', `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'slow service');
  if (m.text === 'hang') await new Promise<void>(() => undefined);
}
`);
    const built = await buildTree(files);
    if (!built.ok) throw new Error('build');
    const slowHost = async (op: string) => {
      if (op === 'send') await new Promise((r) => setTimeout(r, 1600));
      return JSON.stringify({ ok: true, value: { ok: true, id: 'wamid.slow' } });
    };
    const limits = { memoryMb: 16, startupTimeoutMs: 500, eventTimeoutMs: 1000 };
    const sandbox = await Sandbox.create(built.bundle, built.sourceMap, slowHost, limits);
    const ok = await sandbox.dispatch(EVENT);
    expect(ok.status).toBe('ok');
    expect(ok.durationMs).toBeGreaterThan(1500);
    const hang = await sandbox.dispatch(EVENT.replace('"text":"hi"', '"text":"hang"'));
    // With its message, so a failure says how the event ended instead.
    expect({ status: hang.status, message: (hang as { message?: string }).message }).toEqual({ status: 'timeout', message: expect.stringContaining('did not finish') });
    expect(hang.durationMs).toBeLessThan(limits.eventTimeoutMs * 6);
  });

  it('When a helper\'s answer arrives while the bot loops on another answer, then the event is stopped at its deadline and the process\'s timers keep running', async () => {
    // The loop starts on the quick answer; the slow one's copy-in must not wait on the looping isolate
    // on this thread (it did: the process froze and its supervisor killed it).
    const files = scaffoldFiles();
    files.set('src/bot.ts', `import { emit, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  void emit('quick').then(() => { for (;;) {} });
  await sendText(m.from, 'slow');
}
`);
    const built = await buildTree(files);
    if (!built.ok) throw new Error('build');
    const host = async (op: string) => {
      await new Promise((r) => setTimeout(r, op === 'send' ? 300 : 10));
      return JSON.stringify({ ok: true, value: op === 'send' ? { ok: true, id: 'wamid.1' } : true });
    };
    const limits = { memoryMb: 16, startupTimeoutMs: 500, eventTimeoutMs: 1000 };
    const sandbox = await Sandbox.create(built.bundle, built.sourceMap, host, limits);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 50);
    const outcome = await sandbox.dispatch(EVENT);
    clearInterval(ticker);
    sandbox.dispose();
    expect({ status: outcome.status, message: (outcome as { message?: string }).message }).toEqual({ status: 'timeout', message: expect.stringContaining('did not finish') });
    expect(outcome.durationMs).toBeLessThan(limits.eventTimeoutMs * 3);
    // A frozen thread fires no timer: about 20 ticks in a second, none while frozen.
    expect(ticks).toBeGreaterThanOrEqual(Math.floor(outcome.durationMs / 50 / 2));
  });
});

describe('adminListBotLogs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('When a project logs more than 1,000 entries, then its newest 1,000 are kept and another project\'s log is untouched', async () => {
    const a = await t.admin.project();
    const b = await t.admin.project();
    await writeBotLog(t, b.id, { level: 'warn', kind: 'log', message: 'b stays' });
    for (let i = 0; i < 1010; i++) await writeBotLog(t, a.id, { level: i % 2 ? 'info' : 'error', kind: 'log', message: `line ${i}` });
    const count = await t.db.pool.query('SELECT project_id, count(*)::int AS n FROM bot_logs WHERE project_id = ANY($1) GROUP BY project_id', [[a.id, b.id]]);
    expect(Object.fromEntries(count.rows.map((r) => [r.project_id, r.n]))).toEqual({ [a.id]: 1000, [b.id]: 1 });
    const page = await request(t.app).get(`/admin/projects/${a.id}/bot/logs?limit=3&level=error`).set('Authorization', `Bearer ${t.adminToken}`);
    expect(page.status).toBe(200);
    expect(page.body.data.logs.map((l: any) => l.message)).toEqual(['line 1008', 'line 1006', 'line 1004']);
    const bad = await request(t.app).get(`/admin/projects/${a.id}/bot/logs?limit=0`).set('Authorization', `Bearer ${t.adminToken}`);
    expect(bad.status).toBe(400);
    const unknown = await request(t.app).get('/admin/projects/prj_nope/bot/logs').set('Authorization', `Bearer ${t.adminToken}`);
    expect(unknown.status).toBe(404);
  }, 60_000);
});
