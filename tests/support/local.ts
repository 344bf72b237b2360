/**
 * Helpers for tests that run real servers on this machine: a free port, a temporary folder the
 * `postgres` OS user can enter (PostgreSQL runs as that user when the tests run as root), and the
 * environment of `npm start` on the embedded defaults in such a folder, and a process run to its end
 * with its output collected, and whether a process still runs.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { chmod, mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A port free now, below the kernel's ephemeral range (32768-60999): a port the kernel hands out
 * for an outgoing connection can be taken by any client between this check and the server's
 * bind (CI saw a service's own port taken while its embedded PostgreSQL started). Each jest worker
 * draws from a slice of its own, so two files running side by side never get the same port.
 */
const SLICE = 1500;
const FIRST = 20000;
const slice = FIRST + ((Number(process.env.JEST_WORKER_ID ?? 1) - 1) % 8) * SLICE;
let next = Math.floor(Math.random() * SLICE);

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '0.0.0.0', () => s.close(() => resolve(true)));
  });
}

/** Whether a process with this id still runs (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function freePort(): Promise<number> {
  for (let tries = 0; tries < SLICE; tries++) {
    const port = slice + (next++ % SLICE);
    if (await canListen(port)) return port;
  }
  throw new Error(`freePort: no free port in ${slice}-${slice + SLICE - 1}`);
}

/** A new folder under the system temp folder, mode 0755. */
export async function tempFolder(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

/** `npm start`'s environment on the embedded defaults: its own data folder and free ports, nothing shared. */
export async function embeddedServiceEnv(dataDir: string): Promise<{ env: NodeJS.ProcessEnv; port: number; simPort: number }> {
  const [port, simPort, pgPort] = [await freePort(), await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), SIMULATOR_PORT: String(simPort), EMBEDDED_PG_PORT: String(pgPort), NODE_ENV: 'development' };
  for (const k of ['DATABASE_URL', 'REDIS_URL', 'GRAPH_BASE_URL', 'SIMULATOR_URL', 'ADMIN_TOKEN', 'ENCRYPTION_KEY', 'NODE_OPTIONS']) delete env[k];
  return { env, port, simPort };
}

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (or `timeoutMs`, then SIGTERM) and answers its exit code and output. */
export function runProcess(command: string, args: string[], opts: SpawnOptions & { timeoutMs?: number } = {}): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, opts);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d) => (stdout += d));
    child.stderr?.on('data', (d) => (stderr += d));
    const timer = opts.timeoutMs ? setTimeout(() => child.kill('SIGTERM'), opts.timeoutMs) : undefined;
    child.on('error', reject);
    child.on('close', (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
