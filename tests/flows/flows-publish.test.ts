/**
 * Publishing flows through the operator API against the simulator's Flows endpoints: a dry run
 * (create + upload + read back validation errors), publish, the version published already, a later
 * version (a new channel flow, the old one deprecated), the channel's validation errors stopping a
 * publish, deprecation, and the simulator's own Meta-shaped validation errors on upload. Nothing
 * under /v1 publishes.
 */
import { runProcess } from '../support/local.js';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey } from '../support/uploads.js';
import { CloudApiClient } from '../../channel/cloud-api.js';
import { createFlow, getFlow, publishFlow, uploadFlowJson } from '../../channel/flows.js';
import { main } from '../../scripts/ops/main.js';
import { createSimulator } from '../../simulator/app.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

let t: TestApp;
let key: string;
let projectId: string;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null } });
  const p = await projectWithKey(t, ['flows:read', 'flows:write']);
  key = p.key;
  projectId = p.project.id;
});
afterAll(async () => {
  await t.close();
});

const auth = () => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });
const publish = (name: string, body: object = {}) => request(t.app).post(`/admin/projects/${projectId}/flows/${name}/publish`).set(admin()).send(body);
const simFlows = async () => (await request(t.sim!.url).get('/_sim/flows')).body.data as { id: string; name: string; status: string; validation_errors: unknown[] }[];

const description = {
  screens: [
    { title: 'Contact', fields: [{ name: 'email', label: 'Email', type: 'email', required: true }] },
    { title: 'Topic', fields: [{ name: 'topic', label: 'Topic', type: 'dropdown', choices: ['Billing', 'Orders'] }] },
  ],
};

