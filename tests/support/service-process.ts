/**
 * The service as a real process (`node --import tsx server.ts`, with the tracing bootstrap) on a given PostgreSQL and Redis,
 * for tests that run several instances or kill one: its own port and data folder, the log in a
 * file, its own process group (so SIGKILL reaches everything it started), and `stopAll()` for
 * afterAll. Also a redis-server of the test's own on a free port, which a test may stop and start
 * (never the machine's 6379).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, tempFolder } from './local.js';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { eventually } from './eventually.js';
import { RedisServer, hasRedisServer } from './redis-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The seed a crash test prints (CRASH_SEED replays a run) and its numbers in [0, 1): a small LCG, so a failing run can be replayed exactly. */
export function crashSeed(): { seed: number; random: () => number } {
  const seed = process.env.CRASH_SEED ? Number(process.env.CRASH_SEED) : Math.floor(Math.random() * 1e9);
  let x = seed;
  return { seed, random: () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 };
}

/** The operator API of whichever process `base()` names now (it changes when a test restarts the service); throws on a failure. */
export function operatorCalls(base: () => string, adminToken: string) {
  return async (method: 'get' | 'post' | 'patch', path: string, body?: object) => {
    const req = request(base())[method](path).set('Authorization', `Bearer ${adminToken}`);
    const res = body ? await req.send(body) : await req;
    if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
}

/** Polls `fn` until `ok` holds, or throws naming `what` and the last value. */
export { eventually };
export { RedisServer, hasRedisServer };

export interface ServiceOptions {
  databaseUrl: string;
  redisUrl?: string;
  adminToken: string;
  /** 64 hex characters; every instance on one database needs the same. */
  encryptionKey: string;
  /** The Cloud API (simulator) new projects are connected to. */
  simulatorUrl: string;
  /** More environment (RATE_LIMIT_PER_MINUTE, …). */
  env?: NodeJS.ProcessEnv;
  /** Reuse a port (a restart of the same instance); default a free one. */
  port?: number;
}

export class ServiceProcess {
  private constructor(readonly child: ChildProcess, readonly port: number, readonly logFile: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts an instance and waits until /readyz answers 200. */
  static async start(opts: ServiceOptions, dir?: string): Promise<ServiceProcess> {
    const folder = dir ?? (await tempFolder('svc-proc-'));
    folders.add(folder);
    const port = opts.port ?? (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: 'development',
      DATA_DIR: path.join(folder, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: opts.databaseUrl,
      ADMIN_TOKEN: opts.adminToken,
      ENCRYPTION_KEY: opts.encryptionKey,
      SIMULATOR_URL: opts.simulatorUrl,
      DEV_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
      SHUTDOWN_GRACE_MS: '1000',
      ...opts.env,
    };
    for (const k of ['REDIS_URL', 'GRAPH_BASE_URL', 'NODE_OPTIONS']) delete env[k];
    if (opts.redisUrl) env.REDIS_URL = opts.redisUrl;
    const logFile = path.join(folder, `service-${port}.log`);
    const log = openSync(logFile, 'a');
    // As `npm run start:dev` starts it: the tracing bootstrap first (it does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set).
    const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', '--import', './lib/platform/tracing/preload.ts', 'server.ts'], { cwd: root, env, stdio: ['ignore', log, log], detached: true });
    const service = new ServiceProcess(child, port, logFile);
    running.add(service);
    const until = Date.now() + 120_000;
    for (;;) {
      const ok = await fetch(`${service.url}/readyz`).then((r) => r.ok, () => false);
      if (ok) return service;
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > until) {
        await service.kill();
        throw new Error(`the service did not start: ${(await readFile(logFile, 'utf8').catch(() => '')).slice(-3000)}`);
      }
      await sleep(200);
    }
  }

  /** kill -9 of the process group, as a crashing host would; resolves once it is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    running.delete(this);
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    try {
      process.kill(-this.child.pid!, signal);
    } catch {
      /* already gone */
    }
    await exited;
  }

  log(): Promise<string> {
    return readFile(this.logFile, 'utf8').catch(() => '');
  }
}

const running = new Set<ServiceProcess>();
const folders = new Set<string>();

/** For afterAll: SIGKILL every instance and redis-server still running, remove their folders. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((s) => s.kill()));
  await RedisServer.stopAll();
  for (const f of folders) await rm(f, { recursive: true, force: true }).catch(() => undefined);
  folders.clear();
}

