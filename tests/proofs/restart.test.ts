/**
 * A restart never breaks a working project. The service runs as `npm start` runs it (its own
 * process, the embedded defaults in a data folder of its own, the bundled simulator), is stopped
 * and started again on the same folder; the project's simulated number still receives and sends.
 * Separately, a simulator restarted on its data folder keeps its numbers, templates and media.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { createSimulator } from '../../simulator/app.js';
import { embeddedServiceEnv, tempFolder } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const folders: string[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await sleep(500);
  for (const f of folders) await rm(f, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const dir = await tempFolder('svc-restart-');
  folders.push(dir);
  return dir;
}

async function startService(env: NodeJS.ProcessEnv, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], { cwd: root, env, stdio: 'ignore' });
  children.push(child);
  const until = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/v1/openapi.json`).then((r) => r.ok, () => false);
    if (ok) return child;
    if (child.exitCode !== null || Date.now() > until) throw new Error('the service did not start');
    await sleep(200);
  }
}

async function stopService(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('restart keeps the channel', () => {
  it('When the service restarts on its data folder, then a project created before still receives and sends on its simulated number', async () => {
    const dir = await folder();
    const { env, port, simPort } = await embeddedServiceEnv(path.join(dir, 'data'));
    const base = `http://127.0.0.1:${port}`;
    const sim = `http://127.0.0.1:${simPort}`;

    let service = await startService(env, port);
    const admin = (await readFile(path.join(dir, 'data', 'admin-token'), 'utf8')).trim();
    const project = (await request(base).post('/admin/projects').set('Authorization', `Bearer ${admin}`).send({ name: 'restart' }).expect(201)).body.data.project;
    const key = (await request(base).post(`/admin/projects/${project.id}/keys`).set('Authorization', `Bearer ${admin}`).send({ name: 'k', scopes: ['messages:send'] }).expect(201)).body.data.secret;
    const pnid = (await request(base).get(`/admin/projects/${project.id}/channel`).set('Authorization', `Bearer ${admin}`).expect(200)).body.data.channel.phone_number_id;
    await stopService(service);

    service = await startService(env, port);
    const inbound = await request(sim).post('/_sim/inbound').send({ phone_number_id: pnid, from: '14155550123', name: 'Ada', text: 'Hi after restart' });
    expect(inbound.status).toBe(200);
    expect(inbound.body.status_code).toBe(200);
    const reply = await request(base).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: '+14155550123', content: 'Hello again' });
    expect(reply.status).toBe(200);
    expect(reply.body.data.id).toMatch(/^wamid\./);
    await stopService(service);
  }, 120_000);

  it('When the simulator restarts on its data folder, then its numbers, templates and media are all still there', async () => {
    const dir = await folder();
    let s = createSimulator({ dataDir: dir, templateAutoDecisionMs: null });
    const pn = (await request(s.app).post('/_sim/phone-numbers').send({ callback_url: 'http://127.0.0.1:9/cb', app_secret: 'sec' }).expect(201)).body;
    const auth = `Bearer ${pn.access_token}`;
    const tpl = (await request(s.app).post(`/v26.0/${pn.waba_id}/message_templates`).set('Authorization', auth)
      .send({ name: 'kept_template', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi' }] }).expect(200)).body;
    const media = (await request(s.app).post(`/v26.0/${pn.phone_number_id}/media`).set('Authorization', auth)
      .field('messaging_product', 'whatsapp').attach('file', Buffer.from('%PDF-1.4 kept'), { filename: 'k.pdf', contentType: 'application/pdf' }).expect(200)).body;
    await s.close();

    s = createSimulator({ dataDir: dir, templateAutoDecisionMs: null });
    try {
      const got = await request(s.app).get(`/v26.0/${pn.phone_number_id}`).set('Authorization', auth);
      expect(got.status).toBe(200);
      const listed = (await request(s.app).get(`/v26.0/${pn.waba_id}/message_templates`).set('Authorization', auth).expect(200)).body.data;
      expect(listed.map((t: any) => t.id)).toContain(tpl.id);
      const info = (await request(s.app).get(`/v26.0/${media.id}`).set('Authorization', auth).expect(200)).body;
      const bytes = await request(s.app).get(new URL(info.url).pathname + new URL(info.url).search).set('Authorization', auth).buffer(true);
      expect(Buffer.from(bytes.body).toString()).toBe('%PDF-1.4 kept');
    } finally {
      await s.close();
    }
  });
});
