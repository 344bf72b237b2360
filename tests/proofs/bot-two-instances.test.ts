/**
 * Bots across instances (issue 66, item 5): two service processes on one PostgreSQL behind a
 * round-robin balancer (the simulator's callbacks go through it, as Meta's would). Customers of
 * several projects write; the projects' schedules come due in the same minute. Each message is
 * answered once and each due time runs once, and both instances run bots (bot_event_runs_total on
 * each instance's /metrics). Capacity (one instance against two) is measured by
 * `npm run bench -- instances`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import request from 'supertest';
import { createSimulator, type Simulator } from '../../simulator/app.js';
import { createScratchDatabase } from '../support/db.js';
import { ServiceProcess, eventually, stopAll } from '../support/service-process.js';

// Twelve, so that the schedules' share of either instance is not empty by chance (each timer goes
// to whichever instance's poll locks it first: about 2 in 10,000 runs would put all on one).
const PROJECTS = 12;
const PER_PROJECT = 5;

let scratch: { url: string; drop(): Promise<void> } | undefined;
let sim: Simulator;
let simServer: http.Server;
let simUrl: string;
let balancer: http.Server;
let a: ServiceProcess;
let b: ServiceProcess;
let db: pg.Pool;
const adminToken = 'adm_bots_' + randomBytes(16).toString('hex');
const figures: string[] = [];

const BOT = `import { log, sendText, type InboundMessage, type ScheduleContext } from './platform/runtime/index.js';
export const schedules = { everyMinute: { cron: '* * * * *', timeZone: 'UTC' } };
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'echo: ' + m.text);
}
export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  await log.info('ran ' + name + ' ' + ctx.due_at);
}
`;

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  scratch = await createScratchDatabase('bots2');
  sim = createSimulator({ autoStatusDelaysMs: null, templateAutoDecisionMs: 50 });
  simServer = http.createServer(sim.app);
  simUrl = await listen(simServer);
  // The balancer: requests alternate between the instances.
  const targets: string[] = [];
  let turn = 0;
  balancer = http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', targets[turn++ % targets.length]);
    const out = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  const balancerUrl = await listen(balancer);
  const opts = {
    databaseUrl: scratch.url,
    adminToken,
    encryptionKey: randomBytes(32).toString('hex'),
    simulatorUrl: simUrl,
    env: { SIMULATOR_CALLBACK_BASE_URL: balancerUrl, DATABASE_POOL_MAX: '10' },
  };
  a = await ServiceProcess.start({ ...opts, env: { ...opts.env, INSTANCE_NAME: 'a' } }); // migrates the database first
  b = await ServiceProcess.start({ ...opts, env: { ...opts.env, INSTANCE_NAME: 'b' } });
  targets.push(a.url, b.url);
  db = new pg.Pool({ connectionString: scratch.url, max: 2 });
  db.on('error', () => undefined);
}, 240_000);

afterAll(async () => {
  if (figures.length) console.log(`bots on two instances, one PostgreSQL:\n  ${figures.join('\n  ')}`);
  await stopAll();
  await db?.end().catch(() => undefined);
  await sim?.close();
  for (const s of [simServer, balancer]) {
    s?.closeAllConnections();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }
  await scratch?.drop().catch(() => undefined);
}, 60_000);

/** This instance's bot runs of events of `kind`, from its /metrics. */
async function runsOn(s: ServiceProcess, kind: string): Promise<number> {
  const text = (await request(s.url).get('/metrics').set('Authorization', `Bearer ${adminToken}`).expect(200)).text;
  const line = text.split('\n').find((l) => l.startsWith('bot_event_runs_total') && l.includes(`kind="${kind}"`));
  return line ? Number(line.trim().split(/\s+/).pop()) : 0;
}

