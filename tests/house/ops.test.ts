/**
 * The operator CLI (scripts/ops.ts) against the real app on a real port and real PostgreSQL.
 * The end-to-end flows run the CLI as a child process, exactly as an operator would (they cost
 * about half a second each, so there are few); the wider command coverage calls its main() in
 * process over the same HTTP server.
 */
import { runProcess, type ProcessRun } from '../support/local.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { main } from '../../scripts/ops/main.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let t: TestApp;
let server: Server;
let url: string;

beforeAll(async () => {
  // Private targets allowed so that a webhook can be registered on a loopback URL (nothing delivers here).
  t = await startTestApp({ bot: true, config: { devAllowPrivateTargets: true } });
  server = await new Promise<Server>((resolve) => {
    const s = t.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
});

afterAll(async () => {
  if (server) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await t?.close();
});

type Run = ProcessRun;

/** `node --import tsx scripts/ops.ts …` with SERVICE_URL and ADMIN_TOKEN, unless env overrides them. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const base: Record<string, string | undefined> = { ...process.env, SERVICE_URL: url, ADMIN_TOKEN: t.adminToken, ...env };
  for (const k of Object.keys(base)) if (base[k] === undefined) delete base[k];
  return runProcess(process.execPath, ['--import', 'tsx', 'scripts/ops.ts', ...args], { cwd: ROOT, env: base });
}

/** The same CLI in process: main() with captured output. */
async function ops(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, { SERVICE_URL: url, ADMIN_TOKEN: t.adminToken, ...env }, {
    out: (s) => void (stdout += s + '\n'),
    err: (s) => void (stderr += s + '\n'),
  });
  return { code, stdout, stderr };
}

async function opsJson(args: string[]): Promise<any> {
  const run = await ops([...args, '--json']);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

const ping = (bearer: string) => request(t.app).get('/v1/ping').set('Authorization', `Bearer ${bearer}`);

function expectNoAdminToken(...runs: Run[]) {
  for (const r of runs) expect(r.stdout + r.stderr).not.toContain(t.adminToken);
}

describe('ops as a child process', () => {
  it('When a project and a key are made with the CLI, then the key works on ping until it is rotated and revoked', async () => {
    const created = await cli(['projects', 'create', 'CLI project', '--quota', '50', '--json']);
    expect(created.code).toBe(0);
    const { project } = JSON.parse(created.stdout);
    expect(project).toMatchObject({ name: 'CLI project', status: 'active', daily_send_quota: 50 });

    const minted = await cli(['keys', 'create', project.id, '--name', 'ci', '--scopes', 'messages:send,contacts:read', '--json']);
    expect(minted.code).toBe(0);
    const data = JSON.parse(minted.stdout);
    expect(Object.keys(data).sort()).toEqual(['key', 'secret']);
    expect(data.secret).toMatch(/^pk_live_/);
    const res = await ping(data.secret);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ ok: true, projectId: project.id, scopes: ['messages:send', 'contacts:read'] });

    const rotated = await cli(['keys', 'rotate', data.key.id]);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toContain('shown only once');
    const secret = /export SERVICE_API_KEY=(pk_live_\S+)/.exec(rotated.stdout)?.[1];
    expect(rotated.stdout).toContain(`curl -s -H "Authorization: Bearer $SERVICE_API_KEY" ${url}/v1/ping`);
    expect(secret).toBeDefined();
    expect((await ping(data.secret)).body.error.code).toBe('invalid_api_key');
    expect((await ping(secret!)).status).toBe(200);

    const revoked = await cli(['keys', 'revoke', data.key.id, '--json']);
    expect(revoked.code).toBe(0);
    expect(JSON.parse(revoked.stdout).key.revoked_at).toEqual(expect.any(String));
    expect((await ping(secret!)).body.error.code).toBe('invalid_api_key');
    expectNoAdminToken(created, minted, rotated, revoked);
  });

  it('When a connection gets a project attached and a token issued, then the token works on ping, and detach empties it', async () => {
    const p = await t.admin.project('Agent project');
    const { connection } = await t.admin.call('post', '/admin/connections', { name: 'agent' });

    const attached = await cli(['connections', 'attach', connection.id, p.id, '--scopes', 'contacts:read', '--default', '--json']);
    expect(attached.code).toBe(0);
    expect(JSON.parse(attached.stdout).connection.projects).toEqual([{ project_id: p.id, scopes: ['contacts:read'], is_default: true }]);

    const issued = await cli(['tokens', 'issue', connection.id, '--expires-in', '1h']);
    expect(issued.code).toBe(0);
    expect(issued.stdout).toContain('shown only once');
    const secret = /export SERVICE_ACCESS_TOKEN=(mcp_at_\S+)/.exec(issued.stdout)?.[1];
    expect((await ping(secret!)).body.data).toEqual({ ok: true, projectId: p.id, scopes: ['contacts:read'] });

    const detached = await cli(['connections', 'detach', connection.id, p.id, '--json']);
    expect(detached.code).toBe(0);
    expect(JSON.parse(detached.stdout).connection.projects).toEqual([]);
    expectNoAdminToken(attached, issued, detached);
  });

  it('When the API refuses, when the line is wrong, or when ADMIN_TOKEN is missing, then exit 1, 2 and 2 with a clear message', async () => {
    const [apiError, apiErrorJson, usage, noToken] = await Promise.all([
      cli(['keys', 'show', 'key_missing']),
      cli(['keys', 'show', 'key_missing', '--json']),
      cli(['projects', 'frobnicate']),
      cli(['projects', 'list'], { ADMIN_TOKEN: undefined }),
    ]);

    expect(apiError.code).toBe(1);
    expect(apiError.stderr).toMatch(/^error not_found: No API key "key_missing"\. \(request \S+\)$/m);

    expect(apiErrorJson.code).toBe(1);
    expect(apiErrorJson.stdout).toBe('');
    const envelope = JSON.parse(apiErrorJson.stderr);
    expect(envelope).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) }, request_id: expect.any(String) });

    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown command "projects frobnicate"');
    expect(usage.stderr).toContain('Usage: npm run ops -- projects <command>');

    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('ADMIN_TOKEN is not set');
    expect(noToken.stdout).toBe('');
    expectNoAdminToken(apiError, apiErrorJson, usage);
  });
});

