/**
 * Connected agents in the dashboard (issue 45, item 4): the list (client, projects, scopes, last
 * used), Disconnect (its tokens stop at once with 401 invalid_token, its refresh tokens too), the
 * rule that a member cannot disconnect, the audit trail of grants and disconnects; and two instances
 * on one database: a token issued through one works on the other, and a disconnect on one is refused
 * by the other (the credential caches hear of it through PostgreSQL).
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp, useTestApp } from '../support/app.js';
import { csrfOf, grant, person } from '../support/dashboard.js';
import { eventually } from '../support/eventually.js';
import { grantFlow, ping, register, token } from '../support/oauth.js';

let t: TestApp;
useTestApp({ config: { oauthRequestsPerMinute: 100_000 } }, (app) => {
  t = app;
});

let n = 0;
const email = () => `oauth-agents-${++n}@example.test`;

async function connected(app: TestApp = t) {
  const a = await app.admin.project('Agents A');
  const b = await app.admin.project('Agents B');
  const who = email();
  const owner = await person(app, a.id, who, 'owner');
  await grant(app, b.id, who, 'admin');
  const client = await register(app, { client_name: 'Agent <b>Smith</b>' });
  const flow = await grantFlow(app, owner.agent, client.client_id, {
    projects: [{ id: a.id, scopes: ['contacts:read', 'messages:send'] }, { id: b.id, scopes: ['conversations:read'] }],
    defaultProject: a.id,
  });
  const connection = await app.db.prisma.agentConnection.findFirstOrThrow({ where: { clientId: client.client_id } });
  return { a, b, who, owner, client, tokens: flow.tokens, connection };
}

describe('the connected agents page', () => {
  it('When a person connected an agent, then the page lists it with its client name (escaped, not verified), projects, scopes and last use', async () => {
    const { a, b, owner, connection, tokens } = await connected();
    let page = await owner.agent.get('/dashboard/agents');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Agent &lt;b&gt;Smith&lt;/b&gt;');
    expect(page.text).toContain('(name not verified)');
    expect(page.text).toContain(a.id);
    expect(page.text).toContain('contacts:read, messages:send');
    expect(page.text).toContain(b.id);
    expect(page.text).toContain('conversations:read');
    expect(page.text).toContain(`action="/dashboard/agents/${connection.id}/disconnect"`);
    expect(page.text).toMatch(/Last used<\/dt><dd>never/);

    expect((await ping(t, tokens.access_token)).status).toBe(200);
    await eventually(async () => (await t.db.prisma.accessToken.findFirst({ where: { connectionId: connection.id } }))?.lastUsedAt, (v) => !!v, 5000, 'last use recorded');
    page = await owner.agent.get('/dashboard/agents');
    expect(page.text).toMatch(/Last used<\/dt><dd>2026-03-01 12:00 UTC/);
    // Linked from the projects page.
    expect((await owner.agent.get('/dashboard/projects')).text).toContain('href="/dashboard/agents"');
  });

  it('When another owner or admin of an attached project looks, then they see it; a member of it or a stranger does not', async () => {
    const { a, connection } = await connected();
    const admin = await person(t, a.id, email(), 'admin');
    expect((await admin.agent.get('/dashboard/agents')).text).toContain(connection.id);
    const member = await person(t, a.id, email(), 'member');
    expect((await member.agent.get('/dashboard/agents')).text).not.toContain(connection.id);
    const elsewhere = await t.admin.project();
    const stranger = await person(t, elsewhere.id, email(), 'owner');
    expect((await stranger.agent.get('/dashboard/agents')).text).not.toContain(connection.id);
  });
});

describe('disconnect', () => {
  it('When the grantor disconnects, then its access token gets 401 invalid_token at once, its refresh token is refused, and the audit trail has the grant and the disconnect per project', async () => {
    const { a, b, who, owner, client, tokens, connection } = await connected();
    expect((await ping(t, tokens.access_token)).status).toBe(200);
    const csrf = csrfOf((await owner.agent.get('/dashboard/agents')).text);
    const res = await owner.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: csrf });
    expect({ status: res.status, location: res.headers.location }).toEqual({ status: 303, location: '/dashboard/agents?done=disconnected' });

    const refused = await ping(t, tokens.access_token);
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 401, code: 'invalid_token' });
    const refresh = await token(t, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id });
    expect({ status: refresh.status, error: refresh.body.error }).toEqual({ status: 400, error: 'invalid_grant' });
    expect(await t.db.prisma.agentConnection.count({ where: { id: connection.id } })).toBe(0);
    expect((await owner.agent.get('/dashboard/agents')).text).not.toContain(connection.id);

    for (const [project, scopes, isDefault] of [[a.id, ['contacts:read', 'messages:send'], true], [b.id, ['conversations:read'], false]] as const) {
      const rows = await t.db.prisma.dashboardAudit.findMany({ where: { projectId: project, subject: connection.id }, orderBy: { id: 'asc' } });
      expect(rows.map((r) => [r.action, r.actor])).toEqual([['agent.grant', who], ['agent.disconnect', who]]);
      expect(rows[0].after).toMatchObject({ client_id: client.client_id, client_name: 'Agent <b>Smith</b>', scopes, is_default: isDefault, redirect_host: '127.0.0.1:7777' });
      expect(rows[1].before).toMatchObject({ client_id: client.client_id, client_name: 'Agent <b>Smith</b>', scopes, is_default: isDefault });
    }
    // Owners read them on the project's audit page.
    expect((await owner.agent.get(`/dashboard/projects/${a.id}/audit`)).text).toContain('agent.disconnect');
  });

  it('When an admin of an attached project (not the grantor) disconnects, then it is done', async () => {
    const { b, connection, tokens } = await connected();
    const admin = await person(t, b.id, email(), 'admin');
    const csrf = csrfOf((await admin.agent.get('/dashboard/agents')).text);
    expect((await admin.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: csrf })).status).toBe(303);
    expect((await ping(t, tokens.access_token)).status).toBe(401);
  });

  it('When a member of an attached project posts Disconnect, then 403 and the agent keeps working; a stranger gets 404; without CSRF 403', async () => {
    const { a, owner, connection, tokens } = await connected();
    const member = await person(t, a.id, email(), 'member');
    const forged = await member.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: await member.csrf() });
    expect(forged.status).toBe(403);
    const elsewhere = await t.admin.project();
    const stranger = await person(t, elsewhere.id, email(), 'owner');
    expect((await stranger.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: await stranger.csrf() })).status).toBe(404);
    expect((await owner.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({})).status).toBe(403);
    expect((await ping(t, tokens.access_token)).status).toBe(200);
    expect(await t.db.prisma.dashboardAudit.count({ where: { subject: connection.id, action: 'agent.disconnect' } })).toBe(0);
  });
});

describe('two instances on one database', () => {
  it('When a token is issued through instance A, then B accepts it; when A disconnects it, B refuses it (401 invalid_token)', async () => {
    const b = await startTestApp({ config: { oauthRequestsPerMinute: 100_000 } });
    try {
      const { owner, connection, tokens, client } = await connected(t);
      // B had it cached as valid before the disconnect.
      const onB = await request(b.app).get('/v1/ping').set('Authorization', `Bearer ${tokens.access_token}`);
      expect(onB.status).toBe(200);
      // The refresh works through B too: nothing of a flow is held by one instance.
      const refreshed = await request(b.app).post('/token').type('form').send(new URLSearchParams({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id }).toString());
      expect(refreshed.status).toBe(200);
      expect((await request(b.app).get('/v1/ping').set('Authorization', `Bearer ${refreshed.body.access_token}`)).status).toBe(200);

      const csrf = csrfOf((await owner.agent.get('/dashboard/agents')).text);
      expect((await owner.agent.post(`/dashboard/agents/${connection.id}/disconnect`).type('form').send({ _csrf: csrf })).status).toBe(303);
      for (const access of [tokens.access_token, refreshed.body.access_token]) {
        const res = await eventually(
          () => request(b.app).get('/v1/ping').set('Authorization', `Bearer ${access}`),
          (r) => r.status === 401,
          5000,
          'instance B refuses the disconnected token',
          20,
        );
        expect(res.body.error.code).toBe('invalid_token');
      }
    } finally {
      await b.close();
    }
  });
});
