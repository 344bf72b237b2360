/** A redis-server of a test's own (no persistence), stopped, started and hung on its port at will. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort } from './local.js';
import { eventually } from './eventually.js';

export const hasRedisServer = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

const servers = new Set<RedisServer>();

export class RedisServer {
  private child?: ChildProcess;
  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** A server on a free port, not started yet (a client can be pointed at it while it is down). */
  static async create(): Promise<RedisServer> {
    const r = new RedisServer(await freePort());
    servers.add(r);
    return r;
  }

  static async start(): Promise<RedisServer> {
    const r = await RedisServer.create();
    await r.start();
    return r;
  }

  async start(): Promise<void> {
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await eventually(() => canConnect(this.port), Boolean, 10_000, `redis-server on ${this.port}`, 20);
  }

  /** SIGKILL (after SIGCONT, in case it was hung); resolves once the process is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await exited;
  }

  /** SIGSTOP hangs it (connections stay open, nothing answers); SIGCONT resumes it. */
  signal(sig: NodeJS.Signals): void {
    this.child?.kill(sig);
  }

  /** For afterAll: every server a test created is stopped. */
  static async stopAll(): Promise<void> {
    await Promise.all([...servers].map((r) => r.stop()));
  }
}
