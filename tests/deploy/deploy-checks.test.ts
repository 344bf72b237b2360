/**
 * Deploy checks (issue 46, item 5): a deploy runs the new bundle once in preview on a sample
 * message and refuses to switch production when it throws (the error at the author's file and
 * line; `force` promotes anyway); a bot that throws in production is counted in the bot log and
 * the metrics; a message that changed consent reaches the bot marked, and the scaffold's sample
 * bot does not echo it; an existing tree's platform files follow the service's scaffold. Against
 * the real PostgreSQL, the real sandbox and the simulator, through HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { inbound } from '../support/inbound.js';
import { botLogsOf, botSourceProject, repliesTo } from '../support/bots.js';
import { forgetTreeCache } from '../../lib/code/store.js';
import { consentMarkOf } from '../../lib/consent/keywords.js';

const LIMITS = { memoryMb: 32, startupTimeoutMs: 1000, eventTimeoutMs: 2000 };

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: LIMITS });
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ Authorization: `Bearer ${t.adminToken}` });
const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

const project = (source?: string) => botSourceProject(t, ['code:read', 'code:write', 'conversations:read', 'messages:send'], source);

async function putBot(key: string, source: string) {
  const put = await request(t.app).put('/v1/files/src/bot.ts').set(auth(key)).send({ content: source });
  expect(put.status).toBeLessThan(300);
}

const deploy = (key: string, body: object = {}) => request(t.app).post('/v1/deployments').set(auth(key)).send(body);

const botLogs = (projectId: string) => botLogsOf(t, projectId);

const ECHO = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await sendText(m.from, 'v1: ' + m.text);
}
`;

// Line 4 throws on every message.
const ALWAYS_THROWS = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const order = (m.text ?? '').match(/\\d+/);
  if (!order || order) throw new Error('orders API not configured');
  await sendText(m.from, 'never');
}
`;

// Line 5 throws on "crash" only.
const THROWS_ON_CRASH = `import { sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const text = m.text ?? '';
  if (text === 'crash') {
    throw new Error('cannot handle ' + text);
  }
  await sendText(m.from, 'ok: ' + text);
}
`;

describe('a deploy whose bundle fails its sample message is refused', () => {
  it('When the new bundle throws on the sample, then the deploy is 502 with the error at src/bot.ts:line, recorded as failed, and production still runs the previous release; force promotes it', async () => {
    const { projectId, key, phoneNumberId } = await project(ECHO);
    const first = await deploy(key);
    expect(first.status).toBe(201);

    await putBot(key, ALWAYS_THROWS);
    const refused = await deploy(key, { message: 'try the orders bot' });
    expect(refused.status).toBe(502);
    expect(refused.body.error.code).toBe('build_failed');
    expect(refused.body.error.details.diagnostics).toEqual([
      { file: 'src/bot.ts', line: 4, column: expect.any(Number), message: expect.stringMatching(/^The bot threw on the sample message "Hello": .*orders API not configured/), source: 'sample' },
    ]);
    expect(refused.body.error.message).toContain('src/bot.ts:4:');

    // Production unchanged: the first release is active and still answers.
    const list = await request(t.app).get('/v1/deployments').set(auth(key)).expect(200);
    expect(list.body.data.deployments.map((d: { status: string; active: boolean }) => `${d.status}${d.active ? ' active' : ''}`)).toEqual(['failed', 'succeeded active']);
    expect(list.body.data.deployments[1].id).toBe(first.body.data.deployment.id);
    await inbound(t, phoneNumberId, '14155550801', 'hi', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550801')).toEqual(['v1: hi']);

    const forced = await deploy(key, { force: true });
    expect(forced.status).toBe(201);
    expect(forced.body.data.deployment).toMatchObject({ active: true, status: 'succeeded' });
    const logs = await botLogs(projectId);
    expect(logs).toEqual([]);
  }, 60_000);

  it("When the author's own sample makes the bot throw, then the deploy is refused with that sample; the default sample passes it", async () => {
    const { key } = await project(THROWS_ON_CRASH);
    const refused = await deploy(key, { sample: { text: 'crash', from: '14155550000' } });
    expect(refused.status).toBe(502);
    expect(refused.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 5, source: 'sample', message: expect.stringContaining('"crash"') });
    // Nothing of the sample run left the service: the sample's sends were captured.
    expect((await deploy(key)).status).toBe(201);
  }, 60_000);

  it('When the CLI deploys a bundle that fails its sample, then it prints the file and line and says --force skips it', async () => {
    const { main } = await import('../../scripts/ops/main.js');
    const { key } = await project(ALWAYS_THROWS);
    let out = '';
    let err = '';
    const env = { SERVICE_URL: t.baseUrl!, ADMIN_TOKEN: t.adminToken };
    const io = { out: (x: string) => void (out += x + '\n'), err: (x: string) => void (err += x + '\n') };
    // The code commands read the project key from the process's environment.
    process.env.SERVICE_API_KEY = key;
    try {
      expect(await main(['code', 'deploy'], env, io)).not.toBe(0);
      expect(err).toMatch(/src\/bot\.ts:4:\d+ +The bot threw on the sample message/);
      expect(err).toContain('--force');
      expect(await main(['code', 'deploy', '--force'], env, io)).toBe(0);
      expect(out).toContain('Deployed');
    } finally {
      delete process.env.SERVICE_API_KEY;
    }
  }, 60_000);
});

describe('the CLI says what --force would do', () => {
  it('When a deploy is refused for its schedules, not its sample, then the CLI says --force would not help and lists every bad schedule', async () => {
    const { main } = await import('../../scripts/ops/main.js');
    const { key } = await project(`${ECHO}
export const schedules = { a: { cron: '* * * * * *', timeZone: 'UTC' }, b: { cron: '0 9 * * *', timeZone: 'Mars/Olympus' } };
`);
    let err = '';
    const io = { out: () => undefined, err: (x: string) => void (err += x + '\n') };
    process.env.SERVICE_API_KEY = key;
    try {
      expect(await main(['code', 'deploy'], { SERVICE_URL: t.baseUrl!, ADMIN_TOKEN: t.adminToken }, io)).not.toBe(0);
    } finally {
      delete process.env.SERVICE_API_KEY;
    }
    expect(err).toContain('--force would not help');
    expect(err).toContain('Schedule "a"');
    expect(err).toContain('Schedule "b"');
  }, 60_000);
});

describe('a bot that throws in production is counted', () => {
  it('When the deployed bot throws on two messages, then the bot log has an error entry for each at the author\'s line and the metrics count two failures', async () => {
    const { projectId, key, phoneNumberId } = await project(THROWS_ON_CRASH);
    expect((await deploy(key)).status).toBe(201);
    await inbound(t, phoneNumberId, '14155550811', 'crash', { botIdle: true });
    await inbound(t, phoneNumberId, '14155550811', 'fine', { botIdle: true });
    await inbound(t, phoneNumberId, '14155550811', 'crash', { botIdle: true });
    expect(await repliesTo(t, phoneNumberId, '14155550811')).toEqual(['ok: fine']);
    const errors = (await botLogs(projectId)).filter((l) => l.kind === 'error');
    expect(errors).toHaveLength(2);
    for (const e of errors) expect(e).toMatchObject({ level: 'error', message: expect.stringMatching(/cannot handle crash at src\/bot\.ts:5:\d+ \(message wamid\./) });
    const metric = await t.services.metrics.registry.getSingleMetricAsString('bot_event_failures_total');
    expect(metric).toContain(`bot_event_failures_total{project="${projectId}",kind="error"} 2`);
  }, 60_000);
});

const CONSENT_LOGGER = `import { log, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  log.info('consent=' + JSON.stringify(m.consent ?? null) + ' text=' + m.text);
  if (m.consent) return;
  await sendText(m.from, 'Echo: ' + m.text);
}
`;

describe('a message that changed consent reaches the bot marked', () => {
  it('When a customer writes STOP and then START, then the bot sees message.consent with the change and keyword, and the scaffold sample bot echoes neither', async () => {
    const marked = await project(CONSENT_LOGGER);
    expect((await deploy(marked.key)).status).toBe(201);
    await inbound(t, marked.phoneNumberId, '14155550821', 'STOP', { botIdle: true });
    await inbound(t, marked.phoneNumberId, '14155550821', 'start!', { botIdle: true });
    await inbound(t, marked.phoneNumberId, '14155550821', 'hello', { botIdle: true });
    const lines = (await botLogs(marked.projectId)).filter((l) => l.kind === 'log').map((l) => l.message).reverse();
    expect(lines).toEqual([
      'consent={"change":"opted_out","keyword":"STOP"} text=STOP',
      'consent={"change":"opted_in","keyword":"START"} text=start!',
      'consent=null text=hello',
    ]);
    expect(await repliesTo(t, marked.phoneNumberId, '14155550821')).toEqual(['Echo: hello']);
    // A preview of a keyword is marked too (nothing changes).
    const preview = await request(t.app).post('/v1/bot/preview').set(auth(marked.key)).send({ text: 'UNSUBSCRIBE' }).expect(200);
    expect(preview.body.data.logs[0].message).toBe('consent={"change":"opted_out","keyword":"UNSUBSCRIBE"} text=UNSUBSCRIBE');
    expect(preview.body.data.sends).toEqual([]);

    // A message rebuilt from the inbox after a restart is judged again from its content and the keywords.
    expect(await consentMarkOf(t.db.sql, marked.projectId, 'text', { text: { body: ' stop. ' } })).toEqual({ change: 'opted_out', keyword: 'STOP' });
    expect(await consentMarkOf(t.db.sql, marked.projectId, 'interactive', { interactive: { button_reply: { id: 'x', title: 'Stop promotions' } } })).toEqual({ change: 'opted_out', keyword: 'Stop promotions' });
    expect(await consentMarkOf(t.db.sql, marked.projectId, 'text', { text: { body: 'please stop sending offers' } })).toBeNull();

    // The scaffold's own sample bot, deployed as it comes.
    const sample = await project();
    expect((await deploy(sample.key)).status).toBe(201);
    await inbound(t, sample.phoneNumberId, '14155550822', 'STOP', { botIdle: true });
    await inbound(t, sample.phoneNumberId, '14155550822', 'START', { botIdle: true });
    await inbound(t, sample.phoneNumberId, '14155550822', 'hi', { botIdle: true });
    const replies = await repliesTo(t, sample.phoneNumberId, '14155550822');
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatch(/^You said: hi\./);
  }, 60_000);
});

describe("an existing tree's platform files follow the service's scaffold", () => {
  it('When a project\'s tree holds the platform files of an older version, then the next use brings them to this scaffold (author files untouched) and a bot using the new helpers deploys', async () => {
    const { projectId, key } = await project(`import { files, sendText, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  const f = await files.get('menu.txt');
  await sendText(m.from, f.ok ? 'menu' : 'no menu');
}
`);
    // As a tree made before project files existed: no files helper, an index without it.
    await t.db.pool.query(`DELETE FROM code_files WHERE project_id = $1 AND tree = 'development' AND path = 'src/platform/runtime/files.ts'`, [projectId]);
    await t.db.pool.query(
      `UPDATE code_files SET content = replace(content, 'export { files, type FileResult } from ''./files.js'';', ''), sha256 = 'old' WHERE project_id = $1 AND tree = 'development' AND path = 'src/platform/runtime/index.ts'`,
      [projectId],
    );
    await t.db.pool.query(`INSERT INTO code_files (project_id, tree, path, content, sha256, size, version, updated_at) VALUES ($1, 'development', 'src/platform/runtime/retired.ts', 'export {};', 'x', 10, 1, now())`, [projectId]);
    forgetTreeCache(projectId);

    const deployed = await deploy(key);
    expect(deployed.status).toBe(201);
    const tree = await request(t.app).get('/v1/files').set(auth(key)).expect(200);
    const paths = tree.body.data.files.map((f: { path: string }) => f.path);
    expect(paths).toContain('src/platform/runtime/files.ts');
    expect(paths).not.toContain('src/platform/runtime/retired.ts');
    const bot = await request(t.app).get('/v1/files/src/bot.ts').set(auth(key)).expect(200);
    expect(bot.body.data.file.content).toContain("files.get('menu.txt')");
  }, 60_000);
});

describe("the scaffold's types", () => {
  it('When a bot sends by user_id (a customer whose number WhatsApp withholds), then the deploy type-checks it; naming both phone and user_id is a type error at its line', async () => {
    const p = await project(`import { send, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  if (m.contact.user_id) await send({ type: 'text', user_id: m.contact.user_id, content: 'hi' });
}
`);
    expect((await deploy(p.key)).status).toBe(201);
    await putBot(p.key, `import { send, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  await send({ type: 'text', phone: m.from, user_id: 'US.1', content: 'hi' });
}
`);
    const refused = await deploy(p.key);
    expect(refused.status).toBe(502);
    expect(refused.body.error.details.diagnostics[0]).toMatchObject({ file: 'src/bot.ts', line: 3, source: 'typecheck' });
  });
});

