/**
 * The operator CLI's code commands (scripts/ops/code.ts): pull a tree to a folder, edit it with
 * any editor, push (If-Match on the pulled ETags), deploy, roll back, read the bot log; and the
 * walk-through of the README: from the scaffold to a bot answering the simulated customer.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { main } from '../../scripts/ops/main.js';

let t: TestApp;
let dir: string;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 } });
  dir = mkdtempSync(path.join(os.tmpdir(), 'code-cli-'));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  delete process.env.SERVICE_API_KEY;
  await t.close();
});

async function ops(args: string[], apiKey?: string) {
  const out: string[] = [];
  const err: string[] = [];
  if (apiKey) process.env.SERVICE_API_KEY = apiKey;
  else delete process.env.SERVICE_API_KEY;
  const code = await main([...args, '--url', t.baseUrl!], { ADMIN_TOKEN: t.adminToken }, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, stdout: out.join('\n'), stderr: err.join('\n') };
}

describe('ops code', () => {
  it('When a developer pulls, edits, pushes and deploys, then the simulated customer gets the new answer; rollback restores the old one', async () => {
    const project = await t.admin.project();
    const key = (await t.admin.key(project.id, ['code:read', 'code:write'])).secret;
    const channel = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    const work = path.join(dir, 'walk');

    const pulled = await ops(['code', 'pull', work], key);
    expect(pulled.code).toBe(0);
    expect(pulled.stdout).toContain('Pulled');
    expect(readFileSync(path.join(work, 'src/main.ts'), 'utf8')).toContain('registerBot');
    expect(existsSync(path.join(work, '.service-sync.json'))).toBe(true);

    const first = await ops(['code', 'deploy', '--message', 'scaffold'], key);
    expect(first.code).toBe(0);
    const firstId = JSON.parse((await ops(['code', 'deployments', project.id, '--json'])).stdout).deployments[0].id;

    const bot = path.join(work, 'src/bot.ts');
    writeFileSync(bot, readFileSync(bot, 'utf8').replace('`You said: ', '`Echo from the CLI: '));
    // A protected file edited locally is skipped by push (the server refuses it anyway).
    writeFileSync(path.join(work, 'src/main.ts'), '// nope\n');
    const pushed = await ops(['code', 'push', work], key);
    expect(pushed.code).toBe(0);
    expect(pushed.stdout).toContain('Pushed 1 file(s): src/bot.ts');
    const deployed = await ops(['code', 'deploy'], key);
    expect(deployed.code).toBe(0);
    expect(deployed.stdout).toContain('Deployed');

    const inbound = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: channel.phoneNumberId, from: '14155550501', name: 'Ada', text: 'hello' });
    expect(inbound.status).toBe(200);
    await t.bot!.whenIdle();
    const sent = await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${channel.phoneNumberId}`);
    expect(JSON.stringify(sent.body)).toContain('Echo from the CLI: hello');

    const rolled = await ops(['code', 'rollback', project.id, firstId, '--message', 'back to the scaffold'], undefined);
    expect(rolled.code).toBe(0);
    expect(rolled.stdout).toContain(`restores ${firstId}`);
    const prod = await request(t.app).get('/v1/files/src/bot.ts?tree=production').set('Authorization', `Bearer ${key}`);
    expect(prod.body.data.file.content).toContain('`You said: ');
  }, 60_000);

  it('When the file changed on the server since the pull, then push reports the conflict, exits 1 and overwrites nothing', async () => {
    const project = await t.admin.project();
    const key = (await t.admin.key(project.id, ['code:read', 'code:write'])).secret;
    const work = path.join(dir, 'conflict');
    expect((await ops(['code', 'pull', work], key)).code).toBe(0);
    const server = await request(t.app).put('/v1/files/src/bot.ts').set('Authorization', `Bearer ${key}`)
      .send({ content: readFileSync(path.join(work, 'src/bot.ts'), 'utf8') + '// colleague\n' });
    expect(server.status).toBe(200);
    writeFileSync(path.join(work, 'src/bot.ts'), readFileSync(path.join(work, 'src/bot.ts'), 'utf8') + '// mine\n');
    const pushed = await ops(['code', 'push', work], key);
    expect(pushed.code).toBe(1);
    expect(pushed.stderr).toContain('src/bot.ts');
    expect(pushed.stderr).toContain('precondition_failed');
    const now = await request(t.app).get('/v1/files/src/bot.ts').set('Authorization', `Bearer ${key}`);
    expect(now.body.data.file.content).toContain('// colleague');
    expect(now.body.data.file.content).not.toContain('// mine');
  });

  it('When the build fails, then deploy prints file:line:column diagnostics and exits 1; without SERVICE_API_KEY it is a usage error', async () => {
    const project = await t.admin.project();
    const key = (await t.admin.key(project.id, ['code:read', 'code:write'])).secret;
    const work = path.join(dir, 'broken');
    expect((await ops(['code', 'pull', work], key)).code).toBe(0);
    writeFileSync(path.join(work, 'src/bot.ts'), "export function onMessage(): void {\n  const x: number = 'a';\n}\n");
    expect((await ops(['code', 'push', work], key)).code).toBe(0);
    const res = await ops(['code', 'deploy'], key);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('build_failed');
    expect(res.stderr).toMatch(/src\/bot\.ts:2:9 {2}TS2322/);
    const noKey = await ops(['code', 'deploy']);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('SERVICE_API_KEY');
    const logs = await ops(['code', 'logs', project.id]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain('No log entries.');
  });
});
