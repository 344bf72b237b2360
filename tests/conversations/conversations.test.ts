/**
 * Conversations: the recent-activity list and its keyset cursors, one conversation, a
 * conversation's messages, and the state change (INVALID_STATE, state/status alias), with project
 * isolation and scopes. Data is arranged by inserting rows; every response is validated against
 * the contract by the test app.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { conversationPageQuery } from '../../lib/conversations/conversations.js';
import { expectError } from '../support/expect-error.js';

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
});

const HOUR = 3600_000;
const READ = ['conversations:read'];
const WRITE = ['conversations:read', 'conversations:write'];

let phoneSeq = 0;
const nextPhone = () => `1415${String(process.pid % 1000).padStart(3, '0')}${String(++phoneSeq).padStart(4, '0')}`;

async function project(scopes: string[] = WRITE) {
  const p = await t.admin.project();
  const key = await t.admin.key(p.id, scopes);
  return { id: p.id, key: key.secret };
}

async function conversation(
  projectId: string,
  opts: { lastMessageAt?: Date; lastInboundAt?: Date | null; state?: string; phone?: string; name?: string | null } = {},
) {
  const contact = await t.db.prisma.contact.create({
    data: { projectId, phone: opts.phone ?? nextPhone(), name: opts.name === undefined ? 'Ada' : opts.name },
  });
  const row = await t.db.prisma.conversation.create({
    data: {
      projectId,
      contactId: contact.id,
      state: opts.state ?? 'unstructured',
      lastMessageAt: opts.lastMessageAt ?? t.clock.now(),
      lastInboundAt: opts.lastInboundAt === undefined ? null : opts.lastInboundAt,
    },
  });
  return { id: Number(row.id), contactId: Number(contact.id), phone: contact.phone };
}

let wamidSeq = 0;
async function message(projectId: string, conversationId: number, extra: { status?: string; direction?: string } = {}) {
  const at = t.clock.now();
  const row = await t.db.prisma.message.create({
    data: {
      projectId,
      conversationId: BigInt(conversationId),
      wamid: `wamid.conv${process.pid}.${++wamidSeq}`,
      direction: extra.direction ?? 'outbound',
      type: 'text',
      content: { type: 'text', content: `hello ${wamidSeq}` },
      status: extra.status ?? 'sent',
      sentAt: at,
      statusAt: at,
    },
  });
  return Number(row.id);
}

const get = (path: string, key: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const patch = (path: string, key: string, body: unknown) =>
  request(t.app).patch(path).set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send(JSON.stringify(body));

/** Every page of a list, following nextCursor; `between` runs before each next page. */
async function allPages(first: string, key: string, field: string, between?: (page: number) => Promise<void>) {
  const ids: number[] = [];
  let path = first;
  for (let page = 0; page < 100; page++) {
    const res = await get(path, key);
    expect(res.status).toBe(200);
    ids.push(...res.body.data[field].map((x: { id: number }) => x.id));
    const next = res.body.data.nextCursor;
    if (next === null) return ids;
    expect(next.length).toBeLessThanOrEqual(512);
    await between?.(page);
    path = `${first}${first.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(next)}`;
  }
  throw new Error('too many pages');
}