describe('bots on two instances', () => {
  const projects: Array<{ id: string; phoneNumberId: string }> = [];

  it('When customers of several projects write through the balancer, then each message is answered exactly once and both instances ran bots', async () => {
    const admin = (s: ServiceProcess) => (method: 'get' | 'post', path: string, body?: object) =>
      request(s.url)[method](path).set('Authorization', `Bearer ${adminToken}`).send(body);
    for (let i = 0; i < PROJECTS; i++) {
      // Made and deployed through either instance: each reads the other's writes.
      const via = i % 2 ? b : a;
      const project = (await admin(via)('post', '/admin/projects', { name: `bots ${i}` }).expect(201)).body.data.project;
      const key = (await admin(via)('post', `/admin/projects/${project.id}/keys`, { name: 'code', scopes: ['code:read', 'code:write', 'messages:send'] }).expect(201)).body.data.secret;
      const channel = (await admin(via)('get', `/admin/projects/${project.id}/channel`).expect(200)).body.data.channel;
      await request(via.url).put('/v1/files/src%2Fbot.ts').set('Authorization', `Bearer ${key}`).send({ content: BOT }).expect((r) => expect(r.status).toBeLessThan(300));
      const deployed = await request(via.url).post('/v1/deployments').set('Authorization', `Bearer ${key}`).send({});
      expect({ status: deployed.status, error: deployed.body.error }).toEqual({ status: 201, error: undefined });
      projects.push({ id: project.id, phoneNumberId: channel.phone_number_id });
    }
    const writes: Array<Promise<unknown>> = [];
    for (const p of projects) {
      for (let j = 0; j < PER_PROJECT; j++) {
        writes.push(request(simUrl).post('/_sim/inbound').send({ phone_number_id: p.phoneNumberId, from: `1555020${String(projects.indexOf(p)).padStart(2, '0')}${String(j).padStart(2, '0')}`, name: 'Ada', text: `m${j}` }).expect(200));
      }
    }
    await Promise.all(writes);
    const replies = async () => {
      const all: string[] = [];
      for (const p of projects) {
        const res = await request(simUrl).get(`/_sim/messages?phone_number_id=${p.phoneNumberId}&limit=1000`).expect(200);
        const list: any[] = Array.isArray(res.body) ? res.body : (res.body.messages ?? res.body.data ?? []);
        all.push(...list.map((m) => `${p.phoneNumberId} ${m.to} ${m.payload?.text?.body}`));
      }
      return all;
    };
    const total = PROJECTS * PER_PROJECT;
    const sent = await eventually(replies, (r) => Array.isArray(r) && r.length >= total, 60_000, `${total} replies`, 250);
    // No reply twice, none missing: every customer got the echo of their own message once.
    expect(new Set(sent).size).toBe(sent.length);
    expect(sent).toHaveLength(total);
    const [onA, onB] = [await runsOn(a, 'message'), await runsOn(b, 'message')];
    figures.push(`${total} messages of ${PROJECTS} projects through a round-robin balancer: ${total} answered once each; runs on A ${onA}, on B ${onB}`);
    expect(onA + onB).toBe(total);
    expect(onA).toBeGreaterThan(0);
    expect(onB).toBeGreaterThan(0);
    expect(Number((await db.query('SELECT count(*) AS n FROM bot_inbox')).rows[0].n)).toBe(0);
  }, 180_000);

  it('When the projects\' schedules come due in the same minute, then each due time runs once, and the instances share them', async () => {
    expect(projects).toHaveLength(PROJECTS);
    // The next minute, and its runs spread within BOT_SCHEDULE_SPREAD_SECONDS (30).
    const now = Date.now();
    const due = new Date(Math.ceil((now + 5_000) / 60_000) * 60_000);
    // A project's due time is its spread second within that minute.
    const inMinute = `due_at >= $1 AND due_at < $1::timestamptz + interval '1 minute'`;
    const runsOfDue = async () => Number((await db.query(`SELECT count(*) AS n FROM bot_schedule_runs WHERE ${inMinute} AND outcome = 'ok'`, [due])).rows[0].n);
    await eventually(runsOfDue, (n) => n >= PROJECTS, due.getTime() - now + 60_000, `${PROJECTS} runs due at ${due.toISOString()}`, 500);
    const perProject = (await db.query(`SELECT project_id, count(*)::int AS n FROM bot_schedule_runs WHERE ${inMinute} GROUP BY project_id`, [due])).rows;
    expect(perProject.map((r) => r.n)).toEqual(projects.map(() => 1));
    const [onA, onB] = [await runsOn(a, 'schedule'), await runsOn(b, 'schedule')];
    figures.push(`${PROJECTS} schedules due at ${due.toISOString()}: each ran once; runs on A ${onA}, on B ${onB}`);
    // Every run on one instance or the other (the deploys' own minute may have had runs too).
    const allRuns = Number((await db.query(`SELECT count(*) AS n FROM bot_schedule_runs WHERE started_at IS NOT NULL`)).rows[0].n);
    expect(onA + onB).toBe(allRuns);
    expect(onA).toBeGreaterThan(0);
    expect(onB).toBeGreaterThan(0);
  }, 180_000);
});
