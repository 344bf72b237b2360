/**
 * Helpers for tests that run real servers on this machine: a free port, a temporary folder the
 * `postgres` OS user can enter (PostgreSQL runs as that user when the tests run as root), and the
 * environment of `npm start` on the embedded defaults in such a folder, and a process run to its end
 * with its output collected.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { chmod, mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
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
