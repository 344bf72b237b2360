/**
 * The compose smoke test (issue 48; CI runs it through scripts/ci/compose.sh after the jest run):
 * compose.yaml started from the built images with the simulator profile, then through the load
 * balancer as a user would reach it:
 * - ping; an inbound message from the simulator (its webhook through the balancer); a send;
 * - a media upload through one instance and its send through the other; a project file uploaded
 *   through one instance and downloaded, byte for byte, through the other (BLOB_STORE=postgres);
 * - a 500-recipient campaign approved and sent while the instance holding it is `docker kill`ed
 *   mid-campaign: the survivor finishes it, every recipient gets the message exactly once at the
 *   channel, and the API's counts, the database's rows and the channel agree;
 * - the survivor stopped with SIGTERM within 10 s; then everything is removed (volumes too).
 * Every wait is bounded; the whole run is bounded by SMOKE_TIMEOUT_SECONDS (default 540).
 * Prints `compose smoke: …` lines with the figures and exits non-zero on the first failure.
 *
 * Usage: node --import tsx scripts/compose-smoke.ts   (the images must exist: scripts/ci/compose.sh)
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RECIPIENTS = 500;
const started = Date.now();
const budgetMs = Number(process.env.SMOKE_TIMEOUT_SECONDS ?? 540) * 1000;
const say = (m: string) => console.log(`compose smoke: ${m} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

// Ports on loopback, from one random base, so two runs on one machine never meet.
const base = 20000 + Math.floor(Math.random() * 400) * 100;
const ports = { LB_PORT: base, APP1_PORT: base + 1, APP2_PORT: base + 2, PG_PORT: base + 3, REDIS_PORT: base + 4, SIM_PORT: base + 5 };
const project = `smoke${base}`;
const dbPassword = randomBytes(12).toString('hex');
const adminToken = 'adm_smoke_' + randomBytes(16).toString('hex');
const lb = `http://127.0.0.1:${ports.LB_PORT}`;
const app = { app1: `http://127.0.0.1:${ports.APP1_PORT}`, app2: `http://127.0.0.1:${ports.APP2_PORT}` };
const sim = `http://127.0.0.1:${ports.SIM_PORT}`;
const dbUrl = `postgres://postgres:${dbPassword}@127.0.0.1:${ports.PG_PORT}/messaging`;

const work = mkdtempSync(path.join(os.tmpdir(), 'compose-smoke-'));
const envFile = path.join(work, 'env.production');
const composeEnv: NodeJS.ProcessEnv = {
  ...process.env,
  ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  ENV_FILE: envFile,
  APP_IMAGE: process.env.APP_IMAGE ?? 'messaging-service:ci',
  POSTGRES_IMAGE: process.env.POSTGRES_IMAGE ?? 'messaging-postgres:ci',
  REDIS_IMAGE: process.env.REDIS_IMAGE ?? 'messaging-redis:ci',
  HAPROXY_IMAGE: process.env.HAPROXY_IMAGE ?? 'messaging-haproxy:ci',
};

/** The production example with this run's secrets and ports: what an operator would fill in. */
function writeEnvFile(): void {
  const set: Record<string, string> = {
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    POSTGRES_PASSWORD: dbPassword,
    DATABASE_URL: dbUrl,
    REDIS_URL: `redis://127.0.0.1:${ports.REDIS_PORT}`,
    ADMIN_TOKEN: adminToken,
    ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PUBLIC_BASE_URL: lb,
    GRAPH_BASE_URL: '',
    SIMULATOR_URL: sim,
    SIMULATOR_CALLBACK_BASE_URL: lb,
    // Slow enough that the campaign is mid-flight when an instance is killed (500 at 25/s: 20 s).
    BROADCAST_DEFAULT_MPS: '25',
    RATE_LIMIT_PER_MINUTE: '100000',
    // Two instances starting at once on a loaded two-core CI machine: connections may be slow to come.
    DATABASE_ACQUIRE_TIMEOUT_MS: '20000',
    SHUTDOWN_READY_DELAY_MS: '1500',
  };
  const lines = readFileSync(path.join(ROOT, '.env.production.example'), 'utf8').split('\n').map((line) => {
    const m = /^([A-Z0-9_]+)=/.exec(line);
    if (m && m[1] in set) {
      const v = set[m[1]];
      delete set[m[1]];
      return `${m[1]}=${v}`;
    }
    return line;
  });
  writeFileSync(envFile, [...lines, ...Object.entries(set).map(([k, v]) => `${k}=${v}`)].join('\n') + '\n', { mode: 0o600 });
}

