/**
 * Security hardening, each item as the attack it stops: cacheable secret responses, sniffable
 * bodies, two Authorization headers, a truncated GCM tag, a sealed secret moved to another row,
 * a slow body holding a connection.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import http from 'node:http';
import net from 'node:net';
import { createCipheriv, randomBytes } from 'node:crypto';
import express from 'express';
import { startTestApp, type TestApp } from '../support/app.js';
import { SecretBox, deriveKey } from '../../lib/platform/crypto-box.js';
import { channelSecretPlace, openChannel } from '../../lib/channel-settings/settings.js';
import { resealLegacySecrets } from '../../lib/upkeep/secret-reseal.js';
import { applyHttpTimeouts } from '../../http/timeouts.js';
import { timingBound } from '../support/retry-timing.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { devAllowPrivateTargets: true } });
});
afterAll(async () => {
  await t?.close();
});

let pnid = 7000 + Math.floor(Math.random() * 1000) * 100;
const channelBody = (token: string) => ({ phone_number_id: String(++pnid), waba_id: '2001', app_id: '3001', access_token: token, app_secret: 'app-secret', verify_token: 'verify' });

describe('secret-bearing responses', () => {
  it('When a key is created or rotated, a token issued or a webhook registered, then the response is no-store and nosniff', async () => {
    const project = await t.admin.project('sec headers');
    const created = await request(t.app).post(`/admin/projects/${project.id}/keys`).set('Authorization', `Bearer ${t.adminToken}`).send({ name: 'k', scopes: ['webhooks:manage'] });
    expect(created.status).toBe(201);
    const rotated = await request(t.app).post(`/admin/keys/${created.body.data.key.id}/rotate`).set('Authorization', `Bearer ${t.adminToken}`);
    expect(rotated.status).toBe(200);
    const runtime = await request(t.app).post(`/admin/projects/${project.id}/runtime-tokens`).set('Authorization', `Bearer ${t.adminToken}`);
    const webhook = await request(t.app)
      .post('/v1/webhooks')
      .set('Authorization', `Bearer ${rotated.body.data.secret}`)
      .send({ url: 'https://93.184.216.34/hook', events: ['order.paid'] });
    expect(webhook.status).toBe(201);
    for (const res of [created, rotated, runtime, webhook]) {
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('When an error or the channel webhook answers, then it is nosniff too', async () => {
    const unknown = await request(t.app).get('/v1/ping').set('Authorization', 'Bearer pk_live_nope');
    expect(unknown.status).toBe(401);
    expect(unknown.headers['x-content-type-options']).toBe('nosniff');
    const channel = await request(t.app).post('/channel/prj_missing/webhook').send({});
    expect(channel.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('failed authentication throttling', () => {
  it('When one address sends 200 unknown keys, then it is throttled with 429 rate_limited and Retry-After while a valid key from it or another address still answers', async () => {
    const th = await startTestApp({ config: { trustProxy: true, authFailuresPerMinute: 20, authFailuresGlobalPerMinute: 100_000 } });
    try {
      const project = await th.admin.project('throttle');
      const key = (await th.admin.key(project.id, ['contacts:read'])).secret;
      const statuses: number[] = [];
      let last: request.Response | undefined;
      for (let i = 0; i < 200; i++) {
        last = await request(th.app).get('/v1/ping').set('X-Forwarded-For', '203.0.113.9').set('Authorization', `Bearer pk_live_guess${i}`);
        statuses.push(last.status);
      }
      expect(statuses.slice(0, 25)).toEqual([...Array(20).fill(401), ...Array(5).fill(429)]);
      expect(statuses.slice(20).every((s) => s === 429)).toBe(true);
      expect(last!.body.error.code).toBe('rate_limited');
      expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
      // The right key from the throttled address is served: the failures are throttled, not the customer.
      const same = await request(th.app).get('/v1/ping').set('X-Forwarded-For', '203.0.113.9').set('Authorization', `Bearer ${key}`);
      expect(same.status).toBe(200);
      const other = await request(th.app).get('/v1/ping').set('X-Forwarded-For', '198.51.100.7').set('Authorization', `Bearer ${key}`);
      expect(other.status).toBe(200);
      // The window ends: the address may try again.
      th.clock.advance(61_000);
      const later = await request(th.app).get('/v1/ping').set('X-Forwarded-For', '203.0.113.9').set('Authorization', `Bearer ${key}`);
      expect(later.status).toBe(200);
    } finally {
      await th.close();
    }
  }, 60_000);
});

describe('the unauthenticated channel webhook', () => {
  it('When a project does not exist or the signature is wrong, then both answer the same 401 invalid_token', async () => {
    const project = await t.admin.project('channel probe');
    await t.admin.call('put', `/admin/projects/${project.id}/channel`, channelBody('tok'));
    const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [] });
    const send = (id: string) =>
      request(t.app).post(`/channel/${id}/webhook`).set('Content-Type', 'application/json').set('X-Hub-Signature-256', 'sha256=' + '0'.repeat(64)).send(body);
    const wrong = await send(project.id);
    const missing = await send('prj_doesnotexist');
    for (const res of [wrong, missing]) {
      expect(res.status).toBe(401);
      expect(res.body.error).toEqual(wrong.body.error);
    }
    const verifyMissing = await request(t.app).get('/channel/prj_doesnotexist/webhook?hub.mode=subscribe&hub.verify_token=x&hub.challenge=1');
    const verifyWrong = await request(t.app).get(`/channel/${project.id}/webhook?hub.mode=subscribe&hub.verify_token=x&hub.challenge=1`);
    expect(verifyMissing.status).toBe(401);
    expect(verifyMissing.body.error).toEqual(verifyWrong.body.error);
  });
});

describe('two Authorization headers', () => {
  it('When a request carries two Authorization headers, then it is refused with 400 bad_request before either is used', async () => {
    const project = await t.admin.project('two auth');
    const key = (await t.admin.key(project.id, ['contacts:read'])).secret;
    const server = t.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as net.AddressInfo).port;
    const raw = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () =>
        socket.write(`GET /v1/ping HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAuthorization: Bearer pk_live_other\r\nConnection: close\r\n\r\n`),
      );
      let got = '';
      socket.on('data', (c) => (got += c));
      socket.on('close', () => resolve(got));
    });
    server.close();
    const res = { status: Number(raw.slice(9, 12)), body: JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) };
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('bad_request');
  });
});

describe('sealed secrets', () => {
  const box = new SecretBox(randomBytes(32));

  it('When a sealed value has its tag truncated to 4 bytes, then it does not open', () => {
    const sealed = box.seal('token', 'x:1:y');
    const [v, nonce, tag, data] = sealed.split('.');
    const short = [v, nonce, Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url'), data].join('.');
    expect(() => box.open(short, 'x:1:y')).toThrow();
    expect(box.open(sealed, 'x:1:y')).toBe('token');
  });

  it('When a channel secret is copied into another project\'s row, then it does not open there, and the owner still opens its own', async () => {
    const a = await t.admin.project('seal a');
    const b = await t.admin.project('seal b');
    await t.admin.call('put', `/admin/projects/${a.id}/channel`, channelBody('token-of-a'));
    await t.admin.call('put', `/admin/projects/${b.id}/channel`, channelBody('token-of-b'));
    const rowA = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: a.id } });
    await t.db.prisma.channelSettings.update({ where: { projectId: b.id }, data: { accessTokenEnc: rowA.accessTokenEnc } });
    await expect(openChannel({ db: t.db, secretBox: t.secretBox }, b.id)).rejects.toThrow();
    expect((await openChannel({ db: t.db, secretBox: t.secretBox }, a.id))?.accessToken).toBe('token-of-a');
  });

  it('When secrets were sealed in the old unbound format, then start-up re-seals them bound to their row and none is lost', async () => {
    const project = await t.admin.project('seal legacy');
    await t.admin.call('put', `/admin/projects/${project.id}/channel`, channelBody('legacy-token'));
    // Write a v1 value as the previous version did: same key derivation, no additional data.
    const key = (t.secretBox as unknown as { key: Buffer }).key;
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    const data = Buffer.concat([cipher.update('legacy-token', 'utf8'), cipher.final()]);
    const v1 = ['v1', nonce.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
    await t.db.prisma.channelSettings.update({ where: { projectId: project.id }, data: { accessTokenEnc: v1 } });
    expect(t.secretBox.open(v1, channelSecretPlace(project.id, 'access_token'))).toBe('legacy-token');

    const { resealed, failed } = await resealLegacySecrets(t.db, t.secretBox);
    expect(resealed).toBeGreaterThanOrEqual(1);
    expect(failed).toBe(0);
    const row = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
    expect(row.accessTokenEnc.startsWith('v2.')).toBe(true);
    expect((await openChannel({ db: t.db, secretBox: t.secretBox }, project.id))?.accessToken).toBe('legacy-token');
    expect(deriveKey).toBeDefined();
  });
});

describe('server timeouts', () => {
  timingBound('the slow body cut within 5 s').it('When a client sends its body slowly past the request bound, then the server cuts the connection with 408', async () => {
    const app = express();
    app.post('/upload', (req, res) => {
      req.resume();
      req.on('end', () => res.json({ ok: true }));
    });
    const server = http.createServer(app);
    applyHttpTimeouts(server, { requestTimeoutMs: 1000, headersTimeoutMs: 1000, keepAliveTimeoutMs: 500 });
    // Node checks the request bound on an interval (connectionsCheckingInterval, 30 s by default).
    (server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval = 100;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    const started = Date.now();
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n');
        const drip = setInterval(() => socket.writable && socket.write('a'), 100);
        let got = '';
        socket.on('data', (c) => (got += c));
        socket.on('close', () => {
          clearInterval(drip);
          resolve(got);
        });
        socket.on('error', () => undefined);
      });
    });
    server.close();
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
