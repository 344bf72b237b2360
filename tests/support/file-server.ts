/**
 * A local HTTP server for download tests (reached only with devAllowPrivateTargets): files with a
 * declared type, redirect chains, bodies that lie about their length, never finish, or never end.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface FileServer {
  url: string;
  /** Serve `body` at `path` with a Content-Type (and Content-Length unless chunked). */
  file(path: string, body: Buffer, opts?: { type?: string; chunked?: boolean; disposition?: string }): void;
  /** `path` declares `length` bytes and sends only a few (a size refused before reading). */
  declares(path: string, length: number, type: string): void;
  /** `path` redirects `hops` times, then serves `to`. */
  redirects(path: string, hops: number, to: string): void;
  close(): Promise<void>;
}

export async function startFileServer(): Promise<FileServer> {
  const files = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const route = files.get(path);
    if (route) return route(req, res);
    if (path === '/never-finishes') {
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': '100000' });
      res.write(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      return; // and nothing more, ever
    }
    if (path === '/endless') {
      res.writeHead(200, { 'Content-Type': 'video/mp4' });
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
      return;
    }
    if (path === '/shorter-than-declared') {
      res.writeHead(200, { 'Content-Type': 'image/png', 'Content-Length': '5000' });
      res.write(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      setTimeout(() => res.destroy(), 20);
      return;
    }
    res.writeHead(404).end('not found');
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // Bytes past Content-Length need a raw socket: Node's server would not send them.
  const raw = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.once('data', () => {
      s.end(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 16\r\nConnection: close\r\n\r\n'), Buffer.alloc(20000, 0x89)]));
    });
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', () => r()));
  const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  files.set('/longer-than-declared', (_req, res) => {
    res.writeHead(302, { Location: `${rawUrl}/x.png` }).end();
  });

  return {
    url,
    file(path, body, opts = {}) {
      files.set(path, (_req, res) => {
        const headers: Record<string, string> = {};
        if (opts.type) headers['Content-Type'] = opts.type;
        if (opts.disposition) headers['Content-Disposition'] = opts.disposition;
        if (!opts.chunked) headers['Content-Length'] = String(body.length);
        res.writeHead(200, headers);
        if (opts.chunked) {
          for (let i = 0; i < body.length; i += 65536) res.write(body.subarray(i, i + 65536));
          res.end();
        } else res.end(body);
      });
    },
    declares(path, length, type) {
      files.set(path, (_req, res) => {
        res.writeHead(200, { 'Content-Type': type, 'Content-Length': String(length) });
        res.write(Buffer.alloc(16));
        setTimeout(() => res.destroy(), 50);
      });
    },
    redirects(path, hops, to) {
      for (let i = 0; i < hops; i++) {
        const from = i === 0 ? path : `${path}/hop${i}`;
        const next = i === hops - 1 ? to : `${path}/hop${i + 1}`;
        files.set(from, (_req, res) => res.writeHead(302, { Location: next }).end());
      }
    },
    async close() {
      for (const s of sockets) s.destroy();
      await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => raw.close(r))]);
    },
  };
}
