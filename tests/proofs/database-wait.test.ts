/**
 * Start-up against a PostgreSQL that times out (issue 59 item 5; lib/platform/db/wait.ts): a loopback
 * port that accepts connections and never answers stands for a PostgreSQL not up yet on a loaded
 * host. Every step of the start that connects (the first check, the migrations, the pools) waits
 * through connect timeouts within DATABASE_WAIT_SECONDS, goes on once the server answers, and fails
 * with the reason past the deadline; an error that is not about connecting fails at once.
 * @shared Its PostgreSQL that never answers is a port of its own, and its time bounds are declared
 *   (timingBound); so it shares the workers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { openDatabase } from '../../lib/platform/db/database.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { isConnectFailure, startDeadline, waitForDatabase, whileStarting } from '../../lib/platform/db/wait.js';
import { createScratchDatabase } from '../support/db.js';
import { timingBound } from '../support/retry-timing.js';

/** Accepts and says nothing until `answer()`; from then on forwards new connections to `url`'s server. */
async function silentPostgres(url: string) {
  const target = new URL(url);
  const held: net.Socket[] = [];
  let answering = false;
  let accepted = 0;
  const server = net.createServer((c) => {
    accepted++;
    c.on('error', () => undefined);
    if (!answering) { held.push(c); return; }
    const up = net.connect(Number(target.port || 5432), target.hostname);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const via = new URL(url);
  via.hostname = '127.0.0.1';
  via.port = String((server.address() as net.AddressInfo).port);
  return {
    url: via.toString(),
    accepted: () => accepted,
    answer() { answering = true; },
    close() { for (const c of held) c.destroy(); server.close(); },
  };
}

describe('start-up waits through connect timeouts (DATABASE_WAIT_SECONDS)', () => {
  let scratch: { url: string; drop(): Promise<void> };
  beforeAll(async () => { scratch = await createScratchDatabase('dbwait'); });
  afterAll(async () => { await scratch?.drop(); });

  timingBound('the first check gives up within 6 s').it('When PostgreSQL accepts but never answers, then the first check tries again until the deadline and fails naming the timeout', async () => {
    const silent = await silentPostgres(scratch.url);
    const said: string[] = [];
    const t0 = Date.now();
    try {
      await expect(waitForDatabase(silent.url, { waitSeconds: 3, connectTimeoutMs: 700, logger: { warn: (m) => said.push(m), info: (m) => said.push(m) } }))
        .rejects.toThrow(/cannot reach PostgreSQL at 127\.0\.0\.1:\d+ \(DATABASE_URL\): .*timeout/i);
    } finally { silent.close(); }
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(2900);
    expect(took).toBeLessThan(6000);
    expect(silent.accepted()).toBeGreaterThanOrEqual(2);
    expect(said[0]).toMatch(/^waiting for PostgreSQL \(up to DATABASE_WAIT_SECONDS=3\): cannot reach PostgreSQL .*timeout/i);
  });

  it('When PostgreSQL times out and then answers, then the check, the migrations and the pools go on within the deadline', async () => {
    const silent = await silentPostgres(scratch.url);
    const said: string[] = [];
    const logger = { warn: (m: string) => said.push(m), info: (m: string) => said.push(m) };
    // The deadline is far beyond the waits (2.5 s, 2 s, 2 s): the migrations themselves took most of
    // a 20 s deadline on a loaded machine, and what is proved here is going on, not how fast.
    const deadline = startDeadline(90, logger);
    setTimeout(() => silent.answer(), 2500).unref();
    try {
      await waitForDatabase(silent.url, { waitSeconds: 90, logger, deadline, connectTimeoutMs: 700 });
      expect(said.at(-1)).toBe('PostgreSQL answers: starting');
      // The migrations and the pools, against a server that times out again for a moment.
      silent.close();
      const again = await silentPostgres(scratch.url);
      setTimeout(() => again.answer(), 2000).unref();
      try {
        const migrating = whileStarting('apply the migrations', () => applyMigrations(again.url), deadline);
        await expect(migrating).resolves.toEqual(expect.objectContaining({ applied: expect.any(Array) }));
      } finally { again.close(); }
      const third = await silentPostgres(scratch.url);
      setTimeout(() => third.answer(), 2000).unref();
      try {
        const db = await whileStarting('open the pools', () => openDatabase(third.url, { max: 2, acquireTimeoutMs: 700 }), deadline);
        const { rows } = await db.pool.query<{ one: number }>('SELECT 1 AS one');
        expect(rows[0].one).toBe(1);
        await db.close();
      } finally { third.close(); }
    } finally { silent.close(); }
    expect(said).toContain('PostgreSQL answers: open the pools done');
    expect(said.some((m) => /^waiting for PostgreSQL to open the pools \(up to DATABASE_WAIT_SECONDS=90\): Cannot connect to PostgreSQL .*timeout/i.test(m))).toBe(true);
  }, 120_000);

  timingBound('a non-connect failure within 500 ms').it('When the failure is not about connecting, then the start fails at once', async () => {
    const deadline = startDeadline(30, { warn: () => undefined, info: () => undefined });
    const t0 = Date.now();
    let tries = 0;
    await expect(whileStarting('apply the migrations', async () => { tries++; throw Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }); }, deadline)).rejects.toThrow('relation "x"');
    expect(tries).toBe(1);
    expect(Date.now() - t0).toBeLessThan(500);
    expect(isConnectFailure(new Error('Connection terminated due to connection timeout'))).toBe(true);
    expect(isConnectFailure(Object.assign(new Error('the database system is starting up'), { code: '57P03' }))).toBe(true);
    expect(isConnectFailure(Object.assign(new Error('password authentication failed for user "x"'), { code: '28P01' }))).toBe(false);
  });
});
