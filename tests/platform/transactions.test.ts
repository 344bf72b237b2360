/**
 * One transaction helper (issue 57, item 2): inTransaction's options against the real PostgreSQL,
 * the named advisory locks, and the check that keeps BEGIN, advisory locks and SET LOCAL in
 * lib/platform/db. One handle (issue 70, item 2): Prisma's transactions take the same options, and
 * a statement run on the handle (Tx) reads the same whichever client runs it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { testDatabaseUrl } from '../support/db.js';
import { beginStatement, inPrismaTransaction, inTransaction, setLocal } from '../../lib/platform/db/transaction.js';
import { openDatabase, type Database } from '../../lib/platform/db/database.js';
import { execute, queryRows, type Tx } from '../../lib/platform/db/tx.js';
import { lockForTransaction, tryLockSession, unlockSession } from '../../lib/platform/db/locks.js';
import { listen, notify } from '../../lib/platform/db/notifications.js';
import { transactionViolations, violationsIn } from '../../scripts/check-transactions.js';
import { eventually } from '../support/eventually.js';

let pool: pg.Pool;
let db: Database;
beforeAll(async () => {
  pool = new pg.Pool({ connectionString: testDatabaseUrl(), max: 4 });
  pool.on('error', () => undefined);
  db = await openDatabase(testDatabaseUrl(), { max: 2 });
});
afterAll(async () => {
  await pool.end();
  await db.close();
});

describe('inTransaction', () => {
  it('When options are given, then the transaction runs with that isolation, access mode and settings, and they end with it', async () => {
    const seen = await inTransaction(pool, async (c) => {
      const { rows } = await c.query<{ iso: string; ro: string; st: string }>(
        "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS st",
      );
      return rows[0];
    }, { isolation: 'REPEATABLE READ', readOnly: true, local: { statement_timeout: 1234 } });
    expect(seen).toEqual({ iso: 'repeatable read', ro: 'on', st: '1234ms' });
    // A write in a read-only transaction is refused, and nothing stays of it.
    await expect(inTransaction(pool, (c) => c.query('CREATE TEMP TABLE nope (x int)'), { readOnly: true })).rejects.toMatchObject({ code: '25006' });
    expect(beginStatement({ isolation: 'SERIALIZABLE', readOnly: false, local: { lock_timeout: 10 } })).toBe('BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE; SET LOCAL lock_timeout = 10');
    expect(() => beginStatement({ local: { 'x; DROP TABLE y': 1 } })).toThrow(/not a setting name/);
    await expect(inTransaction(pool, (c) => setLocal(c, 'bad name', 1))).rejects.toThrow(/not a setting name/);
  });

  it('When the work fails, then it is rolled back; with retryOn, a deadlock victim runs again and succeeds', async () => {
    await pool.query('CREATE TABLE IF NOT EXISTS tx_probe (id int PRIMARY KEY, n int NOT NULL)');
    await pool.query('TRUNCATE tx_probe');
    await expect(inTransaction(pool, async (c) => {
      await c.query('INSERT INTO tx_probe VALUES (1, 1)');
      throw new Error('boom');
    })).rejects.toThrow('boom');
    expect((await pool.query('SELECT count(*)::int AS n FROM tx_probe')).rows[0].n).toBe(0);

    let tries = 0;
    const out = await inTransaction(pool, async (c) => {
      tries++;
      await c.query('INSERT INTO tx_probe VALUES (2, $1) ON CONFLICT (id) DO UPDATE SET n = EXCLUDED.n', [tries]);
      if (tries < 3) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      return tries;
    }, { retryOn: ['40P01'], attempts: 5 });
    expect(out).toBe(3);
    expect((await pool.query('SELECT n FROM tx_probe WHERE id = 2')).rows[0].n).toBe(3);
    // Another SQLSTATE is not retried.
    tries = 0;
    await expect(inTransaction(pool, async () => {
      tries++;
      throw Object.assign(new Error('unique'), { code: '23505' });
    }, { retryOn: ['40P01'] })).rejects.toThrow('unique');
    expect(tries).toBe(1);
  });
});

describe('one handle for both clients', () => {
  it('When a Prisma transaction is given options, then it runs with that isolation, access mode and settings; with retryOn, a failed try runs again', async () => {
    const seen = await inPrismaTransaction(db.prisma, (tx) => queryRows<{ iso: string; ro: string; st: string }>(tx,
      "SELECT current_setting('transaction_isolation') AS iso, current_setting('transaction_read_only') AS ro, current_setting('statement_timeout') AS st",
    ), { isolation: 'SERIALIZABLE', readOnly: true, local: { statement_timeout: 4321 } });
    expect(seen).toEqual([{ iso: 'serializable', ro: 'on', st: '4321ms' }]);
    let tries = 0;
    const out = await inPrismaTransaction(db.prisma, async () => {
      if (++tries < 2) throw Object.assign(new Error('serialization failure'), { code: '40001' });
      return tries;
    }, { retryOn: ['40001'] });
    expect(out).toBe(2);
  });

  it('When the same statement runs on the handle of a pg transaction, of a Prisma transaction and of the pool, then its rows and counts read the same', async () => {
    await pool.query('CREATE TABLE IF NOT EXISTS tx_handle (id bigint PRIMARY KEY, at timestamp(3) NOT NULL, day date NOT NULL, n int NOT NULL)');
    await pool.query('TRUNCATE tx_handle');
    const at = new Date('2026-03-04T05:06:07.089Z');
    const probe = async (tx: Tx, id: bigint) => {
      const changed = await execute(tx, 'INSERT INTO tx_handle VALUES ($1::bigint, $2, $3::date, $4)', String(id), at, '2026-03-04', 7);
      const [row] = await queryRows<Record<string, unknown>>(tx, 'SELECT id, at, day, n, count(*) OVER () AS total, ARRAY[id] AS ids FROM tx_handle WHERE id = $1::bigint', String(id));
      return { changed, ...row, total: typeof row.total };
    };
    const viaPg = await inTransaction(pool, (c) => probe(c, 1n));
    const viaPrisma = await inPrismaTransaction(db.prisma, (tx) => probe(tx, 2n));
    const viaPool = await probe(db.sql, 3n);
    const want = { changed: 1, at, day: new Date('2026-03-04T00:00:00Z'), n: 7, total: 'bigint' };
    expect(viaPg).toEqual({ ...want, id: 1n, ids: [1n] });
    expect(viaPrisma).toEqual({ ...want, id: 2n, ids: [2n] });
    expect(viaPool).toEqual({ ...want, id: 3n, ids: [3n] });
  });
});

describe('advisory locks', () => {
  it('When two transactions take the same named lock, then the second waits for the first to end; a session lock is refused to another connection while held', async () => {
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const first = inTransaction(pool, async (c) => {
      await lockForTransaction(c, 'probe:1');
      order.push('first has it');
      await held;
      order.push('first ends');
    });
    await new Promise((r) => setTimeout(r, 100));
    const second = inTransaction(pool, async (c) => {
      await lockForTransaction(c, 'probe:1');
      order.push('second has it');
    });
    await new Promise((r) => setTimeout(r, 100));
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first has it', 'first ends', 'second has it']);

    const a = await pool.connect();
    const b = await pool.connect();
    try {
      expect(await tryLockSession(a, 'probe:session', 14)).toBe(true);
      expect(await tryLockSession(b, 'probe:session', 14)).toBe(false);
      await unlockSession(a, 'probe:session', 14);
      expect(await tryLockSession(b, 'probe:session', 14)).toBe(true);
      await unlockSession(b, 'probe:session', 14);
    } finally {
      a.release();
      b.release();
    }
  });
});

describe('listen and notify', () => {
  it('When a notification is sent, then its handler gets the payload; when the connection is killed, then onLost is called and, once back, the handler is called with no payload', async () => {
    const heard: Array<string | undefined> = [];
    let lost = 0;
    const channel = `t_listen_${process.pid}`;
    const listener = await listen(pool, { [channel]: (p) => heard.push(p) }, undefined, { name: 'test listener', retryMs: 50, onLost: () => { lost++; } });
    try {
      expect(heard).toEqual([undefined]); // the first connect: handlers re-read what they cache
      await notify(pool, channel, 'one');
      const same = (want: Array<string | undefined>) => async () => JSON.stringify(heard) === JSON.stringify(want);
      await eventually(same([undefined, 'one']), Boolean, 5000, 'the notification heard');
      await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1`, [`LISTEN "${channel}"`]);
      await eventually(async () => lost, (n) => n === 1, 5000, 'onLost called');
      await eventually(same([undefined, 'one', undefined]), Boolean, 5000, 'the handler called once back');
      await notify(pool, channel, 'two');
      await eventually(same([undefined, 'one', undefined, 'two']), Boolean, 5000, 'heard again after the reconnect');
    } finally {
      await listener.close();
    }
  });
});

describe('the check', () => {
  it('When the tree is read, then no BEGIN, Prisma transaction or raw SQL, advisory lock, SET LOCAL, SKIP LOCKED or LISTEN is spelled outside lib/platform/db; one written elsewhere is named with its line', () => {
    const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    expect(transactionViolations(root)).toEqual([]);
    expect(violationsIn('lib/x/y.ts', "const a = 1;\nawait client.query('BEGIN');\n// BEGIN in a comment is fine\nawait c.query(`SELECT pg_advisory_xact_lock(1)`);\nawait c.query('SET LOCAL work_mem = 1');\nawait c.query(`LISTEN x`);\nconst q = `SELECT 1 FROM t LIMIT 1 FOR UPDATE SKIP LOCKED`;\nawait deps.db.prisma.$transaction(async (tx) => tx.user.count());\nawait tx.$queryRawUnsafe('SELECT 1');")).toEqual([
      { file: 'lib/x/y.ts', line: 2, message: expect.stringMatching(/^a BEGIN outside lib\/platform\/db/) },
      { file: 'lib/x/y.ts', line: 4, message: expect.stringMatching(/^an advisory lock outside/) },
      { file: 'lib/x/y.ts', line: 5, message: expect.stringMatching(/^a SET LOCAL outside/) },
      { file: 'lib/x/y.ts', line: 6, message: expect.stringMatching(/^a LISTEN outside/) },
      { file: 'lib/x/y.ts', line: 7, message: expect.stringMatching(/^a SKIP LOCKED claim outside/) },
      { file: 'lib/x/y.ts', line: 8, message: expect.stringMatching(/^a Prisma \$transaction outside .*inPrismaTransaction/) },
      { file: 'lib/x/y.ts', line: 9, message: expect.stringMatching(/^Prisma's raw SQL outside .*queryRows/) },
    ]);
    expect(violationsIn('lib/platform/db/transaction.ts', "await client.query('BEGIN');")).toEqual([]);
  });
});
