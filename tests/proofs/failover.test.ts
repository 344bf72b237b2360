/**
 * Production survives the loss of a machine (issue 59, items 1 and 2; docs/deploy.md "High
 * availability"): the HA topology of scripts/ha/cluster.sh (3 etcd, 3 PostgreSQL 15 nodes under
 * Patroni in synchronous mode, HAProxy to the primary, Redis master + replica + 3 sentinels), two
 * service instances as real processes on it (DATABASE_URL through HAProxy, Redis in Sentinel mode)
 * behind the balancer of compose.yaml (docker/haproxy.cfg), the Cloud API simulator in this process.
 * - SIGKILL of the PostgreSQL primary (its Patroni and its postgres: the machine is gone) during a
 *   500-recipient campaign and a stream of API sends with Idempotency-Keys (the client retries
 *   connection errors, 409, 502, 503, 504 with the same key, as docs/deploy.md says): a standby is
 *   promoted within the stated bound, no client sees a reset (the balancer answers 503 while no
 *   instance is ready; issue 59 item 3), both instances serve again without a restart, every
 *   recipient reached at most once and all but those the kill left `unknown` (the engine's
 *   at-most-once rule) exactly once, every acknowledged send delivered exactly once, none lost.
 * - SIGKILL of the Redis master during a stream of sends: no request fails (the counters fail
 *   open), the sentinels promote the replica and both instances count on it again without a
 *   restart.
 * The seconds of unavailability are printed. Runs where the packages are installed and as root
 * (CI's .ci/run installs them); otherwise it says why it skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { withClient, withDatabase } from '../support/db.js';
import { freePort, processAlive, runProcess } from '../support/local.js';
import { ServiceProcess, eventually, stopAll } from '../support/service-process.js';
import { HA_SCRIPT as SCRIPT, haSkipReason, haUp } from '../support/ha-cluster.js';

const RECIPIENTS = 500;
/** Stated bounds (docs/deploy.md): Patroni's ttl is 10 s, loop_wait 2 s; Sentinel's down-after 2 s. */
const PG_FAILOVER_BOUND_S = 30;
const REDIS_FAILOVER_BOUND_S = 20;
const skip = haSkipReason();
if (skip) console.log(`failover: skipped: ${skip}`);
const describeIf = skip ? describe.skip : describe;

let dir: string;
let env: Record<string, string> = {};
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Pool;
let lb: ChildProcess | undefined;
let lbUrl: string;
let projectId: string;
let key: string;
let pnid: string;
const adminToken = 'adm_ha_' + randomBytes(16).toString('hex');
const figures: string[] = [];
const phones = Array.from({ length: 5 }, (_, i) => `1415555${8100 + i}`);

const nodes = () => env.PATRONI_API_PORTS.split(' ').map((api, i) => ({ name: `pg${i + 1}`, api: Number(api) }));
const isPrimary = (api: number) => fetch(`http://127.0.0.1:${api}/primary`, { signal: AbortSignal.timeout(1000) }).then((r) => r.status === 200, () => false);
const pidOf = (name: string) => Number(readFileSync(path.join(dir, 'pids'), 'utf8').split('\n').find((l) => l.startsWith(`${name} `))?.split(' ')[1]);
const killGroup = (pid: number) => {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
};
const redisCli = (port: string, ...args: string[]) => execFileSync('redis-cli', ['-p', port, ...args], { encoding: 'utf8', timeout: 3000 }).trim();

/** A statement of the test's own, retried across the failover (the pool reconnects through HAProxy). */
async function q<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
  return (await eventually(() => db.query(sql, params), (r) => !(r instanceof Error), 60_000, sql.slice(0, 60), 250)).rows as T[];
}

interface SendOutcome { key: string; content: string; wamid?: string; ackAt?: number; final?: string; attempts: number; resets: number; statuses: number[] }

