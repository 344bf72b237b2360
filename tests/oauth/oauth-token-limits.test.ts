/**
 * /token's limits are keyed by client and grant, not by the egress address alone (issue 67, item 2):
 * hosted connectors (claude.ai, ChatGPT) exchange and refresh for all their users from a few
 * addresses. A request carrying a code or refresh token of its client counts against the client
 * (OAUTH_CLIENT_TOKEN_REQUESTS_PER_MINUTE) and, a refresh, its grant (OAUTH_GRANT_REFRESHES_PER_MINUTE);
 * any other counts against its address (OAUTH_REQUESTS_PER_MINUTE). Limits are small here to be
 * reached; each test starts on its own minute of the injected clock.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApp, type TestApp } from '../support/app.js';
import { person } from '../support/dashboard.js';
import { grantFlow, register, token } from '../support/oauth.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { oauthRequestsPerMinute: 20, oauthClientTokenRequestsPerMinute: 12, oauthGrantRefreshesPerMinute: 6 } });
});
afterAll(async () => {
  await t.close();
});

let n = 0;
const email = () => `oauth-token-limits-${++n}@example.test`;

/** One person's grant of a client: its refresh token (one /token request, the code's exchange). */
async function connected(clientId: string) {
  const p = await t.admin.project();
  const { agent } = await person(t, p.id, email());
  const { tokens } = await grantFlow(t, agent, clientId, { projects: [{ id: p.id, scopes: ['contacts:read'] }] });
  return tokens.refresh_token;
}

const refresh = (clientId: string, refreshToken: string) => token(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

/** Refreshes `times` times in a row (each with the rotated token); the last refresh token. */
async function refreshed(clientId: string, refreshToken: string, times: number): Promise<string> {
  let current = refreshToken;
  for (let i = 0; i < times; i++) {
    const res = await refresh(clientId, current);
    expect(res.status).toBe(200);
    current = res.body.refresh_token;
  }
  return current;
}

describe('/token limits by client and grant', () => {
  it('When one address makes 24 token requests in a minute for 4 clients (past the per-address 20), then none is refused', async () => {
    t.clock.set(new Date('2026-04-01T10:00:05Z'));
    const clients = [];
    for (let i = 0; i < 4; i++) clients.push((await register(t)).client_id);
    const grants = [];
    for (const id of clients) grants.push(await connected(id));
    // 4 exchanges so far; 5 refreshes each makes 24 /token requests from this one address.
    for (let i = 0; i < clients.length; i++) await refreshed(clients[i], grants[i], 5);
  });

  it('When one client passes its own limit, then 429 too_many_requests with Retry-After as an OAuth error, and another client from the same address is served', async () => {
    t.clock.set(new Date('2026-04-01T11:00:10Z'));
    const a = (await register(t)).client_id;
    const b = (await register(t)).client_id;
    const first = await connected(a);
    const second = await connected(a);
    await refreshed(a, first, 5);
    const last = await refreshed(a, second, 5); // the client's 12th request
    const refused = await refresh(a, last);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.body).toEqual({ error: 'too_many_requests', error_description: expect.stringContaining('Too many token requests from this client: at most 12 a minute') });
    expect(refused.headers['retry-after']).toBe('50');
    await refreshed(b, await connected(b), 1);
    // The refused request rotated nothing: its token works in the next minute.
    t.clock.set(new Date('2026-04-01T11:01:00Z'));
    expect((await refresh(a, last)).status).toBe(200);
  });

  it('When one grant is refreshed more than 6 times in a minute, then 429 naming the grant, and the client\'s other grants are served', async () => {
    t.clock.set(new Date('2026-04-01T12:00:30Z'));
    const c = (await register(t)).client_id;
    const looping = await connected(c);
    const other = await connected(c);
    const last = await refreshed(c, looping, 6);
    const refused = await refresh(c, last);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'too_many_requests', error_description: expect.stringContaining('Too many refreshes of this grant: at most 6 a minute') });
    expect(refused.headers['retry-after']).toBe('30');
    await refreshed(c, other, 1);
  });

  it('When an address sends token requests without a valid refresh token, then they count against the address: the 21st in a minute is 429', async () => {
    t.clock.set(new Date('2026-04-01T13:00:00Z'));
    const c = (await register(t)).client_id;
    for (let i = 0; i < 20; i++) {
      const res = await refresh(c, `mcp_rt_made-up-${i}`);
      expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    }
    const refused = await refresh(c, 'mcp_rt_made-up-21');
    expect(refused.status).toBe(429);
    expect(refused.body.error_description).toContain('from this address without a valid code or refresh token');
    expect(Number(refused.headers['retry-after'])).toBe(60);
  });
});
