/**
 * A broadcast that is sending survives kill -9 of the service and PostgreSQL connections being
 * terminated under it (issue #24 items 1 and 2). The service runs as a real process on a database
 * of this test's own, against the Cloud API simulator in this process, paced at 40 messages per
 * second so that the campaign is mid-flight when the fault strikes:
 * - killed with SIGKILL twice, at random points of the campaign (the seed is printed), then started
 *   again: the campaign completes, each recipient was sent exactly once at the channel, and every
 *   recipient recorded as sent has the channel's message id;
 * - its PostgreSQL connections terminated (pg_terminate_backend) mid-campaign: the same instance,
 *   never restarted, completes it with each recipient sent once;
 * - the channel throttling (Graph 130429), failing (HTTP 500), slow, silent (no answer) and losing
 *   answers of sends it did process, mid-campaign: the engine paces back, completes, and sends
 *   nobody twice; every message the channel took is on its recipient's row. A call the channel
 *   never answered is not sent again (at most once) and its row has no message id.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { DEFAULT_PIPELINE } from '../../lib/broadcasts/engine.js';
import { createScratchDatabase } from '../support/db.js';
import { ServiceProcess, crashSeed, eventually, operatorCalls, stopAll, type ServiceOptions } from '../support/service-process.js';

const RECIPIENTS = 240;
/** Deterministic from the seed: where in the campaign each kill falls. */
const { seed: SEED, random } = crashSeed();

let scratch: { url: string; drop(): Promise<void> } | undefined;
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let opts: ServiceOptions;
let service: ServiceProcess;
let db: pg.Pool;
const adminToken = 'adm_crash_' + randomBytes(16).toString('hex');
const figures: string[] = [];

const adminCall = operatorCalls(() => service.url, adminToken);

beforeAll(async () => {
  scratch = await createScratchDatabase('bcrash');
  sim = createSimulator({ autoStatusDelaysMs: { sent: 0, delivered: 1000, read: 2000 }, templateAutoDecisionMs: 50 });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
  simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
  opts = {
    databaseUrl: scratch.url,
    adminToken,
    encryptionKey: randomBytes(32).toString('hex'),
    simulatorUrl: simUrl,
    env: { BROADCAST_DEFAULT_MPS: '40', GRAPH_TIMEOUT_MS: '2000' },
  };
  service = await ServiceProcess.start(opts);
  db = new pg.Pool({ connectionString: scratch.url, max: 2 });
  db.on('error', () => undefined);
}, 180_000);

afterAll(async () => {
  if (figures.length) console.log(`broadcast under faults (CRASH_SEED=${SEED}):\n  ${figures.join('\n  ')}`);
  await stopAll();
  await db?.end().catch(() => undefined);
  await sim?.close();
  simServer?.closeAllConnections();
  await new Promise<void>((r) => (simServer ? simServer.close(() => r()) : r()));
  await scratch?.drop().catch(() => undefined);
}, 60_000);

/** A project with an approved template and `RECIPIENTS` opted-in contacts; an approved campaign to all of them. */
async function campaign(label: string, phoneBase: number) {
  const project = (await adminCall('post', '/admin/projects', { name: label })).project;
  const key = (await adminCall('post', `/admin/projects/${project.id}/keys`, { name: 'k', scopes: ['templates:manage', 'templates:read', 'broadcasts:manage', 'broadcasts:read'] })).secret as string;
  const pnid = (await adminCall('get', `/admin/projects/${project.id}/channel`)).channel.phone_number_id as string;
  const auth = `Bearer ${key}`;
  await request(service.url).post('/v1/templates').set('Authorization', auth)
    .send({ name: 'promo', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'Hello, new menu today' }] }).expect(201);
  await eventually(
    async () => (await request(service.url).get('/v1/templates/promo?language=en_US').set('Authorization', auth)).body?.data?.template?.status,
    (s) => s === 'APPROVED',
    30_000,
    'the template approved',
  );
  await db.query(
    `INSERT INTO contacts (project_id, phone, tags, opted_in, opted_in_at, created_at, updated_at)
     SELECT $1, ($2::bigint + g)::text, '{}', true, now(), now(), now() FROM generate_series(0, $3 - 1) g`,
    [project.id, phoneBase, RECIPIENTS],
  );
  const created = await request(service.url).post('/v1/broadcasts').set('Authorization', auth)
    .send({ name: label, template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [] } } });
  expect(created.status).toBe(201);
  const id = created.body.data.broadcast.id as string;
  await adminCall('post', `/admin/broadcasts/${id}/approve`, { approved_by: 'crash test' });
  return { id, pnid, phones: Array.from({ length: RECIPIENTS }, (_, i) => String(phoneBase + i)) };
}