describe('GET /v1/conversations', () => {
  it('When a project has conversations, then they come most recent activity first with state equal to status', async () => {
    const p = await project(READ);
    const now = t.clock.now().getTime();
    const open = await conversation(p.id, { lastMessageAt: new Date(now - HOUR), lastInboundAt: new Date(now - 2 * HOUR), state: 'handover' });
    const closed = await conversation(p.id, { lastMessageAt: new Date(now - 3 * HOUR), lastInboundAt: new Date(now - 25 * HOUR) });
    const never = await conversation(p.id, { lastMessageAt: new Date(now - 2 * HOUR), name: null });

    const res = await get('/v1/conversations', p.key);
    expect(res.status).toBe(200);
    const list = res.body.data.conversations;
    expect(list.map((c: any) => c.id)).toEqual([open.id, never.id, closed.id]);
    expect(res.body.data.nextCursor).toBeNull();
    for (const c of list) expect(c.status).toBe(c.state);
    expect(list[0]).toEqual({
      id: open.id,
      contact: { id: open.contactId, phone: `+${open.phone}`, user_id: null, username: null, name: 'Ada' },
      state: 'handover',
      status: 'handover',
      last_message_at: new Date(now - HOUR).toISOString(),
      last_inbound_at: new Date(now - 2 * HOUR).toISOString(),
      window_open: true,
      window_expires_at: new Date(now + 22 * HOUR).toISOString(),
      created_at: expect.any(String),
      // The team's hold (issue 60): nobody assigned, no labels.
      assignee: null,
      labels: [],
      // Thread control (issue 61): this app holds the thread, as it always has.
      thread: { held_by: 'us', app_id: null, since: null },
      // WhatsApp groups (issue 61): a customer's conversation, no group.
      kind: 'individual',
      group: null,
      // The team's resolution (issue 68): open, not snoozed.
      resolution: 'open',
      snoozed_until: null,
    });
    expect(list[1]).toMatchObject({ contact: { name: null }, last_inbound_at: null, window_open: false, window_expires_at: null });
    expect(list[2]).toMatchObject({ window_open: false, window_expires_at: new Date(now - HOUR).toISOString() });
  });

  it('When the clock passes the 24-hour mark, then window_open turns false', async () => {
    const p = await project(READ);
    const now = t.clock.now().getTime();
    const c = await conversation(p.id, { lastInboundAt: new Date(now - 24 * HOUR + 1000) });
    expect((await get(`/v1/conversations/${c.id}`, p.key)).body.data.conversation.window_open).toBe(true);
    t.clock.advance(1000);
    try {
      expect((await get(`/v1/conversations/${c.id}`, p.key)).body.data.conversation.window_open).toBe(false);
    } finally {
      t.clock.advance(-1000);
    }
  });

  it('When conversations are inserted between page fetches, then paging neither repeats nor skips the earlier ones', async () => {
    const p = await project(READ);
    const base = t.clock.now().getTime() - 100 * HOUR;
    const existing: number[] = [];
    // Ties on last_message_at are broken by id, so equal times must not break paging.
    for (let i = 0; i < 11; i++) existing.push((await conversation(p.id, { lastMessageAt: new Date(base + Math.floor(i / 3) * HOUR) })).id);
    const inserted: number[] = [];
    const older: number[] = [];
    const seen = await allPages('/v1/conversations?limit=3', p.key, 'conversations', async (page) => {
      // Newer activity (goes to the top) and a tie with the current page's times.
      inserted.push((await conversation(p.id, { lastMessageAt: new Date(base + 200 * HOUR + page) })).id);
      inserted.push((await conversation(p.id, { lastMessageAt: new Date(base + 3 * HOUR) })).id);
      // Older than every page so far: it belongs to a later page and shows up there once.
      older.push((await conversation(p.id, { lastMessageAt: new Date(base - HOUR - page) })).id);
    });
    expect(new Set(seen).size).toBe(seen.length);
    const expectedOrder = [...existing].reverse();
    expect(seen.filter((id) => existing.includes(id))).toEqual(expectedOrder);
    expect(seen.filter((id) => !existing.includes(id))).toEqual(older);
    expect(seen.some((id) => inserted.includes(id))).toBe(false);
  });

  it('When the last page is exactly full, then nextCursor is null', async () => {
    const p = await project(READ);
    for (let i = 0; i < 4; i++) await conversation(p.id);
    const first = await get('/v1/conversations?limit=2', p.key);
    expect(first.body.data.conversations).toHaveLength(2);
    const second = await get(`/v1/conversations?limit=2&cursor=${encodeURIComponent(first.body.data.nextCursor)}`, p.key);
    expect(second.body.data.conversations).toHaveLength(2);
    expect(second.body.data.nextCursor).toBeNull();
  });

  it('When no limit is given, then pages hold 50', async () => {
    const p = await project(READ);
    const contacts = Array.from({ length: 51 }, () => ({ projectId: p.id, phone: nextPhone() }));
    await t.db.prisma.contact.createMany({ data: contacts });
    const rows = await t.db.prisma.contact.findMany({ where: { projectId: p.id } });
    await t.db.prisma.conversation.createMany({
      data: rows.map((c, i) => ({ projectId: p.id, contactId: c.id, lastMessageAt: new Date(t.clock.now().getTime() - i * 1000) })),
    });
    const res = await get('/v1/conversations', p.key);
    expect(res.body.data.conversations).toHaveLength(50);
    expect(res.body.data.nextCursor).toEqual(expect.any(String));
    const rest = await get(`/v1/conversations?cursor=${encodeURIComponent(res.body.data.nextCursor)}`, p.key);
    expect(rest.body.data.conversations).toHaveLength(1);
    expect((await get('/v1/conversations?limit=100', p.key)).body.data.conversations).toHaveLength(51);
  });

  it.each([['0'], ['101'], ['abc'], ['-1'], ['1.5'], ['']])('When limit is %p, then 400 invalid_request', async (limit) => {
    const p = await project(READ);
    expectError(await get(`/v1/conversations?limit=${limit}`, p.key), 400, 'invalid_request');
  });
});

