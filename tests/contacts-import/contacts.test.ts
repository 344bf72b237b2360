/**
 * Contacts: the newest-first list with filters and keyset cursors, one contact, and PATCH with the
 * spec's rules (attribute merge, null deletes, value shapes, tags add/remove, at least one member),
 * atomic under concurrent updates, with project isolation and scopes.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { type TestApp, useTestApp } from '../support/app.js';
import { parseContactChange as parseWithLimits } from '../../lib/conversations/contacts.js';
import { contactLimitsOf } from '../../http/contract-limits.js';
import { shippedContract } from '../support/contracts.js';
import { expectError } from '../support/expect-error.js';

const parseContactChange = (body: unknown) => parseWithLimits(body, contactLimitsOf(shippedContract('public')));

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
});

const RW = ['contacts:read', 'contacts:write'];

let seq = 0;
const nextPhone = () => `1212${String(process.pid % 1000).padStart(3, '0')}${String(++seq).padStart(4, '0')}`;

async function project(scopes: string[] = RW) {
  const p = await t.admin.project();
  return { id: p.id, key: (await t.admin.key(p.id, scopes)).secret };
}

async function contact(
  projectId: string,
  data: { phone?: string; name?: string | null; tags?: string[]; attributes?: Record<string, unknown>; optedIn?: boolean } = {},
) {
  const row = await t.db.prisma.contact.create({
    data: {
      projectId,
      phone: data.phone ?? nextPhone(),
      name: data.name === undefined ? 'Grace Hopper' : data.name,
      tags: data.tags ?? [],
      attributes: (data.attributes ?? {}) as object,
      optedIn: data.optedIn ?? false,
    },
  });
  return { id: Number(row.id), phone: row.phone };
}

const get = (path: string, key: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);
const patch = (path: string, key: string, body: unknown) =>
  request(t.app).patch(path).set('Authorization', `Bearer ${key}`).set('Content-Type', 'application/json').send(JSON.stringify(body));

async function allPages(first: string, key: string, between?: () => Promise<void>) {
  const ids: number[] = [];
  let path = first;
  for (let page = 0; page < 100; page++) {
    const res = await get(path, key);
    expect(res.status).toBe(200);
    ids.push(...res.body.data.contacts.map((c: { id: number }) => c.id));
    const next = res.body.data.nextCursor;
    if (next === null) return ids;
    await between?.();
    path = `${first}${first.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(next)}`;
  }
  throw new Error('too many pages');
}

describe('GET /v1/contacts', () => {
  it('When contacts exist, then they come newest first in the contract shape with +phone', async () => {
    const p = await project(['contacts:read']);
    const a = await contact(p.id, { tags: ['vip'], attributes: { plan: 'pro', seats: 3, trial: false }, optedIn: true });
    const b = await contact(p.id, { name: null });
    const res = await get('/v1/contacts', p.key);
    expect(res.status).toBe(200);
    expect(res.body.data.contacts.map((c: any) => c.id)).toEqual([b.id, a.id]);
    expect(res.body.data.nextCursor).toBeNull();
    expect(res.body.data.contacts[1]).toEqual({
      id: a.id,
      phone: `+${a.phone}`,
      user_id: null,
      parent_user_id: null,
      username: null,
      name: 'Grace Hopper',
      tags: ['vip'],
      attributes: { plan: 'pro', seats: 3, trial: false },
      opted_in: true,
      consent: { status: 'opted_in', source: 'import', updated_at: null },
      // Never asked for call permission (docs/calls.md).
      call_permission_status: null,
      call_permission_expires_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(res.body.data.contacts[0]).toMatchObject({ name: null, tags: [], attributes: {} });
  });

  it('When contacts are added between page fetches, then paging neither repeats nor skips the earlier ones', async () => {
    const p = await project(['contacts:read']);
    const existing: number[] = [];
    for (let i = 0; i < 7; i++) existing.push((await contact(p.id)).id);
    const added: number[] = [];
    const seen = await allPages('/v1/contacts?limit=2', p.key, async () => {
      added.push((await contact(p.id)).id);
    });
    expect(seen).toEqual([...existing].reverse());
    expect(added).toHaveLength(3);
  });

  it('When filtered by phone, name or tag, then only matching contacts are listed', async () => {
    const p = await project(['contacts:read']);
    const a = await contact(p.id, { phone: '4930123456789', name: 'Ada Lovelace', tags: ['vip', 'de'] });
    const b = await contact(p.id, { name: 'ada byron', tags: ['de'] });
    const c = await contact(p.id, { name: '100%_real', tags: ['vip'] });
    await contact(p.id, { name: '1000 real' });
    const ids = async (q: string) => (await get(`/v1/contacts?${q}`, p.key)).body.data.contacts.map((x: any) => x.id);
    expect(await ids(`phone=${encodeURIComponent('+49 30-123456789')}`)).toEqual([a.id]);
    expect(await ids('name=ADA')).toEqual([b.id, a.id]);
    expect(await ids('name=love')).toEqual([a.id]);
    // % and _ are literal characters, not wildcards.
    expect(await ids(`name=${encodeURIComponent('0%_')}`)).toEqual([c.id]);
    expect(await ids(`name=${encodeURIComponent('%')}`)).toEqual([c.id]);
    expect(await ids('tag=vip')).toEqual([c.id, a.id]);
    expect(await ids('tag=de&name=ada')).toEqual([b.id, a.id]);
    expect(await ids('tag=VIP')).toEqual([]);
  });

  it('When a cursor is used with other filters or in another project, then 400 invalid_cursor', async () => {
    const p = await project(['contacts:read']);
    for (let i = 0; i < 3; i++) await contact(p.id, { tags: ['x'] });
    const cursor = (await get('/v1/contacts?limit=1&tag=x', p.key)).body.data.nextCursor;
    expect((await get(`/v1/contacts?limit=1&tag=x&cursor=${encodeURIComponent(cursor)}`, p.key)).status).toBe(200);
    expectError(await get(`/v1/contacts?limit=1&cursor=${encodeURIComponent(cursor)}`, p.key), 400, 'invalid_cursor');
    expectError(await get(`/v1/contacts?limit=1&tag=y&cursor=${encodeURIComponent(cursor)}`, p.key), 400, 'invalid_cursor');
    const other = await project(['contacts:read']);
    expectError(await get(`/v1/contacts?limit=1&tag=x&cursor=${encodeURIComponent(cursor)}`, other.key), 400, 'invalid_cursor');
    expectError(await get('/v1/contacts?cursor=not-a-cursor', p.key), 400, 'invalid_cursor');
  });

  it.each([['0'], ['101'], ['abc']])('When limit is %p, then 400 invalid_request', async (limit) => {
    const p = await project(['contacts:read']);
    expectError(await get(`/v1/contacts?limit=${limit}`, p.key), 400, 'invalid_request');
  });
});

describe('GET /v1/contacts/{id}', () => {
  it('When the contact is the project\'s, then it is returned', async () => {
    const p = await project(['contacts:read']);
    const c = await contact(p.id, { attributes: { city: 'Berlin' } });
    const res = await get(`/v1/contacts/${c.id}`, p.key);
    expect(res.status).toBe(200);
    expect(res.body.data.contact).toMatchObject({ id: c.id, phone: `+${c.phone}`, attributes: { city: 'Berlin' } });
  });

  it('When the contact is another project\'s or absent, then 404 not_found', async () => {
    const p = await project();
    const other = await project();
    const theirs = await contact(other.id);
    expectError(await get(`/v1/contacts/${theirs.id}`, p.key), 404, 'not_found');
    expectError(await patch(`/v1/contacts/${theirs.id}`, p.key, { name: 'Mallory' }), 404, 'not_found');
    expect((await get(`/v1/contacts/${theirs.id}`, other.key)).body.data.contact.name).toBe('Grace Hopper');
    expectError(await get('/v1/contacts/999999999999', p.key), 404, 'not_found');
  });

  it.each([['abc'], ['0'], ['01']])('When the id is %p, then 400 invalid_id', async (id) => {
    const p = await project();
    expectError(await get(`/v1/contacts/${id}`, p.key), 400, 'invalid_id');
  });
});

describe('PATCH /v1/contacts/{id}', () => {
  it('When attributes are sent, then only the supplied keys change and null deletes a key', async () => {
    const p = await project();
    const c = await contact(p.id, { attributes: { plan: 'free', seats: 1, keep: true, gone: 'x' } });
    const res = await patch(`/v1/contacts/${c.id}`, p.key, { attributes: { plan: 'pro', seats: 2.5, gone: null, absent: null, added: false } });
    expect(res.status).toBe(200);
    expect(res.body.data.contact.attributes).toEqual({ plan: 'pro', seats: 2.5, keep: true, added: false });
    expect((await get(`/v1/contacts/${c.id}`, p.key)).body.data.contact.attributes).toEqual({ plan: 'pro', seats: 2.5, keep: true, added: false });
  });

  it('When the name is sent, then it changes and the rest is untouched', async () => {
    const p = await project();
    const c = await contact(p.id, { tags: ['a'], attributes: { k: 'v' } });
    t.clock.advance(60_000);
    const res = await patch(`/v1/contacts/${c.id}`, p.key, { name: 'Ada' });
    expect(res.body.data.contact).toMatchObject({ name: 'Ada', tags: ['a'], attributes: { k: 'v' }, updated_at: t.clock.now().toISOString() });
  });

  it('When tags are added and removed, then they change without duplicates and in order', async () => {
    const p = await project();
    const c = await contact(p.id, { tags: ['a', 'b'] });
    let res = await patch(`/v1/contacts/${c.id}`, p.key, { tags: { add: ['c', 'a', 'c', 'd'] } });
    expect(res.body.data.contact.tags).toEqual(['a', 'b', 'c', 'd']);
    res = await patch(`/v1/contacts/${c.id}`, p.key, { tags: { remove: ['b', 'zz'] } });
    expect(res.body.data.contact.tags).toEqual(['a', 'c', 'd']);
    res = await patch(`/v1/contacts/${c.id}`, p.key, { tags: { add: ['e'], remove: ['a'] }, attributes: { x: 1 } });
    expect(res.body.data.contact).toMatchObject({ tags: ['c', 'd', 'e'], attributes: { x: 1 } });
  });

  it('When a string attribute has 1,000 characters, then it is accepted, and 1,001 is 400 invalid_request', async () => {
    const p = await project();
    const c = await contact(p.id);
    expect((await patch(`/v1/contacts/${c.id}`, p.key, { attributes: { note: 'x'.repeat(1000) } })).status).toBe(200);
    const tooLong = await patch(`/v1/contacts/${c.id}`, p.key, { attributes: { note: 'y'.repeat(1001), other: 'z' } });
    expectError(tooLong, 400, 'invalid_request');
    // One clear message for the field, not one per branch of the value's oneOf.
    expect(tooLong.body.error.details.fields).toEqual([
      { field: 'attributes.note', message: 'must be a string of at most 1,000 characters, a number, a boolean or null' },
    ]);
    expect(tooLong.body.error.message).toBe('Invalid request: attributes.note must be a string of at most 1,000 characters, a number, a boolean or null');
    expect((await get(`/v1/contacts/${c.id}`, p.key)).body.data.contact.attributes).toEqual({ note: 'x'.repeat(1000) });
  });

  it.each([
    ['an empty body', {}],
    ['a nested object attribute', { attributes: { address: { city: 'Berlin' } } }],
    ['an array attribute', { attributes: { list: [1, 2] } }],
    ['an empty array attribute', { attributes: { list: [] } }],
    ['an empty object attribute', { attributes: { obj: {} } }],
    ['a 1,001-character attribute', { attributes: { note: 'n'.repeat(1001) } }],
    ['attributes that are not an object', { attributes: ['a'] }],
    ['an empty tags object', { tags: {} }],
    ['tags as a list', { tags: ['a'] }],
    ['a non-string tag', { tags: { add: [1] } }],
    ['an empty name', { name: '' }],
    ['a null name', { name: null }],
    ['an unknown member', { phone: '+14155550123' }],
  ])('When the body has %s, then 400 invalid_request and nothing changes', async (_label, body) => {
    const p = await project();
    const c = await contact(p.id, { tags: ['t'], attributes: { k: 'v' } });
    expectError(await patch(`/v1/contacts/${c.id}`, p.key, body), 400, 'invalid_request');
    expect((await get(`/v1/contacts/${c.id}`, p.key)).body.data.contact).toMatchObject({ name: 'Grace Hopper', tags: ['t'], attributes: { k: 'v' } });
  });

  it('When an attribute is named __proto__, then it is stored and returned as an ordinary key', async () => {
    const p = await project();
    const c = await contact(p.id);
    const res = await patch(`/v1/contacts/${c.id}`, p.key, JSON.parse('{"attributes":{"__proto__":"x","y":1}}'));
    expect(res.status).toBe(200);
    const attributes = res.body.data.contact.attributes;
    expect(Object.keys(attributes).sort()).toEqual(['__proto__', 'y']);
    expect(Object.getOwnPropertyDescriptor(attributes, '__proto__')?.value).toBe('x');
  });

  it('When two updates of different keys and tags run at once, then both survive', async () => {
    const p = await project();
    const c = await contact(p.id, { attributes: { base: 0 } });
    const n = 10;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) => patch(`/v1/contacts/${c.id}`, p.key, { attributes: { [`k${i}`]: i }, tags: { add: [`t${i}`] } })),
    );
    for (const r of results) expect(r.status).toBe(200);
    const final = (await get(`/v1/contacts/${c.id}`, p.key)).body.data.contact;
    expect(final.attributes).toEqual({ base: 0, ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])) });
    expect([...final.tags].sort()).toEqual(Array.from({ length: n }, (_, i) => `t${i}`).sort());
  });
});

describe('the PATCH body check behind the contract validator', () => {
  it.each([
    ['a nested object', { attributes: { a: { b: 1 } } }],
    ['an array', { attributes: { a: [] } }],
    ['a non-finite number', { attributes: { a: Infinity } }],
    ['a 1,001-character string', { attributes: { a: 'é'.repeat(1001) } }],
    ['101 keys', { attributes: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }],
    ['no member', {}],
    ['an unknown member', { status: 'x' }],
    ['tags without add or remove', { tags: {} }],
    ['an unknown tags member', { tags: { set: ['a'] } }],
    ['an empty name', { name: '' }],
    ['a body that is not an object', ['name']],
  ])('When the validator let %s through, then the handler still refuses it with invalid_request', (_label, body) => {
    expect(() => parseContactChange(body)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  it('When values are flat and within bounds, then they pass, counting characters not UTF-16 units', () => {
    const change = parseContactChange({ attributes: { emoji: '😀'.repeat(1000), n: 1.5, b: true, gone: null, __proto__x: 'y' } });
    expect(change.attributes).toEqual(Object.assign(Object.create(null), { emoji: '😀'.repeat(1000), n: 1.5, b: true, gone: null, __proto__x: 'y' }));
  });
});

describe('scopes', () => {
  it('When the key has only contacts:read, then reads work and PATCH is 403 insufficient_scope', async () => {
    const p = await project(['contacts:read', 'conversations:write']);
    const c = await contact(p.id);
    expect((await get(`/v1/contacts/${c.id}`, p.key)).status).toBe(200);
    expectError(await patch(`/v1/contacts/${c.id}`, p.key, { name: 'x' }), 403, 'insufficient_scope');
  });

  it('When the key has only contacts:write or conversation scopes, then reads are 403 insufficient_scope', async () => {
    const p = await project(['contacts:write', 'conversations:read', 'conversations:write']);
    const c = await contact(p.id);
    expectError(await get('/v1/contacts', p.key), 403, 'insufficient_scope');
    expectError(await get(`/v1/contacts/${c.id}`, p.key), 403, 'insufficient_scope');
    expect((await patch(`/v1/contacts/${c.id}`, p.key, { name: 'Only write' })).status).toBe(200);
  });
});