/**
 * Sends with Idempotency-Keys, 4 at a time, through the balancer of compose.yaml (docker/haproxy.cfg
 * in front of both instances), until `stop()` (so the stream spans the whole outage). Each is
 * retried with its key after a connection error, 409 (in progress), 429, 502, 503 or 504 — what
 * docs/deploy.md asks of clients — until acknowledged (200), answered finally, or `deadlineMs`
 * passes. A connection error (a reset) is counted: the balancer should answer instead.
 */
function sendStream(label: string, deadlineMs: number, paceMs = 200): { stop: () => Promise<SendOutcome[]> } {
  const out: SendOutcome[] = [];
  let next = 0;
  let stopped = false;
  const until = Date.now() + deadlineMs;
  const running = Promise.all(Array.from({ length: 4 }, async () => {
    while (!stopped) {
      const i = next++;
      const o: SendOutcome = { key: `${label}-${i}-${randomBytes(4).toString('hex')}`, content: `${label} ${i}`, attempts: 0, resets: 0, statuses: [] };
      out.push(o);
      for (;;) {
        o.attempts++;
        const res = await request(lbUrl).post('/v1/messages').set('Authorization', `Bearer ${key}`).set('Idempotency-Key', o.key)
          .timeout(15_000).send({ type: 'text', phone: `+${phones[i % phones.length]}`, content: o.content }).then((r) => r, (e: Error) => e);
        if (res instanceof Error) o.resets++;
        else o.statuses.push(res.status);
        if (!(res instanceof Error) && res.status === 200) {
          o.wamid = res.body.data.id;
          o.ackAt = Date.now();
          break;
        }
        const retriable = res instanceof Error || [409, 429, 502, 503, 504].includes(res.status);
        if (!retriable || (!(res instanceof Error) && res.body?.error?.details?.final === true)) {
          o.final = res instanceof Error ? res.message : `${res.status} ${JSON.stringify(res.body?.error)}`;
          break;
        }
        if (Date.now() > until) {
          o.final = `no answer by the deadline (last: ${res instanceof Error ? res.message : res.status})`;
          break;
        }
        await sleep(res instanceof Error ? 300 : Math.min(2_000, 1000 * Number(res.headers['retry-after'] ?? 0.5)));
      }
      await sleep(paceMs);
    }
  }));
  return { stop: async () => ((stopped = true), await running, out) };
}

/** Longest time without an acknowledgement around `at` (ms): the clients' unavailability. */
function gapAround(acks: number[], at: number): number {
  const sorted = [...acks].sort((x, y) => x - y);
  const before = sorted.filter((t) => t <= at).pop() ?? at;
  const after = sorted.find((t) => t > at);
  return after === undefined ? Infinity : after - before;
}

async function simMessages(): Promise<Array<{ wamid: string; to: string; type: string; at: string; payload: any }>> {
  return (await request(simUrl).get(`/_sim/messages?phone_number_id=${pnid}&limit=100000`).expect(200)).body.data;
}