describe('GET /v1/conversations', () => {
  it('When filtered by state, phone (any spelling) and since, then only matching conversations are listed', async () => {
    const p = await project(READ);
    const now = t.clock.now().getTime();
    const a = await conversation(p.id, { state: 'done', lastMessageAt: new Date(now - HOUR) });
    const b = await conversation(p.id, { state: 'handover', lastMessageAt: new Date(now - 5 * HOUR), phone: '14155550777' });
    const c = await conversation(p.id, { state: 'done', lastMessageAt: new Date(now - 10 * HOUR) });
    const ids = async (q: string) => (await get(`/v1/conversations?${q}`, p.key)).body.data.conversations.map((x: any) => x.id);
    expect(await ids('state=done')).toEqual([a.id, c.id]);
    expect(await ids(`phone=${encodeURIComponent('+1 415-555-0777')}`)).toEqual([b.id]);
    expect(await ids('phone=14155550777')).toEqual([b.id]);
    expect(await ids(`since=${encodeURIComponent(new Date(now - 5 * HOUR).toISOString())}`)).toEqual([a.id, b.id]);
    expect(await ids(`state=done&since=${encodeURIComponent(new Date(now - 5 * HOUR).toISOString())}`)).toEqual([a.id]);
    expect(await ids('state=nothing-here')).toEqual([]);
  });

  it('When a filtered list is paged, then the filter holds on every page', async () => {
    const p = await project(READ);
    const done: number[] = [];
    for (let i = 0; i < 5; i++) {
      done.push((await conversation(p.id, { state: 'done', lastMessageAt: new Date(t.clock.now().getTime() - i * HOUR) })).id);
      await conversation(p.id, { state: 'handover', lastMessageAt: new Date(t.clock.now().getTime() - i * HOUR) });
    }
    expect(await allPages('/v1/conversations?state=done&limit=2', p.key, 'conversations')).toEqual(done);
  });

  it('When since is not a date-time, then 400 invalid_request', async () => {
    const p = await project(READ);
    expectError(await get('/v1/conversations?since=yesterday', p.key), 400, 'invalid_request');
  });

  it('When the next page is read, then the query uses the keyset index condition (a deep page costs what the first does)', async () => {
    const q = conversationPageQuery('prj_x', {}, { orderAt: new Date(), id: 123n }, 51);
    const client = await t.db.pool.connect();
    try {
      await client.query('BEGIN');
      // The test database holds a few rows of every test, so the planner's own choice (a bitmap
      // scan and a sort, cheap for a handful) says nothing; with the cheap shortcuts off, the plan
      // shows what a large table gets: the ordered index with the keyset condition, no sort.
      await client.query('SET LOCAL enable_seqscan = off');
      await client.query('SET LOCAL enable_bitmapscan = off');
      await client.query('SET LOCAL enable_sort = off'); // a Sort still shows if no plan can avoid it
      const plan = (await client.query(`EXPLAIN ${q.text}`, q.values)).rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index (Only )?Scan using conversation_order_project_id_order_at_conversation_id_idx/);
      expect(plan).toMatch(/Index Cond: \(\(project_id = .*ROW\(order_at, conversation_id\) < ROW/s);
      expect(plan).not.toMatch(/Sort/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});

describe('cursors', () => {
  async function listWithCursor() {
    const p = await project(READ);
    for (let i = 0; i < 3; i++) await conversation(p.id, { state: 'done', lastMessageAt: new Date(t.clock.now().getTime() - i * HOUR) });
    const res = await get('/v1/conversations?limit=1', p.key);
    return { p, cursor: res.body.data.nextCursor as string };
  }

  it('When a cursor is passed back unchanged, then the next page follows', async () => {
    const { p, cursor } = await listWithCursor();
    expect((await get(`/v1/conversations?limit=1&cursor=${encodeURIComponent(cursor)}`, p.key)).status).toBe(200);
  });

  it('When the cursor is tampered with, then 400 invalid_cursor', async () => {
    const { p, cursor } = await listWithCursor();
    const [payload, mac] = cursor.split('.');
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const forged = Buffer.from(JSON.stringify([decoded[0] + 1, decoded[1]])).toString('base64url');
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
    for (const bad of [`${forged}.${mac}`, `${payload}.${flip(mac, 0)}`, `${flip(payload, 2)}.${mac}`, `${payload}.${mac}x`, `${payload}.`]) {
      expectError(await get(`/v1/conversations?limit=1&cursor=${encodeURIComponent(bad)}`, p.key), 400, 'invalid_cursor');
    }
  });

  /** Percent-encodes every character but letters and digits (the validator refuses raw reserved ones). */
  const encodeAll = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`)).join('');

  it.each([['garbage'], ['!!!'], ['a.b.c'], ['.'], ['a b.c'], [Buffer.from('[1,"2"]').toString('base64url')], ['✓'], ['e30.AAAAAAAAAAAAAAAAAAAAAA']])(
    'When the cursor is garbage (%p), then 400 invalid_cursor',
    async (bad) => {
      const p = await project(READ);
      expectError(await get(`/v1/conversations?cursor=${encodeAll(bad)}`, p.key), 400, 'invalid_cursor');
    },
  );

  it('When the cursor is longer than 512 characters, then 400 invalid_cursor (any cursor not issued by the service)', async () => {
    const p = await project(READ);
    expectError(await get(`/v1/conversations?cursor=${'a'.repeat(513)}`, p.key), 400, 'invalid_cursor');
  });

  it('When a cursor of another project is used, then 400 invalid_cursor', async () => {
    const { cursor } = await listWithCursor();
    const other = await project(READ);
    await conversation(other.id);
    expectError(await get(`/v1/conversations?limit=1&cursor=${encodeURIComponent(cursor)}`, other.key), 400, 'invalid_cursor');
  });

  it('When a cursor is used with other filters, then 400 invalid_cursor', async () => {
    const { p, cursor } = await listWithCursor();
    for (const q of ['state=done', 'state=handover', 'phone=14155550000', `since=${encodeURIComponent('2020-01-01T00:00:00Z')}`]) {
      expectError(await get(`/v1/conversations?limit=1&${q}&cursor=${encodeURIComponent(cursor)}`, p.key), 400, 'invalid_cursor');
    }
    const filtered = (await get('/v1/conversations?limit=1&state=done', p.key)).body.data.nextCursor;
    expectError(await get(`/v1/conversations?limit=1&cursor=${encodeURIComponent(filtered)}`, p.key), 400, 'invalid_cursor');
    // The limit is not part of the list's identity: another page size continues the same list.
    expect((await get(`/v1/conversations?limit=2&state=done&cursor=${encodeURIComponent(filtered)}`, p.key)).status).toBe(200);
  });

  it('When a cursor of another list is used, then 400 invalid_cursor', async () => {
    const p = await project(READ);
    const c = await conversation(p.id);
    await message(p.id, c.id);
    await message(p.id, c.id);
    const msgCursor = (await get(`/v1/conversations/${c.id}/messages?limit=1`, p.key)).body.data.nextCursor;
    expect(msgCursor).toEqual(expect.any(String));
    expectError(await get(`/v1/conversations?cursor=${encodeURIComponent(msgCursor)}`, p.key), 400, 'invalid_cursor');
    const contactsKey = (await t.admin.key(p.id, ['contacts:read'])).secret;
    expectError(await get(`/v1/contacts?cursor=${encodeURIComponent(msgCursor)}`, contactsKey), 400, 'invalid_cursor');
  });
});

describe('GET /v1/conversations/{id}', () => {
  it('When the conversation is the project\'s, then it is returned with state equal to status', async () => {
    const p = await project(READ);
    const c = await conversation(p.id, { state: 'awaiting_form' });
    const res = await get(`/v1/conversations/${c.id}`, p.key);
    expect(res.status).toBe(200);
    expect(res.body.data.conversation).toMatchObject({ id: c.id, state: 'awaiting_form', status: 'awaiting_form' });
  });

  it('When the id belongs to another project or to nothing, then 404 not_found', async () => {
    const p = await project(READ);
    const other = await project(READ);
    const theirs = await conversation(other.id);
    expectError(await get(`/v1/conversations/${theirs.id}`, p.key), 404, 'not_found');
    expectError(await get(`/v1/conversations/${theirs.id}/messages`, p.key), 404, 'not_found');
    expectError(await get('/v1/conversations/999999999999', p.key), 404, 'not_found');
  });

  it.each([['abc'], ['0'], ['-1'], ['1.5'], ['1234567890123456789']])('When the id is %p, then 400 invalid_id', async (id) => {
    const p = await project(READ);
    expectError(await get(`/v1/conversations/${id}`, p.key), 400, 'invalid_id');
  });
});

describe('GET /v1/conversations/{id}/messages', () => {
  it('When messages arrive between page fetches, then paging neither repeats nor skips the earlier ones', async () => {
    const p = await project(READ);
    const c = await conversation(p.id);
    const other = await conversation(p.id);
    const existing: number[] = [];
    for (let i = 0; i < 7; i++) {
      existing.push(await message(p.id, c.id, { direction: i % 2 ? 'inbound' : 'outbound', status: i % 2 ? 'received' : 'delivered' }));
      await message(p.id, other.id);
    }
    const arrived: number[] = [];
    const seen = await allPages(`/v1/conversations/${c.id}/messages?limit=2`, p.key, 'messages', async () => {
      arrived.push(await message(p.id, c.id));
    });
    expect(seen).toEqual([...existing].reverse());
    expect(arrived).toHaveLength(3);
  });

  it('When listed, then each message has the contract shape', async () => {
    const p = await project(READ);
    const c = await conversation(p.id);
    const id = await message(p.id, c.id, { status: 'read' });
    const res = await get(`/v1/conversations/${c.id}/messages`, p.key);
    expect(res.body.data).toEqual({
      messages: [
        {
          id,
          wamid: expect.stringMatching(/^wamid\./),
          conversation_id: c.id,
          direction: 'outbound',
          type: 'text',
          status: 'read',
          // One shape for text in both directions: text.body beside the request's content (CHANGELOG, Unreleased).
          content: { type: 'text', content: expect.any(String), text: { body: expect.any(String) } },
          error: null,
          created_at: t.clock.now().toISOString(),
          status_updated_at: t.clock.now().toISOString(),
          // No status has reported the message's pricing (issue 37).
          pricing: null,
          // Written straight to the table, with no author or send reference (issue 60).
          author: { kind: 'unknown', id: null, name: null },
        },
      ],
      nextCursor: null,
    });
  });

  it('When a cursor of another conversation is used, then 400 invalid_cursor', async () => {
    const p = await project(READ);
    const a = await conversation(p.id);
    const b = await conversation(p.id);
    for (let i = 0; i < 3; i++) {
      await message(p.id, a.id);
      await message(p.id, b.id);
    }
    const cursor = (await get(`/v1/conversations/${a.id}/messages?limit=1`, p.key)).body.data.nextCursor;
    expectError(await get(`/v1/conversations/${b.id}/messages?limit=1&cursor=${encodeURIComponent(cursor)}`, p.key), 400, 'invalid_cursor');
  });

  it.each([['0'], ['101'], ['x']])('When limit is %p, then 400 invalid_request', async (limit) => {
    const p = await project(READ);
    const c = await conversation(p.id);
    expectError(await get(`/v1/conversations/${c.id}/messages?limit=${limit}`, p.key), 400, 'invalid_request');
  });
});

describe('PATCH /v1/conversations/{id}', () => {
  it('When a platform state is set, then the response has state and previous_state and reads show state = status', async () => {
    const p = await project();
    const c = await conversation(p.id);
    const res = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'handover' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { conversation: { id: c.id, state: 'handover', previous_state: 'unstructured' } } });
    const read = (await get(`/v1/conversations/${c.id}`, p.key)).body.data.conversation;
    expect([read.state, read.status]).toEqual(['handover', 'handover']);
    const again = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'done' });
    expect(again.body.data.conversation).toEqual({ id: c.id, state: 'done', previous_state: 'handover' });
  });

  it('When status is sent along with state, then status is ignored', async () => {
    const p = await project();
    const c = await conversation(p.id);
    const res = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'done', status: 'handover' });
    expect(res.status).toBe(200);
    const read = (await get(`/v1/conversations/${c.id}`, p.key)).body.data.conversation;
    expect([read.state, read.status]).toEqual(['done', 'done']);
  });

  it('When the state is unknown, then 400 INVALID_STATE listing the known values, and the state is unchanged', async () => {
    const p = await project();
    const c = await conversation(p.id, { state: 'handover' });
    await conversation(p.id, { state: 'collecting_address' });
    const res = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'bogus' });
    expectError(res, 400, 'INVALID_STATE');
    for (const s of ['unstructured', 'handover', 'awaiting_form', 'done', 'collecting_address']) expect(res.body.error.message).toContain(s);
    expect(res.body.error.message).not.toContain('"bogus",');
    expect(res.body.error.details.known_states).toEqual(['unstructured', 'handover', 'awaiting_form', 'done', 'collecting_address']);
    expect((await get(`/v1/conversations/${c.id}`, p.key)).body.data.conversation.state).toBe('handover');
  });

  it('When another conversation of the project uses a custom state, then that state becomes valid', async () => {
    const p = await project();
    const c = await conversation(p.id);
    expectError(await patch(`/v1/conversations/${c.id}`, p.key, { state: 'vip_queue' }), 400, 'INVALID_STATE');
    await conversation(p.id, { state: 'vip_queue' });
    const res = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'vip_queue' });
    expect(res.body.data.conversation).toEqual({ id: c.id, state: 'vip_queue', previous_state: 'unstructured' });
  });

  it('When only another project uses a custom state, then it stays unknown here', async () => {
    const p = await project();
    const other = await project();
    await conversation(other.id, { state: 'their_state' });
    const c = await conversation(p.id);
    const res = await patch(`/v1/conversations/${c.id}`, p.key, { state: 'their_state' });
    expectError(res, 400, 'INVALID_STATE');
    expect(res.body.error.details.known_states).not.toContain('their_state');
  });

  it.each([
    ['no state', {}],
    ['status only', { status: 'done' }],
    ['an empty state', { state: '' }],
    ['a non-string state', { state: 3 }],
    ['an unknown member', { state: 'done', extra: 1 }],
  ])('When the body has %s, then 400 invalid_request', async (_label, body) => {
    const p = await project();
    const c = await conversation(p.id);
    expectError(await patch(`/v1/conversations/${c.id}`, p.key, body), 400, 'invalid_request');
  });

  it('When the conversation is another project\'s, then 404 not_found and it is unchanged', async () => {
    const p = await project();
    const other = await project();
    const theirs = await conversation(other.id);
    expectError(await patch(`/v1/conversations/${theirs.id}`, p.key, { state: 'done' }), 404, 'not_found');
    expect((await get(`/v1/conversations/${theirs.id}`, other.key)).body.data.conversation.state).toBe('unstructured');
  });
});

describe('scopes', () => {
  it('When the key lacks conversations:read, then reads are 403 insufficient_scope', async () => {
    const p = await project(['conversations:write', 'contacts:read', 'contacts:write']);
    const c = await conversation(p.id);
    expectError(await get('/v1/conversations', p.key), 403, 'insufficient_scope');
    expectError(await get(`/v1/conversations/${c.id}`, p.key), 403, 'insufficient_scope');
    expectError(await get(`/v1/conversations/${c.id}/messages`, p.key), 403, 'insufficient_scope');
  });

  it('When the key lacks conversations:write, then the state change is 403 insufficient_scope', async () => {
    const p = await project(['conversations:read', 'contacts:write']);
    const c = await conversation(p.id);
    expectError(await patch(`/v1/conversations/${c.id}`, p.key, { state: 'done' }), 403, 'insufficient_scope');
  });

  it('When the key has only conversations:write, then it can change state but not read', async () => {
    const p = await project(['conversations:write']);
    const c = await conversation(p.id);
    expect((await patch(`/v1/conversations/${c.id}`, p.key, { state: 'done' })).status).toBe(200);
    expectError(await get(`/v1/conversations/${c.id}`, p.key), 403, 'insufficient_scope');
  });
});
