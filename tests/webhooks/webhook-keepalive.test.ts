/**
 * The service's webhook deliveries reuse a subscriber's keep-alive socket only while the subscriber
 * keeps it (the race issue 69 found in the simulator's callbacks: a socket reused just as the
 * receiver closes it fails the first delivery after a quiet spell with ECONNRESET).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { AgentPool, postWebhook } from '../../lib/webhooks/http-post.js';

describe('webhook deliveries on a keep-alive subscriber', () => {
  let server: http.Server;
  let url: string;
  const sockets: Array<Promise<boolean>> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    // Announces `Keep-Alive: timeout=2`: the client should close an idle socket after about 1 s.
    server.keepAliveTimeout = 2_000;
    server.on('connection', (socket: Socket) => {
      // The client's FIN arrives as 'end'; a socket the server's own timer closes never sees one.
      sockets.push(new Promise<boolean>((resolve) => {
        socket.once('end', () => resolve(true));
        socket.once('close', () => resolve(false));
      }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('When a delivery was answered and the socket idles, then the service closes it before the subscriber said it would, and the next delivery opens a fresh one', async () => {
    const agents = new AgentPool();
    const opts = { timeoutMs: 10_000, allowPrivate: true, bodyCap: 1024, agents };
    try {
      expect((await postWebhook(url, '{}', { 'content-type': 'application/json' }, opts)).ok).toBe(true);
      expect(sockets).toHaveLength(1);
      expect(await sockets[0]).toBe(true);
      expect((await postWebhook(url, '{}', { 'content-type': 'application/json' }, opts)).ok).toBe(true);
      expect(sockets).toHaveLength(2);
    } finally {
      agents.destroy();
    }
  });
});
