/**
 * A PostgreSQL that answers late: a loopback port that refuses connections until `open()`, then
 * forwards each to the real server at `url`. For start-up tests (the wait for the database).
 */
import net from 'node:net';

export interface LatePostgres {
  /** `url` with its host and port replaced by the late port. */
  url: string;
  port: number;
  open(): Promise<void>;
  close(): void;
}

export async function latePostgres(url: string): Promise<LatePostgres> {
  const target = new URL(url);
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const via = new URL(url);
  via.hostname = '127.0.0.1';
  via.port = String(port);
  const proxy = net.createServer((c) => {
    const up = net.connect(Number(target.port || 5432), target.hostname);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  return {
    url: via.toString(),
    port,
    open: () => new Promise<void>((r) => proxy.listen(port, '127.0.0.1', () => r())),
    close: () => void proxy.close(),
  };
}
