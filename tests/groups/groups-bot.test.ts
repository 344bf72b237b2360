/**
 * The bot in a WhatsApp group (issue 61, item 2; docs/groups.md): a participant's message reaches
 * the deployed bot as a message event of a conversation of kind `group`, with the group's id and
 * the participant who wrote; the bot answers in the group with `group_id` (its send refused
 * interactive there, as the API's), and a one-to-one message still comes as kind `individual`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { BOT_LIMITS } from '../support/bot-console.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: BOT_LIMITS });
});
afterAll(async () => {
  await t.close();
});

const BOT = `import { log, send, sendText, type InboundMessage } from './platform/runtime/index.js';

export async function onMessage(m: InboundMessage): Promise<void> {
  await log.info('kind=' + (m.conversation.kind ?? 'none') + ' group=' + String(m.conversation.group_id ?? '-') + ' from=' + m.from + ' name=' + (m.contact.name ?? '-'));
  if (m.conversation.kind === 'group' && m.conversation.group_id !== undefined) {
    const buttons = await send({ group_id: m.conversation.group_id, type: 'interactive', interactive: { body: 'Pick', buttons: [{ id: 'a', title: 'A' }] } });
    await log.info('buttons=' + (buttons.ok ? 'sent' : buttons.error.code));
    await send({ group_id: m.conversation.group_id, type: 'text', content: 'Hello group, ' + (m.contact.name ?? m.from) });
  } else {
    await sendText(m.from, 'Hello you');
  }
}
`;

describe('the bot in a group', () => {
  it('When a participant writes in the group, then the bot gets kind group with the group and the participant, and answers in the group; interactive is refused to it as to the API', async () => {
    const project = await t.admin.project('Group bot');
    const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'conversations:read', 'conversations:write', 'messages:send'])).secret;
    const api = (method: 'get' | 'post' | 'put', path: string) => request(t.app)[method](path).set('Authorization', `Bearer ${key}`);
    const pnid = (await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } })).phoneNumberId;
    expect((await api('put', '/v1/files/src/bot.ts').send({ content: BOT })).status).toBeLessThan(300);
    const deployed = await api('post', '/v1/deployments').send({});
    expect(deployed.status).toBe(201);

    const created = await api('post', '/v1/groups').send({ subject: 'Bot club' });
    const g = (await eventually(() => api('get', `/v1/groups/${created.body.data.group.id}`), (r) => r.body.data?.group?.status === 'active', 10_000, 'the group confirmed')).body.data.group;
    await api('get', `/v1/groups/${g.id}/invite-link`);
    const sim = request(t.sim!.url);
    const at = (rest: string) => `/_sim/groups/${encodeURIComponent(g.group_id)}/${rest}`;
    expect((await sim.post(at('join')).send({ from: '+5511944440001' })).status).toBe(200);
    expect((await sim.post(at('inbound')).send({ from: '5511944440001', name: 'Duda', text: 'oi bot' })).status).toBe(200);

    const toGroup = await eventually(
      async () => (await sim.get('/_sim/messages?limit=1000')).body.data.filter((m: { to: string }) => m.to === g.group_id) as Array<{ payload: { recipient_type: string; type: string; text?: { body: string } } }>,
      (ms) => ms.length >= 1, 20_000, 'the bot answered in the group',
    );
    expect(toGroup.map((m) => [m.payload.recipient_type, m.payload.type, m.payload.text?.body]))
      .toEqual([['group', 'text', 'Hello group, Duda']]);
    const lines = await eventually(
      async () => (await t.db.pool.query<{ line: string }>(`SELECT message AS line FROM bot_logs WHERE project_id = $1 ORDER BY id`, [project.id])).rows.map((r) => r.line),
      (ls: string[]) => ls.some((l) => l.startsWith('buttons=')), 10_000, 'the bot logged',
    );
    expect(lines).toEqual(expect.arrayContaining([`kind=group group=${g.id} from=5511944440001 name=Duda`, 'buttons=unsupported_in_group']));
    expect(lines.some((l) => l.startsWith(`A send to group ${g.id} was refused (unsupported_in_group)`))).toBe(true);

    // One to one, the same bot gets kind individual.
    expect((await sim.post('/_sim/inbound').send({ phone_number_id: pnid, from: '5511944440002', text: 'oi' })).status).toBe(200);
    await eventually(
      async () => (await t.db.pool.query<{ line: string }>(`SELECT message AS line FROM bot_logs WHERE project_id = $1 ORDER BY id`, [project.id])).rows.map((r) => r.line),
      (ls: string[]) => ls.some((l) => l.startsWith('kind=individual group=- from=5511944440002 ')), 10_000, 'the one-to-one message',
    );
  }, 60_000);
});
