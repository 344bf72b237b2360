/** The per-credential rate limit as a /v1 caller sees it (the stores are tested in rate-limit.test.ts). */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 3 } });
  t.clock.set(new Date('2026-03-01T12:00:10Z'));
});
afterAll(async () => {
  await t.close();
});

describe('rate limit on /v1', () => {
  it('When a key exceeds its limit, then 429 rate_limited with Retry-After, and the next window admits it again', async () => {
    const p = await t.admin.project();
    const key = (await t.admin.key(p.id, ['contacts:read'])).secret;
    const other = (await t.admin.key(p.id, ['contacts:read'])).secret;
    const ping = (s: string) => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${s}`);
    for (let i = 2; i >= 0; i--) {
      const res = await ping(key);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      expect(res.headers['ratelimit-remaining']).toBe(String(i));
      expect(res.headers['ratelimit-reset']).toBe('50');
    }
    const limited = await ping(key);
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(limited.headers['retry-after']).toBe('50');
    expect(limited.body.request_id).toBe(limited.headers['x-request-id']);
    // Another key of the same project is counted separately.
    expect((await ping(other)).status).toBe(200);
    t.clock.advance(50_000);
    expect((await ping(key)).status).toBe(200);
  });

  it('When an agent connection has two tokens, then they share one count', async () => {
    const p = await t.admin.project();
    const tok = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);
    const second = await t.admin.call('post', `/admin/connections/${tok.connectionId}/tokens`, {});
    const ping = (s: string) => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${s}`);
    expect((await ping(tok.secret)).status).toBe(200);
    expect((await ping(second.secret)).status).toBe(200);
    expect((await ping(tok.secret)).status).toBe(200);
    expect((await ping(second.secret)).status).toBe(429);
  });

  it('When the description is fetched without credential, then it is not rate limited', async () => {
    const res = await request(t.app).get('/v1/openapi.json');
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });
});