describe('ops commands (in process)', () => {
  it('When projects are managed, then every projects command answers with the project', async () => {
    const id = `cli-${Date.now().toString(36)}`;
    const created = await opsJson(['projects', 'create', 'Shop', '--id', id]);
    expect(created.project).toMatchObject({ id, name: 'Shop', status: 'active' });

    const shown = await ops(['projects', 'show', id.toUpperCase()]);
    expect(shown.stdout).toMatch(new RegExp(`^id: +${id}$`, 'm'));
    expect(shown.stdout).toMatch(/^status: +active$/m);

    expect((await opsJson(['projects', 'rename', id, 'Shop two'])).project.name).toBe('Shop two');
    expect((await opsJson(['projects', 'pause', id])).project.status).toBe('paused');
    expect((await opsJson(['projects', 'resume', id])).project.status).toBe('active');
    expect((await opsJson(['projects', 'quota', id, '250'])).project.daily_send_quota).toBe(250);
    // A project whose bot spent nothing: within its budget, its isolates in a shared sandbox process.
    const capacity = await ops(['code', 'capacity', id]);
    expect(capacity.code).toBe(0);
    expect(capacity.stdout).toMatch(/^CPU this minute: 0 ms of 30000 ms \(burst 2000 ms\): within/m);
    expect(capacity.stdout).toMatch(/^Isolates: in a shared sandbox process/m);
    expect((await opsJson(['code', 'capacity', id])).sandbox).toMatchObject({ process: 'shared', reason: null });

    const list = await ops(['projects', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID +NAME +STATUS +DAILY QUOTA +CREATED$/);
    expect(list.stdout).toMatch(new RegExp(`^${id} +Shop two +active +250 `, 'm'));
    expect((await opsJson(['projects', 'list'])).projects.map((p: { id: string }) => p.id)).toContain(id);

    const deleted = await ops(['projects', 'delete', id]);
    expect(deleted.stdout).toMatch(/^status: +deleted$/m);
    const again = await ops(['projects', 'rename', id, 'nope']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error conflict: .* \(request \S+\)$/m);
  });

  it('When keys are managed, then list, show, scopes and rename work and no secret is listed', async () => {
    const p = await t.admin.project();
    const minted = await ops(['keys', 'create', p.id, '--name', 'test key', '--scopes', 'contacts:read', '--test']);
    expect(minted.code).toBe(0);
    const secret = /export SERVICE_API_KEY=(pk_test_\S+)/.exec(minted.stdout)?.[1];
    expect(secret).toBeDefined();
    const keyId = /^id: +(\S+)$/m.exec(minted.stdout)![1];

    const list = await ops(['keys', 'list', p.id]);
    expect(list.stdout).toMatch(new RegExp(`^${keyId} +test key +test +active `, 'm'));
    expect(list.stdout).not.toContain(secret);

    expect((await opsJson(['keys', 'scopes', keyId, 'contacts:read, contacts:write'])).key.scopes).toEqual(['contacts:read', 'contacts:write']);
    expect((await opsJson(['keys', 'rename', keyId, 'renamed'])).key.name).toBe('renamed');
    const shown = await ops(['keys', 'show', keyId]);
    expect(shown.stdout).toMatch(/^scopes: +contacts:read, contacts:write$/m);
    expect((await ping(secret!)).body.data.scopes).toEqual(['contacts:read', 'contacts:write']);

    const bad = await ops(['keys', 'scopes', keyId, 'contacts:nope']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error invalid_request: .*scopes\.0 must be equal to one of the allowed values: messages:send, /);
  });

  it('When connections and tokens are managed, then show, list, revoke and delete work', async () => {
    const p = await t.admin.project();
    const { connectionId, tokenId } = await t.admin.connection([{ projectId: p.id, scopes: ['contacts:read'] }]);

    const shown = await ops(['connections', 'show', connectionId]);
    expect(shown.stdout).toMatch(new RegExp(`^${p.id} +yes +contacts:read$`, 'm'));
    const list = await ops(['connections', 'list']);
    expect(list.stdout).toMatch(new RegExp(`^${connectionId} +agent +\\S+ +${p.id} \\(default\\)$`, 'm'));

    const issued = await opsJson(['tokens', 'issue', connectionId]);
    expect(issued.secret).toMatch(/^mcp_at_/);
    const tokens = await ops(['tokens', 'list', connectionId]);
    expect(tokens.stdout).toMatch(new RegExp(`^${tokenId} +`, 'm'));
    expect(tokens.stdout).not.toContain(issued.secret);

    expect((await opsJson(['tokens', 'revoke', tokenId])).token.revoked_at).toEqual(expect.any(String));
    expect((await opsJson(['tokens', 'list', connectionId])).tokens).toHaveLength(2);

    expect((await opsJson(['connections', 'delete', connectionId])).connection.id).toBe(connectionId);
    const gone = await ops(['connections', 'show', connectionId, '--json']);
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.stderr).error.code).toBe('not_found');
  });

  it('When a channel is set from environment secrets, then show returns it without any secret', async () => {
    const project = await opsJson(['projects', 'create', 'With channel']);
    const secrets = { CHANNEL_ACCESS_TOKEN: 'EAAG-secret-token-1', CHANNEL_APP_SECRET: 'app-secret-2', CHANNEL_VERIFY_TOKEN: 'verify-3' };
    const missing = await ops(['channel', 'set', project.project.id, '--phone-number-id', '1065', '--waba-id', '2001', '--app-id', '3001']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('CHANNEL_ACCESS_TOKEN');
    Object.assign(process.env, secrets);
    try {
      const set = await ops(['channel', 'set', project.project.id, '--phone-number-id', '1065', '--waba-id', '2001', '--app-id', '3001']);
      expect(set.code).toBe(0);
      expect(set.stdout).toContain(`/channel/${project.project.id}/webhook`);
    } finally {
      for (const k of Object.keys(secrets)) delete process.env[k];
    }
    const shown = await ops(['channel', 'show', project.project.id, '--json']);
    expect(JSON.parse(shown.stdout).channel).toMatchObject({ phone_number_id: '1065', waba_id: '2001', app_id: '3001' });
    for (const v of Object.values(secrets)) expect(shown.stdout).not.toContain(v);
    const row = await t.db.pool.query('SELECT * FROM channel_settings WHERE project_id = $1', [project.project.id]);
    for (const v of Object.values(secrets)) expect(JSON.stringify(row.rows[0])).not.toContain(v);
  });
});