describe('adminPublishFlow', () => {
  it('When an operator does a dry run, then the channel has a DRAFT flow with the JSON and nothing is published', async () => {
    const g = await request(t.app).post('/v1/flows/generate').set(auth()).send({ name: 'contact_form', categories: ['CONTACT_US'], description });
    expect(g.status).toBe(201);
    const res = await publish('contact_form', { dry_run: true });
    expect(res.status).toBe(200);
    expect(res.body.data.published).toBe(false);
    expect(res.body.data.flow).toMatchObject({ status: 'DRAFT', channel_flow_id: null, channel_findings: [] });
    const draftId = res.body.data.flow.channel_draft_id;
    expect(draftId).toMatch(/^\d+$/);
    const sim = (await simFlows()).find((f) => f.id === draftId)!;
    expect(sim).toMatchObject({ name: 'contact_form', status: 'DRAFT', validation_errors: [] });
    const asset = await request(t.sim!.url).get(`/_sim/flows/${draftId}/flow.json`);
    expect(JSON.parse(asset.text)).toEqual(g.body.data.flow.definition);
  });

  it('When the operator publishes, then the same channel flow is published and /v1 shows its id and version', async () => {
    const before = (await request(t.app).get(`/admin/projects/${projectId}/flows`).set(admin())).body.data.flows[0];
    const res = await publish('contact_form');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ published: true, flow: { status: 'PUBLISHED', channel_flow_id: before.channel_draft_id, channel_draft_id: null, published_version: 1 } });
    const v1 = await request(t.app).get('/v1/flows/contact_form').set(auth());
    expect(v1.body.data.flow).toMatchObject({ status: 'PUBLISHED', channel_flow_id: before.channel_draft_id, published_version: 1 });
    expect(v1.body.data.flow.published_at).toEqual(expect.any(String));
    expect((await simFlows()).find((f) => f.id === before.channel_draft_id)!.status).toBe('PUBLISHED');
  });

  it('When the published version is published again, then 409 conflict', async () => {
    const res = await publish('contact_form');
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
  });

  it('When a later version is published, then it gets a new channel flow and the old one is deprecated', async () => {
    const cur = await request(t.app).get('/v1/flows/contact_form').set(auth());
    const oldId = cur.body.data.flow.channel_flow_id;
    const def = cur.body.data.flow.definition;
    def.screens[0].title = 'Contact us';
    const put = await request(t.app).put('/v1/flows/contact_form').set(auth()).set('If-Match', cur.headers.etag).send({ definition: def });
    expect(put.status).toBe(200);
    // Still published (version 1) until the operator publishes version 2.
    expect(put.body.data.flow).toMatchObject({ status: 'PUBLISHED', published_version: 1, version: { number: 2 } });
    const res = await publish('contact_form');
    expect(res.status).toBe(200);
    expect(res.body.data.flow.published_version).toBe(2);
    const newId = res.body.data.flow.channel_flow_id;
    expect(newId).not.toBe(oldId);
    const sim = await simFlows();
    expect(sim.find((f) => f.id === oldId)!.status).toBe('DEPRECATED');
    expect(sim.find((f) => f.id === newId)).toMatchObject({ name: 'contact_form-v2', status: 'PUBLISHED' });
    const versions = await request(t.app).get('/v1/flows/contact_form/versions').set(auth());
    expect(versions.body.data.versions.map((v: { published: boolean }) => v.published)).toEqual([true, false]);
  });

  it('When the channel reports validation errors on upload, then 400 invalid_flow with them, nothing is published, and the draft is reused next time', async () => {
    const g = await request(t.app).post('/v1/flows/generate').set(auth()).send({ name: 'refused_flow', description });
    expect(g.status).toBe(201);
    const forced = await request(t.sim!.url).post('/_sim/flows/upload-errors').send({ errors: [{ error: 'INVALID_PROPERTY_VALUE', error_type: 'FLOW_JSON_ERROR', message: 'Something only the channel knows.', line_start: 3 }] });
    expect(forced.status).toBe(200);
    const res = await publish('refused_flow');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_flow');
    expect(res.body.error.details.findings[0]).toMatchObject({ error: 'INVALID_PROPERTY_VALUE', message: 'Something only the channel knows.', severity: 'error' });
    const list = (await request(t.app).get(`/admin/projects/${projectId}/flows`).set(admin())).body.data.flows;
    const row = list.find((f: { name: string }) => f.name === 'refused_flow');
    expect(row).toMatchObject({ status: 'DRAFT', channel_flow_id: null, channel_findings: [expect.objectContaining({ error: 'INVALID_PROPERTY_VALUE' })] });
    const v1 = await request(t.app).get('/v1/flows/refused_flow').set(auth());
    expect(v1.body.data.flow.channel_findings).toHaveLength(1);

    const again = await publish('refused_flow');
    expect(again.status).toBe(200);
    expect(again.body.data.flow).toMatchObject({ status: 'PUBLISHED', channel_flow_id: row.channel_draft_id, channel_findings: [] });
    expect((await simFlows()).filter((f) => f.name === 'refused_flow')).toHaveLength(1);
  });

  it('When two publishes of one flow race, then one publishes and the other is 409, with one channel flow', async () => {
    const g = await request(t.app).post('/v1/flows/generate').set(auth()).send({ name: 'raced_flow', description });
    expect(g.status).toBe(201);
    const [a, b] = await Promise.all([publish('raced_flow'), publish('raced_flow')]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect((await simFlows()).filter((f) => f.name === 'raced_flow')).toHaveLength(1);
  });

  it('When the flow, the project or the channel is missing, then 404 / 404 / 409', async () => {
    expect((await publish('no_such_flow')).status).toBe(404);
    const other = await request(t.app).post('/admin/projects/prj_nope/flows/contact_form/publish').set(admin()).send({});
    expect(other.status).toBe(404);
    const bare = await t.admin.project('No channel');
    await t.db.prisma.channelSettings.deleteMany({ where: { projectId: bare.id } });
    const k = (await t.admin.key(bare.id, ['flows:write'])).secret;
    const g = await request(t.app).post('/v1/flows/generate').set({ Authorization: `Bearer ${k}` }).send({ name: 'lonely', description });
    expect(g.status).toBe(201);
    const res = await request(t.app).post(`/admin/projects/${bare.id}/flows/lonely/publish`).set(admin()).send({});
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('channel_not_configured');
  });

  it('When /v1 is asked to publish, then there is no such operation (404)', async () => {
    const res = await request(t.app).post('/v1/flows/contact_form/publish').set(auth()).send({});
    expect(res.status).toBe(404);
  });
});

