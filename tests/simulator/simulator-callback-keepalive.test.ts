/**
 * The simulator's callbacks reuse a receiver's keep-alive socket only while the receiver keeps it
 * (issue 69): the service announces `Keep-Alive: timeout=5`, and a socket reused just as the
 * service closes it failed a whole pool of status notifications with ECONNRESET after a quiet spell.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Dispatcher } from '../../simulator/callbacks.js';

describe('simulator callbacks on a keep-alive receiver', () => {
  let server: http.Server;
  let url: string;
  const sockets: Array<{ socket: Socket; endedByClient: Promise<boolean> }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.end('{}'));
    });
    // Announces `Keep-Alive: timeout=2`: the client should close an idle socket after ~1 s,
    // before this server would (2 s).
    server.keepAliveTimeout = 2_000;
    server.on('connection', (socket: Socket) => {
      // The client's FIN arrives as 'end'; a socket the server's own timer closes never sees one.
      const endedByClient = new Promise<boolean>((resolve) => {
        socket.once('end', () => resolve(true));
        socket.once('close', () => resolve(false));
      });
      sockets.push({ socket, endedByClient });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('When a callback was delivered and the socket idles, then the simulator closes it before the receiver announced it would', async () => {
    const pn = { phone_number_id: 'pn1', callback_url: url, app_secret: 's', verify_token: null, verification: { ok: true } };
    const state = {
      phones: new Map([['pn1', pn]]),
      limits: { callbackConcurrency: 4, callbackTimeoutMs: 10_000, callbackRetryDelaysMs: [], maxPendingCallbacks: 100, statusBatchMs: 0, statusBatchMax: 100 },
      clock: { now: () => new Date() },
      stats: { callbacks_ok: 0, callbacks_failed: 0, callbacks_retried: 0, callbacks_dropped: 0 },
      callbackLog: [] as unknown[],
    };
    const dispatcher = new Dispatcher(state as never, {} as never);
    const r = await dispatcher.deliverNow({ pnid: 'pn1', field: 'messages', kind: 'status:sent', ref: null, body: '{}', attempt: 0 });
    expect(r.delivered).toBe(true);
    expect(sockets).toHaveLength(1);
    expect(await sockets[0].endedByClient).toBe(true);
    // A later callback opens a fresh socket and is delivered.
    const again = await dispatcher.deliverNow({ pnid: 'pn1', field: 'messages', kind: 'status:sent', ref: null, body: '{}', attempt: 0 });
    expect(again.delivered).toBe(true);
    expect(sockets).toHaveLength(2);
    dispatcher.close();
  });
});
