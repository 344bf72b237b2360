/**
 * The native HA tooling with no person (issue 71 items 2 and 6; docs/deploy.md "High availability"):
 * scripts/ha/cluster.sh on ports and a replication password chosen by the test, in its own folder:
 * - `status` names every node and its role;
 * - a node killed (a standby's Patroni and PostgreSQL, a sentinel) is restarted by the supervisor
 *   and rejoins by itself; a node `stop`ped stays stopped until `start`;
 * - etcd's quorum lost (2 of 3 members stopped) past Patroni's ttl: the primary keeps taking
 *   writes (failsafe_mode), and the cluster is whole again once etcd returns;
 * - one PostgreSQL node left (both standbys stopped): a commit waits (strict synchronous mode keeps
 *   no acknowledged write on one node only), and completes once a standby is back;
 * - point-in-time recovery's half on the topology (where pgbackrest is installed): `up` took a full
 *   backup, and after a switchover the new primary archives its WAL and is backed up
 *   (tests/proofs/pitr.test.ts restores from such a repository).
 * Runs as root with Debian's patroni, etcd-server, redis-sentinel, haproxy and PostgreSQL 15;
 * otherwise it says why it skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, runProcess } from '../support/local.js';
import { eventually } from '../support/eventually.js';
import { HA_SCRIPT as SCRIPT, haSkipReason, haUp } from '../support/ha-cluster.js';
import { readEtcd } from '../../lib/platform/etcd-health.js';

const skip = haSkipReason();
if (skip) console.log(`ha-cluster: skipped: ${skip}`);
const describeIf = skip ? describe.skip : describe;

let dir = '';
const env: Record<string, string> = {};
const cluster = (...args: string[]) => runProcess(SCRIPT, [args[0], dir, ...args.slice(1)], { timeoutMs: 60_000 });
const pidOf = (node: string) => Number(/^(\S+) (\d+)$/m.exec(readFileSync(path.join(dir, 'pids'), 'utf8').split('\n').filter((l) => l.startsWith(`${node} `)).pop() ?? '')?.[2]);
const postmasterOf = (node: string) => Number(readFileSync(path.join(dir, node, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
/** `status` as { node: "STATE DETAIL" }. */
async function status(): Promise<{ code: number | null; nodes: Record<string, string> }> {
  const r = await cluster('status');
  const nodes: Record<string, string> = {};
  for (const line of r.stdout.split('\n').slice(1)) {
    const m = /^(\S+)\s+\S+\s+(.*)$/.exec(line.trim());
    if (m) nodes[m[1]] = m[2].replace(/\s+/g, ' ').trim();
  }
  return { code: r.code, nodes };
}
async function write(value: number): Promise<void> {
  const c = new pg.Client({ connectionString: env.DATABASE_URL, connectionTimeoutMillis: 5000 });
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query('CREATE TABLE IF NOT EXISTS ha_tooling (v int)');
    await c.query('INSERT INTO ha_tooling VALUES ($1)', [value]);
  } finally {
    await c.end().catch(() => undefined);
  }
}