describe('adminDeprecateFlow', () => {
  it('When a published flow is deprecated, then the channel and /v1 say DEPRECATED; a draft cannot be', async () => {
    const res = await request(t.app).post(`/admin/projects/${projectId}/flows/contact_form/deprecate`).set(admin()).send();
    expect(res.status).toBe(200);
    expect(res.body.data.flow.status).toBe('DEPRECATED');
    const id = res.body.data.flow.channel_flow_id;
    expect((await simFlows()).find((f) => f.id === id)!.status).toBe('DEPRECATED');
    const again = await request(t.app).post(`/admin/projects/${projectId}/flows/contact_form/deprecate`).set(admin()).send();
    expect(again.status).toBe(409);
  });

  it('When a deprecated flow is published again, then it gets a fresh channel flow and is PUBLISHED', async () => {
    const res = await publish('contact_form');
    expect(res.status).toBe(200);
    expect(res.body.data.flow.status).toBe('PUBLISHED');
    const sim = (await simFlows()).find((f) => f.id === res.body.data.flow.channel_flow_id)!;
    expect(sim.status).toBe('PUBLISHED');
    expect(sim.name).toMatch(/^contact_form-v2-[0-9a-z]+$/);
  });
});

describe('the simulator Flows endpoints (Meta shapes)', () => {
  it('When an invalid Flow JSON is uploaded, then the upload succeeds with Meta-shaped validation_errors and publishing is refused', async () => {
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId } });
    const pn = t.sim!.simulator.state.phones.get(channel.phoneNumberId)!;
    const creds = { phoneNumberId: pn.phone_number_id, wabaId: pn.waba_id, appId: pn.app_id, accessToken: pn.access_token };
    const client = new CloudApiClient({ baseUrl: t.sim!.url, version: 'v26.0', timeoutMs: 5000 });
    try {
      const { id } = await createFlow(client, creds, { name: 'raw_upload', categories: ['OTHER'] });
      const text = JSON.stringify({ version: '7.3', screens: [{ id: 'SCREEN_1', layout: { type: 'SingleColumnLayout', children: [] } }] }, null, 2);
      const up = await uploadFlowJson(client, creds, id, text);
      const errors = up.validationErrors.map((e) => e.error);
      expect(errors).toEqual(expect.arrayContaining(['INVALID_PROPERTY_VALUE', 'MISSING_TERMINAL_SCREEN']));
      const idError = up.validationErrors.find((e) => e.error === 'INVALID_PROPERTY_VALUE')!;
      expect(idError).toMatchObject({ error_type: 'FLOW_JSON_ERROR', line_start: 5 });
      expect(idError.message).toContain('$root/screens/0/id');
      expect((await getFlow(client, creds, id)).validation_errors).toHaveLength(up.validationErrors.length);
      await expect(publishFlow(client, creds, id)).rejects.toMatchObject({ name: 'ChannelError', kind: 'rejected', code: 139002 });
      const notJson = await uploadFlowJson(client, creds, id, '{ not json');
      expect(notJson.validationErrors[0].error).toBe('INVALID_JSON');
      // Another project's token cannot see it.
      await expect(getFlow(client, { ...creds, accessToken: 'EAAG-wrong' }, id)).rejects.toMatchObject({ kind: 'auth' });
    } finally {
      client.close();
    }
  });
});

