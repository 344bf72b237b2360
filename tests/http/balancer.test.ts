/**
 * The balancer of compose.yaml (docker/haproxy.cfg, issue 59 item 3; docs/deploy.md "The balancer"),
 * run by Debian's HAProxy in front of two small HTTP servers standing for the instances:
 * - the configuration is valid (`haproxy -c`);
 * - a /readyz that takes 4 s (its worst case on a loaded host) is answered, not timed out, and the
 *   instance keeps serving;
 * - an instance that stops listening: GETs and POSTs with Idempotency-Key go to the other one
 *   (connection failures only), a POST without a key is never sent twice (the balancer's 503 says
 *   it was not processed);
 * - an instance that drops a request it received: the request is not re-sent (502, outcome unknown);
 * - no instance: JSON 503 in the API's envelope with Retry-After and the request's id.
 * Runs where `haproxy` is installed (CI's .ci/run installs Debian's package); otherwise says why it
 * skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { freePort } from '../support/local.js';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const CONFIG = path.resolve('docker/haproxy.cfg');
const HAPROXY = process.env.HAPROXY_BIN ?? 'haproxy';

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: 20_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }));
  });
}

const version = await run(HAPROXY, ['-v'], process.env);
const skipReason = version.code === 0 ? undefined : `no haproxy here (${HAPROXY}; apt-get install haproxy)`;
if (skipReason) console.log(`balancer: skipped: ${skipReason}`);
const describeIf = skipReason ? describe.skip : describe;

/** One stand-in instance: counts what reaches it by request id; /readyz takes `readyDelayMs`. */
class Instance {
  readonly seen: { method: string; url: string; id: string }[] = [];
  readonly checks: { answered: boolean }[] = [];
  readyDelayMs = 0;
  private server?: http.Server;
  constructor(readonly name: string, readonly port: number) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      if (req.url === '/readyz') {
        const check = { answered: false };
        this.checks.push(check);
        setTimeout(() => {
          if (res.destroyed) return;
          res.end('{"success":true}', () => { check.answered = true; });
        }, this.readyDelayMs);
        return;
      }
      this.seen.push({ method: req.method ?? '', url: req.url ?? '', id: String(req.headers['x-request-id'] ?? '') });
      req.resume();
      req.on('end', () => {
        if (req.url === '/drop') { req.socket.destroy(); return; }
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ success: true, data: { instance: this.name } }));
      });
    });
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', () => r()));
  }

  /** Stops listening and cuts every connection: a killed instance. */
  async kill(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
    this.server = undefined;
  }
}

interface Answer { status: number; body: any; headers: http.IncomingHttpHeaders }

