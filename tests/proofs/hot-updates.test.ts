/**
 * The hot path's updates are HOT (heap-only: no new index entries, pruned on the page) and it
 * writes nothing that does not change: after a burst of conversation exchanges (a customer
 * writes, the business answers a few times, the channel reports sent, delivered and read), the
 * conversations' updates and the messages' status updates are HOT at least 80% of the time, and a
 * send to an existing contact does not rewrite the contact. Read from pg_stat_user_tables, whose
 * counters each backend reports asynchronously (at most once a second while busy, within about
 * 10 s when idle): the test polls them with a bound until the burst's updates are all counted.
 *
 * @alone Whether an update finds room on its page depends on when the page was pruned, which waits
 * for the transactions still open in this database: a slower machine (other files' load beside it)
 * keeps more of its own statements in flight and the share drops (84% under three workers, 88 to
 * 100% alone; CI saw 88%). So the bound is HOT_SHARE, 80%: what it guards against (an index on a
 * column the path updates, a rewrite of columns that did not change) takes the share near 0, and
 * load alone does not take it there. The share is printed on every run.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { setTimeout as sleep } from 'node:timers/promises';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: { sent: 0, delivered: 20, read: 40 }, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});


interface TableStats { upd: number; hot: number; ins: number }

/** The least share of HOT updates asserted (see the file's comment for why not 90%). */
const HOT_SHARE = 0.8;

async function tableStats(): Promise<Record<string, TableStats>> {
  const client = await t.db.pool.connect();
  try {
    // Our own backend's pending counts are flushed, and the next read is not served from a cached snapshot.
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ relname: string; upd: string; hot: string; ins: string }>(
      `SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_ins AS ins FROM pg_stat_user_tables
       WHERE relname IN ('conversations', 'messages', 'contacts')`,
    );
    return Object.fromEntries(rows.map((r) => [r.relname, { upd: Number(r.upd), hot: Number(r.hot), ins: Number(r.ins) }]));
  } finally {
    client.release();
  }
}

function delta(after: Record<string, TableStats>, before: Record<string, TableStats>, table: string): TableStats {
  return { upd: after[table].upd - before[table].upd, hot: after[table].hot - before[table].hot, ins: after[table].ins - before[table].ins };
}

/**
 * Ends the app's idle connections, so their backends report their counts as they exit. A backend
 * that reported less than a second ago otherwise holds its counts for PostgreSQL's idle interval,
 * 10 s: the wait that used to be most of this file's time. The pools open new connections on next use.
 */
async function flushIdleConnections(): Promise<void> {
  for (const pool of [t.db.pool, t.db.plansOnce].filter((p) => p !== undefined)) {
    const idle = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
    for (const client of idle) client.release(true);
  }
}

/** Polls the counters until `done` holds for their change since `before` (bounded: the stats collector reports within seconds). */
async function statsWhen(before: Record<string, TableStats>, done: (d: (table: string) => TableStats) => boolean): Promise<(table: string) => TableStats> {
  await flushIdleConnections();
  for (let i = 0; ; i++) {
    const after = await tableStats();
    const d = (table: string) => delta(after, before, table);
    if (done(d) || i >= 150) return d;
    await sleep(100);
  }
}

