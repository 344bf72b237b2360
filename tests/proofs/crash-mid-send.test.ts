/**
 * kill -9 of the service (issue 23, items 3 and 4), as a supervisor would see it: the service runs
 * as `npm start` runs it (its own process, embedded PostgreSQL in a data folder of its own) against
 * a standalone Cloud API simulator in this process, whose failed-callback schedule (Meta's, hours
 * long) is compressed 200×. Two sends are in flight at the channel when the service is killed, one
 * with an Idempotency-Key and one without, while the statuses of 20 earlier sends and new inbound
 * messages are still to come; the service is then started again on the same folder. Afterwards:
 * the simulator's log shows each message sent once, the database has a row for each (settled by
 * the status that echoes our reference), a retry with the key gets the one send, no status and no
 * inbound message is lost, and the daily quota counts each send once.
 *
 * @alone its kill lands inside a measured window of the send (killWindow), which another file's
 * load beside it would move.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { metaCallbackRetryDelaysMs } from '../../simulator/state.js';
import { embeddedServiceUrl, readEmbeddedCredentials } from '../../lib/platform/db/embedded.js';
import { embeddedServiceEnv, tempFolder } from '../support/local.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/eventually.js';
import { killWindow } from '../support/retry-timing.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCALE = 0.005; // Meta's 1 s, 5 s, 15 s, 30 s, 1 min, … become 5, 25, 75, 150, 300 ms, …
const EARLIER = 20;
const INBOUND = 10;


let dir: string;
let env: NodeJS.ProcessEnv;
let base: string;
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let service: ChildProcess | undefined;
let db: pg.Pool;
const children: ChildProcess[] = [];

async function startService(): Promise<ChildProcess> {
  const log = openSync(path.join(dir, 'service.log'), 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], { cwd: root, env, stdio: ['ignore', log, log] });
  children.push(child);
  const until = Date.now() + 90_000;
  for (;;) {
    const ok = await fetch(`${base}/v1/openapi.json`).then((r) => r.ok, () => false);
    if (ok) return child;
    if (child.exitCode !== null || Date.now() > until) {
      throw new Error(`the service did not start: ${(await readFile(path.join(dir, 'service.log'), 'utf8')).slice(-2000)}`);
    }
    await sleep(200);
  }
}

beforeAll(async () => {
  dir = await tempFolder('svc-kill-');
  sim = createSimulator({
    autoStatusDelaysMs: { sent: 0, delivered: 1500, read: 3000 },
    templateAutoDecisionMs: null,
    limits: { callbackRetryDelaysMs: metaCallbackRetryDelaysMs(SCALE) },
  });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
  simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
  const made = await embeddedServiceEnv(path.join(dir, 'data'));
  env = { ...made.env, SIMULATOR_URL: simUrl, GRAPH_TIMEOUT_MS: '20000' };
  base = `http://127.0.0.1:${made.port}`;
  service = await startService();
  const credentials = await readEmbeddedCredentials(path.join(dir, 'data'));
  db = new pg.Pool({ connectionString: embeddedServiceUrl(credentials!, Number(env.EMBEDDED_PG_PORT)), max: 2 });
  db.on('error', () => undefined); // the restart stops the server this pool talks to; the next query reconnects
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await sleep(3000);
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await db?.end().catch(() => undefined);
  await sim?.close();
  simServer?.closeAllConnections();
  await new Promise<void>((r) => (simServer ? simServer.close(() => r()) : r()));
  await rm(dir, { recursive: true, force: true });
}, 30_000);

describe('kill -9 of the service', () => {
  let admin: string;
  let projectId: string;
  let key: string;
  let pnid: string;
  const phones = { keyed: '14155557001', plain: '14155557002', earlier: '14155557003' };
  const outbound = async () =>
    (await db.query(`SELECT m.wamid, m.status, ct.phone AS contact_phone FROM messages m
                       JOIN conversations cv ON cv.id = m.conversation_id JOIN contacts ct ON ct.id = cv.contact_id
                      WHERE m.project_id = $1 AND m.direction = 'outbound' ORDER BY m.id`, [projectId])).rows as Array<{ wamid: string; status: string; contact_phone: string }>;
  const simSends = async (to: string) => (await request(simUrl).get(`/_sim/messages?phone_number_id=${pnid}&to=${to}`).expect(200)).body.data as Array<{ wamid: string }>;
  const send = (phone: string, idem?: string) => {
    const req = request(base).post('/v1/messages').set('Authorization', `Bearer ${key}`);
    if (idem) req.set('Idempotency-Key', idem);
    return req.send({ type: 'text', phone: `+${phone}`, content: `to ${phone}` });
  };

  killWindow('the kill lands within the channel\'s 3 s hold of the two sends').it('When two sends are in flight at the channel (with and without an Idempotency-Key) and the service is killed, then after a restart each was sent once, has its row, and nothing is lost', async () => {
    admin = (await readFile(path.join(dir, 'data', 'admin-token'), 'utf8')).trim();
    projectId = (await request(base).post('/admin/projects').set('Authorization', `Bearer ${admin}`).send({ name: 'kill -9' }).expect(201)).body.data.project.id;
    key = (await request(base).post(`/admin/projects/${projectId}/keys`).set('Authorization', `Bearer ${admin}`)
      .send({ name: 'k', scopes: ['messages:send', 'conversations:read'] }).expect(201)).body.data.secret;
    pnid = (await request(base).get(`/admin/projects/${projectId}/channel`).set('Authorization', `Bearer ${admin}`).expect(200)).body.data.channel.phone_number_id;
    for (const phone of Object.values(phones)) {
      const res = await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, name: 'Ada', text: 'hi' }).expect(200);
      expect(res.body.status_code).toBe(200); // the 24-hour windows are open
    }

    // 20 sends done: their delivered and read statuses come during the outage.
    for (let i = 0; i < EARLIER; i++) expect((await send(phones.earlier)).status).toBe(200);

    // The channel holds the next two sends 3 s before processing them: the service dies meanwhile.
    await request(simUrl).post('/_sim/faults').send({ phone_number_id: pnid, operation: 'messages', latency_ms: 3000, count: 2 }).expect(201);
    const inFlight = [send(phones.keyed, 'kill-9-key').then((r) => r, (e) => e), send(phones.plain).then((r) => r, (e) => e)];
    await eventually(async () => (await outbound()).filter((m) => m.status === 'pending').length, (n) => n === 2, 10_000, 'both intents recorded');
    service!.kill('SIGKILL');
    const answers = await Promise.all(inFlight);
    for (const a of answers) expect(String((a as any).message ?? (a as any).status)).toMatch(/socket hang up|ECONNRESET/); // the client saw the connection die

    // While the service is down: the two sends are processed, statuses pile up, customers write.
    await eventually(async () => (await simSends(phones.keyed)).length + (await simSends(phones.plain)).length, (n) => n === 2, 10_000, 'the channel processed both sends');
    for (let i = 0; i < INBOUND; i++) {
      const res = await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: phones.plain, text: `during outage ${i}` }).expect(200);
      expect(res.body.status_code).not.toBe(200);
    }
    await sleep(3500); // every automatic status has been raised (and refused)
    expect(sim.state.stats.callbacks_dropped).toBe(0);

    service = await startService();

    // The one send with the key: a retry with it answers that send (replayed) once its status named it; never a second send.
    const replay = await eventually(() => send(phones.keyed, 'kill-9-key'), (r: any) => r.status === 200, 30_000, 'the keyed retry answers the one send');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    const keyedSends = await simSends(phones.keyed);
    expect(keyedSends).toHaveLength(1);
    expect(replay.body.data).toEqual({ id: keyedSends[0].wamid, status: 'sent' });

    // Every outbound message has its row, settled by the statuses that came during the outage.
    const rows = await eventually(outbound, (r) => r.length === EARLIER + 2 && r.every((m) => m.status === 'read'), 60_000, 'every status recorded');
    const plainSends = await simSends(phones.plain);
    expect(plainSends).toHaveLength(1);
    expect(rows.find((m) => m.contact_phone.endsWith(phones.plain))!.wamid).toBe(plainSends[0].wamid);
    expect(rows.find((m) => m.contact_phone.endsWith(phones.keyed))!.wamid).toBe(keyedSends[0].wamid);
    const earlierSends = await simSends(phones.earlier);
    expect(earlierSends).toHaveLength(EARLIER);
    expect(new Set(rows.map((m) => m.wamid))).toEqual(new Set([...earlierSends, ...keyedSends, ...plainSends].map((s) => s.wamid)));

    // Every inbound message written during the outage is recorded, once.
    const inbound = await eventually(
      async () => (await db.query(`SELECT content->'text'->>'body' AS body FROM messages WHERE project_id = $1 AND direction = 'inbound' AND content->'text'->>'body' LIKE 'during outage %'`, [projectId])).rows.map((r) => r.body as string),
      (r) => r.length >= INBOUND,
      30_000,
      'inbound recorded',
    );
    expect(inbound.sort()).toEqual(Array.from({ length: INBOUND }, (_, i) => `during outage ${i}`).sort());

    // The daily quota counts each send once (the replay took nothing).
    const used = Number((await db.query('SELECT COALESCE(SUM(count), 0) AS n FROM send_counters WHERE project_id = $1', [projectId])).rows[0].n);
    expect(used).toBe(EARLIER + 2);
    expect(sim.state.stats.callbacks_dropped).toBe(0);
  }, 240_000);
});
