/**
 * The restore drill (issue 59 item 6; docs/deploy.md "Backups"), as an operator runs it, natively:
 * a running service (BLOB_STORE=postgres) holds a project with an API key, a table with rows, a
 * deployed bot and a media asset; while it runs, its database is backed up as the docs say
 * (`pg_dumpall --roles-only` for the projects' table roles, `pg_dump -Fc`), restored into a NEW
 * PostgreSQL cluster (initdb on a port of its own) under the same database name, and a new instance
 * started on it with the same ENCRYPTION_KEY serves the project: the key authenticates, the table's
 * rows read (as the project's own role), the bot's deployment and its source, the media asset and
 * its bytes. Times are printed.
 * Needs Debian's PostgreSQL server binaries (initdb, pg_ctl) and client (pg_dump, pg_restore) at
 * least as new as the test database's server; otherwise it says why it skipped (CI installs them).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { createScratchDatabase } from '../support/db.js';
import { freePort } from '../support/local.js';
import { debianPostgres, isRoot, ownClusterSkipReason, run } from '../support/own-cluster.js';
import { pdf } from '../support/samples.js';
import { ServiceProcess, stopAll } from '../support/service-process.js';

const pgBin = debianPostgres();
const skipReason = ownClusterSkipReason();
if (skipReason) console.log(`backup-restore: skipped: ${skipReason}`);
const describeIf = skipReason ? describe.skip : describe;

describeIf('backup and restore drill', () => {
  let scratch: { url: string; drop(): Promise<void> };
  let sim: Simulator;
  let simServer: http.Server;
  let work = '';
  let clusterDir = '';
  let clusterPort = 0;
  let clusterUp = false;

  beforeAll(async () => {
    scratch = await createScratchDatabase('restore');
    sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
    simServer = http.createServer(sim.app);
    await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
    work = path.join(tmpdir(), `restore-drill-${randomBytes(4).toString('hex')}`);
    mkdirSync(work, { recursive: true });
    chmodSync(work, 0o755);
  });

  afterAll(async () => {
    await stopAll();
    if (clusterUp) await run(path.join(pgBin!.bin, 'pg_ctl'), ['-D', clusterDir, '-m', 'immediate', 'stop'], { asPostgres: isRoot });
    await sim?.close();
    simServer?.close();
    if (work) rmSync(work, { recursive: true, force: true });
    await scratch?.drop();
  });

  it('When a running system is backed up and restored into a new cluster, then a new instance on it serves the project: key, table rows, bot, media', async () => {
    const source = new pg.Client({ connectionString: scratch.url });
    await source.connect();
    const serverVersion = Number((await source.query<{ v: string }>("SELECT current_setting('server_version_num') AS v")).rows[0].v) / 10000;
    await source.end();
    if (Math.floor(serverVersion) > pgBin!.version) {
      console.log(`backup-restore: skipped: the test database is PostgreSQL ${Math.floor(serverVersion)}, newer than pg_dump ${pgBin!.version}`);
      return;
    }
    const adminToken = randomBytes(24).toString('hex');
    const encryptionKey = randomBytes(32).toString('hex');
    const simulatorUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
    const common = { adminToken, encryptionKey, simulatorUrl, env: { BLOB_STORE: 'postgres' } };

    // 1. A running system with a project.
    const a = await ServiceProcess.start({ ...common, databaseUrl: scratch.url });
    const admin = (method: 'get' | 'post', p: string) => request(a.url)[method](p).set('Authorization', `Bearer ${adminToken}`);
    const project = (await admin('post', '/admin/projects').send({ name: 'restore drill' }).expect(201)).body.data.project;
    const scopes = ['tables:read', 'tables:write', 'media:read', 'media:write', 'code:read', 'code:write', 'messages:send'];
    const key = (await admin('post', `/admin/projects/${project.id}/keys`).send({ name: 'drill', scopes }).expect(201)).body.data.secret as string;
    const auth = { Authorization: `Bearer ${key}` };
    await admin('post', `/admin/projects/${project.id}/tables`).send({ name: 'orders', columns: [{ name: 'id', type: 'bigserial', primary_key: true }, { name: 'item', type: 'text' }] }).expect(201);
    await request(a.url).post('/v1/tables/orders/rows').set(auth).send({ rows: [{ item: 'tea' }, { item: 'cake' }] }).expect(201);
    const bot = "import { sendText, type InboundMessage } from './platform/runtime/index.js';\nexport async function onMessage(m: InboundMessage): Promise<void> {\n  await sendText(m.from, 'restored');\n}\n";
    expect((await request(a.url).put('/v1/files/' + encodeURIComponent('src/bot.ts')).set(auth).send({ content: bot })).status).toBeLessThan(300);
    const deployed = (await request(a.url).post('/v1/deployments').set(auth).send({ message: 'before the backup' }).expect(201)).body.data.deployment;
    const bytes = pdf(200_000);
    await request(a.url).post('/v1/media').set(auth).send({ data: bytes.toString('base64'), filename: 'menu.pdf', mime: 'application/pdf', slug: 'menu' }).expect(201);

    // 2. The backup, as docs/deploy.md says, while the instance keeps running.
    const t0 = Date.now();
    const dump = path.join(work, 'messaging.dump');
    const rolesFile = path.join(work, 'roles.sql');
    const dumped = await run(path.join(pgBin!.bin, 'pg_dump'), ['-Fc', '-f', dump, '-d', scratch.url]);
    expect(dumped.err).toBe('');
    expect(dumped.code).toBe(0);
    const roles = await run(path.join(pgBin!.bin, 'pg_dumpall'), ['--roles-only', '--no-role-passwords', '-d', withoutDatabase(scratch.url)]);
    expect(roles.code).toBe(0);
    // The shared test cluster holds every test's roles: keep this database's project roles (an
    // operator's own cluster holds only theirs and keeps the whole file).
    const owners = await projectRoles(scratch.url);
    expect(owners.length).toBeGreaterThan(0);
    writeFileSync(rolesFile, roles.out.split('\n').filter((l) => owners.some((o) => l.includes(`"${o}"`) || l.includes(` ${o} `) || l.includes(` ${o};`))).join('\n') + '\n');
    const backupMs = Date.now() - t0;
    const dbName = new URL(scratch.url).pathname.slice(1);

    // 3. A new cluster, the roles, the database under its name, the dump restored.
    const t1 = Date.now();
    clusterDir = path.join(work, 'cluster');
    mkdirSync(clusterDir);
    if (isRoot) chownSync(clusterDir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
    const init = await run(path.join(pgBin!.bin, 'initdb'), ['-D', clusterDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'], { asPostgres: isRoot });
    expect(init.code).toBe(0);
    clusterPort = await freePort();
    const started = await run(path.join(pgBin!.bin, 'pg_ctl'), ['-D', clusterDir, '-w', '-l', path.join(clusterDir, 'log'), '-o', `-p ${clusterPort} -k ${clusterDir} -c listen_addresses=127.0.0.1`, 'start'], { asPostgres: isRoot });
    expect(started.code).toBe(0);
    clusterUp = true;
    const target = `postgres://postgres@127.0.0.1:${clusterPort}`;
    const rolesIn = await run(path.join(pgBin!.bin, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', `${target}/postgres`, '-f', rolesFile]);
    expect(rolesIn.err).toBe('');
    const created = await run(path.join(pgBin!.bin, 'psql'), ['-X', '-q', '-d', `${target}/postgres`, '-c', `CREATE DATABASE "${dbName}"`]);
    expect(created.code).toBe(0);
    const restored = await run(path.join(pgBin!.bin, 'pg_restore'), ['--exit-on-error', '-d', `${target}/${dbName}`, dump]);
    expect(restored.err).toBe('');
    expect(restored.code).toBe(0);
    const restoreMs = Date.now() - t1;

    // 4. A new instance on the restored database serves the project.
    const b = await ServiceProcess.start({ ...common, databaseUrl: `${target}/${dbName}` });
    const ping = await request(b.url).get('/v1/ping').set(auth);
    expect(ping.status).toBe(200);
    const rows = await request(b.url).get('/v1/tables/orders/rows').set(auth).expect(200);
    expect(rows.body.data.rows.map((r: { item: string }) => r.item).sort()).toEqual(['cake', 'tea']);
    // Written as the project's role on the restored database, too.
    await request(b.url).post('/v1/tables/orders/rows').set(auth).send({ rows: [{ item: 'scone' }] }).expect(201);
    const deployments = (await request(b.url).get('/v1/deployments').set(auth).expect(200)).body.data.deployments;
    expect(deployments.map((d: { id: string; active: boolean }) => [d.id, d.active])).toEqual([[deployed.id, true]]);
    const source2 = await request(b.url).get('/v1/files/' + encodeURIComponent('src/bot.ts') + '?tree=production').set(auth).expect(200);
    expect(JSON.stringify(source2.body)).toContain("sendText(m.from, 'restored')");
    const media = (await request(b.url).get('/v1/media/menu').set(auth).expect(200)).body.data.media;
    expect(media).toMatchObject({ slug: 'menu', mime_type: 'application/pdf', size: bytes.length });
    // The bytes: the blob the restored instance reads is the one uploaded.
    expect(await blobDigest(`${target}/${dbName}`)).toEqual(await blobDigest(scratch.url));
    expect((await blobDigest(scratch.url)).includes(createHash('sha256').update(bytes).digest('hex'))).toBe(true);
    console.log(`backup-restore: backed up a running instance in ${(backupMs / 1000).toFixed(1)} s (${(readFileSync(dump).length / 1e6).toFixed(1)} MB custom-format dump), new cluster created and restored in ${(restoreMs / 1000).toFixed(1)} s; the restored instance served the key, 2 rows (and wrote a third), the active deployment and its source, the media and its bytes`);
  }, 240_000);
});

function withoutDatabase(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.toString();
}

/** The login roles that own the projects' tables in this database. */
async function projectRoles(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ r: string }>("SELECT DISTINCT r.rolname AS r FROM pg_roles r JOIN pg_class c ON c.relowner = r.oid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname LIKE 'p\\_%' AND NOT r.rolsuper");
    return rows.map((x) => x.r);
  } finally {
    await c.end();
  }
}

/** sha256 of every blob, reassembled from its chunks (BLOB_STORE=postgres), sorted. */
async function blobDigest(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ k: string; d: Buffer }>('SELECT key AS k, data AS d FROM blob_chunks ORDER BY key, seq');
    const by = new Map<string, Buffer[]>();
    for (const r of rows) by.set(r.k, [...(by.get(r.k) ?? []), r.d]);
    return [...by.values()].map((parts) => createHash('sha256').update(Buffer.concat(parts)).digest('hex')).sort();
  } finally {
    await c.end();
  }
}