async function setup(customers: number) {
  const project = await t.admin.project('hot updates');
  const key = (await t.admin.key(project.id, ['messages:send', 'conversations:read'])).secret;
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const phones = Array.from({ length: customers }, (_, i) => `1415666${String(1000 + i)}`);
  const inbound = (phone: string, text: string) =>
    request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: phone, name: 'Ada', text }).expect(200);
  const send = (phone: string, content: string) =>
    request(t.app).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phone}`, content });
  for (const phone of phones) {
    t.clock.advance(1000);
    await inbound(phone, 'hello');
  }
  return { project, key, phones, inbound, send };
}

async function settled(projectId: string, sends: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await t.db.pool.query(`SELECT count(*)::int AS n FROM messages WHERE project_id = $1 AND direction = 'outbound' AND status = 'read'`, [projectId]);
    if (rows[0].n === sends) return;
    await sleep(50);
  }
  throw new Error('statuses did not all arrive');
}

describe('HOT updates on the send and status path', () => {
  it('When customers and the business exchange messages, then conversations and message statuses are updated HOT at least 80% of the time and contacts are not rewritten', async () => {
    const { project, phones, inbound, send } = await setup(6);
    // Let the set-up's own updates be counted before the burst's baseline is taken.
    await settled(project.id, 0);
    await sleep(1200);
    const before = await tableStats();

    const REPLIES = 12;
    let sends = 0;
    for (let round = 0; round < 2; round++) {
      for (const phone of phones) {
        t.clock.advance(1000);
        await inbound(phone, `question ${round}`);
        for (let k = 0; k < REPLIES; k++) {
          t.clock.advance(100);
          const res = await send(phone, `answer ${round}.${k}`);
          expect(res.status).toBe(200);
          sends++;
        }
      }
    }
    await settled(project.id, sends);
    const inboundCount = phones.length * 2;
    // Per send: the conversation (record) and the message three times (confirm, delivered, read);
    // per inbound: the conversation once.
    const d = await statsWhen(before, (d) => d('conversations').upd >= sends + inboundCount && d('messages').upd >= 3 * sends);

    const conversations = d('conversations');
    const messages = d('messages');
    expect(conversations.upd).toBe(sends + inboundCount);
    console.log(`HOT share: conversations ${(conversations.hot / conversations.upd * 100).toFixed(1)}%, message statuses ${((messages.hot / (messages.upd - sends)) * 100).toFixed(1)}%`);
    expect(conversations.hot / conversations.upd).toBeGreaterThanOrEqual(HOT_SHARE);
    // One update per send gives the message the channel's wamid (the confirm, or a `sent` status
    // that came first), which an index carries: it cannot be HOT. The status updates (delivered,
    // read) can, and are.
    expect(messages.upd).toBe(3 * sends);
    const statusHot = messages.hot / (messages.upd - sends);
    expect(statusHot).toBeGreaterThanOrEqual(HOT_SHARE);
    // A send to a contact that exists writes nothing to it.
    expect(d('contacts').upd).toBe(0);
    expect(d('contacts').ins).toBe(0);
  });

  it('When every exchange moves its conversation to the top of the list (the soak\'s shape), then conversations are still updated HOT and the list order agrees with them', async () => {
    const { project, key, phones, inbound, send } = await setup(6);
    await settled(project.id, 0);
    await sleep(1200);
    const before = await tableStats();
    // 1 inbound + 4 replies per exchange, customers in turn: each exchange starts with a reorder
    // (with the order index on conversations, one update in five could not be HOT).
    let sends = 0;
    for (let round = 0; round < 3; round++) {
      for (const phone of phones) {
        t.clock.advance(1000);
        await inbound(phone, `question ${round}`);
        for (let k = 0; k < 4; k++) {
          t.clock.advance(100);
          expect((await send(phone, `answer ${round}.${k}`)).status).toBe(200);
          sends++;
        }
      }
    }
    await settled(project.id, sends);
    const inboundCount = phones.length * 3;
    const d = await statsWhen(before, (d) => d('conversations').upd >= sends + inboundCount);
    expect(d('conversations').upd).toBe(sends + inboundCount);
    expect(d('conversations').hot / d('conversations').upd).toBeGreaterThanOrEqual(HOT_SHARE);
    const { rows } = await t.db.pool.query(
      `SELECT count(*)::int AS n FROM conversations c LEFT JOIN conversation_order o ON o.conversation_id = c.id
        WHERE c.project_id = $1 AND (o.order_at IS DISTINCT FROM c.order_at OR o.project_id IS DISTINCT FROM c.project_id)`,
      [project.id],
    );
    expect(rows[0].n).toBe(0);
    const listed = (await request(t.app).get('/v1/conversations').set('Authorization', `Bearer ${key}`).expect(200)).body.data.conversations as Array<{ contact: { phone: string } }>;
    expect(listed.map((c) => c.contact.phone.replace('+', ''))).toEqual([...phones].reverse());
  });

  it('When a conversation other than the first gets a message, then it moves to the top of the list, and the first keeps its place when it is written to again', async () => {
    const { key, phones, send } = await setup(3);
    const list = async () =>
      (await request(t.app).get('/v1/conversations').set('Authorization', `Bearer ${key}`).expect(200)).body.data.conversations as Array<{ contact: { phone: string }; last_message_at: string }>;
    // The last to write is first.
    expect((await list()).map((c) => c.contact.phone.replace('+', ''))).toEqual([...phones].reverse());
    t.clock.advance(1000);
    expect((await send(phones[0], 'to the last')).status).toBe(200);
    let order = await list();
    expect(order.map((c) => c.contact.phone.replace('+', ''))).toEqual([phones[0], phones[2], phones[1]]);
    const firstAt = order[0].last_message_at;
    t.clock.advance(1000);
    expect((await send(phones[0], 'again')).status).toBe(200);
    order = await list();
    expect(order.map((c) => c.contact.phone.replace('+', ''))).toEqual([phones[0], phones[2], phones[1]]);
    // The time shown is exact even when the order did not move.
    expect(Date.parse(order[0].last_message_at)).toBe(Date.parse(firstAt) + 1000);
    t.clock.advance(1000);
    expect((await send(phones[1], 'to the middle')).status).toBe(200);
    order = await list();
    expect(order.map((c) => c.contact.phone.replace('+', ''))).toEqual([phones[1], phones[0], phones[2]]);
  });

  it('When a conversation list filter since falls between the first conversation\'s order key and its last message, then the conversation is still found', async () => {
    const { key, phones, send } = await setup(2);
    t.clock.advance(60_000);
    const since = t.clock.now().toISOString();
    t.clock.advance(1000);
    // phones[1] is first and stays first: its order key keeps its older time.
    expect((await send(phones[1], 'late')).status).toBe(200);
    const res = await request(t.app).get(`/v1/conversations?since=${encodeURIComponent(since)}`).set('Authorization', `Bearer ${key}`).expect(200);
    expect(res.body.data.conversations.map((c: { contact: { phone: string } }) => c.contact.phone.replace('+', ''))).toEqual([phones[1]]);
  });
});
