/**
 * GET /v1/messages/{id}: lookup by `wamid` or numeric id, the numeric id echoed with the current
 * delivery status, project isolation, malformed ids and scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectError } from '../support/expect-error.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

let seq = 0;
const uniq = () => `${process.pid}${String(++seq).padStart(4, '0')}`;

async function project(scopes = ['conversations:read']) {
  const p = await t.admin.project();
  return { id: p.id, key: (await t.admin.key(p.id, scopes)).secret };
}

async function message(projectId: string, extra: { wamid?: string; status?: string; error?: object; direction?: string } = {}) {
  const contact = await t.db.prisma.contact.create({ data: { projectId, phone: `1415${uniq()}` } });
  const conversation = await t.db.prisma.conversation.create({ data: { projectId, contactId: contact.id, lastMessageAt: t.clock.now() } });
  const wamid = extra.wamid ?? `wamid.HBgL${uniq()}QTNDQTVCM0Q0Q0Q2RTY3RTcA=`;
  const row = await t.db.prisma.message.create({
    data: {
      projectId,
      conversationId: conversation.id,
      wamid,
      direction: extra.direction ?? 'outbound',
      type: 'text',
      content: { type: 'text', content: 'Your order has shipped.' },
      status: extra.status ?? 'sent',
      error: extra.error,
      sentAt: t.clock.now(),
      statusAt: t.clock.now(),
    },
  });
  return { id: Number(row.id), wamid, conversationId: Number(conversation.id) };
}

const get = (path: string, key: string) => request(t.app).get(path).set('Authorization', `Bearer ${key}`);

describe('GET /v1/messages/{id}', () => {
  it('When looked up by wamid, then the message is returned with its numeric id', async () => {
    const p = await project();
    const m = await message(p.id);
    const res = await get(`/v1/messages/${encodeURIComponent(m.wamid)}`, p.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        id: m.id,
        wamid: m.wamid,
        conversation_id: m.conversationId,
        direction: 'outbound',
        type: 'text',
        status: 'sent',
        content: { type: 'text', content: 'Your order has shipped.', text: { body: 'Your order has shipped.' } },
        error: null,
        created_at: t.clock.now().toISOString(),
        status_updated_at: t.clock.now().toISOString(),
        // No status has reported the message's pricing yet (issue 37).
        pricing: null,
        customer: { phone: expect.stringMatching(/^\+\d+$/), user_id: null, username: null },
        // Written straight to the table, with no author or send reference (issue 60).
        author: { kind: 'unknown', id: null, name: null },
      },
    });
  });

  it('When looked up by numeric id, then the same message is returned', async () => {
    const p = await project();
    const m = await message(p.id);
    const res = await get(`/v1/messages/${m.id}`, p.key);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: m.id, wamid: m.wamid });
  });

  it('When the delivery status changes, then the lookup shows the current status and its time', async () => {
    const p = await project();
    const m = await message(p.id);
    const later = new Date(t.clock.now().getTime() + 5000);
    await t.db.prisma.message.update({ where: { id: BigInt(m.id) }, data: { status: 'read', statusAt: later } });
    const res = await get(`/v1/messages/${m.id}`, p.key);
    expect(res.body.data).toMatchObject({ status: 'read', status_updated_at: later.toISOString() });
  });

  it('When the message failed, then the provider error is returned', async () => {
    const p = await project();
    const error = { code: 131047, title: 'Re-engagement message', message: 'More than 24 hours have passed' };
    const m = await message(p.id, { status: 'failed', error });
    expect((await get(`/v1/messages/${m.id}`, p.key)).body.data).toMatchObject({ status: 'failed', error });
  });

  it('When the id is digits only, then it is a numeric id even if a wamid of those digits exists', async () => {
    const p = await project();
    const m = await message(p.id);
    const digitsWamid = await message(p.id, { wamid: String(m.id) + '0000000' });
    const byDigits = await get(`/v1/messages/${digitsWamid.wamid}`, p.key);
    // Not the message whose wamid is these digits: the digits are read as a numeric id (none here).
    expectError(byDigits, 404, 'not_found');
    expect((await get(`/v1/messages/${m.id}`, p.key)).body.data.wamid).toBe(m.wamid);
  });

  it('When the message belongs to another project, then 404 not_found by id and by wamid', async () => {
    const p = await project();
    const other = await project();
    const theirs = await message(other.id);
    expectError(await get(`/v1/messages/${theirs.id}`, p.key), 404, 'not_found');
    expectError(await get(`/v1/messages/${encodeURIComponent(theirs.wamid)}`, p.key), 404, 'not_found');
    expect((await get(`/v1/messages/${theirs.id}`, other.key)).status).toBe(200);
  });

  it.each([['999999999999'], ['0'], ['00000'], ['99999999999999999999999999'], ['wamid.unknown']])(
    'When nothing has the id %p, then 404 not_found',
    async (id) => {
      const p = await project();
      expectError(await get(`/v1/messages/${id}`, p.key), 404, 'not_found');
    },
  );

  it.each([
    ['a space', 'has%20space'],
    ['a semicolon', 'semi%3Bcolon'],
    ['a dollar', 'dollar%24'],
    ['an encoded slash', 'slash%2Fencoded'],
    ['257 characters', 'x'.repeat(257)],
    ['a non-ASCII letter', '%C3%BCml'],
  ])(
    'When the id has %s, then 400 invalid_id',
    async (_label, id) => {
      const p = await project();
      expectError(await get(`/v1/messages/${id}`, p.key), 400, 'invalid_id');
    },
  );

  it('When the key lacks conversations:read, then 403 insufficient_scope', async () => {
    const p = await project(['messages:send', 'contacts:read', 'conversations:write']);
    const m = await message(p.id);
    expectError(await get(`/v1/messages/${m.id}`, p.key), 403, 'insufficient_scope');
  });
});