/** The engine's chunk at the test's 40 messages a second: a tenth of a second of the rate. */
const KILL_CHUNK = 4;
/** What a kill may leave recorded but never called: a chunk per batch in flight. */
const KILL_LOSS = DEFAULT_PIPELINE * KILL_CHUNK;

const sentCount = async (id: string) =>
  Number((await db.query(`SELECT count(*) AS n FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'sent'`, [id])).rows[0].n);

/** The campaign completed; each phone got exactly one message at the channel; each recipient row names its message. */
async function expectEachOnce(c: { id: string; pnid: string; phones: string[] }, timeoutMs: number, noAnswerAtMost = 0) {
  const status = await eventually(
    async () => (await db.query('SELECT status FROM broadcasts WHERE id = $1', [c.id])).rows[0].status as string,
    (s) => s === 'completed',
    timeoutMs,
    'the campaign completed',
    250,
  );
  expect(status).toBe('completed');
  const atChannel = (await request(simUrl).get(`/_sim/messages?phone_number_id=${c.pnid}&limit=10000`).expect(200)).body.data as Array<{ wamid: string; to: string }>;
  const perPhone = new Map<string, number>();
  for (const m of atChannel) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
  const twice = [...perPhone].filter(([, n]) => n > 1);
  const missing = c.phones.filter((p) => !perPhone.has(p));
  const missingRows = missing.length ? (await db.query('SELECT phone, state, wamid, error_code FROM broadcast_recipients WHERE broadcast_id = $1 AND phone = ANY($2)', [c.id, missing])).rows : [];
  expect(twice).toEqual([]);
  // A call the channel never answered (and never processed) is not sent again, by design (at most
  // once: it might have been sent); its row has no message id. Only those may be absent.
  // Their rows say why, when there are more than may be (the assertion alone would not).
  if (missingRows.length > noAnswerAtMost) console.log(`recipients not at the channel: ${JSON.stringify(missingRows)}`);
  expect(missingRows.length).toBeLessThanOrEqual(noAnswerAtMost);
  for (const r of missingRows) expect(r).toMatchObject({ state: 'unknown', wamid: null });
  expect(atChannel).toHaveLength(RECIPIENTS - missingRows.length);
  // Each message the channel took is recorded for its recipient (on the row, or, when the answer
  // was lost, on the message its reference names, settled by the status that echoes it).
  const byPhone = new Map(atChannel.map((m) => [m.to, m.wamid]));
  const recorded = async () =>
    (await db.query(
      `SELECT r.phone, r.state, COALESCE(r.wamid, m.wamid) AS wamid FROM broadcast_recipients r
         LEFT JOIN messages m ON m.send_ref = r.send_ref AND m.project_id = (SELECT project_id FROM broadcasts WHERE id = r.broadcast_id)
        WHERE r.broadcast_id = $1`,
      [c.id],
    )).rows as Array<{ phone: string; state: string; wamid: string | null }>;
  const rows = await eventually(recorded, (rs) => rs.every((r) => missing.includes(r.phone) || r.wamid === byPhone.get(r.phone)), 30_000, 'every message the channel took recorded', 250);
  expect(rows).toHaveLength(RECIPIENTS);
  // A recipient whose send's answer was lost (or was in flight at a crash) is `unknown`, never `sent`
  // without a message id (issue #34); its message names the wamid once a status settles it.
  expect(rows.filter((r) => r.state !== 'sent' && r.state !== 'unknown')).toEqual([]);
  for (const r of rows) if (!missing.includes(r.phone)) expect(r.wamid).toBe(byPhone.get(r.phone));
  return { sent: atChannel.length, noAnswer: missingRows.length };
}

