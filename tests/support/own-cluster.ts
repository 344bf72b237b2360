/**
 * A PostgreSQL cluster of the test's own, from Debian's binaries: initdb in the test's folder, on a
 * free port, run as the `postgres` user when the tests run as root (PostgreSQL refuses root). For the
 * drills that stop, archive or restore a server (never the machine's 127.0.0.1:5432).
 */
import { execFile, execFileSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './local.js';

/** The newest Debian PostgreSQL with server and client binaries. */
export function debianPostgres(): { bin: string; version: number } | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base).map(Number).filter((v) => v > 0).sort((a, b) => b - a);
  for (const v of versions) {
    const bin = path.join(base, String(v), 'bin');
    if (['initdb', 'pg_ctl', 'postgres', 'pg_dump', 'pg_dumpall', 'pg_restore', 'psql'].every((b) => existsSync(path.join(bin, b)))) return { bin, version: v };
  }
  return undefined;
}

export const isRoot = process.getuid?.() === 0;

function hasPostgresUser(): boolean {
  try {
    execFileSync('id', ['postgres'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why a drill on a cluster of its own cannot run here, or undefined when it can. */
export function ownClusterSkipReason(): string | undefined {
  if (!debianPostgres()) return 'no PostgreSQL server and client binaries under /usr/lib/postgresql (apt-get install postgresql)';
  if (isRoot && !hasPostgresUser()) return 'running as root without a postgres user to run the new cluster as';
  return undefined;
}

/** Runs a command (as `postgres` when asked and the tests are root); never throws. */
export function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; asPostgres?: boolean; timeoutMs?: number } = {}): Promise<{ code: number; out: string; err: string }> {
  const [file, argv] = opts.asPostgres && isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  return new Promise((resolve) => {
    execFile(file, argv, { env: { ...process.env, ...opts.env }, timeout: opts.timeoutMs ?? 120_000, maxBuffer: 256 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: String(stdout), err: String(stderr) }));
  });
}

/** Makes `dir` (and its parents) owned by the user the cluster runs as. */
export function ownedByPostgres(dir: string): void {
  mkdirSync(dir, { recursive: true });
  if (!isRoot) return;
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
}

export interface OwnCluster {
  dir: string;
  /** Where its Unix socket is. */
  socketDir: string;
  port: number;
  /** A superuser URL of `database` (trust auth on 127.0.0.1). */
  url(database?: string): string;
  start(): Promise<void>;
  /** pg_ctl stop: `fast` by default, `immediate` as a crash would. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
}

/** initdb in `dir` with `settings` in its postgresql.conf; not started. */
export async function initCluster(dir: string, settings: Record<string, string> = {}): Promise<OwnCluster> {
  const pgBin = debianPostgres()!;
  ownedByPostgres(dir);
  writeFileSync(`${dir}.log`, '');
  if (isRoot) execFileSync('chown', ['postgres:postgres', `${dir}.log`]);
  const init = await run(path.join(pgBin.bin, 'initdb'), ['-D', dir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8'], { asPostgres: true });
  if (init.code !== 0) throw new Error(`initdb failed: ${init.err}`);
  const port = await freePort();
  // Settings go into postgresql.conf (values quoted there: an archive_command has spaces).
  appendFileSync(path.join(dir, 'postgresql.conf'), Object.entries(settings).map(([k, v]) => `${k} = '${v.replace(/'/g, "''")}'\n`).join(''));
  // The socket beside the data folder, not in it: a backup would copy its lock file.
  const socketDir = `${dir}-socket`;
  ownedByPostgres(socketDir);
  const options = `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1`;
  let up = false;
  const cluster: OwnCluster = {
    dir,
    socketDir,
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      // The server log beside the data folder: a restore (pgbackrest --delta) empties the folder.
      const log = `${dir}.log`;
      const started = await run(path.join(pgBin.bin, 'pg_ctl'), ['-D', dir, '-w', '-t', '120', '-l', log, '-o', options, 'start'], { asPostgres: true });
      if (started.code !== 0) throw new Error(`pg_ctl start failed: ${started.err || started.out}\n${readFileSync(log, 'utf8').slice(-3000)}`);
      up = true;
    },
    async stop(mode = 'fast') {
      if (!up) return;
      await run(path.join(pgBin.bin, 'pg_ctl'), ['-D', dir, '-w', '-m', mode, 'stop'], { asPostgres: true });
      up = false;
    },
  };
  return cluster;
}