describe('ops commands (in process)', () => {
  it('When a runtime token is created, listed and revoked, then only create shows the secret and the revoked token is refused', async () => {
    const p = await t.admin.project('With bot');
    const emitWith = (token: string) =>
      request(t.app).post('/runtime/events').set('Authorization', `Bearer ${token}`).send({ name: 'ops.checked', payload: null });

    const created = await ops(['runtime', 'create', p.id]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Created runtime token rtk_\S+ for project /);
    expect(created.stdout).toContain('shown only once');
    const secret = /export SERVICE_RUNTIME_TOKEN=(rt_\S+)/.exec(created.stdout)?.[1];
    expect(secret).toBeDefined();
    expect(created.stdout).toMatch(new RegExp(`^ +export SERVICE_RUNTIME_URL=${url} `, 'm'));
    expect(created.stdout).not.toContain('/v1/ping'); // a runtime token is not accepted there
    const tokenId = /^id: +(\S+)$/m.exec(created.stdout)![1];
    expect(created.stdout).toMatch(/^status: +active$/m);
    expect((await emitWith(secret!)).status).toBe(202);

    const list = await ops(['runtime', 'list', p.id]);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID +STATUS +HINT +CREATED +REVOKED$/);
    expect(list.stdout).toMatch(new RegExp(`^${tokenId} +active +\\S+ +\\S+ +-$`, 'm'));
    expect(list.stdout).not.toContain(secret);
    const listed = await opsJson(['runtime', 'list', p.id]);
    expect(listed.tokens).toEqual([{ id: tokenId, project_id: p.id, hint: expect.any(String), created_at: expect.any(String), revoked_at: null }]);
    expect(JSON.stringify(listed)).not.toContain(secret);

    const revoked = await opsJson(['runtime', 'revoke', tokenId]);
    expect(revoked.token).toMatchObject({ id: tokenId, revoked_at: expect.any(String) });
    expect((await emitWith(secret!)).body.error.code).toBe('invalid_token');
    expect((await ops(['runtime', 'list', p.id])).stdout).toMatch(new RegExp(`^${tokenId} +revoked +`, 'm'));

    const unknown = await ops(['runtime', 'list', 'prj_missing']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error \S+: No project "prj_missing"\. \(request \S+\)$/m);
    expect((await opsJson(['runtime', 'list', (await t.admin.project()).id])).tokens).toEqual([]);
  });

  it('When the webhook is unknown, then webhooks deliveries exits 1 with the API error', async () => {
    const run = await ops(['webhooks', 'deliveries', 'whk_missing']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/^error not_found: No webhook "whk_missing"\. \(request \S+\)$/m);
    const json = await ops(['webhooks', 'deliveries', 'whk_missing', '--json', '--status', 'failed']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) }, request_id: expect.any(String) });
  });
});

