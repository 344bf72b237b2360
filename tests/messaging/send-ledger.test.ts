/**
 * The send ledger (lib/messaging/ledger.ts) as both send paths use it: a campaign records its
 * messages without rewriting a single contact (the per-send contact upsert is gone from every
 * path), and the quota it takes is the ledger's, exact when only part of a batch fits.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { engineFor, runUntil, promoCampaign } from '../support/broadcasts.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

interface Stats { upd: number; ins: number }

async function tableStats(): Promise<Record<string, Stats>> {
  const client = await t.db.pool.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ relname: string; upd: string; ins: string }>(
      `SELECT relname, n_tup_upd AS upd, n_tup_ins AS ins FROM pg_stat_user_tables WHERE relname IN ('contacts', 'messages')`,
    );
    return Object.fromEntries(rows.map((r) => [r.relname, { upd: Number(r.upd), ins: Number(r.ins) }]));
  } finally {
    client.release();
  }
}

const campaign = (n: number, projectExtra: object = {}) =>
  promoCampaign(t, n, { name: 'Ledger', base: 15560000000 + Math.floor(Math.random() * 1e6) * 1000, projectExtra });

describe('send ledger', () => {
  it('When a campaign is sent to existing contacts, then no contact row is updated (0 contact updates), and every message is recorded', async () => {
    const n = 60;
    const { id, call } = await campaign(n);
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
    // Seeding and approval are done: their statistics are flushed before the campaign starts.
    let before = await tableStats();
    for (let i = 0; i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const again = await tableStats();
      if (again.contacts.upd === before.contacts.upd && again.messages.ins === before.messages.ins && i >= 10) break;
      before = again;
    }
    const engine = await engineFor(t);
    try {
      expect(await runUntil(t, engine, id, ['completed'])).toBe('completed');
    } finally {
      await engine.stop();
    }
    let after = await tableStats();
    for (let i = 0; i < 100 && after.messages.ins - before.messages.ins < n; i++) {
      await new Promise((r) => setTimeout(r, 100));
      after = await tableStats();
    }
    expect(after.messages.ins - before.messages.ins).toBe(n);
    expect(after.contacts.upd - before.contacts.upd).toBe(0);
    expect((await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts).toMatchObject({ total: n, sent: n });
  });

  it('When a campaign needs more units than the daily quota has left, then it takes exactly what is left and holds the rest', async () => {
    const { id, project, call } = await campaign(12, { daily_send_quota: 7 });
    await t.db.pool.query(`INSERT INTO send_counters (project_id, day, count) VALUES ($1, $2::date, 2)`, [project.id, t.clock.now().toISOString().slice(0, 10)]);
    await t.admin.call('post', `/admin/broadcasts/${id}/approve`, {});
    const engine = await engineFor(t);
    try {
      const deadline = Date.now() + 20_000;
      for (;;) {
        await engine.tick();
        await engine.engine.idle();
        const c = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast.counts;
        if ((c && c.sent === 5) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await engine.stop();
    }
    const b = (await call.get(`/v1/broadcasts/${id}`)).body.data.broadcast;
    expect(b.counts).toMatchObject({ total: 12, sent: 5, queued: 7 });
    expect(b.status).toBe('sending');
    const { rows } = await t.db.pool.query('SELECT count FROM send_counters WHERE project_id = $1', [project.id]);
    expect(rows).toEqual([{ count: 7 }]);
  });
});
