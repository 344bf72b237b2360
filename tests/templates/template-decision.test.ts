/**
 * Deciding a template outside production: `ops templates approve|reject` (operator API
 * `POST /admin/projects/{id}/templates/{name}/decision`) decides it on the simulator, whose
 * callback updates the template like Meta's would; refused in production and when the channel is
 * not the simulator; the bundled simulator approves on its own after 3 s by default, as the
 * standalone one does.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { readFileSync } from 'node:fs';
import { startTestApp, type TestApp } from '../support/app.js';
import { projectWithKey } from '../support/broadcasts.js';
import { runOps } from '../support/ops.js';
import { loadConfig } from '../../lib/platform/config.js';
import { person } from '../support/dashboard.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null } });
});
afterAll(async () => {
  await t.close();
});

const ops = (args: string[], url = t.baseUrl!, token = t.adminToken) => runOps(url, token, args);

async function submitted(name: string) {
  const { project, key } = await projectWithKey(t, ['templates:manage', 'templates:read']);
  const res = await request(t.app).post('/v1/templates').set('Authorization', `Bearer ${key}`)
    .send({ name, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Your order {{1}} shipped', example: { body_text: [['A1']] } }] });
  expect(res.status).toBe(201);
  expect(res.body.data.template.status).toBe('PENDING');
  const status = async () => (await request(t.app).get(`/v1/templates/${name}`).set('Authorization', `Bearer ${key}`)).body.data.template;
  return { project, key, status };
}

describe('ops templates approve|reject', () => {
  it('When an operator approves a pending template, then it is APPROVED through the channel callback and template.approved is raised', async () => {
    const { project, status } = await submitted('order_shipped');
    const run = await ops(['templates', 'approve', project.id, 'order_shipped']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('Template order_shipped (en_US, UTILITY) is APPROVED.');
    expect((await status()).status).toBe('APPROVED');
    const events = await t.db.prisma.event.findMany({ where: { projectId: project.id, name: { startsWith: 'template.' } } });
    expect(events.map((e) => e.name)).toEqual(['template.approved']);
  });

  it('When an operator rejects with a reason, then it is REJECTED with that reason (JSON output too)', async () => {
    const { project, status } = await submitted('promo_fall');
    const run = await ops(['templates', 'reject', project.id, 'promo_fall', '--reason', 'PROMOTIONAL', '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).template).toEqual({ name: 'promo_fall', language: 'en_US', category: 'UTILITY', status: 'REJECTED', rejected_reason: 'PROMOTIONAL' });
    expect((await status())).toMatchObject({ status: 'REJECTED', rejected_reason: 'PROMOTIONAL' });
  });

  it('When the input is wrong, then a clear 4xx: unknown template 404, unknown project 404, a bad decision 400, a reason with APPROVED 400', async () => {
    const { project } = await submitted('receipt');
    const call = (path: string, body: object) => request(t.app).post(path).set('Authorization', `Bearer ${t.adminToken}`).send(body);
    expect((await call(`/admin/projects/${project.id}/templates/nope/decision`, { decision: 'APPROVED' })).status).toBe(404);
    expect((await call(`/admin/projects/no-such-project/templates/receipt/decision`, { decision: 'APPROVED' })).status).toBe(404);
    const bad = await call(`/admin/projects/${project.id}/templates/receipt/decision`, { decision: 'PAUSED' });
    expect(bad.status).toBe(400);
    expect(bad.body.success).toBe(false);
    expect((await call(`/admin/projects/${project.id}/templates/receipt/decision`, { decision: 'APPROVED', reason: 'x' })).status).toBe(400);
    const usage = await ops(['templates', 'approve', project.id]);
    expect(usage.code).not.toBe(0);
  });

  it('When the service runs in production, then a decision is refused (409): Meta decides there', async () => {
    const { project, status } = await submitted('prod_only');
    const before = t.config.nodeEnv;
    t.config.nodeEnv = 'production';
    try {
      const res = await request(t.app).post(`/admin/projects/${project.id}/templates/prod_only/decision`).set('Authorization', `Bearer ${t.adminToken}`).send({ decision: 'APPROVED' });
      expect(res.status).toBe(409);
      expect(res.body.error.message).toMatch(/Meta/);
    } finally {
      t.config.nodeEnv = before;
    }
    expect((await status()).status).toBe('PENDING');
  });
});

describe("the dashboard's Templates page", () => {
  it('When an owner presses Approve on a pending template, then it is APPROVED and audited; a member sees no buttons and is refused', async () => {
    const { project, status } = await submitted('welcome_back');
    const owner = await person(t, project.id, `tpl-owner-${Date.now()}@example.com`);
    const member = await person(t, project.id, `tpl-member-${Date.now()}@example.com`, 'member');
    const page = (await owner.agent.get(`/dashboard/projects/${project.id}/templates`)).text;
    expect(page).toContain('aria-label="Approve welcome_back (en_US)"');
    expect(page).toContain('aria-label="Reject welcome_back (en_US)"');
    expect((await member.agent.get(`/dashboard/projects/${project.id}/templates`)).text).not.toContain('Approve welcome_back');
    const form = { name: 'welcome_back', language: 'en_US', decision: 'APPROVED' };
    const refused = await member.agent.post(`/dashboard/projects/${project.id}/templates/decision`).type('form').send({ ...form, _csrf: await member.csrf() });
    expect(refused.status).toBe(403);
    expect((await status()).status).toBe('PENDING');
    const done = await owner.agent.post(`/dashboard/projects/${project.id}/templates/decision`).type('form').send({ ...form, _csrf: await owner.csrf() });
    expect(done.status).toBe(303);
    expect(done.headers.location).toContain('done=template_approved');
    expect((await status()).status).toBe('APPROVED');
    const audit = await t.db.prisma.dashboardAudit.findMany({ where: { projectId: project.id, action: 'template.decide' } });
    expect(audit.map((a) => [a.subject, a.before, a.after])).toEqual([['welcome_back (en_US)', { status: 'PENDING' }, { status: 'APPROVED', rejected_reason: null }]]);
    const bad = await owner.agent.post(`/dashboard/projects/${project.id}/templates/decision`).type('form').send({ ...form, decision: 'PAUSED', _csrf: await owner.csrf() });
    expect(bad.status).toBe(400);
    const missing = await owner.agent.post(`/dashboard/projects/${project.id}/templates/decision`).type('form').send({ ...form, name: 'nope', _csrf: await owner.csrf() });
    expect(missing.status).toBe(404);
  });
});

describe('simulator defaults', () => {
  it('When nothing is set, then the bundled simulator approves templates after 3 s like the standalone one; "off" waits for a decision', () => {
    expect(loadConfig({}).simulatorTemplateAutoApproveMs).toBe(3000);
    expect(loadConfig({ SIMULATOR_TEMPLATE_AUTO_APPROVE_MS: 'off' }).simulatorTemplateAutoApproveMs).toBeNull();
    expect(loadConfig({ SIMULATOR_TEMPLATE_AUTO_APPROVE_MS: '250' }).simulatorTemplateAutoApproveMs).toBe(250);
    expect(() => loadConfig({ SIMULATOR_TEMPLATE_AUTO_APPROVE_MS: 'soon' })).toThrow(/SIMULATOR_TEMPLATE_AUTO_APPROVE_MS/);
    expect(readFileSync(new URL('../../simulator/main.ts', import.meta.url), 'utf8')).toContain("SIMULATOR_TEMPLATE_AUTO_APPROVE_MS ?? '3000'");
    expect(readFileSync(new URL('../../server.ts', import.meta.url), 'utf8')).toContain('templateAutoDecisionMs: config.simulatorTemplateAutoApproveMs');
  });
});

describe('without the simulator', () => {
  it('When the channel is a real Graph API, then a decision is refused (409) and names Meta', async () => {
    const real = await startTestApp();
    try {
      const project = await real.admin.project('Real channel');
      await real.db.prisma.template.create({ data: { id: `tpl_${project.id}_x`, projectId: project.id, name: 'x', language: 'en_US', category: 'UTILITY', status: 'PENDING', components: [], channelTemplateId: '1' } });
      const res = await request(real.app).post(`/admin/projects/${project.id}/templates/x/decision`).set('Authorization', `Bearer ${real.adminToken}`).send({ decision: 'APPROVED' });
      expect(res.status).toBe(409);
      expect(res.body.error.message).toMatch(/Meta decides templates/);
    } finally {
      await real.close();
    }
  });
});