describe('ops commands (in process)', () => {
  it('When a registration has deliveries, then webhooks deliveries prints it and a table of them, newest first, within 120 columns', async () => {
    const p = await t.admin.project('With webhook');
    const key = await t.admin.key(p.id, ['webhooks:manage']);
    const registered = await request(t.app).post('/v1/webhooks').set('Authorization', `Bearer ${key.secret}`)
      .send({ url: 'http://127.0.0.1:9/hook', events: ['order.shipped'] });
    expect(registered.status).toBe(201);
    const webhookId: string = registered.body.data.webhook.id;

    const empty = await ops(['webhooks', 'deliveries', webhookId]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toContain('No deliveries for this registration yet.');

    // Finished deliveries only: a delivery runner of another test file may share this database.
    const longEvent = 'inventory.reservation.expired.' + 'x'.repeat(40);
    const longError = 'refused: ' + 'host resolves to a private address, '.repeat(5);
    const deliveries: Array<[string, string, string, number, string]> = [
      ['dlv_ops_ok', 'order.shipped', 'succeeded', 1, '2026-03-01T11:50:00.000Z'],
      ['dlv_ops_failed', 'order.shipped', 'failed', 2, '2026-03-01T11:55:00.000Z'],
      ['dlv_ops_long', longEvent, 'canceled', 1, '2026-03-01T11:58:00.000Z'],
    ];
    for (const [id, event, status, attempts, at] of deliveries) {
      await t.db.pool.query(
        `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event, status, attempts, next_attempt_at, created_at, completed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $8)`,
        [id, p.id, webhookId, id.replace('dlv_', 'evt_'), event, status, attempts, at],
      );
    }
    const attempts: Array<[string, number, number | null, string | null, number]> = [
      ['dlv_ops_ok', 1, 200, null, 35],
      ['dlv_ops_failed', 1, 500, null, 40],
      ['dlv_ops_failed', 2, null, 'connection refused', 12],
      ['dlv_ops_long', 1, null, longError, 3],
    ];
    for (const [deliveryId, attempt, statusCode, error, ms] of attempts) {
      await t.db.pool.query(
        `INSERT INTO webhook_attempts (delivery_id, webhook_id, attempt, status_code, error, duration_ms, at) VALUES ($1, $2, $3, $4, $5, $6, now())`,
        [deliveryId, webhookId, attempt, statusCode, error, ms],
      );
    }
    await t.db.pool.query(`UPDATE webhook_endpoints SET failure_count = 1, last_triggered_at = '2026-03-01T11:58:00Z' WHERE id = $1`, [webhookId]);

    const run = await ops(['webhooks', 'deliveries', webhookId]);
    expect(run.code).toBe(0);
    const out = run.stdout;
    expect(out).toMatch(new RegExp(`^id: +${webhookId}$`, 'm'));
    expect(out).toMatch(/^url: +http:\/\/127\.0\.0\.1:9\/hook$/m);
    expect(out).toMatch(/^active: +yes$/m);
    expect(out).toMatch(/^failure count: +1$/m);
    expect(out).toMatch(/^last triggered: +2026-03-01T11:58:00Z$/m);
    const lines = out.trimEnd().split('\n');
    expect(lines).toContainEqual(expect.stringMatching(/^ID +EVENT +STATUS +ATTEMPTS +CREATED +DURATION +LAST RESULT$/));
    expect(out).toMatch(/^dlv_ops_ok +order\.shipped +succeeded +1 +2026-03-01T11:50:00Z +35 ms +HTTP 200$/m);
    expect(out).toMatch(/^dlv_ops_failed +order\.shipped +failed +2 +2026-03-01T11:55:00Z +12 ms +connection refused$/m);
    expect(out).toMatch(/^dlv_ops_long +inventory\.reservation\.e… +canceled +1 +2026-03-01T11:58:00Z +3 ms +refused: host resolves .*…$/m);
    expect(out.indexOf('dlv_ops_long')).toBeLessThan(out.indexOf('dlv_ops_failed'));
    expect(out.indexOf('dlv_ops_failed')).toBeLessThan(out.indexOf('dlv_ops_ok'));
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(120);
    expect(out).toContain('--json shows every attempt in full');

    const json = await ops(['webhooks', 'deliveries', webhookId, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(await t.admin.call('get', `/admin/webhooks/${webhookId}/deliveries`));
    expect(JSON.parse(json.stdout).deliveries.find((d: { id: string }) => d.id === 'dlv_ops_long').attempt_log[0].error).toBe(longError);

    const failed = await opsJson(['webhooks', 'deliveries', webhookId, '--status', 'failed']);
    expect(failed.deliveries.map((d: { id: string }) => d.id)).toEqual(['dlv_ops_failed']);
    const latest = await ops(['webhooks', 'deliveries', webhookId, '--limit', '1']);
    expect(latest.stdout).toContain('dlv_ops_long');
    expect(latest.stdout).not.toContain('dlv_ops_ok');
    expect(latest.stdout).toContain('Showing the latest 1; --limit up to 100 shows more.');
    const none = await ops(['webhooks', 'deliveries', webhookId, '--status', 'pending']);
    expect(none.stdout).toContain('No pending deliveries for this registration.');
  });

  it('When help is asked for, then usage is printed on stdout with exit 0', async () => {
    const all = await ops(['--help'], { ADMIN_TOKEN: undefined });
    expect(all.code).toBe(0);
    for (const line of ['projects quota <id> <n>', 'keys create <projectId> --name NAME --scopes a,b [--test]',
      'connections attach <connectionId> <projectId> --scopes a,b [--default]', 'tokens issue <connectionId> [--expires-in SECONDS]',
      'runtime create <projectId>', 'webhooks deliveries <webhookId> [--status STATUS] [--limit N]']) {
      expect(all.stdout).toContain(line);
    }
    expect((await ops(['help'])).stdout).toBe(all.stdout);
    const group = await ops(['keys', '--help']);
    expect(group.stdout).toContain('Usage: npm run ops -- keys <command>');
    expect(group.stdout).not.toContain('connections attach');
    expect((await ops(['help', 'tokens', 'issue'])).stdout).toContain('Usage: npm run ops -- tokens issue <connectionId> [--expires-in SECONDS]');
  });
});

describe('ops commands (in process)', () => {
  it('When the line is wrong, then exit 2 with the reason and the usage, before any request', async () => {
    const cases: Array<[string[], string]> = [
      [[], 'no command given'],
      [['keys'], '"keys" needs a command'],
      [['keys', 'create', 'prj_x', '--scopes', 'contacts:read'], 'keys create needs --name'],
      [['keys', 'show'], 'missing <keyId>'],
      [['projects', 'rename', 'prj_x', 'two', 'words'], 'too many arguments: "words"'],
      [['projects', 'list', '--test'], 'projects list does not take --test'],
      [['projects', 'list', '--verbose'], 'unknown option --verbose'],
      [['projects', 'quota', 'prj_x', 'ten'], 'the quota must be a whole number'],
      [['tokens', 'issue', 'con_x', '--expires-in', 'soon'], '--expires-in must be seconds'],
      [['runtime', 'create', 'prj_x', '--name', 'bot'], 'runtime create does not take --name'],
      [['runtime', 'revoke'], 'missing <tokenId>'],
      [['webhooks', 'deliveries', 'whk_x', '--status', 'done'], '--status must be one of pending, succeeded, failed, canceled, got "done"'],
      [['webhooks', 'deliveries', 'whk_x', '--limit', '0'], '--limit must be a whole number from 1 to 100, got "0"'],
      [['webhooks', 'deliveries', 'whk_x', '--limit', '101'], '--limit must be a whole number from 1 to 100, got "101"'],
      [['webhooks', 'deliveries', 'whk_x', '--limit', 'all'], '--limit must be a whole number, got "all"'],
      [['webhooks', 'deliveries', 'whk_x', '--limit'], '--limit needs a value'],
    ];
    for (const [args, message] of cases) {
      const run = await ops(args, { SERVICE_URL: 'http://127.0.0.1:9' }); // nothing is called
      expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 2, stdout: '' });
      expect(run.stderr).toContain(message);
      expect(run.stderr).toContain('Usage:');
    }
    const json = await ops(['keys', 'show', '--json']);
    expect(JSON.parse(json.stderr)).toEqual({ success: false, error: { code: 'usage_error', message: 'missing <keyId>' } });
  });

  it('When the token is wrong, then exit 1 invalid_token and neither token is printed', async () => {
    const wrong = 'adm_wrong_' + 'x'.repeat(20);
    const run = await ops(['projects', 'list'], { ADMIN_TOKEN: wrong });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error invalid_token: .*\(request \S+\)$/m);
    expect(run.stderr + run.stdout).not.toContain(wrong);
    expectNoAdminToken(run);
  });

  it('When the service cannot be reached or does not answer, then exit 1 unreachable or timeout', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const down = await ops(['projects', 'list', '--url', `http://127.0.0.1:${closedPort}`]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error unreachable: cannot reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED$/m);

    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket)); // accepts and never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const slow = await ops(['projects', 'list', '--json', '--timeout', '1'], { SERVICE_URL: `http://127.0.0.1:${port}` });
      expect(slow.code).toBe(1);
      expect(JSON.parse(slow.stderr)).toEqual({ success: false, error: { code: 'timeout', message: expect.stringContaining('within 1 s') } });
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
