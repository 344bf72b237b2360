/**
 * The test run's database, created by the jest global setup and dropped by the global teardown.
 *
 * Policy and why: tests must pass both on a machine with only Node.js and in CI with a PostgreSQL
 * service. TEST_DATABASE_URL set → that server (CI: postgres://postgres@127.0.0.1:5432/postgres);
 * unset → the embedded PostgreSQL in .data/test on port 54330 (not the dev server's data or port).
 * Either way a new database svc_test_<timestamp>_<pid> is created and migrated, so runs never see
 * each other's rows, and databases of runs older than a day are dropped (best effort). Its URL is
 * published in TEST_DATABASE_URL_RESOLVED (read it with testDatabaseUrl() from ./db.ts). A copy of
 * it, <name>_tpl, is kept unconnected as the template (TEST_DATABASE_TEMPLATE) from which each test
 * file gets a database of its own (test-environment.js), since files run in parallel.
 *
 * This module runs in jest's main process through tsx (see global-setup.ts for why), so state that
 * teardown needs lives on globalThis, not in module variables. The embedded server is started
 * unref'd and teardown also runs on 'beforeExit', so jest's process ends even if no globalTeardown
 * is configured.
 */
import path from 'node:path';
import { startEmbeddedPostgres } from '../../lib/platform/db/embedded.js';
import { applyMigrations } from '../../lib/platform/db/migrate.js';
import { RESOLVED_ENV, TEMPLATE_ENV, TEST_DB_PREFIX, createDatabase, dropDatabase, testDatabaseName, withClient, withDatabase } from './db.js';

export const EMBEDDED_TEST_PORT = 54330;
const STALE_AFTER_MS = 24 * 60 * 60 * 1000;

interface TestDatabaseState {
  adminUrl: string;
  name: string;
  stopEmbedded?: () => Promise<void>;
}
const STATE = Symbol.for('messaging-service.test-database');
type WithState = { [STATE]?: TestDatabaseState };

const verbose = process.env.TEST_DB_VERBOSE ? { info: (m: string) => console.log(m), warn: (m: string) => console.warn(m) } : undefined;

async function dropStaleDatabases(adminUrl: string): Promise<void> {
  const names = await withClient(adminUrl, async (c) =>
    (await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${TEST_DB_PREFIX}%`])).rows.map(
      (r) => r.datname,
    ),
  );
  for (const name of names) {
    const stamp = Number(/^svc_test_(\d+)_/.exec(name)?.[1]);
    if (Number.isFinite(stamp) && Date.now() - stamp > STALE_AFTER_MS) {
      await dropDatabase(adminUrl, name).catch(() => undefined);
    }
  }
}

export async function setupTestDatabase(rootDir: string): Promise<string> {
  const t0 = Date.now();
  let adminUrl = process.env.TEST_DATABASE_URL?.trim();
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres({
      dataDir: path.join(rootDir, '.data', 'test'),
      port: EMBEDDED_TEST_PORT,
      logger: verbose,
      unref: true,
    });
    adminUrl = embedded.adminUrl;
    stopEmbedded = embedded.stop;
  }
  const name = testDatabaseName();
  try {
    await dropStaleDatabases(adminUrl).catch(() => undefined);
    const url = await createDatabase(adminUrl, name);
    (globalThis as WithState)[STATE] = { adminUrl, name, stopEmbedded };
    const { applied } = await applyMigrations(url, { logger: verbose });
    // Nothing may connect to a template while it is copied: the run's database itself is in use.
    const template = `${name}_tpl`;
    await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(template)} TEMPLATE ${c.escapeIdentifier(name)}`));
    process.env[RESOLVED_ENV] = url;
    process.env[TEMPLATE_ENV] = template;
    process.once('beforeExit', () => void teardownTestDatabase());
    verbose?.info(`test database ${name} ready (${applied.length} migrations applied) in ${Date.now() - t0} ms`);
    return url;
  } catch (e) {
    (globalThis as WithState)[STATE] = undefined;
    await dropDatabase(adminUrl, `${name}_tpl`).catch(() => undefined);
    await dropDatabase(adminUrl, name).catch(() => undefined);
    await stopEmbedded?.();
    throw e;
  }
}

/** Drops the run's databases (its own, the template, files' copies left), then stops the embedded server (last). Idempotent, best effort. */
export async function teardownTestDatabase(): Promise<void> {
  const state = (globalThis as WithState)[STATE];
  if (!state) return;
  (globalThis as WithState)[STATE] = undefined;
  try {
    const copies = await withClient(state.adminUrl, async (c) =>
      (await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [`${state.name}_`])).rows.map((r) => r.datname),
    );
    for (const copy of copies) await dropDatabase(state.adminUrl, copy);
    await dropDatabase(state.adminUrl, state.name);
  } catch (e) {
    console.warn(`test teardown: could not drop ${state.name}: ${e instanceof Error ? e.message : String(e)}`);
  }
  await state.stopEmbedded?.();
}
