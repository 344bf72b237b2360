/**
 * The dashboard through HTTP (supertest, real PostgreSQL): accounts and roles, sessions, CSRF,
 * keys and broadcast approval as a person, and the bad inputs: each refused or shown inert with
 * a clear message, and nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { api, projectWithKey, seedContacts, template } from '../support/broadcasts.js';
import { csrfOf, grant, person, PASSWORD, submitSetup } from '../support/dashboard.js';
import { main } from '../../scripts/ops/main.js';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { ManualClock } from '../../lib/platform/clock.js';
import { MemoryCounterStore, RedisCounterStore } from '../../lib/platform/counters.js';

let t: TestApp;
let n = 0;
const email = (who: string) => `${who}.${++n}@example.com`;

beforeAll(async () => {
  t = await startTestApp({ config: { trustProxy: true } });
});

afterAll(async () => {
  await t.close();
});

async function pendingBroadcast(projectId: string, key: string, name = 'Spring sale') {
  await template(t, projectId, `notice${++n}`, 'Account updated', 'UTILITY');
  await seedContacts(t, projectId, [{ phone: `1415555${String(n).padStart(4, '0')}` }, { phone: `1415556${String(n).padStart(4, '0')}` }]);
  const res = await api(t, key).post('/v1/broadcasts', { name, template_name: `notice${n}`, template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } });
  expect(res.status).toBe(201);
  return res.body.data.broadcast.id as string;
}

const statusOf = async (id: string) => (await t.db.pool.query('SELECT status FROM broadcasts WHERE id = $1', [id])).rows[0].status;
const keyCount = (projectId: string) => t.db.prisma.apiKey.count({ where: { projectId } });

describe('adminGrantDashboardRole (the first owner)', () => {
  it('When the operator grants an owner, then a one-time setup link is returned; bad input is refused', async () => {
    const project = await t.admin.project('Owned');
    const res = await request(t.app).post(`/admin/projects/${project.id}/dashboard-members`).set('Authorization', `Bearer ${t.adminToken}`).send({ email: 'Boss@Example.com' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ account: { email: 'boss@example.com' }, role: 'owner', project_id: project.id });
    expect(res.body.data.setup_url).toMatch(/\/dashboard\/setup\?token=[a-z0-9]{40}$/);
    const bad = (body: object, path = `/admin/projects/${project.id}/dashboard-members`) =>
      request(t.app).post(path).set('Authorization', `Bearer ${t.adminToken}`).send(body);
    expect((await bad({ email: 'not an email' })).status).toBe(400);
    expect((await bad({ email: 'a@example.com', role: 'king' })).status).toBe(400);
    expect((await bad({ email: 'a@example.com' }, '/admin/projects/prj_missing/dashboard-members')).status).toBe(404);
    expect((await request(t.app).post(`/admin/projects/${project.id}/dashboard-members`).send({ email: 'a@example.com' })).status).toBe(401);
  });
});

describe('ops dashboard grant', () => {
  it('When the operator runs the CLI, then it prints the setup link once; a bad role is a usage error', async () => {
    const project = await t.admin.project('Cli');
    const server = t.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const env = { SERVICE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ADMIN_TOKEN: t.adminToken };
    const run = async (args: string[]) => {
      let out = '';
      let err = '';
      const code = await main(args, env, { out: (s) => void (out += s), err: (s) => void (err += s) });
      return { code, out, err };
    };
    try {
      const first = await run(['dashboard', 'grant', project.id, 'first@example.com']);
      expect(first.code).toBe(0);
      expect(first.out).toMatch(/first@example\.com is owner of project/);
      expect(first.out).toMatch(/\/dashboard\/setup\?token=[a-z0-9]{40}/);
      const bad = await run(['dashboard', 'grant', project.id, 'first@example.com', '--role', 'king']);
      expect(bad.code).toBe(2);
      expect(bad.err).toMatch(/--role/);
      expect(bad.err).toMatch(/owner/);
      const missing = await run(['dashboard', 'grant', 'prj_nowhere', 'first@example.com']);
      expect(missing.code).toBe(1);
      // A lost password: the old one and the sessions stop working, and a new link is printed.
      const { agent } = await person(t, project.id, 'lost@example.com');
      expect((await run(['dashboard', 'grant', project.id, 'lost@example.com', '--role', 'admin'])).out).toContain('already has a password');
      const reset = await run(['dashboard', 'grant', project.id, 'lost@example.com', '--role', 'admin', '--reset-password']);
      expect(reset.out).toMatch(/\/dashboard\/setup\?token=[a-z0-9]{40}/);
      expect((await agent.get('/dashboard/projects')).status).toBe(303);
      const form = await request(t.app).get('/dashboard/login');
      const old = await request(t.app).post('/dashboard/login').set('Cookie', `dashboard_login=${csrfOf(form.text)}`).type('form')
        .send({ _csrf: csrfOf(form.text), email: 'lost@example.com', password: PASSWORD });
      expect(old.status).toBe(401);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe('setup link and sign-in', () => {
  it('When a person opens the setup link, then a weak or mismatched password is refused, a good one signs in, and the link works once', async () => {
    const project = await t.admin.project('Setup');
    const who = email('new');
    const link = (await grant(t, project.id, who))!;
    expect((await request(t.app).get(link)).text).toContain(who);
    const short = await submitSetup(request(t.app), link, 'short');
    expect(short.status).toBe(400);
    expect(short.text).toContain('at least 12 characters');
    const differ = await submitSetup(request(t.app), link, PASSWORD, PASSWORD + 'x');
    expect(differ.status).toBe(400);
    expect(differ.text).toContain('The two passwords differ');
    const ok = await submitSetup(request(t.app), link, PASSWORD);
    expect(ok.status).toBe(303);
    const cookie = ok.headers['set-cookie'] as unknown as string[];
    const session = cookie.find((c) => c.startsWith('dashboard_session='))!;
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Strict/);
    expect(session).toMatch(/Path=\/dashboard/);
    expect(session).not.toMatch(/Secure/);
    const again = await submitSetup(request(t.app), link, PASSWORD);
    expect(again.status).toBe(404);
    expect(again.text).toContain('invalid, used or expired');
    expect((await request(t.app).get('/dashboard/setup?token=' + 'x'.repeat(40))).status).toBe(404);
    expect((await request(t.app).get('/dashboard/setup')).status).toBe(404);
    // The token is never in a logged path.
    expect(link).toMatch(/^\/dashboard\/setup\?token=/);
  });

  it('When the password is wrong, then sign-in is refused with one message and no session; the right one over HTTPS gets a Secure cookie', async () => {
    const project = await t.admin.project('Login');
    const who = email('login');
    await person(t, project.id, who);
    const agent = request.agent(t.app);
    const form = await agent.get('/dashboard/login');
    const wrong = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(form.text), email: who, password: 'wrong password!' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong email or password.');
    expect(String(wrong.headers['set-cookie'] ?? '')).not.toContain('dashboard_session=');
    const unknown = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(wrong.text), email: 'nobody@example.com', password: PASSWORD });
    expect(unknown.status).toBe(401);
    expect(unknown.text).toContain('Wrong email or password.');
    // The sign-in form's own token: missing, it is refused.
    const noToken = await agent.post('/dashboard/login').type('form').send({ email: who, password: PASSWORD });
    expect(noToken.status).toBe(403);
    const right = await agent.post('/dashboard/login').set('X-Forwarded-Proto', 'https').type('form').send({ _csrf: csrfOf(noToken.text), email: who, password: PASSWORD });
    expect(right.status).toBe(303);
    expect(String(right.headers['set-cookie'])).toMatch(/dashboard_session=[^;]+;.*Secure/);
  });

  it('When an account fails too often, then sign-in is refused even with the right password until the window ends', async () => {
    const project = await t.admin.project('Throttle');
    const who = email('throttled');
    await person(t, project.id, who);
    const agent = request.agent(t.app);
    let page = (await agent.get('/dashboard/login')).text;
    for (let i = 0; i < 5; i++) {
      const res = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(page), email: who, password: `guess ${i} guess` });
      expect(res.status).toBe(401);
      page = res.text;
    }
    const blocked = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(page), email: who, password: PASSWORD });
    expect(blocked.status).toBe(429);
    expect(blocked.text).toContain('Too many failed sign-ins');
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    t.clock.advance(15 * 60_000);
    const later = await agent.post('/dashboard/login').type('form').send({ _csrf: csrfOf(blocked.text), email: who, password: PASSWORD });
    expect(later.status).toBe(303);
  });

  it('When one address fails on many accounts, then it is slowed down too', async () => {
    const agent = request.agent(t.app);
    let page = (await agent.get('/dashboard/login')).text;
    const from = (r: request.Test) => r.set('X-Forwarded-For', '203.0.113.77');
    for (let i = 0; i < 20; i++) {
      const res = await from(agent.post('/dashboard/login')).type('form').send({ _csrf: csrfOf(page), email: `spray${i}@example.com`, password: 'wrong password!' });
      expect(res.status).toBe(401);
      page = res.text;
    }
    const blocked = await from(agent.post('/dashboard/login')).type('form').send({ _csrf: csrfOf(page), email: 'spray99@example.com', password: 'wrong password!' });
    expect(blocked.status).toBe(429);
    t.clock.advance(15 * 60_000);
  });

  it('When the session expires, then pages send the person to sign in and a form posted with it changes nothing', async () => {
    const project = await t.admin.project('Expiry');
    const { agent, csrf } = await person(t, project.id, email('expiring'));
    const token = await csrf();
    t.clock.advance(12 * 3600_000 + 1000);
    const page = await agent.get('/dashboard/projects');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/dashboard/login');
    const post = await agent.post(`/dashboard/projects/${project.id}/keys`).type('form').send({ _csrf: token, name: 'late', scopes: 'messages:send' });
    expect(post.status).toBe(401);
    expect(post.text).toContain('Your session has ended');
    expect(await keyCount(project.id)).toBe(0);
  });

  it('When a person signs out, then the session no longer works', async () => {
    const project = await t.admin.project('Logout');
    const { agent, csrf } = await person(t, project.id, email('leaving'));
    expect((await agent.get('/dashboard/login')).headers.location).toBe('/dashboard/projects');
    const out = await agent.post('/dashboard/logout').type('form').send({ _csrf: await csrf() });
    expect(out.status).toBe(303);
    expect((await agent.get('/dashboard/projects')).status).toBe(303);
  });
});

describe('keys in the dashboard', () => {
  it('When an owner mints a key, then its secret is shown once and works; rotate, scopes and revoke apply at once and are audited', async () => {
    const project = await t.admin.project('Keys');
    const who = email('owner');
    const { agent, csrf } = await person(t, project.id, who);
    const created = await agent.post(`/dashboard/projects/${project.id}/keys`).type('form')
      .send(`_csrf=${await csrf(`/dashboard/projects/${project.id}/keys`)}&name=CRM&mode=live&scopes=messages:send&scopes=contacts:read`);
    expect(created.status).toBe(200);
    const secret = /<code id="new-secret">(pk_live_[a-z0-9]+)<\/code>/.exec(created.text)![1];
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${secret}`)).status).toBe(200);
    const key = await t.db.prisma.apiKey.findFirstOrThrow({ where: { projectId: project.id } });
    // "Last used" is written beside the request, not before its answer.
    for (let i = 0; i < 50 && !(await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt; i++) await new Promise((r) => setTimeout(r, 20));
    const listing = await agent.get(`/dashboard/projects/${project.id}/keys`);
    expect(listing.text).toContain('CRM');
    expect(listing.text).not.toContain(secret);
    expect(listing.text).toContain(`<dt>Last used</dt><dd>${t.clock.now().toISOString().replace('T', ' ').slice(0, 16)} UTC</dd>`);
    expect(key.scopes).toEqual(['messages:send', 'contacts:read']);

    const rotated = await agent.post(`/dashboard/projects/${project.id}/keys/${key.id}/rotate`).type('form').send({ _csrf: await csrf() });
    const fresh = /<code id="new-secret">(pk_live_[a-z0-9]+)<\/code>/.exec(rotated.text)![1];
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${secret}`)).status).toBe(401);
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${fresh}`)).status).toBe(200);

    const scoped = await agent.post(`/dashboard/projects/${project.id}/keys/${key.id}/scopes`).type('form').send({ _csrf: await csrf(), scopes: 'templates:read' });
    expect(scoped.status).toBe(303);
    expect((await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })).scopes).toEqual(['templates:read']);
    const none = await agent.post(`/dashboard/projects/${project.id}/keys/${key.id}/scopes`).type('form').send({ _csrf: await csrf() });
    expect(none.status).toBe(400);
    expect(none.text).toContain('Choose at least one scope.');

    await agent.post(`/dashboard/projects/${project.id}/keys/${key.id}/revoke`).type('form').send({ _csrf: await csrf() });
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${fresh}`)).status).toBe(401);

    const audit = await agent.get(`/dashboard/projects/${project.id}/audit`);
    for (const action of ['key.create', 'key.rotate', 'key.update_scopes', 'key.revoke']) expect(audit.text).toContain(action);
    expect(audit.text).toContain(who);
    const rows = await t.db.prisma.dashboardAudit.findMany({ where: { projectId: project.id, action: 'key.update_scopes' } });
    expect(rows[0]).toMatchObject({ actor: who, before: expect.objectContaining({ scopes: ['messages:send', 'contacts:read'] }), after: expect.objectContaining({ scopes: ['templates:read'] }) });
  });

  it('When a key form is bad (no name, unknown scope, no scope), then it is refused with a message and no key is made', async () => {
    const project = await t.admin.project('Bad keys');
    const { agent, csrf } = await person(t, project.id, email('owner'));
    const token = await csrf();
    const post = (body: object) => agent.post(`/dashboard/projects/${project.id}/keys`).type('form').send({ _csrf: token, ...body });
    expect((await post({ name: '', scopes: 'messages:send' })).text).toContain('Give the key a name');
    expect((await post({ name: 'x', scopes: 'root:all' })).text).toContain('Unknown scope: root:all.');
    expect((await post({ name: 'x' })).status).toBe(400);
    expect(await keyCount(project.id)).toBe(0);
  });

  it('When the CSRF token is missing, wrong or another session’s, then the form is refused and nothing changes', async () => {
    const project = await t.admin.project('Csrf');
    const { agent } = await person(t, project.id, email('owner'));
    const other = await person(t, project.id, email('admin'), 'admin');
    const path = `/dashboard/projects/${project.id}/keys`;
    for (const body of [{}, { _csrf: 'x'.repeat(40) }, { _csrf: await other.csrf() }]) {
      const res = await agent.post(path).type('form').send({ ...body, name: 'forged', scopes: 'messages:send' });
      expect(res.status).toBe(403);
      expect(res.text).toContain('This form could not be verified');
    }
    expect(await keyCount(project.id)).toBe(0);
  });

  it('When a form names a project the person has no role in (or another project’s key), then it is not found and nothing changes', async () => {
    const mine = await t.admin.project('Mine');
    const theirs = await t.admin.project('Theirs');
    const theirKey = await t.admin.key(theirs.id, ['messages:send']);
    const { agent, csrf } = await person(t, mine.id, email('owner'));
    const token = await csrf();
    const forged = await agent.post(`/dashboard/projects/${theirs.id}/keys`).type('form').send({ _csrf: token, name: 'stolen', scopes: 'messages:send' });
    expect(forged.status).toBe(404);
    expect(forged.text).toContain('No such project, or you have no role in it.');
    expect(await keyCount(theirs.id)).toBe(1);
    const crossKey = await agent.post(`/dashboard/projects/${mine.id}/keys/${theirKey.id}/revoke`).type('form').send({ _csrf: token });
    expect(crossKey.status).toBe(404);
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${theirKey.secret}`)).status).toBe(200);
    expect((await agent.get(`/dashboard/projects/${theirs.id}/broadcasts`)).status).toBe(404);
  });

  it('When a form is too large or not a form, then it is refused before parsing', async () => {
    const project = await t.admin.project('Big');
    const { agent, csrf } = await person(t, project.id, email('owner'));
    const big = await agent.post(`/dashboard/projects/${project.id}/keys`).type('form').send({ _csrf: await csrf(), name: 'x'.repeat(20_000), scopes: 'messages:send' });
    expect(big.status).toBe(413);
    const json = await agent.post(`/dashboard/projects/${project.id}/keys`).send({ name: 'x', scopes: ['messages:send'] });
    expect(json.status).toBe(400);
    expect(await keyCount(project.id)).toBe(0);
  });
});

describe('broadcast approval in the dashboard', () => {
  it('When an admin approves a pending broadcast, then it is scheduled, who and when are recorded, and the owner reads it in the audit', async () => {
    const { project, key } = await projectWithKey(t);
    const id = await pendingBroadcast(project.id, key);
    const owner = await person(t, project.id, email('owner'));
    const adminWho = email('admin');
    const admin = await person(t, project.id, adminWho, 'admin');
    const list = await admin.agent.get(`/dashboard/projects/${project.id}/broadcasts`);
    expect(list.text).toContain('Spring sale');
    expect(list.text).toMatch(/<strong>2<\/strong> eligible recipients/);
    expect(list.text).toContain('APPROVED');
    const approved = await admin.agent.post(`/dashboard/projects/${project.id}/broadcasts/${id}/approve`).type('form').send({ _csrf: await admin.csrf() });
    expect(approved.status).toBe(303);
    expect(await statusOf(id)).toBe('scheduled');
    const detail = await admin.agent.get(approved.headers.location);
    expect(detail.text).toContain('Broadcast approved');
    expect(detail.text).toContain(`by ${adminWho}`);
    const row = (await t.db.pool.query('SELECT approved_by, approved_at FROM broadcasts WHERE id = $1', [id])).rows[0];
    expect(row.approved_by).toBe(adminWho);
    expect(row.approved_at).toEqual(t.clock.now());
    // Progress: a failed recipient is counted by its reason (as the engine records it).
    await t.db.pool.query(
      `UPDATE broadcast_recipients SET state = 'failed', error_code = 131026, error_category = 'permanent', error_title = 'Message undeliverable'
       WHERE id = (SELECT min(id) FROM broadcast_recipients WHERE broadcast_id = $1)`, [id]);
    await t.db.pool.query(`UPDATE broadcasts SET status = 'sending', started_at = $2 WHERE id = $1`, [id, t.clock.now()]);
    const progress = (await admin.agent.get(`/dashboard/projects/${project.id}/broadcasts/${id}`)).text;
    expect(progress).toMatch(/<td data-label="Code">131026<\/td><td data-label="Reason">Message undeliverable<\/td><td data-label="Category">permanent<\/td><td data-label="Recipients">1<\/td>/);
    expect(progress).toMatch(/<td data-label="Wave">1<\/td><td data-label="Recipients">failed 1, queued 1<\/td>/);
    expect(progress).toContain('Cancel the rest');
    await t.db.pool.query(`UPDATE broadcasts SET status = 'scheduled' WHERE id = $1`, [id]);
    // Approving twice is a conflict, said plainly.
    const twice = await admin.agent.post(`/dashboard/projects/${project.id}/broadcasts/${id}/approve`).type('form').send({ _csrf: await admin.csrf() });
    expect(twice.status).toBe(409);
    expect(twice.text).toContain('cannot be approved');
    // An admin does not read the audit trail; the owner does.
    expect((await admin.agent.get(`/dashboard/projects/${project.id}/audit`)).status).toBe(403);
    const audit = await owner.agent.get(`/dashboard/projects/${project.id}/audit`);
    expect(audit.text).toContain('broadcast.approve');
    expect(audit.text).toContain('pending_approval');
  });

  it('When a member presses approve or cancel, then it is refused and the broadcast stays pending; members see no buttons and no keys', async () => {
    const { project, key } = await projectWithKey(t);
    const id = await pendingBroadcast(project.id, key);
    const member = await person(t, project.id, email('member'), 'member');
    const page = await member.agent.get(`/dashboard/projects/${project.id}/broadcasts`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Spring sale');
    expect(page.text).not.toContain('/approve');
    for (const action of ['approve', 'cancel']) {
      const res = await member.agent.post(`/dashboard/projects/${project.id}/broadcasts/${id}/${action}`).type('form').send({ _csrf: await member.csrf() });
      expect(res.status).toBe(403);
      expect(res.text).toContain('Your role in this project (member) cannot');
    }
    expect(await statusOf(id)).toBe('pending_approval');
    expect((await member.agent.get(`/dashboard/projects/${project.id}/keys`)).status).toBe(403);
  });

  it('When an owner cancels with a reason, then the broadcast is canceled and audited; a broadcast of another project is not found', async () => {
    const { project, key } = await projectWithKey(t);
    const other = await projectWithKey(t);
    const id = await pendingBroadcast(project.id, key);
    const foreign = await pendingBroadcast(other.project.id, other.key);
    const owner = await person(t, project.id, email('owner'));
    const res = await owner.agent.post(`/dashboard/projects/${project.id}/broadcasts/${id}/cancel`).type('form').send({ _csrf: await owner.csrf(), reason: 'wrong audience' });
    expect(res.status).toBe(303);
    expect(await statusOf(id)).toBe('canceled');
    const forged = await owner.agent.post(`/dashboard/projects/${project.id}/broadcasts/${foreign}/approve`).type('form').send({ _csrf: await owner.csrf() });
    expect(forged.status).toBe(404);
    expect(await statusOf(foreign)).toBe('pending_approval');
    expect((await owner.agent.post(`/dashboard/projects/${project.id}/broadcasts/not-a-uuid/approve`).type('form').send({ _csrf: await owner.csrf() })).status).toBe(404);
    const audit = await t.db.prisma.dashboardAudit.findFirstOrThrow({ where: { projectId: project.id, action: 'broadcast.cancel' } });
    expect(audit.after).toMatchObject({ status: 'canceled', status_reason: 'wrong audience' });
  });
});

describe('escaping', () => {
  const PAYLOAD = '<script>alert(1)</script><img src=x onerror="alert(2)">';

  it('When a broadcast name, a webhook URL or a key name holds markup, then every page shows it as text', async () => {
    const { project, key } = await projectWithKey(t);
    const id = await pendingBroadcast(project.id, key, `Sale ${PAYLOAD}`);
    await t.db.prisma.webhookEndpoint.create({
      data: { id: `wh_${n}`, projectId: project.id, url: `https://example.com/"><script>alert(3)</script>`, events: ['message.received'], secretEnc: 'x' },
    });
    await t.db.prisma.webhookDelivery.create({
      data: {
        id: `whd_${n}`, projectId: project.id, webhookId: `wh_${n}`, eventId: `evt_${n}`, event: 'message.received', status: 'pending', attempts: 2,
        attemptLog: { create: [
          { webhookId: `wh_${n}`, attempt: 1, statusCode: null, error: `connect refused ${PAYLOAD}`, durationMs: 12, at: t.clock.now() },
          { webhookId: `wh_${n}`, attempt: 2, statusCode: 503, error: null, durationMs: 40, at: t.clock.now() },
        ] },
      },
    });
    const owner = await person(t, project.id, email('owner'));
    await owner.agent.post(`/dashboard/projects/${project.id}/keys`).type('form').send({ _csrf: await owner.csrf(), name: PAYLOAD, scopes: 'messages:send' });
    const pages = ['broadcasts', `broadcasts/${id}`, 'webhooks', 'keys', 'audit'];
    for (const p of pages) {
      const res = await owner.agent.get(`/dashboard/projects/${project.id}/${p}`);
      expect(res.status).toBe(200);
      expect(res.text).not.toMatch(/<script>alert|<img src=x|"><script>/);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    }
    expect((await owner.agent.get(`/dashboard/projects/${project.id}/broadcasts`)).text).toContain('Sale &lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;');
    const hooks = (await owner.agent.get(`/dashboard/projects/${project.id}/webhooks`)).text;
    expect(hooks).toContain('https://example.com/&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;');
    // The delivery log: every attempt, the latest first.
    expect(hooks).toMatch(/<summary>503<\/summary><ol reversed><li>[^<]+: 503, 40 ms<\/li><li>[^<]+: no answer \(connect refused &lt;script&gt;/);
  });

  it('When an owner invites with a bad email or role, then it is refused; a good invite shows a one-time link that a member can use', async () => {
    const project = await t.admin.project('Invite');
    const owner = await person(t, project.id, email('owner'));
    const path = `/dashboard/projects/${project.id}/people`;
    const bad = await owner.agent.post(path).type('form').send({ _csrf: await owner.csrf(), email: '<b>x</b>', role: 'member' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Enter a valid email address.');
    expect((await owner.agent.post(path).type('form').send({ _csrf: await owner.csrf(), email: 'x@example.com', role: 'emperor' })).status).toBe(400);
    const invitee = email('invitee');
    const ok = await owner.agent.post(path).type('form').send({ _csrf: await owner.csrf(), email: invitee, role: 'member' });
    const url = new URL(/<code id="new-secret">([^<]+)<\/code>/.exec(ok.text)![1].replace(/&amp;/g, '&'));
    expect(url.pathname).toBe('/dashboard/invite');
    const set = await request(t.app).post('/dashboard/invite').type('form').send({ token: url.searchParams.get('token'), password: PASSWORD, confirm: PASSWORD });
    expect(set.status).toBe(303);
    const member = await person(t, project.id, invitee, 'member');
    // A member invites and removes nobody.
    const refused = await member.agent.post(path).type('form').send({ _csrf: await member.csrf(), email: email('x'), role: 'owner' });
    expect(refused.status).toBe(403);
    expect((await member.agent.post(`${path}/remove`).type('form').send({ _csrf: await member.csrf(), email: invitee })).status).toBe(403);
    // The last owner cannot be removed; a member can, and then loses the project at once.
    const ownerEmail = (await t.db.prisma.dashboardMembership.findFirstOrThrow({ where: { projectId: project.id, role: 'owner' }, include: { account: true } })).account.email;
    const last = await owner.agent.post(`${path}/remove`).type('form').send({ _csrf: await owner.csrf(), email: ownerEmail });
    expect(last.status).toBe(409);
    expect(last.text).toContain('last owner');
    const removed = await owner.agent.post(`${path}/remove`).type('form').send({ _csrf: await owner.csrf(), email: invitee });
    expect(removed.status).toBe(303);
    expect((await member.agent.get(`/dashboard/projects/${project.id}/broadcasts`)).status).toBe(404);
    const audit = await owner.agent.get(`/dashboard/projects/${project.id}/audit`);
    expect(audit.text).toContain('member.invite');
    expect(audit.text).toContain('member.accept');
    expect(audit.text).toContain('member.remove');
  });
});

describe('invitations that reveal nothing', () => {
  const linkOf = (html: string) => new URL(/<code id="new-secret">([^<]+)<\/code>/.exec(html)![1].replace(/&amp;/g, '&'));
  const tokenOf = (html: string) => linkOf(html).searchParams.get('token')!;
  const accept = (token: string, password: string, confirm = '') => request(t.app).post('/dashboard/invite').type('form').send({ token, password, confirm });
  const memberCount = (projectId: string, who: string) => t.db.prisma.dashboardMembership.count({ where: { projectId, account: { email: who } } });

  it('When an owner invites an email with an account and one without, then the answer, the link page and the People row are the same, and neither joins before accepting', async () => {
    const project = await t.admin.project('Invites alike');
    const elsewhere = await t.admin.project('Elsewhere');
    const owner = await person(t, project.id, email('owner'));
    const known = email('known');
    const knownPerson = await person(t, elsewhere.id, known, 'member'); // an account with a password, in another project
    const unknown = email('unknown');
    const path = `/dashboard/projects/${project.id}/people`;
    const invite = async (who: string) => owner.agent.post(path).type('form').send({ _csrf: await owner.csrf(), email: who, role: 'admin' });
    const a = await invite(known);
    const b = await invite(unknown);
    expect([a.status, b.status]).toEqual([200, 200]);
    // Alike but for the email and the token (and the session's CSRF token; the second page lists both invitations).
    const neutral = (html: string, who: string) => html.replaceAll(who, 'EMAIL').replaceAll(tokenOf(html), 'TOKEN').replace(/name="_csrf" value="[^"]+"/g, '').replace(/<tr><td data-label="Email">[^<]+<\/td><td data-label="Role">admin<\/td><td data-label="Account">invited, not yet accepted<\/td><td data-label="Access"><\/td><\/tr>\n?/g, 'ROW').replace(/(ROW)+/g, 'ROWS');
    expect(neutral(a.text, known)).toBe(neutral(b.text, unknown));
    const people = (await owner.agent.get(path)).text;
    for (const who of [known, unknown]) expect(people).toContain(`<td data-label="Email">${who}</td><td data-label="Role">admin</td><td data-label="Account">invited, not yet accepted</td>`);
    // Nobody joined: the existing account does not see the project.
    expect(await memberCount(project.id, known)).toBe(0);
    expect((await knownPerson.agent.get(`/dashboard/projects/${project.id}/broadcasts`)).status).toBe(404);
    // The link pages are alike too.
    const pageOf = async (html: string) => (await request(t.app).get(linkOf(html).pathname + linkOf(html).search)).text;
    const [pa, pb] = [await pageOf(a.text), await pageOf(b.text)];
    expect(pa.replaceAll(known, 'EMAIL').replaceAll(tokenOf(a.text), 'TOKEN')).toBe(pb.replaceAll(unknown, 'EMAIL').replaceAll(tokenOf(b.text), 'TOKEN'));

    // The existing account accepts with its own password only.
    const wrong = await accept(tokenOf(a.text), 'not the password!!');
    expect(wrong.status).toBe(401);
    expect(await memberCount(project.id, known)).toBe(0);
    const joined = await accept(tokenOf(a.text), PASSWORD);
    expect(joined.status).toBe(303);
    expect(String(joined.headers['set-cookie'])).toContain('dashboard_session=');
    expect(await memberCount(project.id, known)).toBe(1);
    expect((await knownPerson.agent.get(`/dashboard/projects/${project.id}/broadcasts`)).status).toBe(200);
    expect((await accept(tokenOf(a.text), PASSWORD)).status).toBe(404); // the link works once

    // The new email chooses a password, which creates the account.
    expect((await accept(tokenOf(b.text), PASSWORD, PASSWORD + 'x')).status).toBe(400);
    expect((await accept(tokenOf(b.text), 'short', 'short')).status).toBe(400);
    expect(await t.db.prisma.dashboardAccount.count({ where: { email: unknown } })).toBe(0);
    expect((await accept(tokenOf(b.text), PASSWORD, PASSWORD)).status).toBe(303);
    expect(await memberCount(project.id, unknown)).toBe(1);
    const audit = await t.db.prisma.dashboardAudit.findMany({ where: { projectId: project.id, action: { in: ['member.invite', 'member.accept'] } }, orderBy: { id: 'asc' } });
    expect(audit.map((r) => `${r.action} ${r.subject} by ${r.actor}`)).toEqual([
      `member.invite ${known} by ${(await t.db.prisma.dashboardAudit.findFirstOrThrow({ where: { projectId: project.id, action: 'member.invite' } })).actor}`,
      `member.invite ${unknown} by ${audit[0].actor}`,
      `member.accept ${known} by ${known}`,
      `member.accept ${unknown} by ${unknown}`,
    ]);
  });

  it('When the invited email has an account still waiting for its own setup, then the invitation cannot choose its password; bad links are refused', async () => {
    const project = await t.admin.project('Invite pending');
    const other = await t.admin.project('Pending elsewhere');
    const owner = await person(t, project.id, email('owner'));
    const pending = email('pending');
    const setup = (await grant(t, other.id, pending, 'owner'))!; // the operator's setup link, not used yet
    const res = await owner.agent.post(`/dashboard/projects/${project.id}/people`).type('form').send({ _csrf: await owner.csrf(), email: pending, role: 'member' });
    const taken = await accept(tokenOf(res.text), PASSWORD, PASSWORD);
    expect(taken.status).toBe(401);
    expect((await t.db.prisma.dashboardAccount.findUniqueOrThrow({ where: { email: pending } })).passwordHash).toBeNull();
    expect(await memberCount(project.id, pending)).toBe(0);
    // Its own link still works, and then the invitation is accepted with that password.
    expect((await submitSetup(request(t.app), setup, PASSWORD)).status).toBe(303);
    expect((await accept(tokenOf(res.text), PASSWORD)).status).toBe(303);
    expect(await memberCount(project.id, pending)).toBe(1);
    for (const bad of ['', 'x'.repeat(40), 'x'.repeat(5000)]) {
      expect((await request(t.app).get(`/dashboard/invite?token=${bad}`)).status).toBe(404);
      expect((await accept(bad, PASSWORD, PASSWORD)).status).toBe(404);
    }
    // Expired after 72 hours.
    const late = await owner.agent.post(`/dashboard/projects/${project.id}/people`).type('form').send({ _csrf: await owner.csrf(), email: email('late'), role: 'member' });
    t.clock.advance(72 * 3600_000 + 1);
    expect((await accept(tokenOf(late.text), PASSWORD, PASSWORD)).status).toBe(404);
  });
});

describe('two instances', () => {
  it('When a person signs in on one instance, then the other knows the session; failed sign-ins count on both (shared counters)', async () => {
    const redisUrl = process.env.REDIS_TEST_URL;
    const shared = new MemoryCounterStore();
    const counters = () => (redisUrl ? new RedisCounterStore({ url: redisUrl, timeoutMs: 1000 }) : shared);
    const clock = new ManualClock(new Date('2026-04-01T08:00:00Z'));
    // A real Redis outlives the run: an address of this run's own keeps reruns apart.
    const address = `198.51.100.${randomBytes(1)[0]}`;
    const a = await startTestApp({ clock, counters: counters(), config: { trustProxy: true } });
    const b = await startTestApp({ clock, counters: counters(), config: { trustProxy: true } });
    try {
      const project = await a.admin.project('Two instances');
      const who = `twice.${randomBytes(6).toString('hex')}@example.com`;
      const link = (await grant(a, project.id, who))!;
      const set = await submitSetup(request(a.app), link, PASSWORD);
      const cookie = (set.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('dashboard_session='))!.split(';')[0];
      const onB = await request(b.app).get('/dashboard/projects').set('Cookie', cookie);
      expect(onB.status).toBe(200);
      expect(onB.text).toContain('Two instances');
      // Three failures on A and two on B reach the account's limit of five.
      const fail = async (app: TestApp) => {
        const form = await request(app.app).get('/dashboard/login');
        const token = csrfOf(form.text);
        return request(app.app).post('/dashboard/login').set('Cookie', `dashboard_login=${token}`).set('X-Forwarded-For', address)
          .type('form').send({ _csrf: token, email: who, password: 'not the password' });
      };
      for (const app of [a, a, a, b, b]) expect((await fail(app)).status).toBe(401);
      expect((await fail(a)).status).toBe(429);
      expect((await fail(b)).status).toBe(429);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('audit rows in the action\'s transaction', () => {
  // An injected failure of the audit write, for one actor only (other tests share the database).
  const fn = `audit_fail_${process.pid}`;
  beforeAll(async () => {
    await t.db.pool.query(`CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.actor LIKE 'auditfail.%' THEN RAISE EXCEPTION 'injected audit failure'; END IF; RETURN NEW; END $$`);
    await t.db.pool.query(`CREATE TRIGGER ${fn} BEFORE INSERT ON dashboard_audit FOR EACH ROW EXECUTE FUNCTION ${fn}()`);
  });
  afterAll(async () => {
    await t.db.pool.query(`DROP TRIGGER IF EXISTS ${fn} ON dashboard_audit`);
    await t.db.pool.query(`DROP FUNCTION IF EXISTS ${fn}()`);
  });

  it('When the audit row cannot be written, then every audited action is rolled back with it: keys, broadcasts and people unchanged, no audit row', async () => {
    const { project, key: apiKey } = await projectWithKey(t);
    const who = email('auditfail');
    const owner = await person(t, project.id, who);
    const path = `/dashboard/projects/${project.id}`;
    const post = async (to: string, body: object = {}) => owner.agent.post(`${path}${to}`).type('form').send({ _csrf: await owner.csrf(), ...body });
    const key = await t.admin.key(project.id, ['messages:send']);
    const keyBefore = await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } });
    const keys = await keyCount(project.id);
    const failed = (res: request.Response) => expect(res.status).toBeGreaterThanOrEqual(500);

    failed(await post('/keys', { name: 'unrecorded', scopes: 'messages:send' }));
    expect(await keyCount(project.id)).toBe(keys);
    failed(await post(`/keys/${key.id}/rotate`));
    failed(await post(`/keys/${key.id}/revoke`));
    failed(await post(`/keys/${key.id}/scopes`, { scopes: 'templates:read' }));
    expect(await t.db.prisma.apiKey.findUniqueOrThrow({ where: { id: key.id } })).toEqual(keyBefore);
    expect((await request(t.app).get('/v1/ping').set('Authorization', `Bearer ${key.secret}`)).status).toBe(200);

    const approveId = await pendingBroadcast(project.id, apiKey);
    failed(await post(`/broadcasts/${approveId}/approve`));
    expect(await statusOf(approveId)).toBe('pending_approval');
    expect((await t.db.pool.query('SELECT count(*)::int AS n FROM broadcast_recipients WHERE broadcast_id = $1', [approveId])).rows[0].n).toBe(0);
    failed(await post(`/broadcasts/${approveId}/cancel`, { reason: 'unrecorded' }));
    expect(await statusOf(approveId)).toBe('pending_approval');

    const member = email('member');
    await grant(t, project.id, member, 'member');
    failed(await post('/people/remove', { email: member }));
    expect(await t.db.prisma.dashboardMembership.count({ where: { projectId: project.id, account: { email: member } } })).toBe(1);
    failed(await post('/people', { email: email('invitee'), role: 'member' }));
    expect(await t.db.prisma.dashboardMembership.count({ where: { projectId: project.id } })).toBe(2);
    expect(await t.db.prisma.dashboardInvite.count({ where: { projectId: project.id } })).toBe(0);

    expect(await t.db.prisma.dashboardAudit.count({ where: { projectId: project.id } })).toBe(0);
  });
});