beforeAll(async () => {
  if (skip) return;
  dir = mkdtempSync(path.join(tmpdir(), 'ha-'));
  // No supervisor: a killed primary restarted at once would keep its leader key, and the failover
  // this file measures would not happen (tests/proofs/ha-cluster.test.ts proves the supervisor).
  figures.push(await haUp(dir, { HA_SUPERVISE: '0' }));
  for (const line of readFileSync(path.join(dir, 'cluster.env'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
  }
  await withClient(env.DATABASE_URL, (c) => c.query('CREATE DATABASE messaging'));
  const databaseUrl = withDatabase(env.DATABASE_URL, 'messaging');
  sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
  simServer = http.createServer(sim.app);
  await new Promise<void>((r) => simServer.listen(0, '127.0.0.1', () => r()));
  simUrl = `http://127.0.0.1:${(simServer.address() as AddressInfo).port}`;
  const opts = {
    databaseUrl,
    adminToken,
    encryptionKey: randomBytes(32).toString('hex'),
    simulatorUrl: simUrl,
    env: {
      REDIS_SENTINELS: env.REDIS_SENTINELS,
      REDIS_SENTINEL_MASTER: env.REDIS_SENTINEL_MASTER,
      RATE_LIMIT_PER_MINUTE: '100000',
      DATABASE_POOL_MAX: '10',
      // 500 recipients at 20 a second: the campaign is under way when the primary dies.
      BROADCAST_DEFAULT_MPS: '20',
      DATABASE_WAIT_SECONDS: '120',
      DATABASE_ACQUIRE_TIMEOUT_MS: '15000',
    },
  };
  // A start is not what this test proves: on a loaded two-core machine one start in a few ended on
  // "Connection terminated due to connection timeout"; it is tried once more, and the figures say so.
  const start = async (name: string) => {
    try {
      return await ServiceProcess.start(opts);
    } catch (e) {
      figures.push(`${name}'s first start failed (${String((e as Error).message).split('\n')[0].slice(0, 200)}); started again`);
      return ServiceProcess.start(opts);
    }
  };
  a = await start('instance A');
  b = await start('instance B');
  // The balancer of compose.yaml in front of both (docs/deploy.md "The balancer").
  const lbPort = await freePort();
  lb = spawn('haproxy', ['-W', '-db', '-f', path.resolve('docker/haproxy.cfg')], {
    env: { ...process.env, LB_BIND: '127.0.0.1', LB_PORT: String(lbPort), APP1_PORT: String(a.port), APP2_PORT: String(b.port) },
    stdio: 'ignore',
  });
  lbUrl = `http://127.0.0.1:${lbPort}`;
  await eventually(() => fetch(`${lbUrl}/readyz`).then((r) => r.status), (st) => st === 200, 30_000, 'the balancer answering', 200);
  db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  db.on('error', () => undefined);
  const admin = async (method: 'get' | 'post' | 'patch', p: string, body?: object) => {
    const req = request(a.url)[method](p).set('Authorization', `Bearer ${adminToken}`);
    const res = body ? await req.send(body) : await req;
    if (res.status >= 300) throw new Error(`${method} ${p} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
  projectId = (await admin('post', '/admin/projects', { name: 'ha' })).project.id;
  await admin('patch', `/admin/projects/${projectId}`, { daily_send_quota: 100_000 });
  key = (await admin('post', `/admin/projects/${projectId}/keys`, { name: 'ha', scopes: ['messages:send', 'templates:manage', 'templates:read', 'broadcasts:manage'] })).secret;
  pnid = (await admin('get', `/admin/projects/${projectId}/channel`)).channel.phone_number_id;
  for (const phone of phones) await request(simUrl).post('/_sim/inbound').send({ phone_number_id: pnid, from: phone, name: 'Ada', text: 'hi' }).expect(200);
  await request(a.url).post('/v1/templates').set('Authorization', `Bearer ${key}`)
    .send({ name: 'promo', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'New menu today' }] }).expect(201);
  await eventually(
    async () => (await request(b.url).get('/v1/templates/promo?language=en_US').set('Authorization', `Bearer ${key}`)).body?.data?.template?.status,
    (s) => s === 'APPROVED', 30_000, 'the template approved',
  );
  await db.query(
    `INSERT INTO contacts (project_id, phone, tags, opted_in, opted_in_at, created_at, updated_at)
     SELECT $1, (15558000000::bigint + g)::text, '{}', true, now(), now(), now() FROM generate_series(0, $2 - 1) g`,
    [projectId, RECIPIENTS],
  );
}, 400_000);

afterAll(async () => {
  if (figures.length) console.log(`failover (HA topology, two instances):\n  ${figures.join('\n  ')}`);
  lb?.kill('SIGKILL');
  await stopAll();
  await db?.end().catch(() => undefined);
  await sim?.close();
  simServer?.closeAllConnections();
  await new Promise<void>((r) => (simServer ? simServer.close(() => r()) : r()));
  if (dir) {
    await runProcess(SCRIPT, ['down', dir], { timeoutMs: 30_000 });
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

/**
 * What a fault may cost the keyed API sends of a stream (issue 71 item 6): every acknowledged one at
 * the channel exactly once under its id, none twice, no final 500, at most the 4 in flight left
 * unknown, no reset from the balancer. Returns the figures' words: acknowledged, unknown, the seconds
 * without an acknowledgement around `at`, the answers.
 */
async function apiSendsHeld(outcomes: SendOutcome[], at: number): Promise<string> {
  const sent = (await simMessages()).filter((m) => m.type === 'text');
  const byContent = new Map<string, string[]>();
  for (const m of sent) byContent.set(m.payload?.text?.body, [...(byContent.get(m.payload?.text?.body) ?? []), m.wamid]);
  const acked = outcomes.filter((o) => o.wamid);
  expect(acked.filter((o) => JSON.stringify(byContent.get(o.content)) !== JSON.stringify([o.wamid]))).toEqual([]);
  expect(outcomes.filter((o) => (byContent.get(o.content)?.length ?? 0) > 1)).toEqual([]);
  expect(outcomes.filter((o) => /^500 /.test(o.final ?? ''))).toEqual([]);
  const unresolved = outcomes.filter((o) => !o.wamid);
  expect(unresolved.length).toBeLessThanOrEqual(4);
  for (const o of unresolved) expect(o.final ?? '').toMatch(/unknown|deadline/);
  const resets = outcomes.reduce((n, o) => n + o.resets, 0);
  expect(resets).toBe(0);
  const answered = outcomes.flatMap((o) => o.statuses).reduce((m: Record<number, number>, st) => ({ ...m, [st]: (m[st] ?? 0) + 1 }), {});
  const gapS = gapAround(acked.map((o) => o.ackAt!), at) / 1000;
  return `${acked.length}/${outcomes.length} acknowledged, 0 lost, 0 twice, ${unresolved.length} unknown; ${gapS.toFixed(1)} s without an acknowledged send; answers ${JSON.stringify(answered)}`;
}

describeIf('the loss of a machine (HA topology)', () => {
  it('When the PostgreSQL primary is SIGKILLed during a 500-recipient campaign and a stream of keyed sends, then a standby takes over within the bound and, without a restart, every recipient is reached once and every acknowledged send delivered once', async () => {
    const pids = [a.child.pid, b.child.pid];
    const created = await request(a.url).post('/v1/broadcasts').set('Authorization', `Bearer ${key}`)
      .send({ name: 'failover', template_name: 'promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [{ field: 'phone', op: 'starts_with', value: '+1555800' }] } } });
    expect(created.status).toBe(201);
    const id = created.body.data.broadcast.id as string;
    await request(b.url).post(`/admin/broadcasts/${id}/approve`).set('Authorization', `Bearer ${adminToken}`).send({ approved_by: 'failover' }).expect((r) => expect(r.status).toBeLessThan(300));
    const templatesSent = async () => (await simMessages()).filter((m) => m.type === 'template').length;
    const stream = sendStream('pg', 200_000);
    await eventually(templatesSent, (n) => n >= 100, 60_000, '100 recipients reached before the kill', 100);

    const primary = (await Promise.all(nodes().map(async (n) => ((await isPrimary(n.api)) ? n : undefined)))).find(Boolean)!;
    expect(primary).toBeDefined();
    const atKill = await templatesSent();
    const postmaster = Number(readFileSync(path.join(dir, primary.name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killedAt = Date.now();
    // scripts/ha/cluster.sh names each Patroni node's process pg1..pg3 in its pids file.
    const patroni = pidOf(primary.name);
    expect(patroni).toBeGreaterThan(0);
    killGroup(patroni);
    killGroup(postmaster); // Patroni starts postgres as a session of its own
    const promoted = await eventually(
      async () => (await Promise.all(nodes().filter((n) => n.name !== primary.name).map(async (n) => ((await isPrimary(n.api)) ? n : undefined)))).find(Boolean),
      (n) => n !== undefined, PG_FAILOVER_BOUND_S * 1000, `a standby promoted within ${PG_FAILOVER_BOUND_S} s`, 200,
    );
    const failoverS = (Date.now() - killedAt) / 1000;

    const done = await eventually(async () => (await q('SELECT status FROM broadcasts WHERE id = $1', [id]))[0].status, (s) => s === 'completed', 180_000, 'the campaign completed', 500);
    expect(done).toBe('completed');
    const outcomes = await stream.stop();
    await sleep(2_000); // a late duplicate would show meanwhile

    // The instances were never restarted.
    expect([a.child.pid, b.child.pid]).toEqual(pids);
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);

    // Campaign: every recipient at most once; those not reached are exactly the ones the kill left unknown.
    const sent = await simMessages();
    const perPhone = new Map<string, number>();
    for (const m of sent.filter((x) => x.type === 'template')) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
    const states = Object.fromEntries((await q<{ state: string; n: number }>(`SELECT state, count(*)::int AS n FROM broadcast_recipients WHERE broadcast_id = $1 GROUP BY state`, [id])).map((r) => [r.state, r.n]));
    const twice = [...perPhone].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    expect((states.sent ?? 0) + (states.unknown ?? 0)).toBe(RECIPIENTS);
    const unreached = (await q<{ phone: string; state: string }>(
      `SELECT c.phone, r.state FROM broadcast_recipients r JOIN contacts c ON c.id = r.contact_id WHERE r.broadcast_id = $1`, [id],
    )).filter((r) => !perPhone.has(r.phone.replace(/^\+/, '')));
    expect(unreached.filter((r) => r.state !== 'unknown')).toEqual([]);
    // Only sends in flight at the kill may be in doubt.
    expect(states.unknown ?? 0).toBeLessThanOrEqual(20);

    // API sends: every acknowledged one at the channel exactly once, under its id; none lost.
    const byContent = new Map<string, string[]>();
    for (const m of sent.filter((x) => x.type === 'text')) byContent.set(m.payload?.text?.body, [...(byContent.get(m.payload?.text?.body) ?? []), m.wamid]);
    const acked = outcomes.filter((o) => o.wamid);
    expect(acked.filter((o) => JSON.stringify(byContent.get(o.content)) !== JSON.stringify([o.wamid]))).toEqual([]);
    expect(outcomes.filter((o) => (byContent.get(o.content)?.length ?? 0) > 1)).toEqual([]);
    const unresolved = outcomes.filter((o) => !o.wamid);
    // At most the 4 sends in flight at the kill may end unknown (at most once, never resent).
    expect(unresolved.length).toBeLessThanOrEqual(4);
    for (const o of unresolved) expect(o.final ?? '').toMatch(/unknown|deadline/);

    // The balancer answers every request (503 while no instance is ready): no client sees a reset.
    const resets = outcomes.reduce((n, o) => n + o.resets, 0);
    expect(resets).toBe(0);
    const answered = outcomes.flatMap((o) => o.statuses).reduce((m: Record<number, number>, st) => ({ ...m, [st]: (m[st] ?? 0) + 1 }), {});
    const apiGapS = gapAround(acked.map((o) => o.ackAt!), killedAt) / 1000;
    const campaignTimes = sent.filter((x) => x.type === 'template').map((m) => Date.parse(m.at));
    const campaignGapS = gapAround(campaignTimes, killedAt) / 1000;
    figures.push(`PostgreSQL primary ${primary.name} SIGKILLed (Patroni and postgres) with ${atKill}/${RECIPIENTS} recipients reached: ${promoted!.name} promoted after ${failoverS.toFixed(1)} s (bound ${PG_FAILOVER_BOUND_S} s); API sends unavailable ${apiGapS.toFixed(1)} s, campaign paused ${campaignGapS.toFixed(1)} s; campaign ${JSON.stringify(states)}, ${perPhone.size} reached, ${twice.length} twice; sends through the balancer ${acked.length}/${outcomes.length} acknowledged (${outcomes.reduce((s, o) => s + o.attempts, 0) - outcomes.length} retries; answers ${JSON.stringify(answered)}; ${resets} resets), ${unresolved.length} unresolved ${JSON.stringify(unresolved.map((o) => o.final))}, none twice`);
    expect(failoverS).toBeLessThanOrEqual(PG_FAILOVER_BOUND_S);
    expect(apiGapS).toBeLessThan(60);
  }, 420_000);

  it('When the Redis master is SIGKILLed during a stream of sends, then no request fails, the sentinels promote the replica and both instances count on it again without a restart', async () => {
    const pids = [a.child.pid, b.child.pid];
    const sentinel = env.REDIS_SENTINELS.split(',')[0].split(':')[1];
    const masterPort = () => redisCli(sentinel, 'sentinel', 'get-master-addr-by-name', env.REDIS_SENTINEL_MASTER).split('\n')[1];
    expect(masterPort()).toBe(env.REDIS_MASTER_PORT);
    const counted = (s: ServiceProcess) => request(s.url).get('/v1/ping').set('Authorization', `Bearer ${key}`).then((r) => r.status === 200 && r.headers['ratelimit-limit'] !== undefined, () => false);
    expect(await counted(a)).toBe(true);
    const stream = sendStream('redis', 60_000);
    await sleep(1_000);
    const killedAt = Date.now();
    expect(pidOf('redis-master')).toBeGreaterThan(0);
    killGroup(pidOf('redis-master'));
    await eventually(async () => masterPort(), (p) => p === env.REDIS_REPLICA_PORT, REDIS_FAILOVER_BOUND_S * 1000, `the replica promoted within ${REDIS_FAILOVER_BOUND_S} s`, 100);
    const failoverS = (Date.now() - killedAt) / 1000;
    // Counting again on both instances (the limiter's headers come back once the counter answers).
    await eventually(async () => (await counted(a)) && (await counted(b)), (ok) => ok, 30_000, 'both instances counting on the new master', 100);
    const countingS = (Date.now() - killedAt) / 1000;
    await sleep(2_000);
    const outcomes = await stream.stop();
    // Fail-open: nothing refused or failed while Redis was gone, each send once.
    expect(outcomes.filter((o) => !o.wamid)).toEqual([]);
    expect(outcomes.filter((o) => o.attempts > 1)).toEqual([]);
    const texts = (await simMessages()).filter((m) => m.type === 'text' && String(m.payload?.text?.body).startsWith('redis '));
    expect(texts).toHaveLength(outcomes.length);
    expect(new Set(texts.map((m) => m.wamid))).toEqual(new Set(outcomes.map((o) => o.wamid)));
    // The counters live on the new master.
    expect(Number(redisCli(env.REDIS_REPLICA_PORT, 'dbsize'))).toBeGreaterThan(0);
    expect([a.child.pid, b.child.pid]).toEqual(pids);
    const slowest = Math.max(...outcomes.map((o) => o.attempts));
    figures.push(`Redis master SIGKILLed: replica promoted by the sentinels after ${failoverS.toFixed(1)} s (bound ${REDIS_FAILOVER_BOUND_S} s); both instances counting again after ${countingS.toFixed(1)} s; meanwhile ${outcomes.length} sends, 0 refused or failed (fail-open), at most ${slowest} attempt each; unavailability of sends: 0 s`);
    expect(failoverS).toBeLessThanOrEqual(REDIS_FAILOVER_BOUND_S);
  }, 180_000);
});

describeIf('the loss of a machine (HA topology)', () => {
  it('When the primary\'s postmaster alone is SIGKILLed (its Patroni lives) during a stream of keyed sends, then writes resume within the bound, without a restart of the instances, and every acknowledged send is delivered once', async () => {
    const pids = [a.child.pid, b.child.pid];
    const primary = (await Promise.all(nodes().map(async (n) => ((await isPrimary(n.api)) ? n : undefined)))).find(Boolean)!;
    expect(primary).toBeDefined();
    const stream = sendStream('postmaster', 120_000);
    await sleep(2_000);
    const postmaster = Number(readFileSync(path.join(dir, primary.name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killedAt = Date.now();
    killGroup(postmaster);
    // Patroni starts it again (crash recovery: a new postmaster) or a standby takes over.
    const postmasterOf = (name: string) => Number(readFileSync(path.join(dir, name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const restartedOrPromoted = async () => {
      const now = (await Promise.all(nodes().map(async (n) => ((await isPrimary(n.api)) ? n : undefined)))).find(Boolean);
      if (!now) return false;
      try {
        return now.name !== primary.name || postmasterOf(now.name) !== postmaster;
      } catch {
        return false;
      }
    };
    await eventually(restartedOrPromoted, (ok) => ok, PG_FAILOVER_BOUND_S * 1000, `a primary again within ${PG_FAILOVER_BOUND_S} s`, 200);
    // Writing again: the first send acknowledged from here on.
    await eventually(async () => (await request(lbUrl).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phones[0]}`, content: `postmaster probe ${Date.now()}` })).status,
      (st) => st === 200, 60_000, 'a send acknowledged after the restart', 200);
    const backS = (Date.now() - killedAt) / 1000;
    await sleep(2_000);
    const outcomes = await stream.stop();
    const words = await apiSendsHeld(outcomes.concat(), killedAt);
    expect([a.child.pid, b.child.pid]).toEqual(pids);
    const after = (await Promise.all(nodes().map(async (n) => ((await isPrimary(n.api)) ? n.name : undefined)))).find(Boolean);
    figures.push(`postmaster of ${primary.name} SIGKILLed alone: a primary (${after}) writing again after ${backS.toFixed(1)} s (bound ${PG_FAILOVER_BOUND_S} s); sends ${words}`);
    expect(backS).toBeLessThanOrEqual(PG_FAILOVER_BOUND_S);
  }, 240_000);

  it('When a Sentinel is SIGKILLed during a stream of sends, then nothing is refused, the instances stay ready, and /readyz names the sentinel that is missing', async () => {
    const stream = sendStream('sentinel', 60_000);
    const names = readFileSync(path.join(dir, 'pids'), 'utf8').split('\n').filter((l) => l.startsWith('sentinel')).map((l) => l.split(' ')[0]);
    expect(names.length).toBeGreaterThan(0);
    const killedAt = Date.now();
    killGroup(pidOf(names[0]));
    // The watch checks every 10 s; its report names what is missing (informational: still ready).
    const ready = await eventually(async () => (await request(a.url).get('/readyz')),
      (r) => r.status === 200 && JSON.stringify(r.body?.ha?.missing ?? r.body?.data?.ha?.missing ?? []).includes('sentinel'), 30_000, '/readyz naming the missing sentinel', 500);
    const missing = ready.body?.ha?.missing ?? ready.body?.data?.ha?.missing;
    await sleep(1_000);
    const outcomes = await stream.stop();
    expect(outcomes.filter((o) => !o.wamid)).toEqual([]);
    expect(outcomes.filter((o) => o.attempts > 1)).toEqual([]);
    const words = await apiSendsHeld(outcomes, killedAt);
    figures.push(`${names[0]} SIGKILLed: /readyz 200 naming ${JSON.stringify(missing)} after ${((Date.now() - killedAt) / 1000).toFixed(1)} s at most; sends ${words}`);
  }, 120_000);
  it('When the second primary is SIGKILLed with one node left, then writes are answered 503 within the bound (never a hang, a reset or a 500) until a node comes back, then resume by themselves; every acknowledged send is delivered once', async () => {
    const primary = (await Promise.all(nodes().map(async (n) => ((await isPrimary(n.api)) ? n : undefined)))).find(Boolean)!;
    const running = nodes().filter((n) => n.name !== primary.name && pidOf(n.name) > 0 && processAlive(pidOf(n.name)));
    expect(running).toHaveLength(1); // the first kill of this file left two nodes
    const left = running[0];
    const stream = sendStream('one-left', 240_000);
    await sleep(2_000);
    const postmaster = Number(readFileSync(path.join(dir, primary.name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const killedAt = Date.now();
    killGroup(pidOf(primary.name));
    killGroup(postmaster);
    await eventually(() => isPrimary(left.api), (ok) => ok, PG_FAILOVER_BOUND_S * 1000, `${left.name} promoted`, 200);
    // Alone, strict synchronous replication lets no commit complete: each write is answered 503 within the bound.
    const probes: Array<{ status: number | string; ms: number }> = [];
    for (let i = 0; i < 3; i++) {
      const t0 = Date.now();
      const r = await request(lbUrl).post('/v1/messages').set('Authorization', `Bearer ${key}`).timeout(15_000)
        .send({ type: 'text', phone: `+${phones[1]}`, content: `alone probe ${i} ${t0}` }).then((x) => x, (e: Error) => e);
      probes.push({ status: r instanceof Error ? r.message : r.status, ms: Date.now() - t0 });
      await sleep(500);
    }
    expect(probes.map((p) => p.status)).toEqual([503, 503, 503]);
    for (const p of probes) expect(p.ms).toBeLessThan(6_000);
    // A node comes back (as the supervisor or an operator would start it): writes resume by themselves.
    const back = nodes().find((n) => n.name !== primary.name && n.name !== left.name)!;
    const restartedAt = Date.now();
    const started = await runProcess(SCRIPT, ['start', dir, back.name], { timeoutMs: 120_000 });
    expect(started.code).toBe(0);
    await eventually(async () => (await request(lbUrl).post('/v1/messages').set('Authorization', `Bearer ${key}`).send({ type: 'text', phone: `+${phones[1]}`, content: `back probe ${Date.now()}` })).status,
      (st) => st === 200, 120_000, 'a send acknowledged once a standby is back', 500);
    const resumedS = (Date.now() - restartedAt) / 1000;
    await sleep(2_000);
    const outcomes = await stream.stop();
    const words = await apiSendsHeld(outcomes, killedAt);
    figures.push(`${primary.name} SIGKILLed with one node left: ${left.name} promoted; writes answered ${JSON.stringify(probes)}; ${back.name} started again, writes acknowledged ${resumedS.toFixed(1)} s later; sends ${words}`);
  }, 420_000);

  it('When etcd loses its quorum during a stream of sends, then the primary keeps writing (failsafe mode), and when the members return nothing needed a person; every acknowledged send delivered once', async () => {
    const stream = sendStream('etcd', 120_000);
    await sleep(2_000);
    const killedAt = Date.now();
    killGroup(pidOf('etcd1'));
    killGroup(pidOf('etcd2'));
    // Past Patroni's ttl (10 s) without a DCS: failsafe mode keeps the primary.
    await sleep(15_000);
    const during = await request(lbUrl).post('/v1/messages').set('Authorization', `Bearer ${key}`).timeout(15_000)
      .send({ type: 'text', phone: `+${phones[2]}`, content: `quorum lost probe ${Date.now()}` }).then((x) => x.status, (e: Error) => e.message);
    for (const n of ['etcd1', 'etcd2']) expect((await runProcess(SCRIPT, ['start', dir, n], { timeoutMs: 60_000 })).code).toBe(0);
    await sleep(5_000);
    const outcomes = await stream.stop();
    const words = await apiSendsHeld(outcomes, killedAt);
    figures.push(`etcd1 and etcd2 SIGKILLed (quorum lost) for 15 s: a send during it answered ${during}; members started again; sends ${words}`);
    expect(during).toBe(200);
  }, 240_000);
});
