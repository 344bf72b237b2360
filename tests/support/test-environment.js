/**
 * jest's node environment, with a database of the test file's own.
 *
 * Why: test files run in parallel (jest workers), and a test file may rightly assume it is alone in
 * its database: the operator's one rate card, the table statistics of pg_stat_user_tables, job
 * runners (webhook sweeps, send settling) that scan every project with the file's own clock and
 * keys. So every file gets a copy of the run's freshly migrated database, made from the template
 * the global setup prepared (test-database.ts: CREATE DATABASE … TEMPLATE, a fraction of a second),
 * published to the file as TEST_DATABASE_URL_RESOLVED (read it with testDatabaseUrl()). It is
 * dropped when the file ends; one still in use then (a leaked connection) is dropped with the run's.
 *
 * A file whose first docblock has the pragma `@alone` measures latency, contention or a time bound
 * on this machine's CPU or storage (tables-fair-share, send-limits, hot-updates, the
 * proofs with a timing bound): it runs with no other file of the run beside it. A proof runs one
 * at a time beside the shared files; one whose docblock says `@shared` shares the workers like any
 * file (contract-fuzz, traces, the README's check, …). The rule is tests/support/alone.js.
 * Every file holds a shared advisory lock of the run while it runs, an `@alone` file the exclusive
 * one (PostgreSQL queues later shared requests behind a waiting exclusive one); a proof first takes
 * the proofs' own exclusive lock.
 *
 * Plain JavaScript: jest loads the environment outside its transform of the tests.
 */
import asyncHooks from 'node:async_hooks';
import { appendFileSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { TestEnvironment } from 'jest-environment-node';
import pg from 'pg';
import { laneOf } from './alone.js';

const RESOLVED_ENV = 'TEST_DATABASE_URL_RESOLVED';
const TEMPLATE_ENV = 'TEST_DATABASE_TEMPLATE';
let serial = 0;

/** The machine's busy CPU seconds so far (every core, every process: /proc/stat in USER_HZ, 100 a second); 0 where there is none. */
function machineBusySeconds() {
  try {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
    const idle = ticks[3] + (ticks[4] ?? 0);
    return (ticks.slice(0, 8).reduce((a, b) => a + b, 0) - idle) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of this process's child processes that have ended and been waited for (/proc/self/stat); 0 where there is none. */
function reapedChildrenSeconds() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}

async function withClient(url, fn) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The AsyncLocalStorage instances made while a file runs, disabled when it ends. jest-circus makes
 * one per test file (its test execution context) in the worker's own node:async_hooks, and Node 20
 * never lets one go: every promise the worker made afterwards ran each earlier file's store too,
 * so a worker got slower with every file it ran (a property per store on every promise).
 */
const storesOfThisFile = [];
if (!asyncHooks.AsyncLocalStorage.__perFile) {
  const Base = asyncHooks.AsyncLocalStorage;
  asyncHooks.AsyncLocalStorage = class AsyncLocalStorage extends Base {
    static __perFile = true;
    constructor(...args) {
      super(...args);
      storesOfThisFile.push(this);
    }
  };
}

/**
 * The worker's build process, kept ready between its files (lib/deploy/build-process.ts,
 * BuildProcessKeeper): each file's modules are its own, so each file's apps used to start one and
 * pay its 2 s of CPU for the compiler's start-up. A file's app hands it here when it stops; the next
 * file's first build takes it. It ends with the worker (it exits when its channel closes).
 */
let keptBuildProcess;
const buildProcessKeeper = {
  take() {
    const child = keptBuildProcess;
    keptBuildProcess = undefined;
    return child && child.connected && child.exitCode === null && child.signalCode === null ? child : undefined;
  },
  keep(child) {
    if (keptBuildProcess && keptBuildProcess !== child) keptBuildProcess.kill('SIGKILL');
    keptBuildProcess = child;
  },
};

export default class FileDatabaseEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    this.lane = laneOf(context.docblockPragmas ?? {}, config.projectConfig);
    this.file = relative(config.projectConfig?.rootDir ?? process.cwd(), context.testPath);
  }

  async setup() {
    storesOfThisFile.length = 0;
    await super.setup();
    this.global.buildProcessKeeper = buildProcessKeeper;
    const runUrl = process.env[RESOLVED_ENV];
    const template = process.env[TEMPLATE_ENV];
    // Without the global setup testDatabaseUrl() explains what is missing.
    if (!runUrl || !template) return;
    const lock = new pg.Client({ connectionString: runUrl });
    lock.on('error', () => undefined);
    await lock.connect();
    this.lock = lock;
    const asked = Date.now();
    // A proof first takes the proofs' own lock (one at a time), then the run's shared one like any file.
    if (this.lane === 'proof') await lock.query('SELECT pg_advisory_lock(hashtext($1))', [`${template}:proofs`]);
    await lock.query(`SELECT ${this.lane === 'alone' ? 'pg_advisory_lock' : 'pg_advisory_lock_shared'}(hashtext($1))`, [template]);
    this.waitedMs = Date.now() - asked;
    this.busyAt = machineBusySeconds();
    this.cpuAt = process.cpuUsage();
    this.childrenAt = reapedChildrenSeconds();
    const name = `${template.replace(/_tpl$/, '')}_f${process.pid}_${++serial}`;
    await withClient(runUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)} TEMPLATE ${c.escapeIdentifier(template)}`));
    const url = new URL(runUrl);
    url.pathname = '/' + encodeURIComponent(name);
    this.global.process.env[RESOLVED_ENV] = url.toString();
    this.fileDatabase = { runUrl, name };
  }

  async teardown() {
    const db = this.fileDatabase;
    this.fileDatabase = undefined;
    if (db) {
      // Not forced: a connection a test left open keeps it until the run's teardown (test-database.ts).
      await withClient(db.runUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(db.name)}`)).catch(() => undefined);
    }
    // CI's table of file times (.ci/run) tells the wait for the run's lock from the file's own time,
    // and for a file that ran alone, the machine's CPU it used: what running it beside others would cost.
    if (process.env.TEST_LOCK_WAITS && this.waitedMs !== undefined) {
      // Then this worker's own CPU for the file, and its ended child processes' (sandboxes, builds).
      const own = process.cpuUsage(this.cpuAt);
      const children = reapedChildrenSeconds() - this.childrenAt;
      appendFileSync(process.env.TEST_LOCK_WAITS, `${this.file}\t${this.waitedMs}\t${(machineBusySeconds() - this.busyAt).toFixed(1)}\t${((own.user + own.system) / 1e6).toFixed(1)}\t${children.toFixed(1)}\n`);
    }
    // Ending the session releases its lock.
    await this.lock?.end().catch(() => undefined);
    this.lock = undefined;
    for (const store of storesOfThisFile.splice(0)) store.disable();
    await super.teardown();
  }
}
