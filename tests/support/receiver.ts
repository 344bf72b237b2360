/**
 * A real local webhook receiver for tests: an HTTP server on 127.0.0.1 that records every request
 * (raw body, headers, arrival time) and answers as the test says, per path: a status, a delay, a
 * hang, a reset connection, a redirect or a huge body. The behaviour can be switched mid-run.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Behaviour =
  | { kind: 'status'; status: number; delayMs?: number }
  | { kind: 'hang' }
  | { kind: 'reset' }
  | { kind: 'redirect'; location: string }
  | { kind: 'huge'; bytes: number };

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  at: number;
}

export class Receiver {
  readonly received: Received[] = [];
  private behaviours = new Map<string, Behaviour>();
  private readonly sockets = new Set<Socket>();
  private waiters: Array<{ check: () => boolean; resolve: () => void }> = [];
  private constructor(private readonly server: http.Server, readonly url: string) {}

  static async start(): Promise<Receiver> {
    let receiver!: Receiver;
    const server = http.createServer((req, res) => receiver.handle(req, res));
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    receiver = new Receiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on('connection', (s) => {
      receiver.sockets.add(s);
      s.on('close', () => receiver.sockets.delete(s));
    });
    return receiver;
  }

  /** How `path` answers from now on (default 200). */
  on(path: string, behaviour: Behaviour): this {
    this.behaviours.set(path, behaviour);
    return this;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Waits until `path` has received `count` requests (or fails after `timeoutMs`). */
  async waitFor(path: string, count: number, timeoutMs = 10_000): Promise<Received[]> {
    await this.until(() => this.at(path).length >= count, timeoutMs, `${path} to receive ${count} request(s), got ${this.at(path).length}`);
    return this.at(path);
  }

  until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = { check, resolve: () => { clearTimeout(timer); resolve(); } };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`Timed out waiting for ${what}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const path = req.url ?? '/';
      this.received.push({ path, headers: req.headers, raw, body, at: Date.now() });
      const b = this.behaviours.get(path) ?? { kind: 'status', status: 200 };
      switch (b.kind) {
        case 'status':
          setTimeout(() => res.writeHead(b.status, { 'Content-Type': 'text/plain' }).end('ok'), b.delayMs ?? 0);
          break;
        case 'hang':
          break;
        case 'reset':
          req.socket.destroy();
          break;
        case 'redirect':
          res.writeHead(302, { Location: b.location }).end();
          break;
        case 'huge': {
          res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
          const chunk = Buffer.alloc(64 * 1024, 120);
          let sent = 0;
          const pump = () => {
            while (sent < b.bytes) {
              sent += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', pump);
            }
            res.end();
          };
          res.on('close', () => (sent = b.bytes));
          pump();
          break;
        }
      }
      this.waiters = this.waiters.filter((w) => {
        if (!w.check()) return true;
        w.resolve();
        return false;
      });
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
