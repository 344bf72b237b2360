/**
 * The bot shows it is typing (issue 37): `showTyping(message.id)` in a deployed bot marks the
 * customer's message read with Meta's `typing_indicator: { type: "text" }` before the reply; a
 * message id that is not one the project received is an error the bot can catch.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import request from 'supertest';
import { startTestApp, type TestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ simulator: { autoStatusDelaysMs: null, templateAutoDecisionMs: null }, bot: { memoryMb: 16, startupTimeoutMs: 1000, eventTimeoutMs: 1500 } });
});
afterAll(async () => {
  await t.close();
});

const BOT = `import { sendText, showTyping, HelperError, type InboundMessage } from './platform/runtime/index.js';
export async function onMessage(m: InboundMessage): Promise<void> {
  let refused = 'none';
  try {
    await showTyping('wamid.someone-else');
  } catch (e) {
    refused = e instanceof HelperError ? e.code : 'other';
  }
  await showTyping(m.id);
  await sendText(m.from, 'typed; a foreign id was ' + refused);
}
`;

it('When the deployed bot calls showTyping with the message it answers, then the channel gets a read mark with a typing indicator, and a foreign id is refused with not_found', async () => {
  const project = await t.admin.project();
  const key = (await t.admin.key(project.id, ['code:read', 'code:write', 'messages:send'])).secret;
  const { phoneNumberId } = await t.db.prisma.channelSettings.findUniqueOrThrow({ where: { projectId: project.id } });
  const auth = { Authorization: `Bearer ${key}` };
  expect((await request(t.app).put('/v1/files/src/bot.ts').set(auth).send({ content: BOT })).status).toBeLessThan(300);
  const deployed = await request(t.app).post('/v1/deployments').set(auth).send({});
  expect([200, 201]).toContain(deployed.status);
  const inbound = await request(t.sim!.url).post('/_sim/inbound').send({ phone_number_id: phoneNumberId, from: '14155550777', name: 'Ada', text: 'hi' });
  expect(inbound.body.status_code).toBe(200);
  const sent = await eventually(
    async () => ((await request(t.sim!.url).get(`/_sim/messages?phone_number_id=${phoneNumberId}&to=14155550777`)).body.data as any[]),
    (list) => Array.isArray(list) && list.length > 0,
    15_000,
    'the bot answered',
  );
  expect(sent[0].payload.text.body).toBe('typed; a foreign id was not_found');
  const marks = (await request(t.sim!.url).get('/_sim/read-marks')).body.data as any[];
  expect(marks.filter((m) => m.phone_number_id === phoneNumberId)).toEqual([expect.objectContaining({ message_id: inbound.body.wamid, typing: true })]);
});