describe('a sending broadcast under faults', () => {
  // At most once is the rule for a send whose outcome a crash hides: the engine records a chunk's
  // sends (BROADCAST_DEFAULT_MPS 40: 4 a tenth of a second), then calls the channel for them at
  // once. A kill between the two leaves those recorded but never called; they end `unknown`, never
  // sent again. Up to DEFAULT_PIPELINE batches send at once, and on a machine that runs behind the
  // pace their chunks overlap (a CI run lost two chunks to one kill): so a kill may cost at most a
  // chunk per batch in flight, and only in that state.
  it('When the service is killed with SIGKILL twice at random points of a sending campaign and started again, then nobody is sent twice, and everyone is sent once but at most a chunk per batch in flight a kill, recorded unknown', async () => {
    const c = await campaign('kill -9 broadcast', 15551000000);
    const started = Date.now();
    for (let round = 1; round <= 2; round++) {
      // Somewhere between 10% and 80% of the way (measured from where this round starts).
      const before = await sentCount(c.id);
      const target = before + Math.max(5, Math.floor((RECIPIENTS - before) * (0.1 + 0.5 * random())));
      const at = await eventually(() => sentCount(c.id), (n) => n >= target, 120_000, `round ${round}: ${target} recipients sent`, 20);
      await service.kill('SIGKILL');
      figures.push(`kill -9 #${round} after ${at} of ${RECIPIENTS} recipients sent`);
      service = await ServiceProcess.start({ ...opts, port: service.port });
    }
    const { sent: n, noAnswer } = await expectEachOnce(c, 180_000, 2 * KILL_LOSS);
    figures.push(`after 2 kills: completed in ${Math.round((Date.now() - started) / 1000)} s, ${n} messages at the channel for ${RECIPIENTS} recipients; ${noAnswer} recorded but never called (unknown, not re-sent)`);
  }, 420_000);

  it('When every PostgreSQL connection of the service is terminated mid-campaign, then the same instance, not restarted, completes it with every recipient sent once', async () => {
    const c = await campaign('terminated broadcast', 15552000000);
    const pid = service.child.pid;
    await eventually(() => sentCount(c.id), (n) => n >= RECIPIENTS / 4, 120_000, 'a quarter sent', 20);
    const killed = (await db.query(
      `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    )).rows[0].n;
    // While the pools reconnect, the API answers in its envelope (or already succeeds): never a hang, never off-contract.
    const during = await fetch(`${service.url}/v1/broadcasts/${c.id}`, { headers: { Authorization: 'Bearer pk_live_unknown000000000000' } });
    expect([401, 503]).toContain(during.status);
    expect((await during.json()).success).toBe(false);
    const { sent: n } = await expectEachOnce(c, 180_000);
    expect(service.child.pid).toBe(pid);
    expect(service.child.exitCode).toBeNull();
    figures.push(`pg_terminate_backend of ${killed} connections at a quarter: completed without a restart, ${n} messages for ${RECIPIENTS} recipients`);
  }, 300_000);

  it('When the channel throttles (130429), fails (500), hangs and loses answers mid-campaign, then the campaign completes and nobody is sent twice', async () => {
    const c = await campaign('channel faults broadcast', 15553000000);
    await eventually(() => sentCount(c.id), (n) => n >= RECIPIENTS / 5, 120_000, 'a fifth sent', 20);
    const fault = (f: object) => request(simUrl).post('/_sim/faults').send({ phone_number_id: c.pnid, operation: 'messages', ...f }).expect(201);
    await fault({ graph_error: { code: 130429, http_status: 400, message: 'Rate limit hit' }, count: 25 });
    await fault({ http_status: 500, count: 10 });
    await fault({ latency_ms: 800, count: 10 });
    await fault({ timeout: true, count: 3 });
    await fault({ lose_answer: true, count: 5 });
    const started = Date.now();
    const { sent: n, noAnswer } = await expectEachOnce(c, 240_000, 3);
    const left = (await request(simUrl).get('/_sim/faults').expect(200)).body.data as Array<{ count: number }>;
    expect(left).toEqual([]); // every fault struck the campaign
    figures.push(`channel faults mid-campaign (25× 130429, 10× HTTP 500, 10× 800 ms, 3× no answer, 5× answer lost): completed ${Math.round((Date.now() - started) / 1000)} s later, ${n} messages for ${RECIPIENTS} recipients, none twice; ${noAnswer} calls never answered recorded unknown without a message id (not re-sent)`);
  }, 300_000);
});