describeIf('the native HA tooling', () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ha-tooling-'));
    const ports = { PG_LB_PORT: String(await freePort()), SENTINEL_PORTS: [await freePort(), await freePort(), await freePort()].join(' ') };
    console.log(`ha-cluster: ${await haUp(dir, { ...ports, HA_PG_REPLICATION_PASSWORD: 'test-replication-secret' })}`);
    for (const line of readFileSync(path.join(dir, 'cluster.env'), 'utf8').split('\n')) {
      const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
      if (m) env[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
    }
    expect([env.PG_LB_PORT, env.SENTINEL_PORTS, env.PG_REPLICATION_PASSWORD]).toEqual([ports.PG_LB_PORT, ports.SENTINEL_PORTS, 'test-replication-secret']);
    expect(env.PG_SUPERUSER_PASSWORD).toMatch(/^[0-9a-f]{32}$/);
  }, 300_000);

  afterAll(async () => {
    if (dir) await runProcess(SCRIPT, ['down', dir], { timeoutMs: 30_000 });
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('When the topology is up, then status names every node running with its role', async () => {
    const s = await status();
    expect(s.code).toBe(0);
    expect(Object.keys(s.nodes)).toEqual(['etcd1', 'etcd2', 'etcd3', 'pg1', 'pg2', 'pg3', 'haproxy', 'redis-master', 'redis-replica', 'sentinel1', 'sentinel2', 'sentinel3', 'supervisor']);
    expect(Object.values(s.nodes).every((v) => v.startsWith('running'))).toBe(true);
    expect(s.nodes.pg1).toMatch(/^running leader running/);
    expect(s.nodes['redis-master']).toMatch(/role:master connected_slaves:1/);
  });

  it('When a standby machine (Patroni and its PostgreSQL) and a sentinel are killed, then the supervisor restarts them and they rejoin; a stopped node stays stopped until started', async () => {
    const standby = 'pg3';
    const killed = [pidOf(standby), postmasterOf(standby), pidOf('sentinel2')];
    for (const pid of killed) process.kill(pid, 'SIGKILL');
    const back = await eventually(status, (s) => s.code === 0 && /running (sync_standby|replica) (running|streaming) lag 0/.test(s.nodes[standby] ?? ''), 60_000, 'pg3 rejoined', 500);
    expect(back.nodes.sentinel2).toMatch(/^running master 127\.0\.0\.1:/);
    expect(pidOf(standby)).not.toBe(killed[0]);
    expect(readFileSync(path.join(dir, 'supervisor.log'), 'utf8')).toMatch(/pg3 \(pid \d+\) is gone: restarting it/);

    expect((await cluster('stop', 'redis-replica')).code).toBe(0);
    await new Promise((r) => setTimeout(r, 3000)); // longer than the supervisor's round: it must leave it
    const stopped = await status();
    expect([stopped.code, stopped.nodes['redis-replica']]).toEqual([1, 'stopped']);
    expect((await cluster('start', 'redis-replica')).code).toBe(0);
    await eventually(status, (s) => s.code === 0 && /master_link_status:up/.test(s.nodes['redis-replica']), 30_000, 'the replica back', 500);
  }, 120_000);

  it("When etcd loses its quorum for longer than Patroni's ttl, then the primary keeps taking writes (failsafe mode), and the cluster is whole once etcd returns", async () => {
    await write(1);
    for (const m of ['etcd2', 'etcd3']) expect((await cluster('stop', m)).code).toBe(0);
    const lost = Date.now();
    // ttl is 10 s: without failsafe_mode the primary demotes itself within it and writes stop.
    while (Date.now() - lost < 20_000) {
      await write(2);
      await new Promise((r) => setTimeout(r, 2000));
    }
    expect(readFileSync(path.join(dir, 'pg1.log'), 'utf8')).toMatch(/continue to run as a leader because failsafe mode is enabled/);
    // What the service's HA watch reports of it (HA_ETCD_ENDPOINTS).
    const endpoints = env.ETCD_CLIENT_PORTS.split(' ').map((p) => `http://127.0.0.1:${p}`);
    expect(await readEtcd(endpoints)).toEqual({ members: 3, members_up: 0, members_down: endpoints });
    for (const m of ['etcd2', 'etcd3']) expect((await cluster('start', m)).code).toBe(0);
    await eventually(status, (s) => s.code === 0 && /^running \{"health":"true"\}/.test(s.nodes.etcd3), 60_000, 'etcd whole again', 500);
    await write(3);
  }, 120_000);

  it('When one PostgreSQL node is left, then a commit waits (strict synchronous mode) and completes once a standby is back', async () => {
    for (const n of ['pg2', 'pg3']) expect((await cluster('stop', n)).code).toBe(0);
    const started = Date.now();
    let done = 0;
    const pending = write(4).then(() => (done = Date.now()));
    await new Promise((r) => setTimeout(r, 5000));
    expect(done).toBe(0); // still waiting for a synchronous standby
    const restarted = Date.now();
    expect((await cluster('start', 'pg2')).code).toBe(0);
    await pending;
    console.log(`ha-cluster: one node left: the commit waited ${((done - started) / 1000).toFixed(1)} s, ${((done - restarted) / 1000).toFixed(1)} s after a standby was started again`);
    expect((await cluster('start', 'pg3')).code).toBe(0);
    await eventually(status, (s) => s.code === 0, 90_000, 'every node running', 500);
  }, 180_000);

  it('When the primary changes (a switchover to the synchronous standby), then the new primary archives its WAL and an incremental backup is taken from it', async () => {
    const hasBackups = existsSync(path.join(dir, 'pgbackrest.conf'));
    if (!hasBackups) return void console.log('ha-cluster: backups skipped: no pgbackrest');
    const info = () => runProcess('runuser', ['-u', 'postgres', '--', 'pgbackrest', `--config=${path.join(dir, 'pgbackrest.conf')}`, '--stanza=messaging', 'info'], { timeoutMs: 30_000 }).then((r) => r.stdout);
    expect(await info()).toMatch(/full backup: \d+-\d+F/);
    const s = await eventually(status, (x) => x.code === 0 && Object.values(x.nodes).some((v) => /sync_standby running/.test(v)), 60_000, 'a synchronous standby', 500);
    const leader = Object.keys(s.nodes).find((n) => /^running leader/.test(s.nodes[n]))!;
    const candidate = Object.keys(s.nodes).find((n) => /sync_standby running/.test(s.nodes[n]))!;
    const api = env.PATRONI_API_PORTS.split(' ')[Number(leader.slice(2)) - 1];
    // The timeline before: an earlier case may already have changed the primary (a slow machine's
    // failover while etcd was down), so the new timeline is this one plus one, not always 2.
    const { timeline } = (await (await fetch(`http://127.0.0.1:${api}/patroni`)).json()) as { timeline: number };
    const res = await fetch(`http://127.0.0.1:${api}/switchover`, { method: 'POST', body: JSON.stringify({ leader, candidate }) });
    expect([res.status, await res.text()]).toEqual([200, `Successfully switched over to "${candidate}"`]);
    await eventually(status, (x) => x.code === 0 && new RegExp(`^running leader running`).test(x.nodes[candidate]), 60_000, `${candidate} the primary`, 500);
    await eventually(() => write(5).then(() => true), (ok) => ok === true, 30_000, 'writes on the new primary', 500);
    const backup = await cluster('backup', 'incr');
    expect([backup.code, backup.stdout.trim()]).toEqual([0, expect.stringMatching(new RegExp(`incr backup of ${candidate} done$`))]);
    const after = await info();
    expect(after).toMatch(/incr backup: \d+-\d+F_\d+-\d+I/);
    // The archive reached the new timeline: the new primary's segments are there.
    const next = (timeline + 1).toString(16).toUpperCase().padStart(8, '0');
    expect(after).toMatch(new RegExp(`wal archive min/max \\(15\\): \\w+/${next}`));
  }, 180_000);
});
