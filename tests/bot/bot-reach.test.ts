/**
 * The bot reaches the business's own systems (issue 46, items 1 and 2): secrets set by the
 * operator and read with `secrets.get`, and `http.fetch` through the service, against the real
 * PostgreSQL, the real sandbox, the simulator and a loopback "shop" API (reached under
 * DEV_ALLOW_PRIVATE_TARGETS, which lets a bot reach loopback and nothing else private).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import request from 'supertest';
import winston from 'winston';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { botLogsOf, botSourceProject, deployBot, repliesTo } from '../support/bots.js';
import { runHelper, type BotDeps } from '../../lib/bot/helpers.js';
import { main } from '../../scripts/ops/main.js';
import { timingBound } from '../support/retry-timing.js';

const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 2000 };
const TOKEN_1 = 'shop_live_T0k3n_first_9d8c7b6a5f4e';
const TOKEN_2 = 'shop_live_T0k3n_second_1a2b3c4d5e6f';

/** Every service log line, with its fields. */
const serviceLog: string[] = [];
const logger = winston.createLogger({
  level: 'debug',
  format: winston.format.printf(({ level, message, ...meta }) => `${level} ${message} ${JSON.stringify(meta)}`),
  transports: [new winston.transports.Stream({ stream: new Writable({ write(chunk, _e, done) { serviceLog.push(String(chunk)); done(); } }) })],
});

/** The shop's API on loopback: orders behind a bearer token, and misbehaving paths. */
class Shop {
  validTokens = new Set<string>();
  seenAuthorization: Array<string | undefined> = [];
  userAgents: Array<string | undefined> = [];
  connections = 0;
  inProgress = 0;
  mostInProgress = 0;
  paths: string[] = [];
  server!: http.Server;
  url = '';
  otherOrigin = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    const port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${port}`;
    this.otherOrigin = `http://localhost:${port}`;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    this.paths.push(url.pathname);
    const order = /^\/orders\/(\d+)$/.exec(url.pathname);
    if (order) {
      const auth = req.headers.authorization;
      this.seenAuthorization.push(auth);
      this.userAgents.push(req.headers['user-agent']);
      if (!auth || !this.validTokens.has(auth.replace(/^Bearer /, ''))) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=abc' }).end(JSON.stringify({ id: order[1], status: 'shipped', ua: req.headers['user-agent'] }));
      return;
    }
    switch (url.pathname) {
      case '/redirect':
        res.writeHead(302, { location: url.searchParams.get('to')! }).end();
        return;
      case '/loop':
        res.writeHead(302, { location: '/loop' }).end();
        return;
      case '/huge':
        res.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0; i < 5; i++) res.write('x'.repeat(1024 * 1024));
        res.end();
        return;
      case '/huge-declared':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(5 * 1024 * 1024) }).end('x'.repeat(5 * 1024 * 1024));
        return;
      case '/slow':
        // Never answers; the call's timeout ends it.
        return;
      case '/down':
        res.writeHead(503).end('maintenance');
        return;
      case '/echo-auth':
        this.seenAuthorization.push(req.headers.authorization);
        res.writeHead(200).end(`auth=${req.headers.authorization ?? 'none'}`);
        return;
      case '/hold': {
        this.inProgress++;
        this.mostInProgress = Math.max(this.mostInProgress, this.inProgress);
        await new Promise((r) => setTimeout(r, Number(url.searchParams.get('ms') ?? 100)));
        this.inProgress--;
        res.writeHead(200).end('held');
        return;
      }
      default:
        res.writeHead(404).end('no');
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(() => r(undefined)));
  }
}

let t: TestApp;
const shop = new Shop();
beforeAll(async () => {
  await shop.start();
  shop.validTokens.add(TOKEN_1);
  t = await startTestApp({
    simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null },
    bot: LIMITS,
    logger,
    config: { devAllowPrivateTargets: true, botSecretsMax: 3, botSecretMaxBytes: 64, botHttpConcurrency: 4, botHttpPerMinute: 400 },
  });
});
afterAll(async () => {
  await t?.close();
  await shop.close();
});

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });

const botProject = (source: string) => botSourceProject(t, ['code:read', 'code:write', 'conversations:read', 'messages:send'], source);
const deploy = (key: string) => deployBot(t, key);

const botLogs = (projectId: string) => botLogsOf(t, projectId);

const setSecret = (projectId: string, name: string, body: object) => request(t.app).put(`/admin/projects/${projectId}/secrets/${name}`).set(admin()).send(body);

const ORDER_BOT = () => `import { http, log, secrets, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const id = /(\\d+)/.exec(m.text ?? '')?.[1] ?? '0';
  const token = await secrets.get('SHOP_API_TOKEN');
  log.info('calling the shop with ' + token);
  const r = await http.fetch('${shop.url}/orders/' + id + '?customer=' + m.from, { headers: { authorization: 'Bearer ' + token } });
  if (!r.ok) { await sendText(m.from, 'error ' + r.error.code); return; }
  if (r.status !== 200) { await sendText(m.from, 'The shop answered ' + r.status); return; }
  const order = JSON.parse(r.body) as { id: string; status: string };
  await sendText(m.from, 'Order ' + order.id + ' is ' + order.status + (r.headers['set-cookie'] ? ' (cookie)' : ''));
  if ((m.text ?? '').includes('leak')) throw new Error('could not finish with ' + token);
}
`;