function run(cmd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: ROOT, env: composeEnv, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr.slice(-4000)}`));
      else resolve(stdout);
    });
  });
}

const compose = (args: string[], timeoutMs?: number) => run(process.env.COMPOSE ?? 'docker-compose', ['-p', project, '-f', 'compose.yaml', '--profile', 'simulator', ...args], timeoutMs);

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(what);
}

async function call(url: string, init: RequestInit & { token?: string } = {}): Promise<{ status: number; body: any; bytes: Buffer }> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('Authorization', `Bearer ${init.token}`);
  if (init.body && typeof init.body === 'string' && !headers.has('Content-Type')) headers.set('Content-Type', 'application/json');
  const res = await fetch(url, { ...init, headers, signal: AbortSignal.timeout(20_000) });
  const bytes = Buffer.from(await res.arrayBuffer());
  let body: any;
  try {
    body = JSON.parse(bytes.toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: res.status, body, bytes };
}

async function ok(url: string, init: RequestInit & { token?: string } = {}, expected = [200, 201]): Promise<any> {
  const res = await call(url, init);
  if (!expected.includes(res.status)) throw new Error(`${init.method ?? 'GET'} ${url} → ${res.status} ${res.bytes.toString('utf8').slice(0, 500)}`);
  return res.body;
}

async function eventually<T>(what: string, fn: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number, everyMs = 500): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T | undefined;
  let error = '';
  while (Date.now() < until) {
    try {
      last = await fn();
      if (done(last)) return last;
    } catch (e) {
      error = (e as Error).message;
    }
    await sleep(everyMs);
  }
  throw new Error(`${what}: not within ${timeoutMs / 1000} s (last: ${JSON.stringify(last)?.slice(0, 300)}${error ? `; ${error.slice(0, 300)}` : ''})`);
}

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

async function smoke(): Promise<string[]> {
  const figures: string[] = [];
  writeEnvFile();
  const upAt = Date.now();
  await compose(['up', '-d'], 240_000);
  await eventually('the balancer answers /readyz', () => call(`${lb}/readyz`), (r) => r.status === 200, 180_000, 250);
  await eventually('both instances ready', () => Promise.all([call(`${app.app1}/readyz`), call(`${app.app2}/readyz`)]), (r) => r.every((x) => x.status === 200), 60_000, 250);
  figures.push(`ready through the balancer ${((Date.now() - upAt) / 1000).toFixed(1)} s after compose up (database, migration, two instances)`);
  say(figures.at(-1)!);
  const db = new pg.Pool({ connectionString: dbUrl, max: 2 });
  db.on('error', () => undefined);
  try {
    // Migrations: applied once, by the one-shot service.
    const migrations = await db.query('SELECT migration_name, count(*)::int AS n FROM _prisma_migrations GROUP BY 1');
    check(migrations.rows.length > 0 && migrations.rows.every((r) => r.n === 1), `every migration recorded once: ${JSON.stringify(migrations.rows.filter((r) => r.n !== 1))}`);

    const admin = (p: string, method = 'GET', body?: object, where = lb) => ok(`${where}${p}`, { method, token: adminToken, body: body ? JSON.stringify(body) : undefined }).then((b) => b.data);
    const projectId = (await admin('/admin/projects', 'POST', { name: 'compose smoke' })).project.id as string;
    const key = (await admin(`/admin/projects/${projectId}/keys`, 'POST', {
      name: 'smoke', scopes: ['messages:send', 'media:write', 'media:read', 'templates:manage', 'templates:read', 'broadcasts:manage', 'broadcasts:read'],
    })).secret as string;
    await admin(`/admin/projects/${projectId}`, 'PATCH', { daily_send_quota: 100_000 });

    // Ping through the balancer.
    const ping = await call(`${lb}/v1/ping`, { token: key });
    check(ping.status === 200, `ping through the balancer: ${ping.status}`);

    // An inbound message: the simulator's webhook reaches an instance through the balancer.
    const pnid = (await admin(`/admin/projects/${projectId}/channel`)).channel.phone_number_id as string;
    const phone = '14155550100';
    const inbound = await ok(`${sim}/_sim/inbound`, { method: 'POST', body: JSON.stringify({ phone_number_id: pnid, from: phone, name: 'Ada', text: 'hello from compose' }) });
    check(inbound.status_code === 200, `the inbound webhook through the balancer answered ${inbound.status_code}`);
    // A send (the conversation window is open).
    const sent = await ok(`${lb}/v1/messages`, { method: 'POST', token: key, body: JSON.stringify({ type: 'text', phone: `+${phone}`, content: 'hello back' }) });
    const atChannel = await eventually('the send at the channel', async () => (await ok(`${sim}/_sim/messages?phone_number_id=${pnid}&to=${phone}&limit=100`)).data as Array<{ wamid: string }>, (m) => m.some((x) => x.wamid === sent.data.id), 10_000);
    figures.push(`ping, inbound webhook and a send through the balancer: ok (${atChannel.length} message at the channel)`);
    say(figures.at(-1)!);

    // Shared blobs: media uploaded through app1, sent through app2; a file uploaded through app1, downloaded through app2.
    const media = await ok(`${app.app1}/v1/media`, { method: 'POST', token: key, body: JSON.stringify({ data: PNG.toString('base64'), filename: 'logo.png', mime: 'image/png' }) });
    const slug = media.data.media?.slug ?? media.data.slug;
    await ok(`${app.app2}/v1/media/${slug}`, { token: key });
    const mediaSend = await ok(`${app.app2}/v1/messages`, { method: 'POST', token: key, body: JSON.stringify({ type: 'image', phone: `+${phone}`, media: { slug } }) });
    check(typeof mediaSend.data.id === 'string', 'the media send through app2 has a message id');
    const content = `compose smoke ${randomBytes(8).toString('hex')}\n`.repeat(2000);
    await ok(`${app.app1}/admin/projects/${projectId}/files/smoke.txt`, { method: 'PUT', token: adminToken, headers: { 'Content-Type': 'application/octet-stream' }, body: content });
    const download = await call(`${app.app2}/admin/projects/${projectId}/files/smoke.txt`, { token: adminToken });
    check(download.status === 200 && download.bytes.equals(Buffer.from(content)), `the file uploaded through app1 downloads through app2 byte for byte (status ${download.status}, ${download.bytes.length} of ${content.length} bytes)`);
    figures.push(`blobs: media uploaded through app1 and sent through app2; a ${content.length}-byte file uploaded through app1 read back identical through app2`);
    say(figures.at(-1)!);

    // The campaign: 500 recipients, one instance killed mid-campaign.
    await ok(`${lb}/v1/templates`, { method: 'POST', token: key, body: JSON.stringify({ name: 'smoke_promo', language: 'en_US', category: 'MARKETING', components: [{ type: 'BODY', text: 'New menu today' }] }) });
    await eventually('the template approved', async () => (await call(`${lb}/v1/templates/smoke_promo?language=en_US`, { token: key })).body?.data?.template?.status, (s) => s === 'APPROVED', 30_000);
    const first = 15557000000;
    await db.query(
      `INSERT INTO contacts (project_id, phone, tags, opted_in, opted_in_at, created_at, updated_at)
       SELECT $1, ($2::bigint + g)::text, '{}', true, now(), now(), now() FROM generate_series(0, $3 - 1) g`,
      [projectId, first, RECIPIENTS],
    );
    const created = await ok(`${lb}/v1/broadcasts`, {
      method: 'POST', token: key,
      body: JSON.stringify({ name: 'compose smoke', template_name: 'smoke_promo', template_language: 'en_US', audience: { filter: { match: 'all', conditions: [{ field: 'phone', op: 'starts_with', value: '+1555700' }] } } }),
    });
    const id = created.data.broadcast.id as string;
    const campaignAt = Date.now();
    await admin(`/admin/broadcasts/${id}/approve`, 'POST', { approved_by: 'compose smoke' });
    const sentSoFar = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM broadcast_recipients WHERE broadcast_id = $1 AND state = 'sent'`, [id])).rows[0].n;
    const before = await eventually('a fifth of the campaign sent', sentSoFar, (n) => n >= RECIPIENTS / 5, 60_000, 100);
    // Kill the instance running the campaign (its lease owner's engine runs in one of the two).
    const owner = (await db.query<{ lease_owner: string | null }>('SELECT lease_owner FROM broadcasts WHERE id = $1', [id])).rows[0].lease_owner;
    const victim = instanceOf(owner);
    const survivor = victim === 'app1' ? 'app2' : 'app1';
    // The killed instance stays down (its restart policy off first): the survivor alone must finish.
    const victimId = await containerId(victim);
    await run('docker', ['update', '--restart=no', victimId], 30_000);
    await run('docker', ['kill', victimId], 30_000);
    const killedAt = Date.now();
    say(`killed ${victim} (the campaign's engine) with ${before} of ${RECIPIENTS} sent`);
    const pingAfter = await eventually('ping through the balancer after the kill', () => call(`${lb}/v1/ping`, { token: key }), (r) => r.status === 200, 10_000, 100);
    check(pingAfter.status === 200, 'ping after the kill');
    const status = await eventually('the campaign completed by the survivor', async () => (await call(`${app[survivor]}/v1/broadcasts/${id}`, { token: key })).body?.data?.broadcast, (b) => b?.status === 'completed', 150_000, 500);
    const finishedIn = Date.now() - campaignAt;
    const messages = (await ok(`${sim}/_sim/messages?phone_number_id=${pnid}&limit=10000`)).data as Array<{ to: string; type: string }>;
    const perPhone = new Map<string, number>();
    for (const m of messages.filter((x) => x.type === 'template')) perPhone.set(m.to, (perPhone.get(m.to) ?? 0) + 1);
    const twice = [...perPhone].filter(([, n]) => n > 1);
    check(twice.length === 0, `recipients sent more than once: ${JSON.stringify(twice.slice(0, 5))}`);
    // At most once, by design (lib/broadcasts/engine.ts): a send in flight when its instance was
    // killed (its intent recorded, the call perhaps made) is never sent again; its row says `unknown`
    // with no message id. Only such rows may be missing at the channel, at most one batch of them.
    const missing = Array.from({ length: RECIPIENTS }, (_, i) => String(first + i)).filter((p) => !perPhone.has(p));
    const missingRows = missing.length ? (await db.query('SELECT * FROM broadcast_recipients WHERE broadcast_id = $1 AND phone = ANY($2)', [id, missing])).rows : [];
    const inFlight = missingRows.filter((r) => r.state === 'unknown' && !r.wamid);
    check(inFlight.length === missing.length && missing.length <= 50, `recipients at the channel: ${perPhone.size} of ${RECIPIENTS}; the missing ones' rows: ${JSON.stringify(missingRows).slice(0, 2000)}`);
    const states = (await db.query(`SELECT state, count(*)::int AS n FROM broadcast_recipients WHERE broadcast_id = $1 GROUP BY state ORDER BY state`, [id])).rows as Array<{ state: string; n: number }>;
    const stateOf = (name: string) => states.find((r) => r.state === name)?.n ?? 0;
    check(stateOf('sent') + stateOf('unknown') === RECIPIENTS && stateOf('sent') >= RECIPIENTS - missing.length, `recipient rows: ${JSON.stringify(states)}`);
    const c = status.counts as Record<string, number>;
    const reached = c.sent + c.delivered + c.read;
    check(c.total === RECIPIENTS && reached + c.unknown === RECIPIENTS && c.unknown === stateOf('unknown') && c.failed === 0 && c.queued === 0, `the API's counts: ${JSON.stringify(c)}`);
    figures.push(`campaign of ${RECIPIENTS}: ${victim} killed at ${before} sent, ${survivor} finished ${((Date.now() - killedAt) / 1000).toFixed(1)} s later (${(finishedIn / 1000).toFixed(1)} s in all); ${perPhone.size} recipients once each at the channel, none twice${missing.length ? `, ${missing.length} in flight at the kill recorded unknown and not sent again (at most once)` : ''}; rows ${JSON.stringify(states)}; API counts ${JSON.stringify(c)}`);
    say(figures.at(-1)!);

    // SIGTERM: the survivor stops within 10 s.
    const stopAt = Date.now();
    await compose(['stop', '-t', '10', survivor], 60_000);
    const stopMs = Date.now() - stopAt;
    const exit = (await run('docker', ['inspect', '-f', '{{.State.ExitCode}}', await containerId(survivor)])).trim();
    check(stopMs < 12_000 && exit === '0', `${survivor} stopped by SIGTERM in ${stopMs} ms with exit status ${exit}`);
    figures.push(`${survivor} stopped by SIGTERM in ${(stopMs / 1000).toFixed(1)} s, exit status ${exit}`);
    say(figures.at(-1)!);
  } finally {
    await db.end().catch(() => undefined);
  }
  return figures;
}

