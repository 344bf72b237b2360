/**
 * Answers written straight onto Node's response (http/json-response.ts) are, byte for byte, what
 * Express's res.json writes: a service without response checks (production's default) and one
 * with them (every other test) answer alike.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';

let direct: TestApp;
let hooked: TestApp;
let keys: { direct: string; hooked: string };
let senders: { direct: string; hooked: string };

beforeAll(async () => {
  direct = await startTestApp({ validateResponses: false, config: { responseCheckSample: 0 } });
  hooked = await startTestApp();
  const key = async (t: TestApp) => {
    const p = await t.admin.project();
    return (await t.admin.key(p.id, ['contacts:read'])).secret;
  };
  keys = { direct: await key(direct), hooked: await key(hooked) };
  const sender = async (t: TestApp) => {
    const p = await t.admin.project();
    return (await t.admin.key(p.id, ['messages:send'])).secret;
  };
  senders = { direct: await sender(direct), hooked: await sender(hooked) };
});
afterAll(async () => {
  await direct.close();
  await hooked.close();
});

/** What a client can see of an answer, less what differs per request (ids, dates, counters). */
function shape(res: request.Response) {
  const headers = { ...res.headers };
  for (const h of ['date', 'x-request-id', 'ratelimit-remaining', 'ratelimit-reset', 'connection', 'keep-alive']) delete headers[h];
  const text = (res.text ?? '').replace(/req_[0-9a-f]{32}/g, 'req_*').replace(/prj_[0-9a-z]+/g, 'prj_*');
  return { status: res.status, headers, text };
}

describe('JSON answers written directly', () => {
  it('When a ping succeeds, then the direct answer has the same status line, headers and bytes as res.json', async () => {
    const a = await request(direct.app).get('/v1/ping').set('authorization', `Bearer ${keys.direct}`);
    const b = await request(hooked.app).get('/v1/ping').set('authorization', `Bearer ${keys.hooked}`);
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.text));
    expect(shape(a)).toEqual(shape(b));
  });

  it('When a request fails, then the error envelope is written alike, its request id equal to X-Request-Id', async () => {
    const a = await request(direct.app).get('/v1/contacts?limit=0').set('authorization', `Bearer ${keys.direct}`);
    const b = await request(hooked.app).get('/v1/contacts?limit=0').set('authorization', `Bearer ${keys.hooked}`);
    expect(a.status).toBe(400);
    expect(a.body.request_id).toBe(a.headers['x-request-id']);
    expect(shape(a)).toEqual(shape(b));
    const unknown = await request(direct.app).get('/v1/nowhere').set('authorization', `Bearer ${keys.direct}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ success: false, error: expect.objectContaining({ code: 'not_found' }), request_id: unknown.headers['x-request-id'] });
  });

  it('When an Idempotency-Key answer is written directly, then it has the bytes res.json writes, and its replay the same body', async () => {
    // No customer wrote to this number: the send is refused (a 4xx), and a 4xx is stored and replayed.
    const body = { type: 'text', phone: '+14155550999', content: 'no window' };
    const send = (t: TestApp, secret: string) => request(t.app).post('/v1/messages').set('authorization', `Bearer ${secret}`).set('idempotency-key', 'k-direct').send(body);
    const a = await send(direct, senders.direct);
    const b = await send(hooked, senders.hooked);
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(a.status).toBeLessThan(500);
    expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.text));
    expect(shape(a)).toEqual(shape(b));
    const replay = await send(direct, senders.direct);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.status).toBe(a.status);
    expect(replay.body).toEqual(a.body);
  });

  it('When a caller asks with HEAD, then the headers come without a body, as res.json sends them', async () => {
    const a = await request(direct.app).head('/v1/contacts').set('authorization', `Bearer ${keys.direct}`);
    const b = await request(hooked.app).head('/v1/contacts').set('authorization', `Bearer ${keys.hooked}`);
    expect(a.text ?? '').toBe('');
    expect(shape(a)).toEqual(shape(b));
  });
});
