/**
 * A bot author's errors point at their own code (issue 35): a helper's error is located at the
 * author's call through the bundle's source map, never inside src/platform/; a preview missing a
 * table that production has says so and names the fix.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 } });
});
afterAll(async () => {
  await t?.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });

const BOT = `import { tables, sendText, type InboundMessage } from './platform/runtime/index.js';

export async function onMessage(m: InboundMessage): Promise<void> {
  const rows = await tables.select(m.text === 'nope' ? 'nope' : 'visits');
  await sendText(m.from, 'rows ' + rows.length);
}
`;

async function botProject() {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'messages:send'])).secret;
  const put = await request(t.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: BOT });
  expect(put.status).toBeLessThan(300);
  const created = await request(t.app).post(`/admin/projects/${project.id}/tables`).set(admin())
    .send({ schema: 'public', name: 'visits', columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'phone', type: 'text' }] });
  expect(created.status).toBe(201);
  const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  return { projectId: project.id, key, phoneNumberId: channel.phoneNumberId };
}

describe('bot errors', () => {
  it('When a preview needs a table that exists in public only, then the outcome names the preview schema, the fix and the author\'s line', async () => {
    const { projectId, key } = await botProject();
    const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'hi' });
    expect(res.status).toBe(200);
    expect(res.body.data.outcome.status).toBe('error');
    const message: string = res.body.data.outcome.message;
    expect(message).toContain('No table "visits" in the preview schema: it exists in production (public) only.');
    expect(message).toContain(`npm run ops -- tables ddl ${projectId} --schema preview`);
    expect(message).toMatch(/ at src\/bot\.ts:4:\d+$/);
    // A table missing everywhere is explained too, without claiming production has it.
    const created = await request(t.app).post(`/admin/projects/${projectId}/tables`).set(admin())
      .send({ schema: 'preview', name: 'visits', columns: [{ name: 'id', type: 'bigserial', primary_key: true }] });
    expect(created.status).toBe(201);
    const ok = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'hi', from: '14155550601' });
    expect(ok.body.data.outcome.status).toBe('ok');
    expect(ok.body.data.sends).toEqual([{ type: 'text', phone: '14155550601', content: 'rows 0' }]);
    const nope = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'nope' });
    expect(nope.body.data.outcome.message).toContain('No table "nope" in the preview schema (a preview reads and writes the preview schema');
  }, 60_000);

  it('When a deployed bot\'s helper call fails, then the bot log points at the author\'s file and line, not the platform\'s', async () => {
    const { projectId, key, phoneNumberId } = await botProject();
    const deployed = await request(t.app).post('/v1/deployments').set(auth(key)).send({});
    expect([200, 201]).toContain(deployed.status);
    const sent = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550602', name: 'Ada', text: 'nope' });
    expect(sent.status).toBe(200);
    await t.bot!.whenIdle();
    const logs = await eventually(
      async () => (await request(t.app).get(`/admin/projects/${projectId}/bot/logs?limit=10`).set(admin())).body.data.logs as Array<{ message: string }>,
      (l) => l.length > 0,
      5000,
      'the bot log entry',
    );
    expect(logs).toHaveLength(1);
    expect(logs[0].message).toMatch(/^The bot threw: No table "nope" in the project's public schema.* at src\/bot\.ts:4:\d+ \(message wamid\./);
    expect(logs[0].message).not.toContain('src/platform/');
  }, 60_000);
});
