/**
 * Applies `prisma/migrations/<name>/migration.sql` in name order over `pg` (the native `prisma migrate`
 * engine cannot run on these machines; see STACK.md).
 *
 * Policy and why:
 * - Bookkeeping is Prisma's own: the `_prisma_migrations` table with the same columns, the checksum
 *   (sha256 hex of the file) and the same advisory lock key (72707369), so `prisma migrate deploy` on a
 *   machine with the native engine agrees with this runner and the two never run at once.
 * - Each migration runs in its own transaction together with its bookkeeping row: a failed migration
 *   leaves nothing behind and can simply be fixed and re-run.
 * - Applied migrations are immutable: a changed file is an error, never silently skipped.
 * - Nothing to apply costs one connection and three small queries, since it runs at every start.
 */
import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../project-root.js';
import pg from 'pg';

export interface MigrationLogger {
  info(message: string): void;
  warn(message: string): void;
}

/** Prisma Migrate's advisory lock key (prisma-engines, sql-schema-connector, postgres flavour). */
const PRISMA_MIGRATE_LOCK = 72707369;
const LOCK_WAIT = '5min';

/** The default folder: `prisma/migrations` of this project, whatever the working directory. */
export const MIGRATIONS_DIR = path.join(PROJECT_ROOT, 'prisma', 'migrations');

/** Prisma's DDL for its bookkeeping table (create_migrations_table, postgres). */
const CREATE_TABLE = `CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
)`;

export interface LocalMigration {
  name: string;
  sql: string;
  checksum: string;
}

/** sha256 of the script as lower-case hex, as Prisma records it. */
export function migrationChecksum(script: string): string {
  return createHash('sha256').update(script, 'utf8').digest('hex');
}

/** Prisma's comparison: the file as is, with CRLF→LF and with LF→CRLF, and its old unpadded hex format. */
function matchesChecksum(script: string, recorded: string): boolean {
  const variants = [script, script.replace(/\r\n/g, '\n'), script.replace(/\n/g, '\r\n')];
  return variants.some((v) => {
    const digest = createHash('sha256').update(v, 'utf8').digest();
    const hex = recorded.length === 64 ? digest.toString('hex') : [...digest].map((b) => b.toString(16)).join('');
    return hex === recorded;
  });
}

export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<LocalMigration[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
    throw new Error(`Migrations: cannot read the folder ${dir}: ${e.code ?? e.message}`);
  });
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return Promise.all(
    names.map(async (name) => {
      const file = path.join(dir, name, 'migration.sql');
      const sql = await fs.readFile(file, 'utf8').catch(() => {
        throw new Error(`Migrations: ${file} is missing; every folder in ${dir} must hold a migration.sql`);
      });
      return { name, sql, checksum: migrationChecksum(sql) };
    }),
  );
}

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

export async function applyMigrations(
  databaseUrl: string,
  opts: { dir?: string; logger?: MigrationLogger } = {},
): Promise<{ applied: string[] }> {
  const { logger } = opts;
  const dir = opts.dir ?? MIGRATIONS_DIR;
  const local = await readMigrations(dir);

  // A bounded connect: a server that accepts and never answers fails here (and server.ts tries
  // again within DATABASE_WAIT_SECONDS) instead of holding the start for ever.
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  client.on('error', (err) => logger?.warn(`migrations: connection error: ${err.message}`));
  try {
    await client.connect();
  } catch (e) {
    await client.end().catch(() => undefined);
    throw e;
  }
  const applied: string[] = [];
  let locked = false;
  try {
    const got = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [PRISMA_MIGRATE_LOCK]);
    if (!got.rows[0].ok) {
      logger?.info('migrations: waiting for another process to finish migrating');
      await client.query(`SET lock_timeout = '${LOCK_WAIT}'`);
      await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]).catch((e: { code?: string; message: string }) => {
        throw new Error(`Migrations: still waiting for the migration lock after ${LOCK_WAIT} (another process is migrating?): ${e.message}`);
      });
      await client.query('RESET lock_timeout');
    }
    locked = true;

    const table = await client.query<{ t: string | null }>(`SELECT to_regclass('_prisma_migrations')::text AS t`);
    if (table.rows[0].t === null) await client.query(CREATE_TABLE);
    const rows = (
      await client.query<AppliedRow>(
        'SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY started_at',
      )
    ).rows;

    const failed = rows.filter((r) => r.finished_at === null && r.rolled_back_at === null);
    if (failed.length > 0) {
      throw new Error(
        `Migrations: the database records ${failed.map((r) => `"${r.migration_name}"`).join(', ')} as started but not finished ` +
          `(a failed \`prisma migrate deploy\`). Fix the database by hand, then mark it with \`prisma migrate resolve\` or delete its row in _prisma_migrations.`,
      );
    }
    const done = new Map(rows.filter((r) => r.finished_at !== null && r.rolled_back_at === null).map((r) => [r.migration_name, r]));
    const byName = new Map(local.map((m) => [m.name, m]));
    for (const [name, row] of done) {
      const file = byName.get(name);
      if (!file) {
        logger?.warn(`migrations: "${name}" is applied to the database but not in ${dir} (is this code older than the database?)`);
      } else if (!matchesChecksum(file.sql, row.checksum)) {
        throw new Error(
          `Migrations: ${name}/migration.sql was changed after it was applied (checksum in the database ${row.checksum}, ` +
            `file ${file.checksum}). Applied migrations must not change: restore the file and put the change in a new migration (npm run migrate:new -- <name>).`,
        );
      }
    }

    for (const m of local) {
      if (done.has(m.name)) continue;
      const t0 = Date.now();
      try {
        await client.query('BEGIN');
        const id = randomUUID();
        await client.query(
          'INSERT INTO _prisma_migrations (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)',
          [id, m.checksum, m.name],
        );
        await client.query(m.sql); // simple query protocol: the whole script, many statements
        await client.query(
          'UPDATE _prisma_migrations SET finished_at = clock_timestamp(), applied_steps_count = applied_steps_count + 1 WHERE id = $1',
          [id],
        );
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        const err = e as { message: string; position?: string };
        throw new Error(`Migrations: ${m.name} failed and was rolled back: ${err.message}${err.position ? ` (at character ${err.position} of migration.sql)` : ''}`);
      }
      applied.push(m.name);
      logger?.info(`migrations: applied ${m.name} in ${Date.now() - t0} ms`);
    }
    return { applied };
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}
