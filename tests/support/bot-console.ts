/** Seeds for the console's Bot and Scheduled tasks pages: a project with a bot deployed through the API, twice, and its log. */
import request from 'supertest';
import { expect } from '@jest/globals';
import type { TestApp } from './app.js';
import { HOSTILE } from './console.js';
import { writeBotLog } from '../../lib/bot/bot-log.js';

export { HOSTILE };

/** Sandbox limits of the tests that run the bot. */
export const BOT_LIMITS = { memoryMb: 16, startupTimeoutMs: 2000, eventTimeoutMs: 3000 };

/**
 * The bot of the first deployment: it echoes, sets a state, emits and logs what it was sent (so a
 * hostile message comes back in every one of them), throws on "boom" (at line 11), and declares a
 * schedule whose run logs a line.
 */
export const BOT_V1 = `import { emit, log, sendText, setState, type InboundMessage, type ScheduleContext } from './platform/runtime/index.js';

export const schedules = {
  morning: { cron: '0 9 * * *', timeZone: 'Europe/Lisbon' },
  hourly: { cron: '0 * * * *', timeZone: 'UTC' },
};

export async function onMessage(m: InboundMessage): Promise<void> {
  const text = m.text ?? '';
  if (text === 'boom') {
    throw new Error('no stock feed for ' + text);
  }
  await log.info('got ' + text);
  await sendText(m.from, 'You said: ' + text);
  await setState(m.conversation.id, 'echoed');
  await emit('bot.echoed', { text });
}

export async function onSchedule(name: string, ctx: ScheduleContext): Promise<void> {
  await log.info('ran ' + name + ' ' + ctx.trigger);
}
`;

/** The second deployment changes the bot's reply and adds a file holding markup. */
export const BOT_V2 = BOT_V1.replace("'You said: '", "'You wrote: '");
export const NOTES = `// Notes ${HOSTILE}\nexport const notes = '${'<b>bold</b>'}';\n`;

const auth = (key: string) => ({ Authorization: `Bearer ${key}` });

export async function putFile(t: TestApp, key: string, path: string, content: string): Promise<void> {
  const res = await request(t.app).put('/v1/files/' + encodeURIComponent(path)).set(auth(key)).send({ content });
  expect(res.status).toBeLessThan(300);
}

export async function deploy(t: TestApp, key: string, message: string): Promise<string> {
  const res = await request(t.app).post('/v1/deployments').set(auth(key)).send({ message });
  if (res.status !== 201) throw new Error(`deploy: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.deployment.id;
}

/** A project whose bot was deployed twice (v1, then v2 with notes.ts); its key is named "CI deploy". */
export async function botWithTwoDeployments(t: TestApp, name = 'Bot shop') {
  const project = await t.admin.project(name);
  const key = await t.admin.call('post', `/admin/projects/${project.id}/keys`, { name: 'CI deploy', scopes: ['code:read', 'code:write'], mode: 'live' });
  const secret: string = key.secret;
  await putFile(t, secret, 'src/bot.ts', BOT_V1);
  const first = await deploy(t, secret, `First ${HOSTILE}`);
  await putFile(t, secret, 'src/bot.ts', BOT_V2);
  await putFile(t, secret, 'src/notes.ts', NOTES);
  const second = await deploy(t, secret, 'Reply wording');
  return { projectId: project.id, key: secret, keyId: key.key.id as string, first, second };
}

/** Bot log lines as the runtime writes them: an info line, and an error at the author's line holding markup. */
export async function seedBotLines(t: TestApp, projectId: string, deploymentId: string | null) {
  await writeBotLog(t.services.deps, projectId, { level: 'info', kind: 'log', message: 'order 1042 looked up' });
  await writeBotLog(t.services.deps, projectId, { level: 'error', kind: 'error', message: `no stock feed ${HOSTILE} at src/bot.ts:11:11 (message wamid.1)`, deploymentId });
}