describe('ops flows (the operator CLI)', () => {
  const run = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { SERVICE_URL: t.baseUrl, ADMIN_TOKEN: t.adminToken }, { out: (x) => out.push(x), err: (x) => err.push(x) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('When an operator runs flows publish --dry-run, list and publish, then the CLI reports each step', async () => {
    const g = await request(t.app).post('/v1/flows/generate').set(auth()).send({ name: 'cli_flow', description });
    expect(g.status).toBe(201);
    const dry = await run(['flows', 'publish', projectId, 'cli_flow', '--dry-run']);
    expect(dry).toMatchObject({ code: 0, err: '' });
    expect(dry.out).toMatch(/Dry run: version 1 of flow cli_flow uploaded to channel draft \d+/);
    const list = await run(['flows', 'list', projectId, '--json']);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.out).flows.find((x: { name: string }) => x.name === 'cli_flow')).toMatchObject({ status: 'DRAFT', current_version: 1 });
    const missing = await run(['flows', 'publish', projectId]);
    expect(missing.code).toBe(2);
  });

  it('When npm run ops -- flows publish runs as a process, then it publishes (exit 0) and a second time fails with conflict (exit 1)', async () => {
    const cli = (args: string[]) =>
      runProcess(process.execPath, ['--import', 'tsx', 'scripts/ops.ts', ...args], { cwd: ROOT, env: { ...process.env, SERVICE_URL: t.baseUrl, ADMIN_TOKEN: t.adminToken } });
    const first = await cli(['flows', 'publish', projectId, 'cli_flow']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Published version 1 of flow cli_flow \(channel flow \d+\)/);
    const second = await cli(['flows', 'publish', projectId, 'cli_flow']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('error conflict');
  }, 30000);

  it('When an operator runs flows deprecate, then the published flow is deprecated; a second time is exit 1', async () => {
    const out: string[] = [];
    const io = { out: (x: string) => out.push(x), err: (x: string) => out.push(x) };
    const env = { SERVICE_URL: t.baseUrl, ADMIN_TOKEN: t.adminToken };
    expect(await main(['flows', 'deprecate', projectId, 'cli_flow'], env, io)).toBe(0);
    expect(out.join('\n')).toMatch(/Flow cli_flow is deprecated \(channel flow \d+\)/);
    expect(await main(['flows', 'deprecate', projectId, 'cli_flow'], env, io)).toBe(1);
  });
});

describe('the simulator keeps flows across a restart', () => {
  it('When the simulator restarts on its data folder, then a published flow and its JSON are still there', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-test-simflows-'));
    let s = createSimulator({ dataDir: dir, autoStatusDelaysMs: null });
    try {
      const pn = (await request(s.app).post('/_sim/phone-numbers').send({ callback_url: 'http://127.0.0.1:9/cb', app_secret: 'sec' }).expect(201)).body;
      const auth = `Bearer ${pn.access_token}`;
      const { id } = (await request(s.app).post(`/v26.0/${pn.waba_id}/flows`).set('Authorization', auth).send({ name: 'kept', categories: ['OTHER'] }).expect(200)).body;
      const json = JSON.stringify({ version: '7.3', screens: [{ id: 'ONLY', terminal: true, layout: { type: 'SingleColumnLayout', children: [{ type: 'Footer', label: 'Done', 'on-click-action': { name: 'complete', payload: {} } }] } }] });
      const up = await request(s.app).post(`/v26.0/${id}/assets`).set('Authorization', auth).field('name', 'flow.json').field('asset_type', 'FLOW_JSON').attach('file', Buffer.from(json), { filename: 'flow.json', contentType: 'application/json' });
      expect(up.body).toEqual({ success: true, validation_errors: [] });
      await request(s.app).post(`/v26.0/${id}/publish`).set('Authorization', auth).expect(200);
      await s.close();
      s = createSimulator({ dataDir: dir, autoStatusDelaysMs: null });
      const got = await request(s.app).get(`/v26.0/${id}?fields=id,name,status,json_version`).set('Authorization', auth);
      expect(got.body).toEqual({ id, name: 'kept', status: 'PUBLISHED', json_version: '7.3' });
      expect((await request(s.app).get(`/_sim/flows/${id}/flow.json`)).text).toBe(json);
    } finally {
      await s.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