function request(port: number, method: string, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: url, headers: { connection: 'close', ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        let body: unknown = text;
        try { body = JSON.parse(text); } catch { /* not JSON: the test says so */ }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

let lbPort = 0;
let app1: Instance;
let app2: Instance;
let haproxy: ChildProcess | undefined;
let env: NodeJS.ProcessEnv;
let log = '';

// Only where the suite runs (it is skipped otherwise).
if (!skipReason) {
  beforeAll(async () => {
    lbPort = await freePort();
    app1 = new Instance('app1', await freePort());
    app2 = new Instance('app2', await freePort());
    env = { ...process.env, LB_BIND: '127.0.0.1', LB_PORT: String(lbPort), APP1_PORT: String(app1.port), APP2_PORT: String(app2.port) };
    await app1.start();
    await app2.start();
  });

  afterAll(async () => {
    if (haproxy && haproxy.exitCode === null) {
      haproxy.kill('SIGTERM');
      await new Promise((r) => haproxy!.once('exit', r));
    }
    await app1?.kill();
    await app2?.kill();
  });
}

describeIf('docker/haproxy.cfg', () => {
  it('When checked by haproxy -c, then the configuration is valid', async () => {
    const res = await run(HAPROXY, ['-c', '-f', CONFIG], env);
    expect(res.out).toContain('Configuration file is valid');
    expect(res.code).toBe(0);
  });

  it('When /readyz takes 4 s, then the probe waits for it and the instance keeps serving', async () => {
    app1.readyDelayMs = 4000;
    app2.readyDelayMs = 4000;
    haproxy = spawn(HAPROXY, ['-W', '-db', '-f', CONFIG], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    haproxy.stdout!.on('data', (c) => { log += String(c); });
    haproxy.stderr!.on('data', (c) => { log += String(c); });
    for (let i = 0; i < 50; i++) {
      const up = await new Promise<boolean>((r) => net.connect(lbPort, '127.0.0.1').on('connect', function (this: net.Socket) { this.destroy(); r(true); }).on('error', () => r(false)));
      if (up) break;
      await sleep(100);
    }
    // The first probes have run their 4 s and been answered (a 1 s timeout would have cut them).
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline && !(app1.checks.some((c) => c.answered) && app2.checks.some((c) => c.answered))) await sleep(200);
    expect(app1.checks.some((c) => c.answered)).toBe(true);
    expect(app2.checks.some((c) => c.answered)).toBe(true);
    const served = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const res = await request(lbPort, 'GET', '/v1/ping');
      expect(res.status).toBe(200);
      served.add(res.body.data.instance);
    }
    expect([...served].sort()).toEqual(['app1', 'app2']);
    expect(log).not.toMatch(/is DOWN/);
    app1.readyDelayMs = 0;
    app2.readyDelayMs = 0;
  }, 30_000);

  it('When an instance dies, then GETs and keyed POSTs go to the other and a POST without a key is never sent twice', async () => {
    await app1.kill();
    const results: { kind: string; id: string; res: Answer }[] = [];
    // Before HAProxy marks app1 DOWN (3 failed probes, at least 2 s): round robin still picks it.
    for (let i = 0; i < 4; i++) {
      for (const [kind, method, headers] of [
        ['get', 'GET', {}],
        ['keyed', 'POST', { 'idempotency-key': `k-${i}` }],
        ['unkeyed', 'POST', {}],
      ] as const) {
        const id = `req_test_${kind}_${i}`;
        results.push({ kind, id, res: await request(lbPort, method, '/v1/messages', { ...headers, 'x-request-id': id }) });
      }
    }
    for (const r of results.filter((x) => x.kind !== 'unkeyed')) {
      expect(r.res.status).toBe(200);
      expect(r.res.body.data.instance).toBe('app2');
    }
    const unkeyed = results.filter((x) => x.kind === 'unkeyed');
    const refused = unkeyed.filter((x) => x.res.status === 503);
    // Round robin gave app1 some of them: each got the balancer's JSON 503, and none reached app2.
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.res.headers['content-type']).toBe('application/json');
      expect(r.res.headers['retry-after']).toBe('2');
      expect(r.res.body).toEqual({ success: false, error: expect.objectContaining({ code: 'service_unavailable', details: { from: 'balancer', processed: false } }), request_id: r.id });
      expect(app2.seen.filter((s) => s.id === r.id)).toHaveLength(0);
    }
    for (const r of unkeyed.filter((x) => x.res.status !== 503)) expect(r.res.status).toBe(200);
    // Every request reached an instance at most once.
    for (const r of results) expect(app2.seen.filter((s) => s.id === r.id).length).toBeLessThanOrEqual(1);
    console.log(`balancer: app1 killed: ${results.filter((r) => r.kind !== 'unkeyed').length} GETs and keyed POSTs all answered by app2; ${refused.length} of ${unkeyed.length} POSTs without a key answered 503 "not processed" by the balancer, none sent twice`);
  }, 30_000);

  it('When an instance drops a request it received, then the balancer does not send it again (502, outcome unknown)', async () => {
    // app1 is DOWN by now or within a few seconds (3 failed probes), so every request goes to app2.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && !/app1 is DOWN/.test(log)) await sleep(200);
    expect(log).toMatch(/app1 is DOWN/);
    for (const headers of [{}, { 'idempotency-key': 'drop-1' }] as Record<string, string>[]) {
      const id = `req_test_drop_${Object.keys(headers).length}`;
      const res = await request(lbPort, 'POST', '/drop', { ...headers, 'x-request-id': id });
      if (res.status !== 502) console.log(`balancer: unexpected ${res.status} ${JSON.stringify(res.body)}; HAProxy's log:\n${log}`);
      expect(res.status).toBe(502);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.body).toEqual({ success: false, error: expect.objectContaining({ code: 'server_error', details: { from: 'balancer', processed: 'unknown' } }), request_id: id });
      expect(app2.seen.filter((s) => s.id === id)).toHaveLength(1);
    }
  });
});