async function containerId(service: string): Promise<string> {
  const id = (await compose(['ps', '-q', service])).trim();
  if (!id) throw new Error(`no container for ${service}`);
  return id;
}

/** Which compose service runs the engine named `owner` (`engine-<INSTANCE_NAME>-…`, compose.yaml names them). */
function instanceOf(owner: string | null): 'app1' | 'app2' {
  const name = /^engine-(app[12])-/.exec(owner ?? '')?.[1];
  if (!name) throw new Error(`the campaign's lease owner "${owner}" names no instance`);
  return name as 'app1' | 'app2';
}

async function main(): Promise<void> {
  const timer = setTimeout(() => {
    console.error(`compose smoke: FAILED: not finished within ${budgetMs / 1000} s`);
    void down().finally(() => process.exit(1));
  }, budgetMs);
  let failed = false;
  try {
    const figures = await smoke();
    console.log(`compose smoke: passed in ${((Date.now() - started) / 1000).toFixed(1)} s\n  ${figures.join('\n  ')}`);
  } catch (e) {
    failed = true;
    console.error(`compose smoke: FAILED: ${(e as Error).message}`);
    const logs = await compose(['logs', '--no-color', '--tail', '40']).catch((x) => String(x));
    console.error(logs.slice(-12_000));
  } finally {
    await down();
    clearTimeout(timer);
    rmSync(work, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

async function down(): Promise<void> {
  await compose(['down', '-v', '--remove-orphans', '-t', '10'], 120_000).catch((e) => console.error(`compose smoke: down failed: ${(e as Error).message}`));
}

await main();
