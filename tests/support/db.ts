/**
 * Test database helpers. The jest global setup (global-setup.ts) creates one fresh, migrated database
 * per run and publishes its URL in TEST_DATABASE_URL_RESOLVED; each test file gets a copy of its own
 * (test-environment.js) and reads its URL with `testDatabaseUrl()`. Tests that need an empty or private database use `createScratchDatabase()`
 * on the same server (names start with svc_test_, so leftovers are cleaned by the next runs).
 */
import pg from 'pg';

export const TEST_DB_PREFIX = 'svc_test_';
export const RESOLVED_ENV = 'TEST_DATABASE_URL_RESOLVED';
/** The migrated template each test file's database is copied from (test-environment.js). */
export const TEMPLATE_ENV = 'TEST_DATABASE_TEMPLATE';

export function testDatabaseUrl(): string {
  const url = process.env[RESOLVED_ENV];
  if (!url) {
    throw new Error(
      `${RESOLVED_ENV} is not set: the jest global setup (tests/support/global-setup.ts) did not run or failed. ` +
        'Run the tests with `npm test`, which uses jest.config.js.',
    );
  }
  return url;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = '/' + encodeURIComponent(database);
  return u.toString();
}

/** A unique database name `svc_test_<ms timestamp>_<pid>[_<suffix>]`. */
export function testDatabaseName(suffix?: string): string {
  return `${TEST_DB_PREFIX}${Date.now()}_${process.pid}${suffix ? `_${suffix}` : ''}`;
}

/** Runs `fn` with a client connected to `url`, then closes it. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a server-side disconnect surfaces through the pending query
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function createDatabase(adminUrl: string, name: string): Promise<string> {
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`));
  return withDatabase(adminUrl, name);
}

/** Drops a database even if connections are left open (WITH (FORCE), PostgreSQL 13+). */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, async (c) => {
    try {
      await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
    } catch (e) {
      if ((e as { code?: string }).code !== '42601') throw e; // syntax error: server older than 13
      await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)}`);
    }
  });
}

/** An empty database on the test server, with a function to drop it. */
export async function createScratchDatabase(label = 'scratch'): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = testDatabaseUrl();
  const name = testDatabaseName(`${label}_${Math.random().toString(36).slice(2, 8)}`);
  const url = await createDatabase(adminUrl, name);
  return { url, drop: () => dropDatabase(adminUrl, name) };
}

/**
 * How many sessions of this database wait on a lock now. A session inside a transaction sees
 * pg_stat_activity as it was at its first read there, so each read clears that snapshot first:
 * a blocker polling for the sessions it holds up would otherwise count what its first look saw.
 */
export async function lockWaiters(client: pg.ClientBase): Promise<number> {
  await client.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
  return rows[0].n;
}
