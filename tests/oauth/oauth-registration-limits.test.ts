/**
 * What one address can make the authorization server store (issue 55, finding 8): dynamic client
 * registration is throttled per client address in the shared counters (OAUTH_REGISTRATIONS_PER_HOUR
 * registrations an hour, OAUTH_REGISTRATION_BYTES_PER_DAY bytes a UTC day; IPv6 by /64), refused as
 * 429 `too_many_requests` with Retry-After, and each registration is bounded (5 redirect URIs of 512
 * characters, 4 KiB of stored metadata, 64 levels of nesting). Time moves on the injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { REDIRECT } from '../support/oauth.js';

let t: TestApp;
beforeAll(async () => {
  // The test's own address comes from X-Forwarded-For, as behind a load balancer.
  t = await startTestApp({ config: { trustProxy: true, oauthRequestsPerMinute: 100_000, oauthRegistrationsPerHour: 10, oauthRegistrationBytesPerDay: 16 * 1024 } });
});
afterAll(async () => {
  await t.close();
});

const clients = () => t.db.prisma.oAuthClient.count();
const register = (from: string, body: Record<string, unknown> = {}) =>
  request(t.app).post('/register').set('X-Forwarded-For', from).send({ client_name: 'Agent', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', ...body });

describe('registrations per address', () => {
  it('When an address registers 10 clients in an hour, then the 11th is 429 too_many_requests with Retry-After to the hour\'s end; other addresses still register, and the next hour it may again', async () => {
    t.clock.set(new Date('2026-03-02T10:15:00Z'));
    for (let i = 0; i < 10; i++) expect((await register('198.51.100.7')).status).toBe(201);
    const before = await clients();
    const refused = await register('198.51.100.7');
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.body).toEqual({ error: 'too_many_requests', error_description: expect.stringContaining('at most 10 an hour') });
    expect(refused.headers['retry-after']).toBe(String(45 * 60));
    expect(await clients()).toBe(before);
    expect((await register('198.51.100.8')).status).toBe(201);
    t.clock.set(new Date('2026-03-02T11:00:00Z'));
    expect((await register('198.51.100.7')).status).toBe(201);
  });

  it('When the addresses of one IPv6 /64 register, then they share one count', async () => {
    t.clock.set(new Date('2026-03-02T12:00:00Z'));
    for (let i = 1; i <= 10; i++) expect((await register(`2001:db8:5:6::${i.toString(16)}`)).status).toBe(201);
    expect((await register('2001:db8:5:6:ffff:1:2:3')).status).toBe(429);
    expect((await register('2001:db8:5:7::1')).status).toBe(201);
  });

  it('When an address sends more than OAUTH_REGISTRATION_BYTES_PER_DAY of registrations in a UTC day, then 429 until the next day', async () => {
    t.clock.set(new Date('2026-03-03T18:00:00Z'));
    const bulky = { software_statement: 's'.repeat(3000) }; // about 3.1 KB a body, under the 4 KiB stored
    let accepted = 0;
    for (let i = 0; i < 5; i++) if ((await register('203.0.113.9', bulky)).status === 201) accepted++;
    expect(accepted).toBe(5);
    const refused = await register('203.0.113.9', bulky);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'too_many_requests', error_description: expect.stringContaining(`at most ${16 * 1024} a day`) });
    expect(refused.headers['retry-after']).toBe(String(6 * 3600));
    t.clock.set(new Date('2026-03-04T00:00:01Z'));
    expect((await register('203.0.113.9', bulky)).status).toBe(201);
  });
});

describe('the size of one registration', () => {
  it('When a registration passes a bound (6 redirect URIs, one of 513 characters, 4 KiB stored, 8,000 levels), then 400 invalid_client_metadata (invalid_redirect_uri for the long URI) naming it and nothing is stored; at the bounds it is registered', async () => {
    t.clock.set(new Date('2026-03-05T09:00:00Z'));
    const base = `"client_name":"Agent","token_endpoint_auth_method":"none"`;
    // A redirect URI over its bound is RFC 7591's invalid_redirect_uri; the other bounds invalid_client_metadata.
    const cases: Array<[string, string, string]> = [
      [`{${base},"redirect_uris":${JSON.stringify(Array.from({ length: 6 }, (_, i) => `https://app.example.test/cb${i}`))}}`, 'at most 5', 'invalid_client_metadata'],
      [`{${base},"redirect_uris":["https://app.example.test/${'a'.repeat(488)}"]}`, 'longer than 512', 'invalid_redirect_uri'],
      [`{${base},"redirect_uris":["${REDIRECT}"],"jwks":{"keys":[{"kty":"RSA","n":"${'n'.repeat(5000)}","e":"AQAB"}]}}`, 'at most 4096', 'invalid_client_metadata'],
      // Sent as text: it is too deep for JSON.stringify here, as it was for the service's storage.
      [`{${base},"redirect_uris":["${REDIRECT}"],"jwks":${'['.repeat(8000)}${']'.repeat(8000)}}`, '64 levels', 'invalid_client_metadata'],
    ];
    const before = await clients();
    for (const [body, message, error] of cases) {
      const res = await request(t.app).post('/register').set('X-Forwarded-For', '192.0.2.10').set('Content-Type', 'application/json').send(body);
      expect({ body: body.slice(0, 80), status: res.status, error: res.body.error, description: res.body.error_description?.includes(message) }).toEqual({ body: body.slice(0, 80), status: 400, error, description: true });
    }
    expect(await clients()).toBe(before);
    const uris = Array.from({ length: 5 }, (_, i) => `https://app.example.test/${i}${'a'.repeat(486)}`);
    expect(uris.every((u) => u.length === 512)).toBe(true);
    const res = await register('192.0.2.11', { redirect_uris: uris });
    expect(res.status).toBe(201);
    expect(res.body.redirect_uris).toEqual(uris);
  });
});