describe('the order-status bot answers from the shop API with a secret token', () => {
  it('When a customer asks for an order, then the bot answers from the loopback API with the secret bearer token (no cookie kept), a changed secret is seen by the next message, and the token is in no log line, preview, answer or error', async () => {
    const { projectId, key, phoneNumberId } = await botProject(ORDER_BOT());
    const created = await setSecret(projectId, 'SHOP_API_TOKEN', { value: TOKEN_1 });
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toEqual({ name: 'SHOP_API_TOKEN', fingerprint: expect.stringMatching(/^[0-9a-f]{8}$/), production_only: false, created_at: expect.any(String), updated_at: expect.any(String) });
    await deploy(key);

    await inbound(t, phoneNumberId, '14155550901', 'where is my order 1234?', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550901')).toEqual(['Order 1234 is shipped']);
    expect(shop.seenAuthorization.at(-1)).toBe(`Bearer ${TOKEN_1}`);
    // The service names itself; the shop's Set-Cookie is not answered to the bot (no "(cookie)").
    expect(shop.userAgents.at(-1)).toMatch(/^messaging-service-bot\//);

    // Replaced between two messages: the second message uses the new value, without a redeploy.
    shop.validTokens.add(TOKEN_2);
    const replaced = await setSecret(projectId, 'SHOP_API_TOKEN', { value: TOKEN_2 });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data.secret.fingerprint).not.toBe(created.body.data.secret.fingerprint);
    shop.validTokens.delete(TOKEN_1);
    await inbound(t, phoneNumberId, '14155550901', 'and order 77, leak', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550901')).toEqual(['Order 1234 is shipped', 'Order 77 is shipped']);
    expect(shop.seenAuthorization.at(-1)).toBe(`Bearer ${TOKEN_2}`);

    // The bot printed and threw its token: the bot log says [secret NAME].
    const logs = await botLogs(projectId);
    const logText = JSON.stringify(logs);
    expect(logText).toContain('calling the shop with [secret SHOP_API_TOKEN]');
    expect(logText).toContain('could not finish with [secret SHOP_API_TOKEN]');
    // A preview reads the same secret, calls the shop, and its answer carries no value.
    const preview = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'order 5 leak' }).expect(200);
    expect(preview.body.data.sends).toEqual([expect.objectContaining({ content: 'Order 5 is shipped' })]);
    expect(preview.body.data.outcome.message).toContain('could not finish with [secret SHOP_API_TOKEN]');
    // Operator answers: list and audit trail.
    const list = await request(t.app).get(`/admin/projects/${projectId}/secrets`).set(admin()).expect(200);
    expect(list.body.data.secrets.map((s: { name: string }) => s.name)).toEqual(['SHOP_API_TOKEN']);
    const audit = await t.db.pool.query('SELECT action, subject, before, after, actor FROM dashboard_audit WHERE project_id = $1 ORDER BY id', [projectId]);
    expect(audit.rows.map((r) => r.action)).toEqual(['secret.set', 'secret.replace']);
    expect(audit.rows[1]).toMatchObject({ subject: 'SHOP_API_TOKEN', actor: 'operator (admin API)', before: { fingerprint: created.body.data.secret.fingerprint }, after: { fingerprint: replaced.body.data.secret.fingerprint } });

    for (const [where, text] of [['bot log', logText], ['preview', JSON.stringify(preview.body)], ['secret answers', JSON.stringify([created.body, replaced.body, list.body])], ['audit', JSON.stringify(audit.rows)], ['service log', serviceLog.join('')]] as const) {
      expect([where, text.includes(TOKEN_1) || text.includes(TOKEN_2)]).toEqual([where, false]);
    }
    // Each call is in the service log by method, host, status and duration only (no path or query), and counted.
    const fetchLines = serviceLog.filter((l) => l.includes('bot http.fetch') && l.includes(projectId));
    expect(fetchLines.length).toBeGreaterThanOrEqual(3);
    expect(fetchLines[0]).toMatch(/"method":"GET","host":"127\.0\.0\.1:\d+","status":200/);
    expect(fetchLines.join('')).not.toMatch(/orders|customer|14155550901/);
    const metrics = await t.services.metrics.registry.getSingleMetricAsString('bot_http_fetches_total');
    // Two messages, the preview, and the deploy's sample run ("Hello", issue 46 item 5), which fetches as a preview does.
    expect(metrics).toContain(`bot_http_fetches_total{project="${projectId}",outcome="2xx"} 4`);
  }, 60_000);

  it('When the secret is production-only, then a preview reads null for it while production reads it; an unknown name is null', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { secrets, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'prod=' + ((await secrets.get('PROD_ONLY')) === null ? 'null' : 'set') + ' unknown=' + String(await secrets.get('NOT_THERE')));
}
`);
    expect((await setSecret(projectId, 'PROD_ONLY', { value: 'p-value-123', production_only: true })).status).toBe(201);
    const preview = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'x' }).expect(200);
    expect(preview.body.data.sends[0].content).toBe('prod=null unknown=null');
    await deploy(key);
    await inbound(t, phoneNumberId, '14155550902', 'x', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550902')).toEqual(['prod=set unknown=null']);
    // A replacement without the flag keeps it.
    const again = await setSecret(projectId, 'PROD_ONLY', { value: 'p-value-456' });
    expect(again.body.data.secret.production_only).toBe(true);
  }, 60_000);
});

describe('a failed fetch is seen', () => {
  it('When the bot’s backend answers 503 or times out, then each call is a warn line of the bot log and of the service log (method, host and outcome only) and a note of the bot on the conversation', async () => {
    const { projectId, key, phoneNumberId } = await botProject(`import { http, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const down = await http.fetch('${shop.url}/down?customer=' + m.from);
  const slow = await http.fetch('${shop.url}/slow', { timeoutMs: 200 });
  await sendText(m.from, 'down ' + (down.ok ? down.status : down.error.code) + ', slow ' + (slow.ok ? slow.status : slow.error.code));
}
`);
    await deploy(key);
    const from = serviceLog.length;
    await inbound(t, phoneNumberId, '14155550931', 'where is my order', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550931')).toEqual(['down 503, slow timeout']);
    const warns = (await botLogs(projectId)).filter((l) => l.level === 'warn').map((l) => l.message.replace(/\d+ ms/, 'N ms'));
    expect(warns).toEqual(expect.arrayContaining([
      expect.stringMatching(/^http\.fetch GET 127\.0\.0\.1:\d+ failed: status 503 after N ms$/),
      expect.stringMatching(/^http\.fetch GET 127\.0\.0\.1:\d+ failed: timeout after N ms$/),
    ]));
    const lines = serviceLog.slice(from).filter((l) => l.includes(projectId) && l.includes('http.fetch'));
    expect(lines.filter((l) => l.startsWith('warn bot http.fetch failed '))).toHaveLength(2);
    expect(lines.join('')).not.toMatch(/customer|14155550931|\/down/);
    // And on the conversation: the bot's private notes, so the person reading it sees why the answer may be missing.
    const notes = await t.db.pool.query<{ body: string; author: { kind: string } }>(
      `SELECT n.body, n.author FROM conversation_notes n JOIN conversations v ON v.id = n.conversation_id JOIN contacts c ON c.id = v.contact_id
        WHERE n.project_id = $1 AND c.phone = '14155550931' ORDER BY n.id`, [projectId]);
    expect(notes.rows.map((n) => [n.author.kind, n.body.replace(/:\d+/, ':PORT')])).toEqual([
      ['bot', "The bot's http.fetch (GET 127.0.0.1:PORT) failed: status 503. Its answer to the customer may be missing or partial."],
      ['bot', "The bot's http.fetch (GET 127.0.0.1:PORT) failed: timeout. Its answer to the customer may be missing or partial."],
    ]);
  }, 60_000);
});

describe('secrets: bad input', () => {
  it('When a secret is over the size or count limit, badly named, or deleted twice, then the operator gets 400 with the limit, 400, and 404', async () => {
    const project = await t.admin.project();
    const tooBig = await setSecret(project.id, 'BIG', { value: 'v'.repeat(65) });
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.error).toMatchObject({ code: 'secret_too_large', details: { limit: 64, size: 65 } });
    for (const name of ['A', 'B', 'C']) expect((await setSecret(project.id, name, { value: 'x' })).status).toBe(201);
    const fourth = await setSecret(project.id, 'D', { value: 'x' });
    expect(fourth.status).toBe(400);
    expect(fourth.body.error).toMatchObject({ code: 'secret_limit_reached', details: { limit: 3 } });
    // Replacing one at the limit is not a new one.
    expect((await setSecret(project.id, 'C', { value: 'y' })).status).toBe(200);
    expect((await setSecret(project.id, 'lower_case', { value: 'x' })).status).toBe(400);
    expect((await setSecret(project.id, 'EMPTY', { value: '' })).status).toBe(400);
    expect((await request(t.app).delete(`/admin/projects/${project.id}/secrets/A`).set(admin())).status).toBe(200);
    const twice = await request(t.app).delete(`/admin/projects/${project.id}/secrets/A`).set(admin());
    expect(twice.status).toBe(404);
    expect(twice.body.error.code).toBe('not_found');
    const audit = await t.db.pool.query('SELECT action FROM dashboard_audit WHERE project_id = $1 ORDER BY id', [project.id]);
    expect(audit.rows.map((r) => r.action)).toEqual(['secret.set', 'secret.set', 'secret.set', 'secret.replace', 'secret.delete']);
  });
});

describe('ops secrets and ops code http-allowlist', () => {
  it('When the operator sets a secret from the environment, lists, deletes it and sets an allowlist with the CLI, then no value is printed or taken as an argument', async () => {
    const server = await new Promise<http.Server>((resolve) => {
      const srv = t.app.listen(0, '127.0.0.1', () => resolve(srv));
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ops = async (args: string[]) => {
      let out = '';
      let err = '';
      const code = await main(args, { SERVICE_URL: url, ADMIN_TOKEN: t.adminToken }, { out: (x) => void (out += x + '\n'), err: (x) => void (err += x + '\n') });
      return { code, out, err };
    };
    try {
      const project = await t.admin.project();
      const value = 'cli_secret_value_5e4d3c2b1a';
      const missing = await ops(['secrets', 'set', project.id, 'CLI_TOKEN']);
      expect(missing.code).toBe(2);
      expect(missing.err).toContain('environment variable CLI_TOKEN');
      process.env.CLI_TOKEN = value;
      let set;
      try {
        set = await ops(['secrets', 'set', project.id, 'CLI_TOKEN', '--production-only']);
      } finally {
        delete process.env.CLI_TOKEN;
      }
      expect(set.code).toBe(0);
      expect(set.out).toMatch(/^Secret CLI_TOKEN set \(fingerprint [0-9a-f]{8}, production only\)\./);
      const list = await ops(['secrets', 'list', project.id]);
      expect(list.out).toMatch(/^CLI_TOKEN +[0-9a-f]{8} +yes/m);
      expect(list.out).toContain('1 of at most 3 secrets');
      const allow = await ops(['code', 'http-allowlist', project.id, '--hosts', 'shop.example.com,*.crm.example.net']);
      expect(allow.out).toBe('Allowed hosts:\n  *.crm.example.net\n  shop.example.com\n');
      expect((await ops(['code', 'http-allowlist', project.id, '--any'])).out).toBe('Any public https host (no allowlist); also loopback and private hosts over http while the service runs with DEV_ALLOW_PRIVATE_TARGETS=true (development only).\n');
      expect((await ops(['secrets', 'delete', project.id, 'CLI_TOKEN'])).out).toBe('Secret CLI_TOKEN deleted.\n');
      expect(JSON.stringify([missing, set, list])).not.toContain(value);
    } finally {
      await new Promise((r) => server.close(() => r(undefined)));
    }
  });
});

/** A preview bot that runs each case's fetch and logs `name=code-or-status`. */
function probeBot(cases: Array<[string, string, object?]>) {
  return `import { http, log } from './platform/runtime/index.js';
export async function onMessage(): Promise<void> {
  const cases: Array<[string, string, object?]> = ${JSON.stringify(cases)};
  for (const [name, url, options] of cases) {
    const started = Date.now();
    const r = await http.fetch(url, options ?? {});
    log.info(name + '=' + (r.ok ? String(r.status) + ':' + r.body.slice(0, 40) : r.error.code) + ' ' + (Date.now() - started) + 'ms');
  }
}
`;
}

async function probe(cases: Array<[string, string, object?]>, projectSetup?: (projectId: string) => Promise<void>) {
  const { projectId, key } = await botProject(probeBot(cases));
  await projectSetup?.(projectId);
  const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'go' }).expect(200);
  expect(res.body.data.outcome).toMatchObject({ status: 'ok' });
  return Object.fromEntries((res.body.data.logs as Array<{ message: string }>).map((l) => {
    const m = /^([^=]+)=(.*) (\d+)ms$/.exec(l.message)!;
    return [m[1], { outcome: m[2], ms: Number(m[3]) }];
  }));
}

describe('http.fetch: bad input', () => {
  it('When a bot fetches private, link-local, IPv4-in-IPv6 or plain-http public addresses, or is redirected to one, then each is refused with forbidden_target before any connection', async () => {
    const before = shop.connections;
    const out = await probe([
      ['private', 'https://10.0.0.1/'],
      ['link-local', 'https://169.254.169.254/latest/meta-data/'],
      ['mapped', 'https://[::ffff:10.0.0.1]/'],
      ['mapped-hex', 'https://[::ffff:a9fe:a9fe]/'],
      ['nat64', 'https://[64:ff9b::a00:1]/'],
      ['unique-local', 'https://[fd00::1]/'],
      ['plain-http', 'http://93.184.215.14/'],
      ['credentials', 'https://user:pw@example.com/'],
    ]);
    for (const name of ['private', 'link-local', 'mapped', 'mapped-hex', 'nat64', 'unique-local', 'plain-http', 'credentials']) {
      expect([name, out[name].outcome]).toEqual([name, 'forbidden_target']);
    }
    expect(shop.connections).toBe(before);
    const redirected = await probe([
      ['to-private', `${shop.url}/redirect?to=${encodeURIComponent('http://10.0.0.7/')}`],
      ['to-metadata', `${shop.url}/redirect?to=${encodeURIComponent('https://169.254.169.254/')}`],
      ['to-mapped', `${shop.url}/redirect?to=${encodeURIComponent('https://[::ffff:192.168.1.1]/')}`],
      ['loop', `${shop.url}/loop`],
    ]);
    expect(redirected['to-private'].outcome).toBe('forbidden_target');
    expect(redirected['to-metadata'].outcome).toBe('forbidden_target');
    expect(redirected['to-mapped'].outcome).toBe('forbidden_target');
    expect(redirected.loop.outcome).toBe('too_many_redirects');
  }, 60_000);

  it('When DEV_ALLOW_PRIVATE_TARGETS is off, then loopback in every spelling is refused with forbidden_target before any connection', async () => {
    const project = await t.admin.project();
    const deps = t.services.deps as unknown as BotDeps;
    const strict = { ...deps, config: { ...deps.config, devAllowPrivateTargets: false } } as BotDeps;
    const port = new URL(shop.url).port;
    const before = shop.connections;
    for (const url of [`https://127.0.0.1:${port}/`, `http://127.0.0.1:${port}/`, `https://[::ffff:127.0.0.1]:${port}/`, `https://[::ffff:7f00:1]:${port}/`, `https://[::1]:${port}/`, `https://localhost:${port}/`, `https://0.0.0.0:${port}/`]) {
      const answer = JSON.parse(await runHelper(strict, { projectId: project.id, mode: 'production', logLines: 0 }, 'http.fetch', JSON.stringify({ url })));
      expect([url, answer]).toEqual([url, { ok: true, value: { ok: false, error: { code: 'forbidden_target', message: expect.any(String) } } }]);
    }
    expect(shop.connections).toBe(before);
  });

  it('When the host is off the project allowlist, then it is refused (also after a redirect); a redirect to another origin drops the Authorization header', async () => {
    const out = await probe([
      ['listed', `${shop.url}/echo-auth`, { headers: { authorization: 'Bearer abc' } }],
      ['cross-origin', `${shop.url}/redirect?to=${encodeURIComponent(`${shop.otherOrigin}/echo-auth`)}`, { headers: { authorization: 'Bearer abc' } }],
    ]);
    expect(out.listed.outcome).toBe('200:auth=Bearer abc');
    expect(out['cross-origin'].outcome).toBe('200:auth=none');
    const limited = await probe([
      ['off-list', `${shop.otherOrigin}/echo-auth`],
      ['on-list', `${shop.url}/echo-auth`],
      ['redirect-off-list', `${shop.url}/redirect?to=${encodeURIComponent(`${shop.otherOrigin}/echo-auth`)}`],
    ], async (projectId) => {
      const set = await request(t.app).put(`/admin/projects/${projectId}/bot/http-allowlist`).set(admin()).send({ hosts: ['127.0.0.1', '*.example.com'] }).expect(200);
      expect(set.body.data.hosts).toEqual(['*.example.com', '127.0.0.1']);
    });
    expect(limited['off-list'].outcome).toBe('forbidden_target');
    expect(limited['on-list'].outcome).toBe('200:auth=none');
    expect(limited['redirect-off-list'].outcome).toBe('forbidden_target');
  }, 60_000);

  timingBound('a slow server cut within the event deadline').it('When the server is slow or answers 5 MiB, then the call ends with timeout (within the event deadline) or response_too_large, never a truncated body', async () => {
    const out = await probe([
      ['slow', `${shop.url}/slow`, { timeoutMs: 300 }],
      ['huge', `${shop.url}/huge`],
      ['huge-declared', `${shop.url}/huge-declared`],
      // Last: it uses up the event's time.
      ['slow-past-deadline', `${shop.url}/slow`, { timeoutMs: 15000 }],
    ]);
    expect(out.slow.outcome).toBe('timeout');
    expect(out.slow.ms).toBeLessThan(1000);
    // 15 s asked, but the event's deadline (2 s) comes first.
    expect(out['slow-past-deadline'].outcome).toBe('timeout');
    expect(out['slow-past-deadline'].ms).toBeLessThan(LIMITS.eventTimeoutMs + 200);
    expect(out.huge.outcome).toBe('response_too_large');
    expect(out['huge-declared'].outcome).toBe('response_too_large');
  }, 60_000);

  it('When one event starts 100 fetches at once, then at most BOT_HTTP_CONCURRENCY run, the others get rate_limited, and the event answers within its deadline', async () => {
    shop.mostInProgress = 0;
    const { key } = await botProject(`import { http, log } from './platform/runtime/index.js';
export async function onMessage(): Promise<void> {
  const answers = await Promise.all(Array.from({ length: 100 }, () => http.fetch('${shop.url}/hold?ms=150')));
  const counts: Record<string, number> = {};
  for (const a of answers) { const k = a.ok ? String(a.status) : a.error.code; counts[k] = (counts[k] ?? 0) + 1; }
  log.info(JSON.stringify(counts));
}
`);
    const res = await request(t.app).post('/v1/bot/preview').set(auth(key)).send({ text: 'go' }).expect(200);
    expect(res.body.data.outcome.status).toBe('ok');
    expect(res.body.data.outcome.duration_ms).toBeLessThan(LIMITS.eventTimeoutMs);
    const counts = JSON.parse(res.body.data.logs[0].message);
    expect(counts['200'] + counts.rate_limited).toBe(100);
    expect(counts['200']).toBeGreaterThanOrEqual(4);
    expect(counts.rate_limited).toBeGreaterThan(0);
    expect(shop.mostInProgress).toBeLessThanOrEqual(4);
  }, 60_000);

  it('When a bot passes BOT_HTTP_PER_MINUTE, then further calls answer rate_limited; bad arguments are refused with invalid_request and never throw', async () => {
    const project = await t.admin.project();
    const deps = t.services.deps as unknown as BotDeps;
    const inv = { projectId: project.id, mode: 'production' as const, logLines: 0 };
    const call = async (args: object) => JSON.parse(await runHelper(deps, inv, 'http.fetch', JSON.stringify(args)));
    const codes: Record<string, number> = {};
    for (let i = 0; i < 410; i++) {
      const a = await call({ url: 'https://10.0.0.1/' });
      codes[a.value.error.code] = (codes[a.value.error.code] ?? 0) + 1;
    }
    expect(codes).toEqual({ forbidden_target: 400, rate_limited: 10 });
    expect((await call({ url: 'https://example.com/', method: 'TRACE' })).error.code).toBe('invalid_request');
    expect((await call({ url: 'https://example.com/', timeoutMs: 20000 })).error.code).toBe('invalid_request');
    const other = await t.admin.project();
    const bad = JSON.parse(await runHelper(deps, { ...inv, projectId: other.id }, 'http.fetch', JSON.stringify({ url: 'https://example.com/', headers: { host: 'evil' } })));
    expect(bad.value.error.code).toBe('invalid_request');
    const big = JSON.parse(await runHelper(deps, { ...inv, projectId: other.id }, 'http.fetch', JSON.stringify({ url: 'https://example.com/', method: 'POST', body: 'x'.repeat(1024 * 1024 + 1) })));
    expect(big.value.error.code).toBe('request_too_large');
  }, 60_000);
});
