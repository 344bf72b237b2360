/**
 * Deploying the development tree (deployCode), the deployment records (listDeployments) and the
 * operator's rollback (adminRollbackDeployment): a real build, diagnostics in the user's source,
 * production unchanged after a failure, no-op on an equal hash, last 20 kept.
 */
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { keyedProject, type TestApp, useTestApp } from '../support/app.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
useTestApp({}, (app) => (t = app));

const projectWithKey = (scopes = ['code:read', 'code:write']) => keyedProject(t, scopes);

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const enc = (p: string) => '/v1/files/' + encodeURIComponent(p);
const putFile = async (key: string, path: string, content: string) => {
  const res = await request(t.app).put(enc(path)).set(auth(key)).send({ content });
  expect(res.status).toBeLessThan(300);
};
const readFile = async (key: string, path: string, tree = 'development') => request(t.app).get(`${enc(path)}?tree=${tree}`).set(auth(key));
const deploy = (key: string, body: object = {}) => request(t.app).post('/v1/deployments').set(auth(key)).send(body);

const BOT_V1 = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'v1');
}
`;

describe('deployCode', () => {
  it('When the scaffold is deployed, then 201 with a succeeded, active record and production holds exactly the development files; again is a no-op', async () => {
    const { key } = await projectWithKey();
    const res = await deploy(key, { message: 'first' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ no_op: false, deployment: { status: 'succeeded', active: true, message: 'first', rollback_of: null, diagnostics: [] } });
    expect(res.body.data.deployment.content_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.data.deployment.created_by).toMatch(/^key_/);
    const dev = await request(t.app).get('/v1/files').set(auth(key));
    const prod = await request(t.app).get('/v1/files?tree=production').set(auth(key));
    expect(prod.body.data.files.map((f: any) => [f.path, f.etag])).toEqual(dev.body.data.files.map((f: any) => [f.path, f.etag]));
    const again = await deploy(key);
    expect(again.status).toBe(200);
    expect(again.body.data.no_op).toBe(true);
    expect(again.body.data.deployment.id).toBe(res.body.data.deployment.id);
    const list = await request(t.app).get('/v1/deployments').set(auth(key));
    expect(list.body.data.deployments).toHaveLength(1);
  });

  it('When the TypeScript has a type error, then 502 build_failed with diagnostics at the line and column of the source, and production is unchanged', async () => {
    const { key } = await projectWithKey();
    await putFile(key, 'src/bot.ts', BOT_V1);
    const ok = await deploy(key);
    expect(ok.status).toBe(201);
    const prodBefore = await readFile(key, 'src/bot.ts', 'production');
    const broken = BOT_V1.replace("await sendText(m.from, 'v1');", "const n: number = 'text';\n  await sendText(m.from, 'v2');");
    await putFile(key, 'src/bot.ts', broken);
    const res = await deploy(key);
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('build_failed');
    expect(res.body.error.details.diagnostics).toEqual([
      expect.objectContaining({ file: 'src/bot.ts', line: 3, column: 9, message: expect.stringContaining("Type 'string' is not assignable to type 'number'") }),
    ]);
    const prodAfter = await readFile(key, 'src/bot.ts', 'production');
    expect(prodAfter.body.data.file).toEqual(prodBefore.body.data.file);
    const list = await request(t.app).get('/v1/deployments').set(auth(key));
    expect(list.body.data.deployments.map((d: any) => [d.status, d.active])).toEqual([['failed', false], ['succeeded', true]]);
    expect(list.body.data.deployments[0].id).toBe(res.body.error.details.deployment_id);
  });

  it('When a file has a syntax error or imports a missing file or an npm package, then the diagnostics point at the import in the source', async () => {
    const { key } = await projectWithKey();
    await putFile(key, 'src/bot.ts', "export function onMessage() {\n  return (1 + ;\n}\n");
    const syntax = await deploy(key);
    expect(syntax.status).toBe(502);
    expect(syntax.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 2, column: 15, source: 'bundle' });
    await putFile(key, 'src/bot.ts', "import { x } from './helpers/nothing.js';\nexport function onMessage() { return x; }\n");
    const missing = await deploy(key);
    expect(missing.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 1, message: expect.stringContaining('./helpers/nothing.js') });
    await putFile(key, 'src/bot.ts', "import _ from 'lodash';\nexport function onMessage() { return _; }\n");
    const pkg = await deploy(key);
    expect(pkg.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 1, message: expect.stringContaining('npm packages are not available') });
  });

  it('When the bundle throws at start, then 502 build_failed with a start-up diagnostic mapped to the source line', async () => {
    const { key } = await projectWithKey();
    await putFile(key, 'src/config.ts', "export const config = { greeting: 'hi' };\nif (config.greeting.length > 0) {\n  throw new Error('bad configuration');\n}\n");
    await putFile(key, 'src/bot.ts', "import { config } from './config.js';\nexport function onMessage(): string { return config.greeting; }\n");
    const res = await deploy(key);
    expect(res.status).toBe(502);
    expect(res.body.error.details.diagnostics).toEqual([
      expect.objectContaining({ file: 'src/config.ts', line: 3, source: 'startup', message: expect.stringContaining('bad configuration') }),
    ]);
  });

  it('When the bundle loops at start, then 502 build_failed (start-up time limit), and the service keeps answering', async () => {
    const { key } = await projectWithKey();
    await putFile(key, 'src/bot.ts', "let i = 0;\nwhile (i >= 0) { i++; }\nexport function onMessage(): number { return i; }\n");
    const res = await deploy(key);
    expect(res.status).toBe(502);
    expect(res.body.error.details.diagnostics[0]).toMatchObject({ source: 'startup', message: expect.stringContaining('start-up ran longer') });
    expect((await request(t.app).get('/v1/ping').set(auth(key))).status).toBe(200);
  });

  it('When the bundle exhausts its memory at start, then 502 build_failed naming the memory limit', async () => {
    const { key } = await projectWithKey();
    await putFile(key, 'src/bot.ts', "const hoard: number[][] = [];\nfor (;;) hoard.push(new Array(1000000).fill(hoard.length));\nexport function onMessage(): number { return hoard.length; }\n");
    const res = await deploy(key);
    expect(res.status).toBe(502);
    expect(res.body.error.details.diagnostics[0]).toMatchObject({ source: 'startup', message: expect.stringContaining('memory limit') });
    expect((await request(t.app).get('/v1/deployments').set(auth(key))).body.data.deployments.map((d: any) => d.status)).toEqual(['failed']);
  });

  it('When the key holds only code:read, then deploy is 403; a body with unknown members is 400', async () => {
    const { key } = await projectWithKey(['code:read']);
    expect((await deploy(key)).status).toBe(403);
    const { key: writer } = await projectWithKey();
    const bad = await deploy(writer, { message: 'x', forcefully: true });
    expect(bad.status).toBe(400);
  });

  timingBound('event-loop gaps under 300 ms during a type-check').it('When a large tree is type-checked, then the service keeps answering meanwhile (the check runs off the event loop)', async () => {
    const { key } = await projectWithKey();
    const lines = Array.from({ length: 600 }, (_, i) => `export function f${i}(a: { x: number; y: string[] }): Array<{ n: number }> { return a.y.map((s, k) => ({ n: a.x + s.length + k + ${i} })); }`);
    await putFile(key, 'src/big.ts', lines.join('\n') + '\n');
    let last = performance.now();
    let maxGap = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 10);
    const started = performance.now();
    const res = await deploy(key);
    const took = performance.now() - started;
    clearInterval(ticker);
    expect(res.status).toBe(201);
    expect(took).toBeGreaterThan(500);
    expect(maxGap).toBeLessThan(300);
  }, 60_000);

  it('When more than 20 deploys happen, then only the last 20 records are kept', async () => {
    const { key } = await projectWithKey();
    for (let i = 0; i < 22; i++) {
      await putFile(key, 'src/note.ts', `export const note = ${i};\n`);
      expect((await deploy(key)).status).toBe(201);
    }
    const list = await request(t.app).get('/v1/deployments').set(auth(key));
    expect(list.body.data.deployments).toHaveLength(20);
    expect(await t.db.pool.query('SELECT count(*)::int AS n FROM deployments WHERE project_id = (SELECT project_id FROM api_keys WHERE id = $1)', [list.body.data.deployments[0].created_by]).then((r) => r.rows[0].n)).toBe(20);
  }, 120_000);
});

describe('adminRollbackDeployment', () => {
  it('When an operator rolls back, then production gets that deployment\'s files again without a rebuild, recorded with rollback_of; again is a no-op', async () => {
    const { projectId, key } = await projectWithKey();
    await putFile(key, 'src/bot.ts', BOT_V1);
    const v1 = (await deploy(key)).body.data.deployment;
    await putFile(key, 'src/bot.ts', BOT_V1.replace("'v1'", "'v2'"));
    const v2 = (await deploy(key)).body.data.deployment;
    expect(v2.id).not.toBe(v1.id);
    expect((await readFile(key, 'src/bot.ts', 'production')).body.data.file.content).toContain("'v2'");

    const res = await request(t.app).post(`/admin/projects/${projectId}/deployments/${v1.id}/rollback`).set('Authorization', `Bearer ${t.adminToken}`).send({ message: 'v2 broke checkout' });
    expect(res.status).toBe(201);
    expect(res.body.data.deployment).toMatchObject({ status: 'succeeded', active: true, rollback_of: v1.id, content_hash: v1.content_hash, created_by: 'operator', message: 'v2 broke checkout' });
    expect((await readFile(key, 'src/bot.ts', 'production')).body.data.file.content).toContain("'v1'");
    // The development tree is the user's: left as it is.
    expect((await readFile(key, 'src/bot.ts')).body.data.file.content).toContain("'v2'");

    const again = await request(t.app).post(`/admin/projects/${projectId}/deployments/${res.body.data.deployment.id}/rollback`).set('Authorization', `Bearer ${t.adminToken}`).send({});
    expect(again.status).toBe(200);
    expect(again.body.data.no_op).toBe(true);
    const listed = await request(t.app).get(`/admin/projects/${projectId}/deployments`).set('Authorization', `Bearer ${t.adminToken}`);
    expect(listed.body.data.deployments.filter((d: any) => d.active)).toHaveLength(1);
    // A deploy of the development tree (v2 again) is not a no-op: production runs v1 now.
    expect((await deploy(key)).status).toBe(201);
  });

  it('When the deployment is unknown, failed or of another project, then 404', async () => {
    const { projectId, key } = await projectWithKey();
    const other = await projectWithKey();
    const theirs = (await deploy(other.key)).body.data.deployment;
    await putFile(key, 'src/bot.ts', 'export const = ;\n');
    const failed = (await deploy(key)).body.error.details.deployment_id;
    for (const id of ['dep_unknown', failed, theirs.id]) {
      const res = await request(t.app).post(`/admin/projects/${projectId}/deployments/${id}/rollback`).set('Authorization', `Bearer ${t.adminToken}`).send({});
      expect(res.status).toBe(404);
    }
    const noProject = await request(t.app).post(`/admin/projects/prj_nope/deployments/${theirs.id}/rollback`).set('Authorization', `Bearer ${t.adminToken}`).send({});
    expect(noProject.status).toBe(404);
  });
});