describeIf('docker/haproxy.cfg', () => {
  it('When loaded with haproxy-tls.cfg and a certificate, then it serves HTTPS with the same routing and redirects HTTP', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'lb-tls-'));
    const pem = path.join(dir, 'site.pem');
    const made = await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], process.env);
    expect(made.code).toBe(0);
    writeFileSync(pem, readFileSync(path.join(dir, 'cert.pem'), 'utf8') + readFileSync(path.join(dir, 'key.pem'), 'utf8'));
    const tlsPort = await freePort();
    const httpPort = await freePort();
    const tlsEnv = { ...env, LB_PORT: String(await freePort()), TLS_BIND: '127.0.0.1', TLS_PORT: String(tlsPort), TLS_HTTP_PORT: String(httpPort), TLS_CERT: pem };
    const checked = await run(HAPROXY, ['-c', '-f', CONFIG, '-f', path.resolve('docker/haproxy-tls.cfg')], tlsEnv);
    expect(checked.out).toContain('Configuration file is valid');
    // Running it drops to the user haproxy after binding: only as root (CI is).
    if (process.getuid?.() !== 0) { console.log('balancer: TLS not started (not root: it binds as root, then runs as haproxy)'); rmSync(dir, { recursive: true, force: true }); return; }
    chmodSync(dir, 0o755);
    const tls = spawn(HAPROXY, ['-W', '-db', '-f', CONFIG, '-f', path.resolve('docker/haproxy-tls.cfg')], { env: tlsEnv, stdio: 'ignore' });
    try {
      let answer: { status: number; body: string; hsts?: string } | undefined;
      for (let i = 0; i < 50 && !answer; i++) {
        answer = await new Promise((resolve) => {
          const req = https.get({ host: '127.0.0.1', port: tlsPort, path: '/v1/ping', ca: readFileSync(path.join(dir, 'cert.pem')), servername: 'localhost', checkServerIdentity: () => undefined, agent: false }, (res) => {
            let body = '';
            res.on('data', (c) => { body += c; });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, hsts: res.headers['strict-transport-security'] as string | undefined }));
          });
          req.on('error', () => resolve(undefined));
        });
        if (!answer) await sleep(100);
      }
      expect(answer?.status).toBe(200);
      expect(answer?.hsts).toBe('max-age=31536000');
      const plain = await request(httpPort, 'GET', '/v1/ping');
      expect(plain.status).toBe(301);
      expect(plain.headers.location).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/v1\/ping$/);
    } finally {
      tls.kill('SIGTERM');
      await new Promise((r) => tls.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);

  it('When no instance is up, then the balancer answers JSON 503 with Retry-After and its own request id', async () => {
    await app2.kill();
    const res = await request(lbPort, 'GET', '/v1/ping');
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('2');
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('service_unavailable');
    expect(res.body.request_id).toMatch(/^req_[0-9a-f]{32}$/);
    // A client's sane id is kept; an unsafe one is replaced.
    const odd = await request(lbPort, 'GET', '/v1/ping', { 'x-request-id': 'bad"id' });
    expect(odd.body.request_id).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
