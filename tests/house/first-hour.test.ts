/**
 * What a newcomer meets in the first hour: the scopes in the help of every command that takes
 * them and `--scopes all`; a refused loopback or http webhook URL naming DEV_ALLOW_PRIVATE_TARGETS;
 * the start-up banner (API, /docs, dashboard, simulator, SERVICE_URL, a warning while the
 * development setting is on); /docs without an outside logo; a favicon. Each busy port as one line
 * naming its setting is proved by starting the service: tests/proofs/busy-ports.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { runOps } from '../support/ops.js';
import { ALL_SCOPES } from '../../scripts/ops/scopes.js';
import { startupBanner } from '../../http/banner.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null } });
});
afterAll(async () => {
  await t.close();
});

const ops = (args: string[]) => runOps(t.baseUrl!, t.adminToken, args);

describe('scopes in the CLI', () => {
  it.each(['keys create', 'keys scopes', 'connections attach', 'keys', 'connections'])('When `ops %s --help` is asked, then every one of the 21 scopes is listed with what it permits, and "all"', async (words) => {
    const run = await ops([...words.split(' '), '--help']);
    expect(run.code).toBe(0);
    expect(ALL_SCOPES).toHaveLength(21);
    for (const s of ALL_SCOPES) expect(run.stdout).toMatch(new RegExp(`^  ${s} +\\S`, 'm'));
    expect(run.stdout).toContain('"all" for all 21');
  });

  it('When a key is created with --scopes all, then it has all 21; a misspelt scope is still refused', async () => {
    const project = await t.admin.project('Scopes all');
    const run = await ops(['keys', 'create', project.id, '--name', 'everything', '--scopes', 'all', '--json']);
    expect(run.code).toBe(0);
    expect([...JSON.parse(run.stdout).key.scopes].sort()).toEqual([...ALL_SCOPES].sort());
    const bad = await ops(['keys', 'create', project.id, '--name', 'x', '--scopes', 'messages:sned']);
    expect(bad.code).toBe(1);
  });
});

describe('a refused webhook URL names the development setting', () => {
  it('When a loopback or http receiver is registered without DEV_ALLOW_PRIVATE_TARGETS, then the 400 says how to allow it in development', async () => {
    const project = await t.admin.project('hooks');
    const key = (await t.admin.key(project.id, ['webhooks:manage'])).secret;
    const create = (url: string) => request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key}`).send({ url, events: ['message.custom'] });
    const http = await create('http://localhost:8080/hook');
    expect(http.status).toBe(400);
    expect(http.body.error.code).toBe('invalid_webhook_url');
    expect(http.body.error.message).toMatch(/^Only https URLs are accepted\. Plain http is accepted only to a loopback host .*DEV_ALLOW_PRIVATE_TARGETS=true.*never in production/);
    const loop = await create('https://127.0.0.1:8443/hook');
    expect(loop.status).toBe(400);
    expect(loop.body.error.code).toBe('webhook_target_forbidden');
    expect(loop.body.error.message).toMatch(/non-public address\. For local development and tests, DEV_ALLOW_PRIVATE_TARGETS=true allows/);
    // A refusal the setting would not lift does not mention it.
    const ftp = await create('ftp://93.184.216.34/hook');
    expect(ftp.body.error.message).not.toMatch(/DEV_ALLOW_PRIVATE_TARGETS/);
  });
});

describe('the start-up banner', () => {
  const config = { simulatorUrl: undefined, graphBaseUrl: undefined, adminToken: undefined, devAllowPrivateTargets: false, simulatorPort: 4010 };
  it('When the service starts on the defaults, then the banner names the API, /docs, the dashboard, the simulator and SERVICE_URL, without a warning', () => {
    const text = startupBanner({ base: 'http://localhost:3000', port: 3000, config, simulatorUrl: 'http://127.0.0.1:4010', admin: { token: 'adm_x', created: true }, tokenFile: '.data/admin-token' });
    expect(text).toContain('Service API listening on http://localhost:3000  (contract: http://localhost:3000/v1/openapi.json)');
    expect(text).toContain('API reference  http://localhost:3000/docs');
    expect(text).toContain('Dashboard      http://localhost:3000/dashboard');
    expect(text).toContain('WhatsApp Cloud API simulator on http://127.0.0.1:4010  (bundled, SIMULATOR_PORT=4010;');
    expect(text).toContain('it calls SERVICE_URL, default http://localhost:3000: this service');
    expect(text).toContain('ADMIN_TOKEN=adm_x');
    expect(text).not.toMatch(/WARNING/);
  });

  it('When another port and DEV_ALLOW_PRIVATE_TARGETS are set, then it says to export SERVICE_URL and warns about the setting', () => {
    const text = startupBanner({ base: 'http://localhost:3100', port: 3100, config: { ...config, devAllowPrivateTargets: true, simulatorUrl: 'http://127.0.0.1:4999' }, simulatorUrl: 'http://127.0.0.1:4999', admin: { token: 'x', created: false }, tokenFile: '/d/admin-token' });
    expect(text).toContain('Operator CLI: export SERVICE_URL=http://localhost:3100');
    expect(text).toContain('(standalone, SIMULATOR_URL;');
    expect(text).toContain('WARNING: DEV_ALLOW_PRIVATE_TARGETS is on');
    expect(text).toContain('export ADMIN_TOKEN=$(cat /d/admin-token)');
  });
});

describe('/docs and the favicon', () => {
  it('When /docs loads, then its bundle names no outside image (the Redocly logo is local); /favicon.ico is an icon', async () => {
    const page = await request(t.app).get('/docs');
    expect(page.text).toContain('<link rel="icon" href="/favicon.svg"');
    const bundle = await request(t.app).get('/docs/redoc.standalone.js');
    expect(bundle.status).toBe(200);
    expect(bundle.text).not.toContain('cdn.redoc.ly');
    expect(bundle.text).toContain('src:"/favicon.svg"');
    for (const p of ['/favicon.ico', '/favicon.svg']) {
      const icon = await request(t.app).get(p);
      expect(icon.status).toBe(200);
      expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
      expect(String(icon.body ?? icon.text)).toContain('<svg');
    }
  });
});
